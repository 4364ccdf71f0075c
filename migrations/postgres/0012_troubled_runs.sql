-- Each cycle counts the CI-troubled runs of its window per variant. They are few, so an index
-- of them alone (by start) answers that without visiting every run of the window.
CREATE INDEX job_runs_troubled_started_at ON job_runs (started_at) WHERE ci_trouble IS NOT NULL;
