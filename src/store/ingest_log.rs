//! `ingest_log`: what happened to each run and file an ingest looked at.

use serde::Serialize;

use super::{Result, Store, from_secs, sql};

/// One line of the ingest log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IngestLogEntry {
    pub logged_at: chrono::DateTime<chrono::Utc>,
    /// The source given to `sheriff ingest` (a folder, `gs://…`, or `push`).
    pub source: String,
    /// The run folder, relative to the bucket root.
    pub run_path: String,
    pub job_name: String,
    pub build_id: String,
    /// The file at fault, relative to the run folder; empty for the run as a whole.
    pub file: String,
    /// `ingested`, `skipped`, `failed` or `warning`.
    pub outcome: String,
    pub error: String,
}

/// What ingest did: its log of files read and refused, and each source's watermark.
/// Reached through [`Store::ingest_log`].
#[derive(Clone, Copy)]
pub struct IngestLog<'a> {
    pub(super) store: &'a Store,
}

impl IngestLog<'_> {
    pub async fn log_ingest(self, entries: &[IngestLogEntry]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut pooled = self.store.acquire().await?;
        let mut c = pooled.conn();
        for chunk in entries.chunks(500) {
            let q = sql("INSERT INTO ingest_log (logged_at, source, run_path, job_name, build_id, file, outcome, error)")
                .values(chunk, |e| {
                    vec![
                        e.logged_at.timestamp().into(),
                        (&e.source).into(),
                        (&e.run_path).into(),
                        (&e.job_name).into(),
                        (&e.build_id).into(),
                        (&e.file).into(),
                        (&e.outcome).into(),
                        (&e.error).into(),
                    ]
                });
            c.execute(q).await?;
        }
        Ok(())
    }

    /// The newest log entries, newest first; `outcome` filters when given.
    pub async fn recent(self, outcome: Option<&str>, limit: i64) -> Result<Vec<IngestLogEntry>> {
        let rows: Vec<LogRow> = self.store
            .fetch_all(
                sql("SELECT logged_at, source, run_path, job_name, build_id, file, outcome, error FROM ingest_log \
                     WHERE ($1 = '' OR outcome = $1) ORDER BY id DESC LIMIT $2")
                .bind(outcome.unwrap_or(""))
                .bind(limit),
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| IngestLogEntry {
                logged_at: from_secs(r.logged_at),
                source: r.source,
                run_path: r.run_path,
                job_name: r.job_name,
                build_id: r.build_id,
                file: r.file,
                outcome: r.outcome,
                error: r.error,
            })
            .collect())
    }
}

#[derive(sqlx::FromRow)]
struct LogRow {
    logged_at: i64,
    source: String,
    run_path: String,
    job_name: String,
    build_id: String,
    file: String,
    outcome: String,
    error: String,
}
