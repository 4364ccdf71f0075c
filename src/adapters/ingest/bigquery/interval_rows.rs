//! Interval evidence from BigQuery (`ingest.intervals = "bigquery"`): the intervals the CI
//! loads from each run's interval files into an intervals table, read for the runs attribution
//! uses instead of their files.
//!
//! The table, as the CI's data loader defines it (neisw/ci-data-loader,
//! `interval_loader.go` `generateIntervalUploader` and `big_query_loader.go`, commit
//! `1acf4febfba5cf9c53bdc03c11e6d47848e095e3`): one row per item of an interval file, with
//! `JobRunName` (the run's build id), `Source` (the file's name), `from_time` (the item's
//! `from`; the table is partitioned by day on it), `to_time` and `interval_json` (the item
//! itself, as JSON). A run ingested from BigQuery notes where its intervals are
//! (`bq://PROJECT/DATASET/TABLE`) in place of interval files; attribution then asks for that
//! run's rows in one query, pruned to the partitions from the run's start to its end and to
//! its `JobRunName`, capped in rows (`bigquery.max_interval_rows`) and in bytes (the limit of
//! an interval file), billed and labelled as every query. The rows are put back into one
//! `{"items": [...]}` per source file (one view, as ingest picks it), in the order of their
//! times, and parsed as the files are: the same outages, conditions and timeline.

use std::collections::BTreeMap;

use crate::adapters::ingest::error::Result;
use crate::adapters::ingest::layout::{Classified, FileKind, classify};
use crate::adapters::ingest::parse_error::Problem;
use crate::clients::bigquery::{BigQueryClient, Param, Query, Row};
use crate::model::{DAY, HOUR, JobRun};

/// Seconds kept around the run's start and end in the partition filter, so an item stamped a
/// little outside them (clocks, the uploader's own timing) is still read.
const SLACK_SECS: i64 = HOUR;

/// How long a run without an end is taken to have lasted, for the partition filter.
const UNFINISHED_SECS: i64 = DAY;

/// The columns the query asks for, in order.
const COLUMNS: [&str; 2] = ["Source", "interval_json"];

/// A run's intervals that will not be usable however often they are asked for (too many, too
/// large, or a place that is not one): the run is left without interval evidence, as with an
/// interval file over its limit.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unusable(pub String);

/// Where the intervals of a dataset's runs are: `table` is `TABLE` (in the dataset) or
/// `DATASET.TABLE` (in its project), as `bigquery.intervals_table` says.
pub fn location(project: &str, dataset: &str, table: &str) -> String {
    match table.split_once('.') {
        Some((other, table)) => format!("bq://{project}/{other}/{table}"),
        None => format!("bq://{project}/{dataset}/{table}"),
    }
}

/// `bq://PROJECT/DATASET/TABLE` → its parts, when each is a plain BigQuery name.
pub fn parse_location(location: &str) -> Option<(String, String, String)> {
    let (spec, table) = location.rsplit_once('/')?;
    let (project, dataset) = super::parse_bq_url(spec)?;
    let plain = (1..=1024).contains(&table.len())
        && table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    plain.then(|| (project, dataset, table.to_string()))
}

/// The query for one run's rows: the partitions from its start to its end (with
/// `SLACK_SECS` each side), its `JobRunName`, at most `max_rows + 1` rows (one more tells
/// that there were too many).
pub fn query(project: &str, dataset: &str, table: &str, run: &JobRun, max_rows: u64) -> Query {
    let start = run.started_at.timestamp();
    let end = run
        .finished_at
        .map_or(start + UNFINISHED_SECS, |f| f.timestamp().max(start));
    let sql = format!(
        "SELECT Source, interval_json FROM `{project}.{dataset}.{table}` \
         WHERE from_time >= TIMESTAMP_SECONDS(@from) AND from_time <= TIMESTAMP_SECONDS(@to) \
         AND JobRunName = @run \
         ORDER BY Source, from_time, to_time \
         LIMIT @limit"
    );
    let params = vec![
        ("from", Param::Int(start - SLACK_SECS)),
        ("to", Param::Int(end + SLACK_SECS)),
        ("run", Param::Text(run.build_id.clone())),
        (
            "limit",
            Param::Int(i64::try_from(max_rows.saturating_add(1)).unwrap_or(i64::MAX)),
        ),
    ];
    Query {
        name: "intervals",
        sql,
        params,
    }
}

