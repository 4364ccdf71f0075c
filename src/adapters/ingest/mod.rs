//! Ingest: find finished job runs in a source, parse their artifacts, store each run once.
//!
//! Sources: a local directory in the bucket layout (`local`), a GCS bucket over the JSON API
//! ([`crate::clients::gcs`]), the CI's BigQuery tables ([`bigquery`], read incrementally, rows not files), or
//! files pushed over HTTP (the server's `/api/v1/runs`, which calls
//! `ingest_pushed_run`). Runs are read and parsed concurrently and written one at a time;
//! a bad file becomes one ingest-log entry naming the run, the file and what was wrong, and
//! the rest of the batch goes on.

pub(crate) mod assembly;
pub mod bigquery;
mod error;
pub mod formats;
pub(crate) mod layout;
pub(crate) mod local;
pub(crate) mod on_demand;
mod parse_error;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde::Serialize;

pub use self::assembly::{Assembly, assemble};
use self::assembly::{Content, FileProblem, RunFile, RunFiles};
pub use self::error::{IngestError, Result};
use self::layout::{Classified, FileKind, classify};
pub use self::parse_error::{ParseError, Problem};
use crate::clients::gcs::{self, GcsClient};
use crate::config::{IngestSettings, Settings};
use crate::store::ingest_log::{IngestLogEntry, LogOutcome};
use crate::store::runs::WriteOutcome;
use crate::store::{Store, StoreError};

/// A run folder found in a source, with the files under it.
#[derive(Debug, Clone)]
pub(crate) struct RunListing {
    pub bucket: String,
    /// The run folder relative to the bucket root.
    pub path: String,
    pub files: Vec<ListedFile>,
    /// Why its files cannot all be listed (an unreadable folder): the run is not read, and the
    /// summary and the ingest log say why, so a later ingest can take it once it can be.
    pub unlisted: Option<String>,
}

/// A file of a run: its path relative to the run folder, its size, and where to read it
/// (a local path or an object name).
#[derive(Debug, Clone)]
pub(crate) struct ListedFile {
    pub name: String,
    pub size: u64,
    pub key: String,
    /// The file on disk, for a local tree: its name may not be UTF-8, which `key` only shows.
    pub local: Option<PathBuf>,
}

/// Where runs come from.
#[derive(Clone)]
pub enum Source {
    Local(PathBuf),
    Gcs {
        client: GcsClient,
        bucket: String,
        prefix: String,
    },
    BigQuery(bigquery::Dataset),
}

impl Source {
    /// `gs://bucket/prefix`, `bq://project/dataset` or a local directory.
    pub fn parse(spec: &str, settings: &Settings) -> Result<Source> {
        if spec.starts_with("bq://") {
            let dataset = bigquery::Dataset::parse(spec, &settings.bigquery)?;
            return Ok(Source::BigQuery(match settings.ingest.intervals {
                crate::config::IntervalsMode::Bigquery => {
                    dataset.with_intervals(&settings.bigquery.intervals_table)
                }
                _ => dataset,
            }));
        }
        let gcs = &settings.gcs;
        if spec.starts_with("gs://") {
            let Some((bucket, prefix)) = gcs::parse_gs_url(spec) else {
                return Err(IngestError::NotAGcsUrl(spec.to_string()));
            };
            return Ok(Source::Gcs {
                client: GcsClient::new(gcs)?,
                bucket,
                prefix,
            });
        }
        let path = PathBuf::from(spec);
        if !path.is_dir() {
            return Err(IngestError::NotASource(spec.to_string()));
        }
        Ok(Source::Local(path))
    }

    async fn discover(
        &self,
        keep_job: Arc<dyn Fn(&str) -> bool + Send + Sync>,
        concurrency: usize,
    ) -> Result<Vec<RunListing>> {
        match self {
            Source::Local(dir) => {
                let dir = dir.clone();
                tokio::task::spawn_blocking(move || local::discover(&dir, &*keep_job))
                    .await?
                    .map_err(IngestError::Walk)
            }
            Source::Gcs {
                client,
                bucket,
                prefix,
            } => discover_gcs(client, bucket, prefix, keep_job, concurrency).await,
            Source::BigQuery(_) => Err(IngestError::RowsNotFolders),
        }
    }

