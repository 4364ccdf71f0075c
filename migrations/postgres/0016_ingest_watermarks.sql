-- How far an incremental source (a BigQuery dataset) has been read: the latest run start
-- (Unix seconds) an ingest of it stored or saw. The next ingest reads from there minus an
-- overlap, so rows loaded late are still taken.
CREATE TABLE ingest_watermarks (
    source     TEXT PRIMARY KEY,
    watermark  BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
