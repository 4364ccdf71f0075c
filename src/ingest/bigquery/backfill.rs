//! The push-down backfill, `sheriff ingest bq://PROJECT/DATASET --backfill --from DATE`: the
//! day histograms of whole UTC days read from BigQuery as counts, not as runs.
//!
//! A run-by-run read returns a row per run and backend; over months that is millions of rows
//! carried out of BigQuery only to be counted. Here BigQuery does the counting: one query
//! groups the runs' backend rows by job, the job's variant columns, day, the run's CI network
//! probes that were down, backend and seconds, and returns how many runs fell in each group.
//! Each run is first brought to the samples a run-by-run ingest makes of it (a backend loaded
//! twice counts once, at its largest seconds; seconds held within 0 s and a day; a run with
//! more backends than a run can hold left out), so the histograms come out the same. sheriff
//! then gives each group its variant (the job-name rules add what `Jobs` lacks), leaves out the
//! runs its CI-trouble rules leave out, and adds the counts to the day histograms, sealing the
//! days (see [`crate::store::backfills`]).
//!
//! What a backfill does not store: the runs themselves (`job_runs`, their samples, payloads and
//! links), so no run of those days can be a sample in evidence, a payload in a changelog or a
//! run counted for data quality.

use std::time::Instant;

use anyhow::{Result, bail};
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::client::{Param, Query, Row};
use super::{Dataset, cluster_data_of};
use crate::ingest::formats::disruption::MAX_RUN_SECONDS;
use crate::ingest::run::MAX_BACKENDS_PER_RUN;
use crate::model::TroubleRules;
use crate::store::Store;
use crate::store::backfills::{Backfill, BackfillReport, CellCount};

/// What `--backfill` did, also its JSON output.
#[derive(Debug, Clone, Serialize)]
pub struct BackfillSummary {
    pub source: String,
    /// The first day and the day after the last (UTC, YYYY-MM-DD).
    pub from: String,
    pub to: String,
    /// Rows BigQuery returned: one per group, not one per run and backend.
    pub rows: u64,
    #[serde(flatten)]
    pub report: BackfillReport,
    pub seconds: f64,
}

/// The columns of [`Dataset::counts_query`], in order.
const COLUMNS: [&str; 15] = [
    "JobName",
    "Platform",
    "Network",
    "IPMode",
    "Topology",
    "Release",
    "FromRelease",
    "GCSBucketName",
    "MasterNodesUpdated",
    "Day",
    "DownProbes",
    "BackendName",
    "Seconds",
    "Runs",
    "FirstStart",
];

impl Dataset {
    /// The push-down read: per job, variant, day, down probes, backend and seconds, how many runs
    /// that started in `days` (UTC day numbers, the end exclusive).
    fn counts_query(&self, days: &std::ops::Range<i64>, rules: &TroubleRules) -> Query {
        let sql = format!(
            "WITH jobs AS (SELECT JobName, ANY_VALUE(Platform) AS Platform, ANY_VALUE(Network) AS Network, \
             ANY_VALUE(IPMode) AS IPMode, ANY_VALUE(Topology) AS Topology, ANY_VALUE(Release) AS Release, \
             ANY_VALUE(FromRelease) AS FromRelease, ANY_VALUE(GCSBucketName) AS GCSBucketName \
             FROM {jobs} GROUP BY JobName), \
             samples AS (SELECT r.JobName, r.Name, b.BackendName, MAX(b.DisruptionSeconds) AS Seconds, \
             ANY_VALUE(UNIX_SECONDS(r.StartTime)) AS Start, ANY_VALUE(r.MasterNodesUpdated) AS MasterNodesUpdated, \
             COUNT(*) OVER (PARTITION BY r.JobName, r.Name) AS Backends \
             FROM {runs} AS r JOIN {backends} AS b ON b.JobRunName = r.Name \
             WHERE r.StartTime >= TIMESTAMP_SECONDS(@from) AND r.StartTime < TIMESTAMP_SECONDS(@to) \
             AND r.JobName <> '' AND r.Name <> '' AND b.BackendName <> '' AND b.DisruptionSeconds IS NOT NULL \
             GROUP BY r.JobName, r.Name, b.BackendName), \
             down AS (SELECT JobName, Name, STRING_AGG(IF(REGEXP_CONTAINS(BackendName, @liveness) \
             AND Seconds > @allowance, BackendName, NULL), ' ' ORDER BY BackendName) AS DownProbes \
             FROM samples GROUP BY JobName, Name) \
             SELECT s.JobName, j.Platform, j.Network, j.IPMode, j.Topology, j.Release, j.FromRelease, \
             j.GCSBucketName, s.MasterNodesUpdated, DIV(s.Start, 86400) AS Day, d.DownProbes, s.BackendName, \
             LEAST(GREATEST(s.Seconds, 0), @max_seconds) AS Seconds, COUNT(*) AS Runs, MIN(s.Start) AS FirstStart \
             FROM samples AS s JOIN down AS d ON d.JobName = s.JobName AND d.Name = s.Name \
             LEFT JOIN jobs AS j ON j.JobName = s.JobName \
             WHERE s.Backends <= @max_backends \
             GROUP BY s.JobName, j.Platform, j.Network, j.IPMode, j.Topology, j.Release, j.FromRelease, \
             j.GCSBucketName, s.MasterNodesUpdated, Day, d.DownProbes, s.BackendName, Seconds",
            runs = self.table("BackendDisruption_JobRuns"),
            backends = self.table("BackendDisruption"),
            jobs = self.table("Jobs"),
        );
        let params = vec![
            ("from", Param::Int(days.start * 86_400)),
            ("to", Param::Int(days.end * 86_400)),
            ("liveness", Param::Text(liveness_pattern(&rules.liveness))),
            ("allowance", Param::Int(rules.liveness_allowance_seconds)),
            ("max_seconds", Param::Int(MAX_RUN_SECONDS)),
            ("max_backends", Param::Int(MAX_BACKENDS_PER_RUN as i64)),
        ];
        Query { name: "backfill", sql, params }
    }
}

