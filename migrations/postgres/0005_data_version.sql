-- A counter bumped by every transaction that changes stored runs (and so the per-day cell
-- histograms), and per bump the first day it changed: readers that keep derived data in
-- memory (query answers) compare the counter to know when theirs is stale, whichever process
-- wrote, and re-read only the days from the first changed one on.
CREATE TABLE data_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);
INSERT INTO data_version (id, version) VALUES (1, 0);

CREATE TABLE data_changes (
    version   BIGINT PRIMARY KEY,
    first_day BIGINT NOT NULL
);
