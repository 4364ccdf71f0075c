-- A counter bumped by every transaction that changes stored runs (and so the per-day cell
-- histograms): readers that keep derived data in memory (query answers) compare it to know
-- when theirs is stale, whichever process wrote.
CREATE TABLE data_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);
INSERT INTO data_version (id, version) VALUES (1, 0);
