-- Did the fix work: the fix claimed on an incident's Jira issue (status, time, linked pull
-- requests, fix payload) with the verdicts told, as JSON; how it was resolved (`recovered`,
-- `fixed`, `by_hand`, `not_a_regression`, `merged`); and a level people accepted on purpose,
-- as JSON.
ALTER TABLE incidents ADD COLUMN fix TEXT;
ALTER TABLE incidents ADD COLUMN resolution TEXT;
ALTER TABLE incidents ADD COLUMN allowance TEXT;
