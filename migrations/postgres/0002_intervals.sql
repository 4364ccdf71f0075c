-- Interval evidence kept per run: disruption outages and bad ClusterOperator conditions.

CREATE TABLE outages (
    run_id     BIGINT NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
    backend_id BIGINT NOT NULL REFERENCES backends (id),
    from_at    BIGINT NOT NULL,
    to_at      BIGINT NOT NULL
);
CREATE INDEX outages_run ON outages (run_id, backend_id);

CREATE TABLE condition_spans (
    run_id    BIGINT NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
    operator  TEXT NOT NULL,
    condition TEXT NOT NULL,
    status    TEXT NOT NULL,
    reason    TEXT NOT NULL,
    message   TEXT NOT NULL,
    from_at   BIGINT NOT NULL,
    to_at     BIGINT NOT NULL
);
CREATE INDEX condition_spans_run ON condition_spans (run_id);
