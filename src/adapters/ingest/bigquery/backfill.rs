//! The push-down backfill, `sheriff ingest bq://PROJECT/DATASET --backfill --from DATE`: the
//! day histograms of whole UTC days read from BigQuery as counts, not as runs.
//!
//! A run-by-run read returns a row per run and backend; over months that is millions of rows
//! carried out of BigQuery only to be counted. Here BigQuery does the counting. A first query
//! lists the jobs that ran on those days with their `Jobs` columns, and sheriff gives each its
//! variant as a run of it gets one (the job-name rules add what `Jobs` lacks); the second, given
//! that list, brings each run to the samples a run-by-run ingest makes of it (a backend loaded
//! twice counts once, at its largest seconds; seconds held within 0 s and a day; a run with
//! more backends than a run can hold left out) and returns, per variant, updated masters, day,
//! down probes, backend and seconds, how many runs. A run's job is kept only where the
//! CI-trouble rules need it: on its probes' rows (their counts per job and day tell which probes
//! are broken for the job) and on the rows of runs with a probe down (troubled unless that probe
//! is broken). sheriff then leaves the troubled runs out and adds the counts to the day
//! histograms, sealing the days (see [`crate::store::Store::backfills`]).
//!
//! What a backfill does not store: the runs themselves (`job_runs`, their samples, payloads and
//! links), so no run of those days can be a sample in evidence, a payload in a changelog or a
//! run counted for data quality.

use std::collections::HashMap;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{Dataset, RowError, cluster_data_of};
use crate::adapters::ingest::assembly::MAX_BACKENDS_PER_RUN;
use crate::adapters::ingest::error::{IngestError, Result};
use crate::adapters::ingest::formats::disruption::MAX_RUN_SECONDS;
use crate::clients::bigquery::{Param, Query, Row};
use crate::model::{DAY, Dimensions, HOUR, TroubleRules};
use crate::store::Store;
use crate::store::backfills::{Backfill, BackfillReport, CellCount};

/// What `--backfill` did, also its JSON output.
#[derive(Debug, Clone, Serialize)]
pub struct BackfillSummary {
    pub source: String,
    /// The first day and the day after the last (UTC, YYYY-MM-DD).
    pub from: String,
    pub to: String,
    /// Rows BigQuery returned: one per job, then one per group (not one per run and backend).
    pub rows: u64,
    #[serde(flatten)]
    pub report: BackfillReport,
    pub seconds: f64,
}

/// The columns of [`Dataset::counts_query`], in order.
const COLUMNS: [&str; 9] = [
    "Variant",
    "Job",
    "MasterNodesUpdated",
    "Day",
    "DownProbes",
    "BackendName",
    "Seconds",
    "Runs",
    "FirstStart",
];

/// The columns of [`Dataset::jobs_query`], in order.
const JOB_COLUMNS: [&str; 8] = [
    "JobName",
    "Platform",
    "Network",
    "IPMode",
    "Topology",
    "Release",
    "FromRelease",
    "GCSBucketName",
];

impl Dataset {
    /// The jobs of the runs that started in `days`, with their variant columns from `Jobs`.
    fn jobs_query(&self, days: &std::ops::Range<i64>) -> Query {
        let sql = format!(
            "WITH jobs AS (SELECT JobName, ANY_VALUE(Platform) AS Platform, ANY_VALUE(Network) AS Network, \
             ANY_VALUE(IPMode) AS IPMode, ANY_VALUE(Topology) AS Topology, ANY_VALUE(Release) AS Release, \
             ANY_VALUE(FromRelease) AS FromRelease, ANY_VALUE(GCSBucketName) AS GCSBucketName \
             FROM {jobs} GROUP BY JobName) \
             SELECT r.JobName, j.Platform, j.Network, j.IPMode, j.Topology, j.Release, j.FromRelease, \
             j.GCSBucketName FROM {runs} AS r LEFT JOIN jobs AS j ON j.JobName = r.JobName \
             WHERE r.StartTime >= TIMESTAMP_SECONDS(@from) AND r.StartTime < TIMESTAMP_SECONDS(@to) \
             AND r.JobName <> '' \
             GROUP BY r.JobName, j.Platform, j.Network, j.IPMode, j.Topology, j.Release, j.FromRelease, \
             j.GCSBucketName",
            runs = self.table("BackendDisruption_JobRuns"),
            jobs = self.table("Jobs"),
        );
        let params = vec![
            ("from", Param::Int(days.start * DAY)),
            ("to", Param::Int(days.end * DAY)),
        ];
        Query {
            name: "backfill_jobs",
            sql,
            params,
        }
    }

