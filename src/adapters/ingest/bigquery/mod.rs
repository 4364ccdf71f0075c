//! The BigQuery source, `bq://PROJECT/DATASET`: the CI's own disruption tables, read
//! incrementally.
//!
//! The CI's disruption uploader loads every finished run into `BackendDisruption_JobRuns`
//! (the run: `Name`, `JobName`, `Status`, `StartTime`, `EndTime`, `ReleaseTag`,
//! `MasterNodesUpdated`) and `BackendDisruption` (one row per run and backend: `BackendName`,
//! `JobRunName`, `DisruptionSeconds`); `Jobs` holds each job's variants. One query joins them
//! (as the job-run aggregator does, on `JobRunName = Name`) for the runs that started after the
//! source's watermark minus `bigquery.overlap_hours`, ordered by run, and reads the result page
//! by page. Each run becomes the same [`RunRecord`] a bucket ingest makes of its files — the
//! payload from `ReleaseTag`, the dimensions from `Jobs` as cluster-data would give them and
//! the job-name rules for what `Jobs` lacks (the architecture) — and is stored through the same
//! path, under the same key (job, build id), so a run already stored from the bucket is not
//! stored again. Interval evidence is not in these tables: runs from BigQuery have none, unless
//! `ingest.intervals = "bigquery"` has attribution read it from the intervals table
//! (`interval_rows`). Older days can instead be backfilled as counts ([`backfill`]).

pub mod backfill;
pub(crate) mod interval_rows;

use std::time::Instant;

use chrono::{DateTime, Utc};

use super::assembly::{
    EARLIEST_START_SECS, FileProblem, MAX_BACKENDS_PER_RUN, MAX_CLOCK_SKEW_SECS,
};
use super::error::{IngestError, Result};
use super::formats::{cluster_data::ClusterData, disruption};
use super::{IngestOptions, IngestSummary, RunOutcome};
use crate::clients::bigquery::{BigQueryClient, Param, Query, Row};
use crate::config::BigQuerySettings;
use crate::model::{HOUR, IntervalFile, JobRun, RunRecord, Sample};
use crate::store::Store;

/// The bucket OpenShift CI writes its results to: a run's link when `Jobs` does not name one.
const DEFAULT_BUCKET: &str = "test-platform-results";

/// A dataset holding the CI's disruption tables, and the client that reads it.
#[derive(Clone)]
pub struct Dataset {
    pub client: BigQueryClient,
    pub project: String,
    pub dataset: String,
    /// Hours before the watermark read again.
    pub overlap_hours: u32,
    /// Where its runs' intervals are read on demand (`ingest.intervals = "bigquery"`), noted on
    /// each run it stores; None: its runs have no interval evidence.
    pub intervals: Option<String>,
}

impl Dataset {
    /// `bq://PROJECT/DATASET`. The names go into the SQL as a table path (identifiers cannot be
    /// query parameters), so only BigQuery's own characters for them are accepted.
    pub fn parse(spec: &str, settings: &BigQuerySettings) -> Result<Dataset> {
        let Some((project, dataset)) = parse_bq_url(spec) else {
            return Err(IngestError::NotABigQueryUrl(spec.to_string()));
        };
        Ok(Dataset {
            client: BigQueryClient::new(settings, &project)?,
            project,
            dataset,
            overlap_hours: settings.overlap_hours,
            intervals: None,
        })
    }

    /// The dataset whose runs' intervals are read on demand from `bigquery.intervals_table`.
    pub(crate) fn with_intervals(mut self, table: &str) -> Dataset {
        self.intervals = Some(interval_rows::location(&self.project, &self.dataset, table));
        self
    }

    pub fn describe(&self) -> String {
        format!("bq://{}/{}", self.project, self.dataset)
    }

    fn table(&self, name: &str) -> String {
        format!("`{}.{}.{name}`", self.project, self.dataset)
    }

