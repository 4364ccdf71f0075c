-- A job's runs in time order: which jobs of a window are new (no run before it) and a job's
-- latest run are index probes, so a cycle's cost does not grow with the stored history.
CREATE INDEX job_runs_job_started_at ON job_runs (job_name, started_at);
