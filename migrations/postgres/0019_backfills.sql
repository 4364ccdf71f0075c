-- Days filled by a push-down backfill (`sheriff ingest bq://… --backfill`): their day
-- histograms came from BigQuery as counts, with no run stored. The days are sealed: no ingest
-- (from any source) stores a run that started on one of them, so no run is counted twice.
-- from_day and to_day are UTC day numbers (Unix seconds / 86400), to_day exclusive.
CREATE TABLE backfills (
    from_day      BIGINT PRIMARY KEY,
    to_day        BIGINT NOT NULL,
    source        TEXT NOT NULL,
    rows_read     BIGINT NOT NULL,
    samples       BIGINT NOT NULL,
    backfilled_at BIGINT NOT NULL
);