    /// The row-by-row read: every backend row of the runs that started at or after `@since`,
    /// with the run and its job, ordered so a run's rows are together.
    fn runs_query(&self, since: i64) -> Query {
        let sql = format!(
            "SELECT r.JobName, r.Name, r.Status, UNIX_SECONDS(r.StartTime) AS StartTime, \
             UNIX_SECONDS(r.EndTime) AS EndTime, r.ReleaseTag, r.MasterNodesUpdated, \
             j.Platform, j.Network, j.IPMode, j.Topology, j.Release, j.FromRelease, \
             j.GCSBucketName, j.GCSJobHistoryLocationPrefix, b.BackendName, b.DisruptionSeconds \
             FROM {runs} AS r \
             LEFT JOIN {backends} AS b ON b.JobRunName = r.Name \
             LEFT JOIN {jobs} AS j ON j.JobName = r.JobName \
             WHERE r.StartTime >= TIMESTAMP_SECONDS(@since) \
             ORDER BY StartTime, r.JobName, r.Name, b.BackendName",
            runs = self.table("BackendDisruption_JobRuns"),
            backends = self.table("BackendDisruption"),
            jobs = self.table("Jobs"),
        );
        Query {
            name: "runs",
            sql,
            params: vec![("since", Param::Int(since))],
        }
    }
}

/// `bq://project/dataset` → (project, dataset), when both are plain BigQuery names.
pub(crate) fn parse_bq_url(spec: &str) -> Option<(String, String)> {
    let (project, dataset) = spec
        .strip_prefix("bq://")?
        .trim_end_matches('/')
        .split_once('/')?;
    let project_ok = (1..=128).contains(&project.len())
        && project
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | ':'));
    let dataset_ok = (1..=1024).contains(&dataset.len())
        && dataset
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    (project_ok && dataset_ok).then(|| (project.to_string(), dataset.to_string()))
}

/// The columns of [`Dataset::runs_query`], in order.
const COLUMNS: [&str; 17] = [
    "JobName",
    "Name",
    "Status",
    "StartTime",
    "EndTime",
    "ReleaseTag",
    "MasterNodesUpdated",
    "Platform",
    "Network",
    "IPMode",
    "Topology",
    "Release",
    "FromRelease",
    "GCSBucketName",
    "GCSJobHistoryLocationPrefix",
    "BackendName",
    "DisruptionSeconds",
];

/// Rows BigQuery sent that sheriff cannot read as its query's: the same answer fails the same
/// way every time.
#[derive(Debug, thiserror::Error)]
pub enum RowError {
    /// The answer's columns are not the ones `query` asks for.
    #[error("query `{query}`: BigQuery answered the columns {found:?}, not {expected:?}")]
    Columns {
        query: &'static str,
        found: Vec<String>,
        expected: &'static [&'static str],
    },
    /// `column` of a row of `query` should hold a whole number; the row as it came.
    #[error("query `{query}`: {column} is not a number: {row:?}")]
    NotANumber {
        query: &'static str,
        column: &'static str,
        row: Row,
    },
    /// A job name the backfill's job list cannot hold.
    #[error(
        "query `backfill_jobs`: the job name `{0}` holds `;` or `=`, which the backfill's job list cannot"
    )]
    JobName(String),
    /// Runs of a job that was not listed when the jobs were read.
    #[error(
        "query `backfill`: runs of the job `{0}` came in after its jobs were listed; backfill again"
    )]
    UnlistedJob(String),
}

/// Whether the answer to `query` has the columns it asks for.
fn check_columns(
    query: &'static str,
    found: &[String],
    expected: &'static [&'static str],
) -> Result<(), RowError> {
    if found == expected {
        return Ok(());
    }
    Err(RowError::Columns {
        query,
        found: found.to_vec(),
        expected,
    })
}

/// A column's index in [`COLUMNS`].
fn col(name: &str) -> usize {
    COLUMNS
        .iter()
        .position(|c| *c == name)
        .unwrap_or(usize::MAX)
}

fn text<'r>(row: &'r Row, name: &str) -> &'r str {
    row.get(col(name)).and_then(|v| v.as_deref()).unwrap_or("")
}

