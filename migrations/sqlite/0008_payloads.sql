-- The release payload each run tested (or upgraded to), when it said, and when the payload was
-- built (from a nightly or CI tag's own time): a regression's onset is read on payload order.
ALTER TABLE job_runs ADD COLUMN payload TEXT NOT NULL DEFAULT '';
ALTER TABLE job_runs ADD COLUMN payload_at BIGINT;
ALTER TABLE job_runs ADD COLUMN from_payload TEXT NOT NULL DEFAULT '';
CREATE INDEX job_runs_release_payload ON job_runs (release, payload_at);

-- Changelogs read from the release controller, between two payloads: fetched once, reused.
CREATE TABLE changelogs (
    architecture TEXT NOT NULL,
    from_tag     TEXT NOT NULL,
    to_tag       TEXT NOT NULL,
    body         TEXT NOT NULL,
    fetched_at   BIGINT NOT NULL,
    PRIMARY KEY (architecture, from_tag, to_tag)
);
