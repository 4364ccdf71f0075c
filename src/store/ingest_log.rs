//! `ingest_log`: what happened to each run and file an ingest looked at.

use serde::Serialize;

use super::{Result, Store, StoreError, from_secs, sql};

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
    pub outcome: LogOutcome,
    pub error: String,
}

/// What became of a run or a file, as `ingest_log.outcome` keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogOutcome {
    /// The run is stored.
    Ingested,
    /// The run is stored, but one of its files could not be read; `error` says which and why.
    Warning,
    /// The run is not stored: a file it needs is bad; `error` says which and why.
    Failed,
    /// The run is not stored: the same job and build id is stored with other samples.
    Conflict,
}

impl LogOutcome {
    const ALL: [LogOutcome; 4] = [
        LogOutcome::Ingested,
        LogOutcome::Warning,
        LogOutcome::Failed,
        LogOutcome::Conflict,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LogOutcome::Ingested => "ingested",
            LogOutcome::Warning => "warning",
            LogOutcome::Failed => "failed",
            LogOutcome::Conflict => "conflict",
        }
    }

    fn stored(text: &str) -> Result<LogOutcome> {
        LogOutcome::ALL
            .into_iter()
            .find(|o| o.as_str() == text)
            .ok_or_else(|| StoreError::Corrupt {
                table: "ingest_log",
                detail: format!("ingest_log: unknown outcome `{text}`"),
            })
    }
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
                        e.outcome.as_str().into(),
                        (&e.error).into(),
                    ]
                });
            c.execute(q).await?;
        }
        Ok(())
    }

    /// The newest log entries, newest first; `outcome` filters when given.
    pub async fn recent(
        self,
        outcome: Option<LogOutcome>,
        limit: i64,
    ) -> Result<Vec<IngestLogEntry>> {
        let rows: Vec<LogRow> = self.store
            .fetch_all(
                sql("SELECT logged_at, source, run_path, job_name, build_id, file, outcome, error FROM ingest_log \
                     WHERE ($1 = '' OR outcome = $1) ORDER BY id DESC LIMIT $2")
                .bind(outcome.map_or("", LogOutcome::as_str))
                .bind(limit),
            )
            .await?;
        rows.into_iter()
            .map(|r| {
                Ok(IngestLogEntry {
                    logged_at: from_secs(r.logged_at),
                    source: r.source,
                    run_path: r.run_path,
                    job_name: r.job_name,
                    build_id: r.build_id,
                    file: r.file,
                    outcome: LogOutcome::stored(&r.outcome)?,
                    error: r.error,
                })
            })
            .collect()
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