    async fn read(&self, file: &ListedFile, max_bytes: u64) -> Result<Vec<u8>, ParseError> {
        match self {
            Source::Local(_) => {
                let listed = file.clone();
                tokio::task::spawn_blocking(move || local::read(&listed, max_bytes))
                    .await
                    .unwrap_or_else(|e| {
                        Err(ParseError::new(&file.name, Problem::Task(e.to_string())))
                    })
            }
            Source::Gcs { client, bucket, .. } => {
                if file.size > max_bytes {
                    return Err(too_large(file, max_bytes));
                }
                client
                    .download(bucket, &file.key)
                    .await
                    .map_err(|e| ParseError::new(&file.name, e))
            }
            Source::BigQuery(_) => Err(ParseError::new(&file.name, Problem::NoFiles)),
        }
    }

    /// An interval file, to be read as a stream when it is parsed: a local one where it is, one
    /// in GCS downloaded to a temporary file; either no further than `max_bytes`.
    async fn open(&self, file: &ListedFile, max_bytes: u64) -> Result<Content, ParseError> {
        if file.size > max_bytes {
            return Err(too_large(file, max_bytes));
        }
        match self {
            Source::Local(_) => {
                let path = file
                    .local
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(&file.key));
                Ok(Content::File {
                    path,
                    max_bytes,
                    spool: None,
                })
            }
            Source::Gcs { client, bucket, .. } => {
                let spool = client
                    .download_to_file(bucket, &file.key, max_bytes)
                    .await
                    .map_err(|e| ParseError::new(&file.name, e))?;
                Ok(Content::File {
                    path: spool.to_path_buf(),
                    max_bytes,
                    spool: Some(Arc::new(spool)),
                })
            }
            Source::BigQuery(_) => Err(ParseError::new(&file.name, Problem::NoFiles)),
        }
    }

    /// Where a file is, for fetching it later: `gs://bucket/object`, or a local path (`None`
    /// for a path that is not UTF-8, which is then read at once).
    fn location(&self, file: &ListedFile) -> Option<String> {
        match self {
            Source::Local(_) => file.local.as_ref()?.to_str().map(str::to_string),
            Source::Gcs { bucket, .. } => Some(format!("gs://{bucket}/{}", file.key)),
            Source::BigQuery(_) => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Source::Local(p) => p.display().to_string(),
            Source::Gcs { bucket, prefix, .. } => format!("gs://{bucket}/{prefix}"),
            Source::BigQuery(d) => d.describe(),
        }
    }
}

/// Why a listed file over its size limit was not read.
pub(crate) fn too_large(file: &ListedFile, max: u64) -> ParseError {
    ParseError::new(
        &file.name,
        Problem::TooLarge {
            size: file.size,
            max,
        },
    )
}

