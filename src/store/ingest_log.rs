//! `ingest_log`: what happened to each run and file an ingest looked at.

use anyhow::Result;
use serde::Serialize;

use super::{Store, from_secs, with_pool};

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

impl Store {
    pub async fn log_ingest(&self, entries: &[IngestLogEntry]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        with_pool!(self, pool => {
            for chunk in entries.chunks(500) {
                let mut q = sqlx::QueryBuilder::new(
                    "INSERT INTO ingest_log (logged_at, source, run_path, job_name, build_id, file, outcome, error) ",
                );
                q.push_values(chunk, |mut b, e| {
                    b.push_bind(e.logged_at.timestamp())
                        .push_bind(&e.source)
                        .push_bind(&e.run_path)
                        .push_bind(&e.job_name)
                        .push_bind(&e.build_id)
                        .push_bind(&e.file)
                        .push_bind(&e.outcome)
                        .push_bind(&e.error);
                });
                q.build().execute(pool).await?;
            }
        });
        Ok(())
    }

    /// The newest log entries, newest first; `outcome` filters when given.
    pub async fn recent_ingest_log(&self, outcome: Option<&str>, limit: i64) -> Result<Vec<IngestLogEntry>> {
        let rows: Vec<LogRow> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT logged_at, source, run_path, job_name, build_id, file, outcome, error FROM ingest_log \
                 WHERE ($1 = '' OR outcome = $1) ORDER BY id DESC LIMIT $2",
            )
            .bind(outcome.unwrap_or(""))
            .bind(limit)
            .fetch_all(pool)
            .await?
        });
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