    /// The push-down read: per variant, day, down probes, backend and seconds, how many runs
    /// started in `days`. `@variants` maps each job to its variant (`job=n;…`); a run's job is
    /// kept only where sheriff needs it: its CI network probes, and runs with one down.
    fn counts_query(
        &self,
        days: &std::ops::Range<i64>,
        rules: &TroubleRules,
        variants: String,
    ) -> Query {
        let sql = format!(
            "WITH variants AS (SELECT SPLIT(e, '=')[OFFSET(0)] AS JobName, \
             CAST(SPLIT(e, '=')[OFFSET(1)] AS INT64) AS Variant FROM UNNEST(SPLIT(@variants, ';')) AS e), \
             samples AS (SELECT r.JobName, r.Name, b.BackendName, MAX(b.DisruptionSeconds) AS MaxSeconds, \
             ANY_VALUE(UNIX_SECONDS(r.StartTime)) AS Start, ANY_VALUE(r.MasterNodesUpdated) AS MasterNodesUpdated, \
             COUNT(*) OVER (PARTITION BY r.JobName, r.Name) AS Backends \
             FROM {runs} AS r JOIN {backends} AS b ON b.JobRunName = r.Name \
             WHERE r.StartTime >= TIMESTAMP_SECONDS(@from) AND r.StartTime < TIMESTAMP_SECONDS(@to) \
             AND r.JobName <> '' AND r.Name <> '' AND b.BackendName <> '' AND b.DisruptionSeconds IS NOT NULL \
             GROUP BY r.JobName, r.Name, b.BackendName), \
             down AS (SELECT JobName, Name, STRING_AGG(IF(REGEXP_CONTAINS(BackendName, @liveness) \
             AND MaxSeconds > @allowance, BackendName, NULL), ' ' ORDER BY BackendName) AS DownProbes \
             FROM samples GROUP BY JobName, Name) \
             SELECT v.Variant, IF(v.Variant IS NULL OR d.DownProbes IS NOT NULL \
             OR REGEXP_CONTAINS(s.BackendName, @liveness), s.JobName, NULL) AS Job, s.MasterNodesUpdated, \
             DIV(s.Start, @day) AS Day, d.DownProbes, s.BackendName, \
             LEAST(GREATEST(s.MaxSeconds, 0), @max_seconds) AS Seconds, COUNT(*) AS Runs, MIN(s.Start) AS FirstStart \
             FROM samples AS s JOIN down AS d ON d.JobName = s.JobName AND d.Name = s.Name \
             LEFT JOIN variants AS v ON v.JobName = s.JobName \
             WHERE s.Backends <= @max_backends \
             GROUP BY v.Variant, Job, s.MasterNodesUpdated, Day, d.DownProbes, s.BackendName, Seconds",
            runs = self.table("BackendDisruption_JobRuns"),
            backends = self.table("BackendDisruption"),
        );

        let params = vec![
            ("variants", Param::Text(variants)),
            ("from", Param::Int(days.start * DAY)),
            ("to", Param::Int(days.end * DAY)),
            ("day", Param::Int(DAY)),
            ("liveness", Param::Text(liveness_pattern(&rules.liveness))),
            ("allowance", Param::Int(rules.liveness_allowance_seconds)),
            ("max_seconds", Param::Int(MAX_RUN_SECONDS)),
            ("max_backends", Param::Int(MAX_BACKENDS_PER_RUN as i64)),
        ];

        Query {
            name: "backfill",
            sql,
            params,
        }
    }
}

/// The variants of the jobs in `days` (their updated masters aside, which each run tells):
/// the distinct variants, each job's as `job=n;…` for the counts query, and the rows read.
async fn job_variants(
    dataset: &Dataset,
    days: &std::ops::Range<i64>,
) -> Result<(Vec<Dimensions>, String, u64)> {
    let mut pages = dataset.client.query(&dataset.jobs_query(days)).await?;
    super::check_columns("backfill_jobs", pages.columns(), &JOB_COLUMNS)?;
    let mut variants: Vec<Dimensions> = Vec::new();
    let mut index: HashMap<Dimensions, usize> = HashMap::new();
    let mut map = Vec::new();
    while let Some(page) = pages.next_page().await? {
        for row in page {
            let (job, dimensions) = job_variant(&row)?;
            let n = *index.entry(dimensions.clone()).or_insert_with(|| {
                variants.push(dimensions);
                variants.len() - 1
            });
            map.push(format!("{job}={n}"));
        }
    }
    Ok((variants, map.join(";"), pages.rows_read))
}