/// Walks a bucket one folder level at a time (a `/` delimiter), so a run's artifacts are only
/// listed once the run is found, and a job filtered out is never listed below its folder.
async fn discover_gcs(
    client: &GcsClient,
    bucket: &str,
    prefix: &str,
    keep_job: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    concurrency: usize,
) -> Result<Vec<RunListing>> {
    let start = if prefix.is_empty() || prefix.ends_with('/') {
        prefix.to_string()
    } else {
        format!("{prefix}/")
    };

    let mut frontier = vec![start];
    let mut run_prefixes = Vec::new();
    while !frontier.is_empty() {
        let levels: Vec<Result<(String, gcs::Listing), gcs::GcsError>> =
            futures::stream::iter(frontier.drain(..))
                .map(|p| async move {
                    client
                        .list_objects(bucket, &p, Some("/"))
                        .await
                        .map(|l| (p, l))
                })
                .buffer_unordered(concurrency)
                .collect()
                .await;
        for level in levels {
            let (p, listing) = level?;
            if listing
                .objects
                .iter()
                .any(|o| layout::is_run_marker(layout::basename(&o.name)))
            {
                let (job, _) = layout::job_and_build(p.trim_end_matches('/'));
                if keep_job(&job) {
                    run_prefixes.push(p);
                }
                continue;
            }
            for sub in listing.prefixes {
                // `logs/<job>/`: skip jobs the filter drops without listing their runs.
                let parts: Vec<&str> = sub.trim_end_matches('/').rsplit('/').collect();
                if parts.len() >= 2 && parts[1] == "logs" && !keep_job(parts[0]) {
                    continue;
                }
                frontier.push(sub);
            }
        }
    }

    let listings: Vec<Result<RunListing>> = futures::stream::iter(run_prefixes)
        .map(|p| async move {
            let listing = client.list_objects(bucket, &p, None).await?;
            let files = listing
                .objects
                .into_iter()
                .filter(|o| o.name.len() > p.len())
                .map(|o| ListedFile {
                    name: o.name[p.len()..].to_string(),
                    size: o.size,
                    key: o.name,
                    local: None,
                })
                .collect();
            Ok(RunListing {
                bucket: bucket.to_string(),
                path: p.trim_end_matches('/').to_string(),
                files,
                unlisted: None,
            })
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;

    let mut runs = listings.into_iter().collect::<Result<Vec<_>>>()?;
    runs.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(runs)
}

/// How `sheriff ingest` was asked to run.
#[derive(Clone, Default)]
pub struct IngestOptions {
    /// Only runs that started at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only jobs whose name matches.
    pub job: Option<regex::Regex>,
    /// Re-read and replace runs already stored.
    pub force: bool,
    /// Draw a progress bar (on a terminal) instead of periodic log lines.
    pub progress: bool,
}

/// The closing summary, also the JSON output of `sheriff ingest --format json` (docs/commands.md documents them).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct IngestSummary {
    pub ingested: u64,
    pub skipped: u64,
    pub failed: u64,
    /// Of `failed`, the runs sheriff could not store for reasons of its own (the database):
    /// their files may be fine, and a retry should store them.
    pub storage_failed: u64,
    /// Of `skipped`, the runs already stored with other content (kept as stored; `--force`
    /// replaces them).
    pub conflicts: u64,
    pub errors: Vec<IngestProblem>,
}

impl IngestSummary {
    /// Adds the runs to `sheriff_ingest_runs_total{via, outcome}`: ingested, skipped, failed
    /// (a bad file) and storage_failed (sheriff's own storage; a retry stores them).
    pub fn count(&self, via: &'static str) {
        let bad_files = self.failed.saturating_sub(self.storage_failed);
        for (outcome, n) in [
            ("ingested", self.ingested),
            ("skipped", self.skipped),
            ("failed", bad_files),
            ("storage_failed", self.storage_failed),
        ] {
            metrics::counter!("sheriff_ingest_runs_total", "via" => via, "outcome" => outcome)
                .increment(n);
        }
    }
}

/// One problem: the run, the file (empty for the run as a whole), what was wrong, and whether
/// the run was stored anyway (`warning`) or not (`failed`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct IngestProblem {
    pub run: String,
    pub file: String,
    pub error: String,
    pub severity: &'static str,
}

/// What reading one run produced, before it is written.
enum RunOutcome {
    Ready {
        record: Box<crate::model::RunRecord>,
        warnings: Vec<FileProblem>,
        path: String,
    },
    Skipped {
        path: String,
        why: &'static str,
    },
    Failed {
        path: String,
        job: String,
        build: String,
        problems: Vec<FileProblem>,
    },
    /// sheriff's own storage failed before the run was read (asking whether it is stored): the
    /// files may be fine, and a later ingest takes the run.
    StorageFailed {
        path: String,
        job: String,
        build: String,
        error: String,
    },
}

/// Ingests every finished run in `source` that is not stored yet (or every one with `force`).
pub async fn ingest(
    store: &Store,
    settings: &IngestSettings,
    source: &Source,
    options: &IngestOptions,
) -> Result<IngestSummary> {
    if let Source::BigQuery(dataset) = source {
        return bigquery::ingest(store, dataset, options).await;
    }
    let started = Instant::now();
    let job_filter = options.job.clone();
    let keep_job: Arc<dyn Fn(&str) -> bool + Send + Sync> =
        Arc::new(move |job: &str| job_filter.as_ref().is_none_or(|re| re.is_match(job)));
    let listings = source.discover(keep_job, settings.concurrency).await?;
    let source_name = source.describe();
    tracing::info!(source = %source_name, runs = listings.len(), "found run folders");

    let mut progress = Progress::new(options.progress, listings.len());
    let mut summary = IngestSummary::default();
    let mut log = Vec::new();

    let mut outcomes = futures::stream::iter(listings)
        .map(|listing| read_run(store, settings, source, options, listing))
        .buffer_unordered(settings.concurrency);
    while let Some(outcome) = outcomes.next().await {
        record_outcome(
            store,
            &source_name,
            options.force,
            outcome,
            &mut summary,
            &mut log,
        )
        .await;
        if log.len() >= 500 {
            flush_log(store, &mut log).await;
        }
        progress.one_more(&summary);
    }

    flush_log(store, &mut log).await;
    if summary.ingested > 100
        && let Err(e) = store.checkpoint().await
    {
        tracing::warn!("cannot checkpoint the database after the ingest: {e:#}");
    }
    progress.finish();
    tracing::info!(
        source = %source_name,
        ingested = summary.ingested,
        skipped = summary.skipped,
        failed = summary.failed,
        seconds = started.elapsed().as_secs_f64(),
        "ingest finished"
    );
    Ok(summary)
}

