-- What a silence held of an incident's Slack thread and Jira issue (a JSON array of the
-- effects it would have sent), told once the silence ends, even after a resolution. NULL when
-- nothing is owed.
ALTER TABLE incidents ADD COLUMN held TEXT;
