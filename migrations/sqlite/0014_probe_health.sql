-- How each job's CI network probes (the liveness backends) behaved, per day: how many of its
-- runs reported the probe and in how many it was down beyond the allowance. A probe down in
-- most of a job's recent runs is broken for that job (it cannot reach its target from those
-- clusters) and is never used to leave the job's runs out as CI-troubled.
CREATE TABLE probe_days (
    job_name   TEXT NOT NULL,
    backend_id BIGINT NOT NULL REFERENCES backends (id),
    day        BIGINT NOT NULL,
    runs       BIGINT NOT NULL,
    down       BIGINT NOT NULL,
    PRIMARY KEY (job_name, backend_id, day)
);

-- The probes found broken for a job, as its runs were classified: a change reclassifies the
-- job's runs.
CREATE TABLE broken_probes (
    job_name   TEXT NOT NULL,
    backend_id BIGINT NOT NULL REFERENCES backends (id),
    PRIMARY KEY (job_name, backend_id)
);