/// The liveness globs (`*` for any text) as one anchored RE2 pattern.
fn liveness_pattern(globs: &[String]) -> String {
    if globs.is_empty() {
        // matches nothing: no backend is a probe
        return "^$".into();
    }
    let alternatives: Vec<String> = globs
        .iter()
        .map(|g| {
            g.split('*')
                .map(regex::escape)
                .collect::<Vec<_>>()
                .join(".*")
        })
        .collect();
    format!("^(?:{})$", alternatives.join("|"))
}

/// Fills the day histograms of `from..to` from BigQuery's counts and seals the days; the
/// source's watermark moves to the end of the days, so an incremental ingest goes on from there.
pub async fn backfill(
    store: &Store,
    dataset: &Dataset,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<BackfillSummary> {
    let started = Instant::now();
    let days = from.timestamp().div_euclid(DAY)..to.timestamp().div_euclid(DAY);
    let latest_end =
        (Utc::now().timestamp() - i64::from(dataset.overlap_hours) * HOUR).div_euclid(DAY);

    if days.is_empty() {
        return Err(IngestError::EmptyRange);
    }

    if days.end > latest_end {
        return Err(IngestError::TooRecent {
            to: day_name(days.end),
            overlap_hours: dataset.overlap_hours,
            latest: day_name(latest_end),
        });
    }

    let source = dataset.describe();
    tracing::info!(source = %source, from = %day_name(days.start), to = %day_name(days.end), "backfilling day histograms from BigQuery");
    let (variants, map, job_rows) = job_variants(dataset, &days).await?;
    let query = dataset.counts_query(&days, &store.trouble().rules(), map);
    let mut pages = dataset.client.query(&query).await?;
    super::check_columns("backfill", pages.columns(), &COLUMNS)?;
    let mut counts = Vec::new();
    while let Some(page) = pages.next_page().await? {
        for row in page {
            counts.push(count_of(&row, &variants)?);
        }
    }

    let rows = job_rows + pages.rows_read;
    let backfill = Backfill {
        source: &source,
        days: days.clone(),
        rows_read: rows,
        counts: &counts,
    };

    let report = store.backfills().write_backfill(&backfill).await?;
    store
        .ingest_log()
        .advance_watermark(&source, days.end * DAY - 1, Utc::now().timestamp())
        .await?;

    let summary = BackfillSummary {
        source,
        from: day_name(days.start),
        to: day_name(days.end),
        rows,
        report,
        seconds: started.elapsed().as_secs_f64(),
    };

    tracing::info!(
        source = %summary.source,
        rows = summary.rows,
        samples = summary.report.samples,
        troubled = summary.report.troubled_samples,
        seconds = summary.seconds,
        "backfill finished"
    );

    Ok(summary)
}

/// One row of the jobs query: the job and its variant, as a run of it gets it (the job-name
/// rules giving what `Jobs` lacks), its updated masters aside.
fn job_variant(row: &Row) -> Result<(String, Dimensions), RowError> {
    let text = |name: &'static str| {
        let i = JOB_COLUMNS
            .iter()
            .position(|c| *c == name)
            .unwrap_or(usize::MAX);
        row.get(i).and_then(|v| v.as_deref()).unwrap_or("")
    };
    let job = text("JobName");
    if job.contains([';', '=']) {
        return Err(RowError::JobName(job.to_string()));
    }
    let (cluster_data, has_job) = cluster_data_of(text);
    Ok((
        job.to_string(),
        crate::adapters::ingest::assembly::dimensions(job, &cluster_data, has_job, None),
    ))
}