/// Ingests the runs of `dataset` that started after its watermark minus the overlap (or after
/// `--since`), stores those not stored yet, and moves the watermark to the latest start read.
pub async fn ingest(
    store: &Store,
    dataset: &Dataset,
    options: &IngestOptions,
) -> Result<IngestSummary> {
    let started = Instant::now();
    let source = dataset.describe();
    let since = read_since(store, dataset, options, &source).await?;
    let query = dataset.runs_query(since);
    let mut pages = dataset.client.query(&query).await?;
    check_columns("runs", pages.columns(), &COLUMNS)?;

    let mut summary = IngestSummary::default();
    let mut log = Vec::new();
    let mut read = ReadSoFar::default();
    let mut pending: Vec<Row> = Vec::new();
    while let Some(page) = pages.next_page().await? {
        for row in page {
            let same_run = pending.first().is_some_and(|p| {
                text(p, "JobName") == text(&row, "JobName") && text(p, "Name") == text(&row, "Name")
            });
            if !same_run && !pending.is_empty() {
                let run = std::mem::take(&mut pending);
                take_run(
                    store,
                    dataset,
                    options,
                    &run,
                    &mut summary,
                    &mut log,
                    &mut read,
                )
                .await;
            }
            pending.push(row);
        }
        if log.len() >= 500 {
            super::flush_log(store, &mut log).await;
        }
    }
    if !pending.is_empty() {
        take_run(
            store,
            dataset,
            options,
            &pending,
            &mut summary,
            &mut log,
            &mut read,
        )
        .await;
    }
    super::flush_log(store, &mut log).await;

    // Runs of other jobs were read but not taken under --job: the watermark stays before them.
    if let Some(next) = read.next_watermark().filter(|_| options.job.is_none()) {
        store
            .ingest_log()
            .advance_watermark(&source, next, Utc::now().timestamp())
            .await?;
    }
    tracing::info!(
        source = %source,
        rows = pages.rows_read,
        pages = pages.pages_read,
        ingested = summary.ingested,
        skipped = summary.skipped,
        failed = summary.failed,
        seconds = started.elapsed().as_secs_f64(),
        "ingest finished"
    );
    Ok(summary)
}

