-- Evaluation: imported historical thresholds, group states between cycles, and cycles.

-- The CI suite's historical percentiles (`sheriff thresholds import`), replaced on each import.
CREATE TABLE historical_thresholds (
    backend              TEXT NOT NULL,
    release              TEXT NOT NULL,
    from_release         TEXT NOT NULL,
    platform             TEXT NOT NULL,
    architecture         TEXT NOT NULL,
    network              TEXT NOT NULL,
    topology             TEXT NOT NULL,
    master_nodes_updated TEXT NOT NULL,
    job_runs             BIGINT,
    p50                  REAL,
    p75                  REAL,
    p95                  REAL,
    p99                  REAL,
    source_file          TEXT NOT NULL,
    imported_at          BIGINT NOT NULL
);

-- Groups that are regressed or on their way back, keyed by the group's label.
CREATE TABLE group_states (
    group_label  TEXT PRIMARY KEY,
    regressed    BIGINT NOT NULL,
    clean_streak BIGINT NOT NULL,
    since        BIGINT,
    updated_at   BIGINT NOT NULL
);

-- Every evaluation cycle that was recorded (not the dry runs).
CREATE TABLE eval_cycles (
    id           INTEGER PRIMARY KEY,
    started_at   BIGINT NOT NULL,
    finished_at  BIGINT NOT NULL,
    evaluated_at BIGINT NOT NULL,
    groups       BIGINT NOT NULL,
    regressions  BIGINT NOT NULL,
    outcome      TEXT NOT NULL,
    error        TEXT NOT NULL
);
CREATE INDEX eval_cycles_evaluated_at ON eval_cycles (evaluated_at);