/// The run's intervals at `location`, as the files they were loaded from: (file name, content)
/// for each file of the view ingest would read. An [`Unusable`] error
/// ([`IngestError::Unusable`](crate::adapters::ingest::IngestError::Unusable)) when there
/// are more than `max_rows` rows or `max_bytes` of items; any other error may pass (BigQuery
/// unreachable, a refused query).
pub async fn read(
    client: &BigQueryClient,
    location: &str,
    run: &JobRun,
    (max_rows, max_bytes): (u64, u64),
) -> Result<Vec<(String, Vec<u8>)>> {
    let Some((project, dataset, table)) = parse_location(location) else {
        return Err(Unusable(format!(
            "`{location}` is not a bq://PROJECT/DATASET/TABLE place"
        ))
        .into());
    };
    let mut pages = client
        .query(&query(&project, &dataset, &table, run, max_rows))
        .await?;
    super::check_columns("intervals", pages.columns(), &COLUMNS)?;
    let mut files = Files::new(max_rows, max_bytes);
    while let Some(page) = pages.next_page().await? {
        for row in page {
            files.add(row)?;
        }
    }
    Ok(files.finish())
}

/// Rows gathered back into files, within the limits.
struct Files {
    by_source: BTreeMap<String, Vec<u8>>,
    rows: u64,
    bytes: u64,
    max_rows: u64,
    max_bytes: u64,
}

impl Files {
    fn new(max_rows: u64, max_bytes: u64) -> Files {
        Files {
            by_source: BTreeMap::new(),
            rows: 0,
            bytes: 0,
            max_rows,
            max_bytes,
        }
    }

    /// One row (`Source`, `interval_json`); an error once past a limit. A row without either is
    /// not an item of a file, and is passed over.
    fn add(&mut self, row: Row) -> Result<(), Unusable> {
        self.rows += 1;
        if self.rows > self.max_rows {
            return Err(Unusable(format!(
                "more than {} interval rows in BigQuery (bigquery.max_interval_rows); its evidence is not used",
                self.max_rows
            )));
        }
        let mut row = row.into_iter();
        let (Some(Some(source)), Some(Some(item))) = (row.next(), row.next()) else {
            return Ok(());
        };
        self.bytes += item.len() as u64 + 1;
        if self.bytes > self.max_bytes {
            let too_large = Problem::TooLarge {
                size: self.bytes,
                max: self.max_bytes,
            };
            return Err(Unusable(too_large.to_string()));
        }
        let file = self
            .by_source
            .entry(source)
            .or_insert_with(|| b"{\"items\":[".to_vec());
        if file.last() != Some(&b'[') {
            file.push(b',');
        }
        file.extend_from_slice(item.as_bytes());
        Ok(())
    }