/// The start from which `dataset`'s runs are read: its watermark minus the overlap (none with
/// `force`), or `--since` when later, moved past the days already backfilled.
async fn read_since(
    store: &Store,
    dataset: &Dataset,
    options: &IngestOptions,
    source: &str,
) -> Result<i64> {
    let watermark = if options.force {
        None
    } else {
        store.ingest_log().watermark(source).await?
    };
    let overlap = i64::from(dataset.overlap_hours) * HOUR;
    let since = [
        watermark.map(|w| w - overlap),
        options.since.map(|s| s.timestamp()),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(0);
    // runs of backfilled days were counted, not stored: they are not read again
    let since = store.backfills().past_backfilled_days(since).await?;
    tracing::info!(source = %source, since, watermark, "reading runs from BigQuery");
    Ok(since)
}

/// What the rows read tell the next watermark.
#[derive(Default)]
struct ReadSoFar {
    /// The latest start of a run read and taken (stored, already stored, or refused for its data).
    latest_start: Option<i64>,
    /// The earliest start of a run sheriff could not store for its own reasons.
    earliest_unstored: Option<i64>,
}

impl ReadSoFar {
    /// The watermark to move to, if any: the latest start read, but before the earliest run
    /// not stored for sheriff's own reasons, which must be read again.
    fn next_watermark(&self) -> Option<i64> {
        match (self.latest_start, self.earliest_unstored) {
            (Some(latest), Some(unstored)) => Some(latest.min(unstored - 1)),
            (latest, None) => latest,
            (None, Some(_)) => None,
        }
    }
}

/// One run's rows: skipped when stored already, else assembled and stored like a bucket run
/// (with the place of its intervals, when they are read from BigQuery).
async fn take_run(
    store: &Store,
    dataset: &Dataset,
    options: &IngestOptions,
    rows: &[Row],
    summary: &mut IngestSummary,
    log: &mut Vec<crate::store::ingest_log::IngestLogEntry>,
    read: &mut ReadSoFar,
) {
    let (job, build) = (
        text(&rows[0], "JobName").to_string(),
        text(&rows[0], "Name").to_string(),
    );
    if options.job.as_ref().is_some_and(|re| !re.is_match(&job)) {
        return;
    }
    let start = text(&rows[0], "StartTime").parse::<i64>().ok();
    let path = run_path(&rows[0]);
    let stored = if options.force {
        Ok(false)
    } else {
        store.runs().has_run(&job, &build).await
    };

    let outcome = match stored {
        Ok(true) => RunOutcome::Skipped {
            path,
            why: "already stored",
        },
        Err(e) => {
            let error = format!("cannot tell whether the run is stored already: {e:#}");
            RunOutcome::StorageFailed {
                path,
                job,
                build,
                error,
            }
        }
        Ok(false) => match assemble(rows) {
            Ok((mut record, warnings)) => {
                if let Some(location) = &dataset.intervals {
                    record.interval_files = vec![IntervalFile {
                        location: location.clone(),
                        size: 0,
                    }];
                }
                RunOutcome::Ready {
                    record: Box::new(record),
                    warnings,
                    path,
                }
            }
            Err(problems) => RunOutcome::Failed {
                path,
                job,
                build,
                problems,
            },
        },
    };

    let storage_failed_before = summary.storage_failed;
    super::record_outcome(
        store,
        &dataset.describe(),
        options.force,
        outcome,
        summary,
        log,
    )
    .await;

    if let Some(start) = start {
        if summary.storage_failed > storage_failed_before {
            read.earliest_unstored = Some(read.earliest_unstored.map_or(start, |e| e.min(start)));
        } else {
            read.latest_start = Some(read.latest_start.map_or(start, |l| l.max(start)));
        }
    }
}

/// The run folder the CI would have written the run to: the job's history prefix and build.
fn run_path(row: &Row) -> String {
    let (job, build) = (text(row, "JobName"), text(row, "Name"));
    match text(row, "GCSJobHistoryLocationPrefix").trim_end_matches('/') {
        "" => format!("logs/{job}/{build}"),
        prefix => format!("{prefix}/{build}"),
    }
}

/// One run's rows (one per backend) as the record a bucket ingest makes of the run's files.
pub(crate) fn assemble(rows: &[Row]) -> Result<(RunRecord, Vec<FileProblem>), Vec<FileProblem>> {
    let first = &rows[0];
    let problem = |file: &str, error: String| FileProblem {
        file: file.to_string(),
        error,
    };

    let (job_name, build_id) = (
        text(first, "JobName").to_string(),
        text(first, "Name").to_string(),
    );

    if job_name.is_empty() || build_id.is_empty() {
        return Err(vec![problem(
            "",
            "a BackendDisruption_JobRuns row without JobName or Name".into(),
        )]);
    }

    let seconds_of = |name: &str| text(first, name).parse::<i64>().ok();
    let Some(start) = seconds_of("StartTime") else {
        return Err(vec![problem(
            "StartTime",
            "the run has no start time".into(),
        )]);
    };

    let latest = Utc::now().timestamp() + MAX_CLOCK_SKEW_SECS;
    if !(EARLIEST_START_SECS..=latest).contains(&start) {
        let why =
            format!("the start time {start} is before the year 2000 or more than a day from now");
        return Err(vec![problem("StartTime", why)]);
    }

    let started_at = at(start);
    let mut warnings = Vec::new();
    let finished_at = match seconds_of("EndTime") {
        Some(end) if end < start || end > latest => {
            warnings.push(problem(
                "EndTime",
                format!(
                    "the end {end} is before the start {start} or in the future; taken as the start"
                ),
            ));
            Some(started_at)
        }
        end => end.map(at),
    };

    let samples = samples(rows, &mut warnings);
    if samples.len() > MAX_BACKENDS_PER_RUN {
        let why = format!(
            "{} backends, more than the {MAX_BACKENDS_PER_RUN} a run can hold",
            samples.len()
        );
        return Err(vec![problem("BackendDisruption", why)]);
    }

    if samples.is_empty() {
        let why = "no BackendDisruption rows: the run has no disruption data and is stored without samples";
        warnings.push(problem("BackendDisruption", why.into()));
    }

    let run = job_run(first, job_name, build_id, started_at, finished_at);
    let record = RunRecord {
        run,
        samples,
        outages: Vec::new(),
        conditions: Vec::new(),
        interval_files: Vec::new(),
        timeline: Vec::new(),
    };

    Ok((record, warnings))
}

/// The run's identity, times, link, state, payload and dimensions, from its first row.
fn job_run(
    first: &Row,
    job_name: String,
    build_id: String,
    started_at: DateTime<Utc>,
    finished_at: Option<DateTime<Utc>>,
) -> JobRun {
    let (variants, has_job) = cluster_data_of(|name| text(first, name));
    let dimensions = super::assembly::dimensions(&job_name, &variants, has_job, None);
    let bucket = match text(first, "GCSBucketName") {
        "" => DEFAULT_BUCKET.to_string(),
        b => b.to_string(),
    };
    let path = run_path(first);
    let state = match text(first, "Status").trim().to_ascii_lowercase() {
        s if s.is_empty() => "unknown".to_string(),
        s => s,
    };
    JobRun {
        url: JobRun::prow_url(&bucket, &path),
        job_type: job_type(&job_name, &path).into(),
        payload: text(first, "ReleaseTag").to_string(),
        from_payload: String::new(),
        job_name,
        build_id,
        bucket,
        path,
        started_at,
        finished_at,
        state,
        dimensions,
    }
}

/// The run's samples: each backend once (a row loaded twice counts once), its seconds held
/// within 0 s and one day as a bucket ingest holds them.
fn samples(rows: &[Row], warnings: &mut Vec<FileProblem>) -> Vec<Sample> {
    let mut by_backend = std::collections::BTreeMap::<String, i64>::new();
    for row in rows {
        let backend = text(row, "BackendName");
        if backend.is_empty() {
            continue;
        }
        let Ok(seconds) = text(row, "DisruptionSeconds").parse::<i64>() else {
            let why = format!(
                "{backend}: DisruptionSeconds is not a whole number; the backend is left out"
            );
            warnings.push(FileProblem {
                file: "BackendDisruption".into(),
                error: why,
            });
            continue;
        };
        let seconds = seconds.clamp(0, disruption::MAX_RUN_SECONDS);
        let entry = by_backend.entry(backend.to_string()).or_insert(seconds);
        *entry = (*entry).max(seconds);
    }
    by_backend
        .into_iter()
        .map(|(backend, seconds)| {
            let connection = if backend.ends_with("-new-connections") {
                "new"
            } else if backend.ends_with("-reused-connections") {
                "reused"
            } else {
                ""
            };
            Sample {
                connection: connection.into(),
                backend,
                seconds,
            }
        })
        .collect()
}

/// The job's variants (from `Jobs`) and the run's updated masters as cluster-data would give
/// them, and whether `Jobs` knew the job; `text` gives a column's value by name.
pub(crate) fn cluster_data_of<'r>(text: impl Fn(&'static str) -> &'r str) -> (ClusterData, bool) {
    let has_job = !text("GCSBucketName").is_empty() || !text("Platform").is_empty();
    let variants = ClusterData {
        release: text("Release").into(),
        from_release: text("FromRelease").into(),
        platform: text("Platform").into(),
        // Jobs has no architecture column: the job-name rules give it
        architecture: String::new(),
        network: text("Network").into(),
        topology: text("Topology").into(),
        network_stack: text("IPMode").into(),
        master_nodes_updated: text("MasterNodesUpdated").into(),
        cluster_version_history: Vec::new(),
    };
    (variants, has_job)
}

