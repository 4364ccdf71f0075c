//! Interval evidence on demand. A run ingested with `ingest.intervals = "on_demand"` (the
//! default for `gs://` sources) has only the places of its interval files stored; attribution
//! fetches the files of the runs it uses (a regression's disrupted runs and the healthy ones
//! it compares with), parses them as ingest would, and stores what they hold, so each file is
//! fetched once. A file that cannot be fetched for now (the bucket unreachable) leaves the run
//! pending, and a later cycle tries again; one that is gone or does not parse leaves the run
//! without interval evidence, as at ingest, with the reason in the ingest log.
//!
//! A run ingested from BigQuery with `ingest.intervals = "bigquery"` has, in place of files,
//! the place of the intervals table (`bq://PROJECT/DATASET/TABLE`): its rows for the run are
//! read back into the files they were loaded from ([`super::bigquery::interval_rows`]) and parsed
//! the same way. BigQuery unreachable (or refusing the query) leaves the run pending as an
//! unreachable bucket does; more rows than allowed leave it without evidence.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::OnceCell;

use super::assembly::{Content, FileProblem, RunIntervals, parse_interval_files};
use super::bigquery::interval_rows;
use super::error::IngestError;
use crate::clients::bigquery::{BigQueryClient, BigQueryError};
use crate::clients::gcs::{self, GcsClient};
use crate::config::Settings;
use crate::model::{IntervalFile, JobRun, RunRecord};
use crate::store::Store;
use crate::store::ingest_log::{IngestLogEntry, LogOutcome};
use crate::support::error::with_sources;

/// Fetches the interval files of the runs a cycle uses.
pub struct EvidenceFetcher<'a> {
    store: &'a Store,
    gcs: crate::config::GcsSettings,
    client: OnceCell<GcsClient>,
    bigquery: crate::config::BigQuerySettings,
    /// One client per billing project, made when first needed.
    bigquery_clients: std::sync::Mutex<std::collections::HashMap<String, BigQueryClient>>,
    max_bytes: u64,
    /// Whether what is fetched is stored (not by a dry run, which records nothing).
    keep: bool,
    /// Why the first fetch that may pass failed: the rest wait for the next cycle rather than
    /// each retrying an unreachable bucket.
    down: std::sync::Mutex<Option<String>>,
}

/// Why one file was not read.
enum Miss {
    /// It may be there later: the bucket did not answer, or answered 5xx/429.
    Later(String),
    /// It will not be: gone, or too large.
    Never(String),
}