/// One row of the counts query as the count it is, with its variant (of `variants`, the run's
/// updated masters added).
fn count_of(row: &Row, variants: &[Dimensions]) -> Result<CellCount, RowError> {
    let text = |name: &'static str| column(row, name);
    let number = |name: &'static str| -> Result<i64, RowError> {
        text(name).parse().map_err(|_| RowError::NotANumber {
            query: "backfill",
            column: name,
            row: row.clone(),
        })
    };
    let Some(variant) = text("Variant")
        .parse::<usize>()
        .ok()
        .and_then(|n| variants.get(n))
    else {
        return Err(RowError::UnlistedJob(text("Job").to_string()));
    };
    let mut dimensions = variant.clone();
    dimensions.master_nodes_updated = text("MasterNodesUpdated").to_string();
    Ok(CellCount {
        job: text("Job").to_string(),
        dimensions,
        day: number("Day")?,
        down_probes: text("DownProbes")
            .split_whitespace()
            .map(str::to_string)
            .collect(),
        backend: text("BackendName").to_string(),
        seconds: number("Seconds")?.clamp(0, MAX_RUN_SECONDS),
        runs: u64::try_from(number("Runs")?).unwrap_or(0),
        first_start: number("FirstStart")?,
    })
}

/// A column's value in a row of the counts query ("" for NULL).
fn column<'r>(row: &'r Row, name: &str) -> &'r str {
    let i = COLUMNS
        .iter()
        .position(|c| *c == name)
        .unwrap_or(usize::MAX);
    row.get(i).and_then(|v| v.as_deref()).unwrap_or("")
}

/// A UTC day number as YYYY-MM-DD.
fn day_name(day: i64) -> String {
    DateTime::from_timestamp(day * DAY, 0)
        .map_or_else(|| day.to_string(), |d| d.format("%Y-%m-%d").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness_globs_become_one_anchored_pattern_matching_as_the_globs_do() {
        let rules = TroubleRules::default();
        let re = regex::Regex::new(&liveness_pattern(&rules.liveness)).unwrap();
        for backend in [
            "ci-cluster-network-liveness-new-connections",
            "gcp-network-liveness-reused-connections",
            "image-registry-new-connections",
            "network-liveness-new",
            "x.network-liveness-y",
        ] {
            assert_eq!(
                re.is_match(backend),
                rules.is_liveness(backend),
                "{backend}"
            );
        }
        let dots = liveness_pattern(&["a.b*".to_string()]);
        assert!(
            !regex::Regex::new(&dots).unwrap().is_match("axb-c"),
            "{dots}"
        );
        assert!(
            !regex::Regex::new(&liveness_pattern(&[]))
                .unwrap()
                .is_match("anything")
        );
    }

    #[test]
    fn a_job_gets_the_variant_a_run_of_it_gets_and_each_count_its_runs_updated_masters() {
        const JOB: &str = "periodic-ci-openshift-release-master-nightly-4.14-upgrade-from-stable-4.13-e2e-metal-ipi-sdn-bm-upgrade";
        let row = |values: &[&str]| -> Row { values.iter().map(|v| Some(v.to_string())).collect() };
        let (job, variant) = job_variant(&row(&[
            JOB,
            "metal",
            "sdn",
            "ipv4",
            "ha",
            "4.14",
            "4.13",
            "test-platform-results",
        ]))
        .unwrap();
        assert_eq!(job, JOB);
        assert_eq!(
            (
                variant.release.as_str(),
                variant.from_release.as_str(),
                variant.upgrade_type.as_str()
            ),
            ("4.14", "4.13", "minor")
        );
        // the architecture is not in Jobs: the job-name rules give it
        assert_eq!(
            (variant.platform.as_str(), variant.architecture.as_str()),
            ("metal", "amd64")
        );
        assert!(job_variant(&row(&["a;b", "", "", "", "", "", "", ""])).is_err());

        let values = [
            "0",
            JOB,
            "Y",
            "19675",
            "ci-cluster-network-liveness-new-connections",
            "image-registry",
            "31",
            "4",
            "1700000000",
        ];
        let count = count_of(&row(&values), std::slice::from_ref(&variant)).unwrap();
        assert_eq!(count.dimensions.master_nodes_updated, "Y");
        assert_eq!(count.dimensions.platform, "metal");
        assert_eq!(
            (count.day, count.seconds, count.runs, count.first_start),
            (19675, 31, 4, 1_700_000_000)
        );
        assert_eq!(
            count.down_probes,
            ["ci-cluster-network-liveness-new-connections"]
        );
        let mut unlisted = values;
        unlisted[0] = "";
        assert!(
            count_of(&row(&unlisted), &[variant]).is_err(),
            "a job the first query did not list"
        );
    }
}
