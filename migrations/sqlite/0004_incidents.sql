-- Incidents, their history, silences, and the outbox of side effects.

-- One record per attributed regression. `snapshot` is the latest regression report (JSON).
CREATE TABLE incidents (
    id                INTEGER PRIMARY KEY,
    fingerprint       TEXT NOT NULL UNIQUE,
    family            TEXT NOT NULL,
    release           TEXT NOT NULL,
    backends          TEXT NOT NULL,
    component         TEXT NOT NULL,
    scope             TEXT NOT NULL,
    state             TEXT NOT NULL,
    percentile        TEXT NOT NULL,
    observed_seconds  REAL NOT NULL,
    threshold_seconds REAL NOT NULL,
    tier              TEXT NOT NULL,
    evidence          TEXT NOT NULL,
    summary           TEXT NOT NULL,
    snapshot          TEXT NOT NULL,
    revision          BIGINT NOT NULL,
    opened_at         BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    last_seen_at      BIGINT NOT NULL,
    resolved_at       BIGINT,
    acked_by          TEXT,
    acked_at          BIGINT,
    slack_channel     TEXT,
    slack_ts          TEXT,
    jira_key          TEXT,
    jira_commented_at BIGINT
);
CREATE INDEX incidents_family ON incidents (family, release, state);

-- Who did what to an incident and when, and every change of state.
CREATE TABLE incident_events (
    id          INTEGER PRIMARY KEY,
    incident_id BIGINT NOT NULL REFERENCES incidents (id),
    at          BIGINT NOT NULL,
    actor       TEXT NOT NULL,
    kind        TEXT NOT NULL,
    detail      TEXT NOT NULL
);
CREATE INDEX incident_events_incident ON incident_events (incident_id, id);

-- Silences: one incident (by fingerprint), or a matcher (backend glob and dimension values).
CREATE TABLE silences (
    id          INTEGER PRIMARY KEY,
    fingerprint TEXT,
    backend     TEXT,
    dimensions  TEXT NOT NULL,
    reason      TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    removed_at  BIGINT,
    removed_by  TEXT
);

-- Side effects, written with the change that causes them and delivered in order per lane.
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    lane            TEXT NOT NULL,
    kind            TEXT NOT NULL,
    incident_id     BIGINT REFERENCES incidents (id),
    payload         TEXT NOT NULL,
    state           TEXT NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    locked_by       TEXT,
    locked_until    BIGINT NOT NULL DEFAULT 0,
    last_error      TEXT,
    result          TEXT,
    created_at      BIGINT NOT NULL,
    delivered_at    BIGINT
);
CREATE INDEX outbox_pending ON outbox (state, next_attempt_at);
CREATE INDEX outbox_lane ON outbox (lane, state, id);

-- Leases that let one replica run a scheduled job at a time.
CREATE TABLE leases (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    expires_at  BIGINT NOT NULL
);
