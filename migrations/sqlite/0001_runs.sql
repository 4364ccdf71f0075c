-- Job runs, their disruption samples, and the ingest log.
-- Times are Unix seconds (UTC) in BIGINT columns on both engines, so every query is portable.

-- One row per distinct combination of dimensions (DESIGN §2). A cell is backend × variant.
CREATE TABLE variants (
    id                   INTEGER PRIMARY KEY,
    release              TEXT NOT NULL,
    from_release         TEXT NOT NULL,
    upgrade_type         TEXT NOT NULL,
    platform             TEXT NOT NULL,
    architecture         TEXT NOT NULL,
    network              TEXT NOT NULL,
    network_stack        TEXT NOT NULL,
    topology             TEXT NOT NULL,
    master_nodes_updated TEXT NOT NULL,
    UNIQUE (release, from_release, upgrade_type, platform, architecture, network,
            network_stack, topology, master_nodes_updated)
);

CREATE TABLE backends (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE job_runs (
    id                   INTEGER PRIMARY KEY,
    job_name             TEXT NOT NULL,
    build_id             TEXT NOT NULL,
    bucket               TEXT NOT NULL,
    path                 TEXT NOT NULL,
    url                  TEXT NOT NULL,
    job_type             TEXT NOT NULL,
    started_at           BIGINT NOT NULL,
    finished_at          BIGINT,
    state                TEXT NOT NULL,
    variant_id           BIGINT NOT NULL REFERENCES variants (id),
    release              TEXT NOT NULL,
    from_release         TEXT NOT NULL,
    upgrade_type         TEXT NOT NULL,
    platform             TEXT NOT NULL,
    architecture         TEXT NOT NULL,
    network              TEXT NOT NULL,
    network_stack        TEXT NOT NULL,
    topology             TEXT NOT NULL,
    master_nodes_updated TEXT NOT NULL,
    ingested_at          BIGINT NOT NULL,
    UNIQUE (job_name, build_id)
);
CREATE INDEX job_runs_started_at ON job_runs (started_at);
CREATE INDEX job_runs_variant_started_at ON job_runs (variant_id, started_at);

CREATE TABLE samples (
    run_id     BIGINT NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
    backend_id BIGINT NOT NULL REFERENCES backends (id),
    connection TEXT NOT NULL,
    seconds    BIGINT NOT NULL,
    PRIMARY KEY (run_id, backend_id)
);

-- Exact histogram of per-run seconds for one cell on one UTC day (day = started_at / 86400),
-- kept at ingest so an evaluation cycle reads one row per cell-day instead of every sample.
-- runs: every run of the cell that day; hist: space-separated `seconds:runs` pairs of the
-- runs with disruption, ascending (the zeros are `runs` minus their counts, so a day without
-- disruption, the common case, stores an empty string). Keyed by cell first, so an evaluation
-- aggregates each cell's days without sorting.
CREATE TABLE cell_days (
    backend_id BIGINT NOT NULL REFERENCES backends (id),
    variant_id BIGINT NOT NULL REFERENCES variants (id),
    day        BIGINT NOT NULL,
    runs       BIGINT NOT NULL,
    hist       TEXT NOT NULL,
    PRIMARY KEY (backend_id, variant_id, day)
) WITHOUT ROWID;

-- What happened to each file (or run) an ingest looked at, good or bad.
CREATE TABLE ingest_log (
    id        INTEGER PRIMARY KEY,
    logged_at BIGINT NOT NULL,
    source    TEXT NOT NULL,
    run_path  TEXT NOT NULL,
    job_name  TEXT NOT NULL,
    build_id  TEXT NOT NULL,
    file      TEXT NOT NULL,
    outcome   TEXT NOT NULL,
    error     TEXT NOT NULL
);
CREATE INDEX ingest_log_run ON ingest_log (run_path);
CREATE INDEX ingest_log_logged_at ON ingest_log (logged_at);
