-- Runs with CI-infrastructure trouble: why (e.g. "ci-cluster-network-liveness-new-connections
-- 45s"), or NULL for a clean run. Evaluation leaves troubled runs out of every percentile,
-- test and reference, so `cell_days` holds clean runs only. `classification` keeps the
-- fingerprint of the rules the column was computed with; a change of rules reclassifies.
ALTER TABLE job_runs ADD COLUMN ci_trouble TEXT;

CREATE TABLE classification (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    rules TEXT NOT NULL
);
