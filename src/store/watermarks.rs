//! `ingest_watermarks`: how far each incremental source has been read.

use super::ingest_log::IngestLog;
use super::{Result, sql};

impl IngestLog<'_> {
    /// The latest run start (Unix seconds) read from `source`, if it was ever read.
    pub async fn watermark(self, source: &str) -> Result<Option<i64>> {
        let row: Option<(i64,)> = self
            .store
            .fetch_optional(
                sql("SELECT watermark FROM ingest_watermarks WHERE source = $1").bind(source),
            )
            .await?;
        Ok(row.map(|(w,)| w))
    }

    /// Moves `source`'s watermark forward to `watermark`; never back (a slower ingest that
    /// finishes last must not make the next one read everything again).
    pub async fn advance_watermark(self, source: &str, watermark: i64, now: i64) -> Result<()> {
        self.store.execute(
            sql("INSERT INTO ingest_watermarks (source, watermark, updated_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (source) DO UPDATE SET \
                 watermark = CASE WHEN excluded.watermark > ingest_watermarks.watermark \
                 THEN excluded.watermark ELSE ingest_watermarks.watermark END, updated_at = excluded.updated_at")
            .bind(source)
            .bind(watermark)
            .bind(now),
        )
        .await?;
        Ok(())
    }
}