/// The liveness globs (`*` for any text) as one anchored RE2 pattern.
fn liveness_pattern(globs: &[String]) -> String {
    if globs.is_empty() {
        // matches nothing: no backend is a probe
        return "^$".into();
    }
    let alternatives: Vec<String> =
        globs.iter().map(|g| g.split('*').map(regex::escape).collect::<Vec<_>>().join(".*")).collect();
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
    let days = from.timestamp().div_euclid(86_400)..to.timestamp().div_euclid(86_400);
    let latest_end = (Utc::now().timestamp() - i64::from(dataset.overlap_hours) * 3_600).div_euclid(86_400);
    if days.is_empty() {
        bail!("--to must be a later day than --from");
    }
    if days.end > latest_end {
        bail!(
            "--to {}: a backfill ends at least bigquery.overlap_hours ({}) before now (by {}), so that no row of its days is still to be loaded",
            day_name(days.end),
            dataset.overlap_hours,
            day_name(latest_end)
        );
    }
    let source = dataset.describe();
    let query = dataset.counts_query(&days, &store.trouble_rules());
    tracing::info!(source = %source, from = %day_name(days.start), to = %day_name(days.end), "backfilling day histograms from BigQuery");
    let mut pages = dataset.client.query(&query).await?;
    if pages.columns() != COLUMNS {
        bail!("query `backfill`: BigQuery answered the columns {:?}, not {COLUMNS:?}", pages.columns());
    }
    let mut counts = Vec::new();
    while let Some(page) = pages.next_page().await? {
        for row in page {
            counts.push(count_of(&row)?);
        }
    }
    let backfill =
        Backfill { source: &source, days: days.clone(), rows_read: pages.rows_read, counts: &counts };
    let report = store.write_backfill(&backfill).await?;
    store.advance_ingest_watermark(&source, days.end * 86_400 - 1, Utc::now().timestamp()).await?;
    let summary = BackfillSummary {
        source,
        from: day_name(days.start),
        to: day_name(days.end),
        rows: pages.rows_read,
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

/// One row of the counts query as the count it is, with its variant.
fn count_of(row: &Row) -> Result<CellCount> {
    let text = |name: &'static str| column(row, name);
    let number = |name: &'static str| -> Result<i64> {
        text(name).parse().map_err(|_| anyhow::anyhow!("query `backfill`: {name} is not a number: {row:?}"))
    };
    let job = text("JobName").to_string();
    let (variants, has_job) = cluster_data_of(text);
    let dimensions = crate::ingest::run::dimensions(&job, &variants, has_job, None);
    Ok(CellCount {
        dimensions,
        day: number("Day")?,
        down_probes: text("DownProbes").split_whitespace().map(str::to_string).collect(),
        backend: text("BackendName").to_string(),
        seconds: number("Seconds")?.clamp(0, MAX_RUN_SECONDS),
        runs: u64::try_from(number("Runs")?).unwrap_or(0),
        first_start: number("FirstStart")?,
        job,
    })
}

/// A column's value in a row of the counts query ("" for NULL).
fn column<'r>(row: &'r Row, name: &str) -> &'r str {
    let i = COLUMNS.iter().position(|c| *c == name).unwrap_or(usize::MAX);
    row.get(i).and_then(|v| v.as_deref()).unwrap_or("")
}

/// A UTC day number as YYYY-MM-DD.
fn day_name(day: i64) -> String {
    DateTime::from_timestamp(day * 86_400, 0)
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
            assert_eq!(re.is_match(backend), rules.is_liveness(backend), "{backend}");
        }
        let dots = liveness_pattern(&["a.b*".to_string()]);
        assert!(!regex::Regex::new(&dots).unwrap().is_match("axb-c"), "{dots}");
        assert!(!regex::Regex::new(&liveness_pattern(&[])).unwrap().is_match("anything"));
    }

    #[test]
    fn a_row_of_counts_gets_the_variant_a_run_of_its_job_gets() {
        const JOB: &str = "periodic-ci-openshift-release-master-nightly-4.14-upgrade-from-stable-4.13-e2e-metal-ipi-sdn-bm-upgrade";
        let values = [
            JOB,
            "metal",
            "sdn",
            "ipv4",
            "ha",
            "4.14",
            "4.13",
            "test-platform-results",
            "Y",
            "19675",
            "ci-cluster-network-liveness-new-connections",
            "image-registry-new-connections",
            "31",
            "4",
            "1700000000",
        ];
        let row: Row = values.iter().map(|v| Some(v.to_string())).collect();
        let count = count_of(&row).unwrap();
        let d = &count.dimensions;
        assert_eq!(
            (d.release.as_str(), d.from_release.as_str(), d.upgrade_type.as_str()),
            ("4.14", "4.13", "minor")
        );
        assert_eq!(
            (d.platform.as_str(), d.architecture.as_str(), d.master_nodes_updated.as_str()),
            ("metal", "amd64", "Y")
        );
        assert_eq!((count.day, count.seconds, count.runs, count.first_start), (19675, 31, 4, 1_700_000_000));
        assert_eq!(count.down_probes, ["ci-cluster-network-liveness-new-connections"]);
    }
}