impl<'a> EvidenceFetcher<'a> {
    pub fn new(store: &'a Store, settings: &Settings, keep: bool) -> EvidenceFetcher<'a> {
        EvidenceFetcher {
            store,
            gcs: settings.gcs.clone(),
            client: OnceCell::new(),
            bigquery: settings.bigquery.clone(),
            bigquery_clients: Default::default(),
            max_bytes: settings.ingest.max_interval_file_bytes,
            keep,
            down: std::sync::Mutex::new(None),
        }
    }

    /// Fills in `record`'s intervals from its pending files (nothing to do when it has none).
    /// When they cannot be fetched now, the record keeps its `interval_files`: still pending.
    pub async fn fill(&self, record: &mut RunRecord) {
        if record.interval_files.is_empty() {
            return;
        }

        if self.down.lock().expect("down lock").is_some() {
            metrics::counter!("sheriff_evidence_fetches_total", "outcome" => "pending")
                .increment(1);
            return;
        }

        let (job, build) = (record.run.job_name.clone(), record.run.build_id.clone());
        let mut read = Vec::new();
        let mut problems = Vec::new();
        for file in &record.interval_files {
            match self.fetch(file, &record.run).await {
                Ok(files) => {
                    for (name, content, size) in files {
                        metrics::counter!("sheriff_evidence_bytes_total").increment(size);
                        read.push((name, content));
                    }
                }
                Err(Miss::Never(why)) => problems.push(FileProblem {
                    file: file.location.clone(),
                    error: why,
                }),
                Err(Miss::Later(why)) => {
                    metrics::counter!("sheriff_evidence_fetches_total", "outcome" => "pending")
                        .increment(1);
                    tracing::warn!(run = %record.run.path, file = %file.location, "interval evidence pending: {why}");
                    if self.keep
                        && let Err(e) = self
                            .store
                            .runs()
                            .interval_fetch_failed(&job, &build, &why)
                            .await
                    {
                        tracing::warn!("cannot note the failed fetch: {e:#}");
                    }
                    self.down.lock().expect("down lock").get_or_insert(why);
                    return;
                }
            }
        }

        let parse = tokio::task::spawn_blocking(move || {
            let parsed = parse_interval_files(
                read.iter().map(|(name, content)| (name.as_str(), content)),
                &mut problems,
            );
            (parsed, problems)
        });

        let (parsed, problems) = match parse.await {
            Ok(done) => done,
            Err(e) => {
                tracing::warn!(run = %record.run.path, "interval evidence pending: parsing failed: {e}");
                return;
            }
        };

        metrics::counter!("sheriff_evidence_fetches_total", "outcome" => "fetched").increment(1);
        if self.keep {
            self.keep_filled(record, &parsed, &problems).await;
        }

        record.outages = parsed.outages;
        record.conditions = parsed.conditions;
        record.timeline = parsed.timeline;
        record.interval_files.clear();
    }

    /// Stores a run's fetched intervals, and logs the files that could not be used.
    async fn keep_filled(
        &self,
        record: &RunRecord,
        parsed: &RunIntervals,
        problems: &[FileProblem],
    ) {
        let run = &record.run;
        if let Err(e) = self
            .store
            .runs()
            .fill_intervals(
                &run.job_name,
                &run.build_id,
                &parsed.outages,
                &parsed.conditions,
                &parsed.timeline,
            )
            .await
        {
            // used by this cycle all the same; the next one fetches them again
            tracing::warn!(run = %run.path, "cannot store the fetched interval evidence: {e:#}");
            return;
        }

        let entries: Vec<IngestLogEntry> = problems
            .iter()
            .map(|p| {
                tracing::warn!(run = %run.path, file = %p.file, "{}", p.error);
                IngestLogEntry {
                    logged_at: chrono::Utc::now(),
                    source: "evidence".into(),
                    run_path: run.path.clone(),
                    job_name: run.job_name.clone(),
                    build_id: run.build_id.clone(),
                    file: p.file.clone(),
                    outcome: LogOutcome::Warning,
                    error: p.error.clone(),
                }
            })
            .collect();

        if let Err(e) = self.store.ingest_log().log_ingest(&entries).await {
            tracing::warn!("cannot write the ingest log: {e:#}");
        }
    }

    /// What `file` holds, as files to parse: (name, content, size). One file for a GCS object
    /// or a local path; the files its rows were loaded from for a BigQuery intervals table.
    async fn fetch(
        &self,
        file: &IntervalFile,
        run: &JobRun,
    ) -> Result<Vec<(String, Content, u64)>, Miss> {
        if file.location.starts_with("bq://") {
            return self.fetch_rows(&file.location, run).await;
        }
        let (content, size) = self.fetch_file(file).await?;
        Ok(vec![(file.location.clone(), content, size)])
    }

    /// The run's rows in the intervals table at `location`, as the files they came from.
    async fn fetch_rows(
        &self,
        location: &str,
        run: &JobRun,
    ) -> Result<Vec<(String, Content, u64)>, Miss> {
        let Some((project, _, _)) = interval_rows::parse_location(location) else {
            return Err(Miss::Never(format!(
                "`{location}` is not a bq://PROJECT/DATASET/TABLE place"
            )));
        };
        let client = self
            .bigquery_client(&project)
            .map_err(|e| Miss::Later(with_sources(&e)))?;
        let limits = (self.bigquery.max_interval_rows, self.max_bytes);
        match interval_rows::read(&client, location, run, limits).await {
            Ok(files) => Ok(files
                .into_iter()
                .map(|(name, bytes)| {
                    let size = bytes.len() as u64;
                    (name, Content::Bytes(bytes), size)
                })
                .collect()),
            Err(e @ IngestError::Unusable(_)) => Err(Miss::Never(with_sources(&e))),
            Err(e) => Err(Miss::Later(with_sources(&e))),
        }
    }

    fn bigquery_client(&self, project: &str) -> Result<BigQueryClient, BigQueryError> {
        let mut clients = self.bigquery_clients.lock().expect("clients lock");
        if let Some(client) = clients.get(project) {
            return Ok(client.clone());
        }
        let client = BigQueryClient::new(&self.bigquery, project)?;
        clients.insert(project.to_string(), client.clone());
        Ok(client)
    }

    /// The file, to be read as a stream (a GCS object downloaded to a temporary file), and its size.
    async fn fetch_file(&self, file: &IntervalFile) -> Result<(Content, u64), Miss> {
        if file.size > self.max_bytes {
            return Err(Miss::Never(too_large(file.size, self.max_bytes)));
        }

        let (path, spool) = match gcs::parse_gs_url(&file.location) {
            Some((bucket, object)) => {
                let client = self
                    .client
                    .get_or_try_init(|| async { GcsClient::new(&self.gcs) })
                    .await
                    .map_err(|e| Miss::Later(format!("{e:#}")))?;
                let spool = client
                    .download_to_file(&bucket, &object, self.max_bytes)
                    .await
                    .map_err(|e| {
                        if e.is_gone() || matches!(e.failure, gcs::Failure::TooLarge { .. }) {
                            Miss::Never(e.to_string())
                        } else {
                            Miss::Later(e.to_string())
                        }
                    })?;
                (spool.to_path_buf(), Some(Arc::new(spool)))
            }
            None => (PathBuf::from(&file.location), None),
        };

        let size = match tokio::fs::metadata(&path).await {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Miss::Never(format!("cannot read: {e}")));
            }
            Err(e) => return Err(Miss::Later(format!("cannot read: {e}"))),
        };

        // it may have grown since it was listed; reading stops at the limit all the same
        if size > self.max_bytes {
            return Err(Miss::Never(too_large(size, self.max_bytes)));
        }

        Ok((
            Content::File {
                path,
                max_bytes: self.max_bytes,
                spool,
            },
            size,
        ))
    }
}

/// Why a file over the limit is not read, as ingest says it.
fn too_large(size: u64, max: u64) -> String {
    super::parse_error::Problem::TooLarge { size, max }.to_string()
}