/// What kind of Prow job ran, from its name (BigQuery does not say): `pull-ci-…` are
/// presubmits, `branch-ci-…` postsubmits, and the rest periodics, as in the bucket's layout.
fn job_type(job: &str, path: &str) -> &'static str {
    if job.starts_with("pull-ci-") || path.starts_with("pr-logs/") {
        "presubmit"
    } else if job.starts_with("branch-ci-") {
        "postsubmit"
    } else {
        "periodic"
    }
}

fn at(seconds: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(seconds, 0).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "periodic-ci-openshift-release-master-nightly-4.14-upgrade-from-stable-4.13-e2e-metal-ipi-sdn-bm-upgrade";

    fn row(backend: Option<&str>, seconds: &str) -> Row {
        let mut r: Row = vec![None; COLUMNS.len()];
        let mut set = |name: &str, v: &str| r[col(name)] = Some(v.to_string());
        set("JobName", JOB);
        set("Name", "1700000000000000001");
        set("Status", "Success");
        set("StartTime", "1700000000");
        set("EndTime", "1700007200");
        set("ReleaseTag", "4.14.0-0.nightly-2023-11-14-101010");
        set("MasterNodesUpdated", "Y");
        set("Platform", "metal");
        set("Network", "sdn");
        set("IPMode", "ipv4");
        set("Topology", "ha");
        set("Release", "4.14");
        set("FromRelease", "4.13");
        set("GCSBucketName", "test-platform-results");
        set("GCSJobHistoryLocationPrefix", &format!("logs/{JOB}"));
        if let Some(b) = backend {
            set("BackendName", b);
            set("DisruptionSeconds", seconds);
        }
        r
    }

    #[test]
    fn a_runs_rows_make_the_record_a_bucket_ingest_makes() {
        let rows = vec![
            row(Some("image-registry-new-connections"), "31"),
            row(Some("kube-api-reused-connections"), "2"),
        ];
        let (record, warnings) = assemble(&rows).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let r = &record.run;
        assert_eq!(
            (r.job_name.as_str(), r.build_id.as_str()),
            (JOB, "1700000000000000001")
        );
        assert_eq!(r.path, format!("logs/{JOB}/1700000000000000001"));
        assert_eq!(r.payload, "4.14.0-0.nightly-2023-11-14-101010");
        assert_eq!(
            (r.state.as_str(), r.job_type.as_str()),
            ("success", "periodic")
        );
        let d = &r.dimensions;
        assert_eq!(
            (
                d.release.as_str(),
                d.from_release.as_str(),
                d.upgrade_type.as_str()
            ),
            ("4.14", "4.13", "minor")
        );
        assert_eq!(
            (d.platform.as_str(), d.network.as_str(), d.topology.as_str()),
            ("metal", "sdn", "ha")
        );
        // the architecture is not in Jobs: the job-name rules give it
        assert_eq!(d.architecture, "amd64");
        assert_eq!(d.master_nodes_updated, "Y");
        let samples: Vec<_> = record
            .samples
            .iter()
            .map(|s| (s.backend.as_str(), s.connection.as_str(), s.seconds))
            .collect();
        assert_eq!(
            samples,
            [
                ("image-registry-new-connections", "new", 31),
                ("kube-api-reused-connections", "reused", 2)
            ]
        );
    }

    #[test]
    fn a_backend_loaded_twice_counts_once_and_seconds_are_held_within_a_day() {
        let rows = vec![
            row(Some("a-new-connections"), "5"),
            row(Some("a-new-connections"), "5"),
            row(Some("b"), "999999"),
        ];
        let (record, _) = assemble(&rows).unwrap();
        let seconds: Vec<i64> = record.samples.iter().map(|s| s.seconds).collect();
        assert_eq!(seconds, [5, disruption::MAX_RUN_SECONDS]);
    }

    #[test]
    fn a_run_without_backend_rows_is_stored_without_samples_and_a_warning() {
        let (record, warnings) = assemble(&[row(None, "")]).unwrap();
        assert!(record.samples.is_empty());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn a_start_in_the_future_is_refused() {
        let mut r = row(Some("a"), "1");
        r[col("StartTime")] = Some((Utc::now().timestamp() + 3 * 86_400).to_string());
        assert!(assemble(&[r]).is_err());
    }

    #[test]
    fn other_columns_are_refused_naming_the_query_and_both_lists() {
        let found = vec!["JobName".to_string()];
        let e = check_columns("runs", &found, &["JobName", "Name"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"query `runs`: BigQuery answered the columns ["JobName"], not ["JobName", "Name"]"#
        );
        assert!(check_columns("runs", &found, &["JobName"]).is_ok());
    }

    #[test]
    fn bq_urls_take_only_plain_names() {
        assert_eq!(
            parse_bq_url("bq://openshift-ci-data-analysis/ci_data"),
            Some(("openshift-ci-data-analysis".into(), "ci_data".into()))
        );
        assert_eq!(parse_bq_url("bq://p/d/"), Some(("p".into(), "d".into())));
        assert_eq!(parse_bq_url("bq://p/d`; DROP TABLE x"), None);
        assert_eq!(parse_bq_url("bq://p`x/d"), None);
        assert_eq!(parse_bq_url("bq://p"), None);
        assert_eq!(parse_bq_url("gs://p/d"), None);
    }
}