    /// The files of the one view ingest reads: e2e-events, else the `everything` timeline, else
    /// the other timelines (each a view of the same intervals); rows of other sources are left.
    fn finish(self) -> Vec<(String, Vec<u8>)> {
        let kind = |name: &str| match classify(name) {
            Classified::Read(
                k @ (FileKind::Events | FileKind::TimelineEverything | FileKind::Timeline),
            ) => Some(k),
            _ => None,
        };
        let preferred = [
            FileKind::Events,
            FileKind::TimelineEverything,
            FileKind::Timeline,
        ]
        .into_iter()
        .find(|k| self.by_source.keys().any(|s| kind(s) == Some(*k)));
        self.by_source
            .into_iter()
            .filter(|(source, _)| preferred.is_some() && kind(source) == preferred)
            .map(|(source, mut content)| {
                content.extend_from_slice(b"]}");
                (source, content)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(source: &str, item: &str) -> Row {
        vec![Some(source.to_string()), Some(item.to_string())]
    }

    #[test]
    fn a_location_names_the_table_in_the_dataset_or_in_another_dataset_of_the_project() {
        assert_eq!(
            location("p", "ci_data", "e2e_intervals"),
            "bq://p/ci_data/e2e_intervals"
        );
        assert_eq!(
            location("p", "ci_data", "ci_data_autodl.e2e_intervals"),
            "bq://p/ci_data_autodl/e2e_intervals"
        );
        assert_eq!(
            parse_location("bq://openshift-ci-data-analysis/ci_data_autodl/e2e_intervals"),
            Some((
                "openshift-ci-data-analysis".into(),
                "ci_data_autodl".into(),
                "e2e_intervals".into()
            ))
        );
        assert_eq!(parse_location("bq://p/d/t`; DROP TABLE x"), None);
        assert_eq!(parse_location("bq://p/d"), None);
        assert_eq!(parse_location("gs://b/logs/job/1/e2e-events_1.json"), None);
    }

    #[test]
    fn the_query_is_pruned_to_the_runs_partitions_and_name_and_capped() {
        let run = JobRun {
            url: String::new(),
            job_type: "periodic".into(),
            payload: String::new(),
            from_payload: String::new(),
            job_name: "periodic-ci-e2e-metal-ipi-upgrade".into(),
            build_id: "1700000000000000001".into(),
            bucket: "test-platform-results".into(),
            path: "logs/periodic-ci-e2e-metal-ipi-upgrade/1700000000000000001".into(),
            started_at: chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
            finished_at: chrono::DateTime::from_timestamp(1_700_007_200, 0),
            state: "success".into(),
            dimensions: Default::default(),
        };
        let q = query("p", "d", "e2e_intervals", &run, 10);
        assert_eq!(q.name, "intervals");
        assert!(q.sql.contains("FROM `p.d.e2e_intervals`"), "{}", q.sql);
        assert!(q.sql.contains(
            "from_time >= TIMESTAMP_SECONDS(@from) AND from_time <= TIMESTAMP_SECONDS(@to)"
        ));
        assert!(q.sql.contains("JobRunName = @run") && q.sql.contains("LIMIT @limit"));
        assert_eq!(
            q.params,
            vec![
                ("from", Param::Int(1_700_000_000 - SLACK_SECS)),
                ("to", Param::Int(1_700_007_200 + SLACK_SECS)),
                ("run", Param::Text("1700000000000000001".into())),
                ("limit", Param::Int(11)),
            ]
        );
        let unfinished = JobRun {
            finished_at: None,
            ..run
        };
        let q = query("p", "d", "t", &unfinished, 10);
        assert_eq!(
            q.params[1],
            (
                "to",
                Param::Int(1_700_000_000 + UNFINISHED_SECS + SLACK_SECS)
            )
        );
    }

    #[test]
    fn rows_become_the_files_of_one_view_holding_their_items() {
        let mut files = Files::new(10, 1_000);
        for r in [
            row("e2e-timelines_everything_1.json", r#"{"from":"b"}"#),
            row("e2e-events_1.json", r#"{"from":"a"}"#),
            row("e2e-events_1.json", r#"{"from":"c"}"#),
            row("e2e-events_2.json", r#"{"from":"d"}"#),
            vec![None, Some("{}".into())],
        ] {
            files.add(r).unwrap();
        }
        let files: Vec<(String, String)> = files
            .finish()
            .into_iter()
            .map(|(n, c)| (n, String::from_utf8(c).unwrap()))
            .collect();
        assert_eq!(
            files,
            [
                (
                    "e2e-events_1.json".into(),
                    r#"{"items":[{"from":"a"},{"from":"c"}]}"#.into()
                ),
                (
                    "e2e-events_2.json".into(),
                    r#"{"items":[{"from":"d"}]}"#.into()
                ),
            ]
        );
        let mut timelines = Files::new(10, 1_000);
        timelines
            .add(row("e2e-timelines_spyglass_1.json", "{}"))
            .unwrap();
        timelines.add(row("something-else.json", "{}")).unwrap();
        assert_eq!(timelines.finish().len(), 1);
    }

    #[test]
    fn more_rows_or_bytes_than_allowed_is_refused() {
        let mut files = Files::new(2, 1_000);
        files.add(row("e2e-events_1.json", "{}")).unwrap();
        files.add(row("e2e-events_1.json", "{}")).unwrap();
        let e = files
            .add(row("e2e-events_1.json", "{}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than 2 interval rows"), "{e}");
        let mut files = Files::new(100, 10);
        files.add(row("e2e-events_1.json", "12345")).unwrap();
        assert!(files.add(row("e2e-events_1.json", "12345")).is_err());
    }
}