/// How far an ingest is: a bar on a terminal when asked for, else a log line every five seconds.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    total: usize,
    done: usize,
    last_report: Instant,
}

impl Progress {
    /// A bar when `bar` is asked for and stderr is a terminal.
    fn new(bar: bool, total: usize) -> Progress {
        let bar = (bar && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} runs  {per_sec}  eta {eta}  {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        Progress {
            bar,
            total,
            done: 0,
            last_report: Instant::now(),
        }
    }

    /// Counts one more run done, and shows how far the ingest is.
    fn one_more(&mut self, summary: &IngestSummary) {
        self.done += 1;
        if let Some(bar) = &self.bar {
            bar.set_position(self.done as u64);
            bar.set_message(format!(
                "{} new, {} failed",
                summary.ingested, summary.failed
            ));
        } else if self.last_report.elapsed() >= Duration::from_secs(5) {
            self.last_report = Instant::now();
            tracing::info!(
                done = self.done,
                total = self.total,
                ingested = summary.ingested,
                skipped = summary.skipped,
                failed = summary.failed,
                "ingest progress"
            );
        }
    }

    /// Clears the bar, if any.
    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

async fn flush_log(store: &Store, log: &mut Vec<IngestLogEntry>) {
    if let Err(e) = store.ingest_log().log_ingest(log).await {
        tracing::error!("cannot write the ingest log: {e:#}");
    }
    log.clear();
}

/// A run already stored with other content: counted, warned and added to the summary; the
/// line for the ingest log.
async fn conflict(
    store: &Store,
    record: &crate::model::RunRecord,
    path: &str,
    summary: &mut IngestSummary,
) -> Option<String> {
    let why = differs(store, record).await?;
    let error = format!(
        "already stored with other content ({why}); the stored run is kept, force replaces it"
    );
    tracing::warn!(run = %path, "{error}");
    summary.conflicts += 1;
    let e = IngestProblem {
        run: path.to_string(),
        file: String::new(),
        error: error.clone(),
        severity: "warning",
    };
    summary.errors.push(e);
    Some(error)
}

/// How a run differs from the one stored under its name, if it does: its start or its
/// per-backend seconds.
async fn differs(store: &Store, record: &crate::model::RunRecord) -> Option<String> {
    let stored = store
        .runs()
        .run(&record.run.job_name, &record.run.build_id)
        .await
        .ok()??;
    if stored.run.started_at != record.run.started_at {
        return Some(format!(
            "started {} here, {} stored",
            record.run.started_at.to_rfc3339(),
            stored.run.started_at.to_rfc3339()
        ));
    }
    let seconds = |r: &crate::model::RunRecord| -> std::collections::BTreeMap<String, i64> {
        r.samples
            .iter()
            .map(|s| (s.backend.clone(), s.seconds))
            .collect()
    };
    let (new, old) = (seconds(record), seconds(&stored));
    let changed = new
        .keys()
        .chain(old.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|b| new.get(*b) != old.get(*b))
        .count();
    (changed > 0).then(|| format!("{changed} backend(s) with other seconds"))
}

/// Records what became of one run: counted in the summary, logged, and a line of the ingest log;
/// a run read whole is written first.
async fn record_outcome(
    store: &Store,
    source: &str,
    force: bool,
    outcome: RunOutcome,
    summary: &mut IngestSummary,
    log: &mut Vec<IngestLogEntry>,
) {
    let entry =
        |path: &str, job: &str, build: &str, file: &str, outcome, error: &str| IngestLogEntry {
            logged_at: Utc::now(),
            source: source.to_string(),
            run_path: path.to_string(),
            job_name: job.to_string(),
            build_id: build.to_string(),
            file: file.to_string(),
            outcome,
            error: error.to_string(),
        };

    match outcome {
        RunOutcome::Skipped { path, why } => {
            tracing::debug!(run = %path, "skipped: {why}");
            summary.skipped += 1;
        }
        RunOutcome::Failed {
            path,
            job,
            build,
            problems,
        } => {
            let logged = |file: &str, error: &str| {
                entry(&path, &job, &build, file, LogOutcome::Failed, error)
            };
            record_failure(&problems, &path, summary, log, logged);
        }
        RunOutcome::StorageFailed {
            path,
            job,
            build,
            error,
        } => {
            storage_failed(
                summary,
                log,
                entry(&path, &job, &build, "", LogOutcome::Failed, &error),
                &path,
                error,
            );
        }
        RunOutcome::Ready {
            record,
            warnings,
            path,
        } => {
            let (job, build) = (record.run.job_name.clone(), record.run.build_id.clone());
            match store.runs().write_run(&record, force).await {
                Ok(WriteOutcome::AlreadyStored) => {
                    summary.skipped += 1;
                    if let Some(error) = conflict(store, &record, &path, summary).await {
                        log.push(entry(&path, &job, &build, "", LogOutcome::Conflict, &error));
                    }
                }
                Ok(WriteOutcome::Inserted | WriteOutcome::Replaced) => {
                    summary.ingested += 1;
                    log.push(entry(&path, &job, &build, "", LogOutcome::Ingested, ""));
                    let logged = |file: &str, error: &str| {
                        entry(&path, &job, &build, file, LogOutcome::Warning, error)
                    };
                    record_warnings(warnings, &path, summary, log, logged);
                }
                Err(e) => {
                    let logged =
                        |error: &str| entry(&path, &job, &build, "", LogOutcome::Failed, error);
                    write_failed(&e, &path, summary, log, logged);
                }
            }
        }
    }
}

/// The problems of a run that failed: logged, in the ingest log and in the summary.
fn record_failure(
    problems: &[FileProblem],
    path: &str,
    summary: &mut IngestSummary,
    log: &mut Vec<IngestLogEntry>,
    logged: impl Fn(&str, &str) -> IngestLogEntry,
) {
    summary.failed += 1;
    for p in problems {
        tracing::warn!(run = %path, file = %p.file, "run not ingested: {}", p.error);
        summary.errors.push(IngestProblem {
            run: path.to_string(),
            file: p.file.clone(),
            error: p.error.clone(),
            severity: "failed",
        });
        log.push(logged(&p.file, &p.error));
    }
}

/// A run the database did not take: one whose content it refused counts as failed, any other
/// error as sheriff's own (see [`storage_failed`]); logged, in the ingest log and the summary.
fn write_failed(
    e: &StoreError,
    path: &str,
    summary: &mut IngestSummary,
    log: &mut Vec<IngestLogEntry>,
    logged: impl Fn(&str) -> IngestLogEntry,
) {
    if !e.refused_value() {
        let error = format!("storing the run failed: {e:#}");
        storage_failed(summary, log, logged(&error), path, error);
        return;
    }
    // the same content fails every time: a bad run, not one to retry
    let error = format!("the database refused a value of the run: {e:#}");
    tracing::warn!(run = %path, "run not ingested: {error}");
    summary.failed += 1;
    log.push(logged(&error));
    summary.errors.push(IngestProblem {
        run: path.to_string(),
        file: String::new(),
        error,
        severity: "failed",
    });
}

/// The warnings of a stored run: logged, in the ingest log and in the summary.
fn record_warnings(
    warnings: Vec<FileProblem>,
    path: &str,
    summary: &mut IngestSummary,
    log: &mut Vec<IngestLogEntry>,
    logged: impl Fn(&str, &str) -> IngestLogEntry,
) {
    for w in warnings {
        tracing::warn!(run = %path, file = %w.file, "{}", w.error);
        log.push(logged(&w.file, &w.error));
        summary.errors.push(IngestProblem {
            run: path.to_string(),
            file: w.file,
            error: w.error,
            severity: "warning",
        });
    }
}

/// A run sheriff could not store for a reason of its own: counted under `storage_failed`
/// (ingest exits 2, a push answers 503), logged, and named in the summary.
fn storage_failed(
    summary: &mut IngestSummary,
    log: &mut Vec<IngestLogEntry>,
    entry: IngestLogEntry,
    path: &str,
    error: String,
) {
    tracing::error!(run = %path, "{error}");
    summary.failed += 1;
    summary.storage_failed += 1;
    log.push(entry);
    summary.errors.push(IngestProblem {
        run: path.to_string(),
        file: String::new(),
        error,
        severity: "failed",
    });
}

/// Reads what sheriff needs of one run, unless it is stored already or still running.
async fn read_run(
    store: &Store,
    settings: &IngestSettings,
    source: &Source,
    options: &IngestOptions,
    listing: RunListing,
) -> RunOutcome {
    if let Some(outcome) = outcome_without_reading(store, settings, source, options, &listing).await
    {
        return outcome;
    }

    let (job, build) = layout::job_and_build(&listing.path);
    let path = listing.path.clone();
    let (files, left) = read_files(settings, source, &listing).await;
    let run_files = RunFiles {
        bucket: listing.bucket.clone(),
        path: path.clone(),
        files,
    };
    let assembled = tokio::task::spawn_blocking(move || assembly::assemble(&run_files)).await;
    match assembled {
        Ok(Assembly::Ready {
            mut record,
            warnings,
        }) => {
            if options
                .since
                .is_some_and(|since| record.run.started_at < since)
            {
                return RunOutcome::Skipped {
                    path,
                    why: "started before --since",
                };
            }
            record.interval_files = left;
            RunOutcome::Ready {
                record,
                warnings,
                path,
            }
        }
        Ok(Assembly::StillRunning) => RunOutcome::Skipped {
            path,
            why: "still running (no finished.json)",
        },
        Ok(Assembly::Failed { problems }) => RunOutcome::Failed {
            path,
            job,
            build,
            problems,
        },
        Err(e) => RunOutcome::Failed {
            path,
            job,
            build,
            problems: vec![FileProblem {
                file: String::new(),
                error: format!("parsing panicked: {e}"),
            }],
        },
    }
}

/// What becomes of a run before its artifacts are read, if that is decided already: stored
/// (without `force`), not wholly listed, still running, or started before `--since`.
async fn outcome_without_reading(
    store: &Store,
    settings: &IngestSettings,
    source: &Source,
    options: &IngestOptions,
    listing: &RunListing,
) -> Option<RunOutcome> {
    let (job, build) = layout::job_and_build(&listing.path);
    let path = listing.path.clone();
    if !options.force {
        match store.runs().has_run(&job, &build).await {
            Ok(true) => {
                return Some(RunOutcome::Skipped {
                    path,
                    why: "already stored",
                });
            }
            Ok(false) => {}
            Err(e) => {
                let error = format!("cannot tell whether the run is stored already: {e:#}");
                return Some(RunOutcome::StorageFailed {
                    path,
                    job,
                    build,
                    error,
                });
            }
        }
    }

    if let Some(why) = &listing.unlisted {
        let error = format!("its files cannot all be listed, so it is not read: {why}");
        return Some(RunOutcome::Failed {
            path,
            job,
            build,
            problems: vec![FileProblem {
                file: String::new(),
                error,
            }],
        });
    }

    if !listing.files.iter().any(|f| f.name == "finished.json") {
        return Some(RunOutcome::Skipped {
            path,
            why: "still running (no finished.json)",
        });
    }

    // With --since, a run that started earlier is skipped before its artifacts are read.
    if let Some(since) = options.since
        && let Some(started) = listing.files.iter().find(|f| f.name == "started.json")
        && let Ok(bytes) = source.read(started, settings.max_file_bytes).await
        && let Ok(s) = formats::prow::parse_started(&bytes)
        && s.timestamp < since
    {
        return Some(RunOutcome::Skipped {
            path,
            why: "started before --since",
        });
    }

    None
}

/// The files of a run that ingest reads (the interval files of one view only), and, on
/// demand, the interval files left where they are.
async fn read_files(
    settings: &IngestSettings,
    source: &Source,
    listing: &RunListing,
) -> (Vec<RunFile>, Vec<crate::model::IntervalFile>) {
    let intervals = preferred_interval_kind(listing);
    let on_demand = settings
        .intervals
        .on_demand(matches!(source, Source::Gcs { .. }));

    let mut files = Vec::new();
    let mut left = Vec::new();
    for f in &listing.files {
        let max = match classify(&f.name) {
            Classified::Read(
                k @ (FileKind::Events | FileKind::TimelineEverything | FileKind::Timeline),
            ) => {
                if Some(k) != intervals {
                    continue;
                }
                // on demand, only where it is; one too large is refused now, as when read
                if on_demand
                    && f.size <= settings.max_interval_file_bytes
                    && let Some(location) = source.location(f)
                {
                    left.push(crate::model::IntervalFile {
                        location,
                        size: f.size,
                    });
                    continue;
                }
                let content = source.open(f, settings.max_interval_file_bytes).await;
                files.push(RunFile {
                    name: f.name.clone(),
                    content,
                });
                continue;
            }
            Classified::Read(_) => settings.max_file_bytes,
            Classified::Odd(_) => {
                files.push(RunFile {
                    name: f.name.clone(),
                    content: Ok(Content::Bytes(Vec::new())),
                });
                continue;
            }
            Classified::Ignore => continue,
        };
        let content = source.read(f, max).await.map(Content::Bytes);
        files.push(RunFile {
            name: f.name.clone(),
            content,
        });
    }

    (files, left)
}

/// The one view of the intervals a run is read in: e2e-events (every interval), else the
/// `everything` timeline, else the other timelines — each is a view of the same intervals.
fn preferred_interval_kind(listing: &RunListing) -> Option<FileKind> {
    let kinds: Vec<FileKind> = listing
        .files
        .iter()
        .filter_map(|f| match classify(&f.name) {
            Classified::Read(k) => Some(k),
            _ => None,
        })
        .collect();
    [
        FileKind::Events,
        FileKind::TimelineEverything,
        FileKind::Timeline,
    ]
    .into_iter()
    .find(|k| kinds.contains(k))
}

/// The push API's entry: one run's files, sent by a CI system, parsed and stored like any other.
/// Storing is given up after `store_timeout` (the database hung): a storage failure, which the
/// pusher is told to retry.
pub(crate) async fn ingest_pushed_run(
    store: &Store,
    run: RunFiles,
    force: bool,
    store_timeout: Duration,
) -> Result<IngestSummary> {
    let mut summary = IngestSummary::default();
    let mut log = Vec::new();
    let (job, build) = layout::job_and_build(&run.path);
    let path = run.path.clone();
    let outcome = match tokio::task::spawn_blocking(move || assembly::assemble(&run)).await? {
        Assembly::Ready { record, warnings } => RunOutcome::Ready {
            record,
            warnings,
            path: path.clone(),
        },
        Assembly::StillRunning => RunOutcome::Failed {
            path: path.clone(),
            job: job.clone(),
            build: build.clone(),
            problems: vec![FileProblem {
                file: "finished.json".into(),
                error: "missing: push a run once it has finished".into(),
            }],
        },
        Assembly::Failed { problems } => RunOutcome::Failed {
            path: path.clone(),
            job: job.clone(),
            build: build.clone(),
            problems,
        },
    };

    let (job, build) = match &outcome {
        RunOutcome::Ready { record, .. } => {
            (record.run.job_name.clone(), record.run.build_id.clone())
        }
        _ => (job, build),
    };

    let stored = tokio::time::timeout(store_timeout, async {
        record_outcome(store, "push", force, outcome, &mut summary, &mut log).await;
        flush_log(store, &mut log).await;
    })
    .await;

    if stored.is_err() {
        let error = format!(
            "storage unavailable, retry later: the database did not answer within {}s",
            store_timeout.as_secs()
        );
        summary = IngestSummary::default();
        let entry = IngestLogEntry {
            logged_at: Utc::now(),
            source: "push".into(),
            run_path: path.clone(),
            job_name: job,
            build_id: build,
            file: String::new(),
            outcome: LogOutcome::Failed,
            error: error.clone(),
        };
        // the entry is not written: the database is what does not answer
        storage_failed(&mut summary, &mut Vec::new(), entry, &path, error);
    }

    Ok(summary)
}
