-- An incident's episodes: when each spell of the regression began (the onset and its
-- interval) and when it recovered, oldest first, as JSON. Cycles leave an episode's runs out of
-- every reference, and a resolved episode's runs out of the current window too. `merged_into`
-- names the incident a duplicate was merged into.
ALTER TABLE incidents ADD COLUMN episodes TEXT NOT NULL DEFAULT '[]';
ALTER TABLE incidents ADD COLUMN merged_into BIGINT;
