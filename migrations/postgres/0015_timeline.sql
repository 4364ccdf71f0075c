-- The timeline kept per run to explain outages: node drains and reboots, the ready pods of the
-- watched namespaces, VIP moves, etcd leader changes and the outages themselves, each with the
-- interval file and item it came from (so every claim of a mechanism can be followed back).
CREATE TABLE timeline_spans (
    run_id  BIGINT NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
    kind    TEXT NOT NULL,
    subject TEXT NOT NULL,
    node    TEXT NOT NULL,
    from_at BIGINT NOT NULL,
    to_at   BIGINT NOT NULL,
    file    TEXT NOT NULL,
    item    BIGINT NOT NULL
);
CREATE INDEX timeline_spans_run ON timeline_spans (run_id);
