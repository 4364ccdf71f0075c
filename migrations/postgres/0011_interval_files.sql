-- On-demand interval evidence (the default for gs:// sources): ingest records where a run's
-- interval files are instead of reading them, and attribution fetches the files of the runs
-- it uses. A fetched run's rows go (its intervals are then in outages and condition_spans);
-- a file that could not be fetched keeps its row, with the attempts and the last error, and
-- is tried again on a later cycle.
CREATE TABLE interval_files (
    run_id     BIGINT NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
    location   TEXT NOT NULL,
    size       BIGINT NOT NULL,
    attempts   BIGINT NOT NULL DEFAULT 0,
    last_error TEXT,
    PRIMARY KEY (run_id, location)
);
