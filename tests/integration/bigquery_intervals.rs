//! Interval evidence from BigQuery (`ingest.intervals = "bigquery"`), against the Crucible
//! emulator loaded with the rows the CI's data loader makes of a generated bucket tree's
//! interval files: attribution reads the sample runs' rows, pruned by time and run, and comes to
//! the same conditions and mechanism as the files; with BigQuery unreachable the regression is
//! reported with its evidence pending, and a later cycle fills it in.

use crate::bigquery::{
    SCAN_BYTES, end, evaluation_with, ingest_bq, ingest_dir, load, scenario, settings, stored,
};
use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::bigquery::{BigQueryFront, Emulator};
use sheriff::application::cycle::{CycleOptions, CycleReport, run_cycle};
use sheriff::config::{IntervalsMode, Settings};
use sheriff::model::RunRecord;
use sheriff::store::Store;
use sheriff::synth;

/// The interval files under a run folder.
fn interval_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            out.extend(interval_files(&path));
        } else if name.starts_with("e2e-") && name.ends_with(".json") {
            out.push(path);
        }
    }
    out
}

/// An item's time as a TIMESTAMP value for a load.
fn timestamp(value: &serde_json::Value) -> Option<String> {
    let t = chrono::DateTime::parse_from_rfc3339(value.as_str()?)
        .unwrap()
        .with_timezone(&chrono::Utc);
    Some(t.format("%Y-%m-%dT%H:%M:%S%.fZ").to_string())
}

/// What the CI's data loader makes of the runs' interval files: one `e2e_intervals` row per
/// item with a `from` (the loader passes over the others), the item itself as `interval_json`.
/// `runs` by their folder in their bucket in `tree`. Returns the rows loaded.
async fn load_intervals(
    emulator: &Emulator,
    tree: &Path,
    runs: &BTreeMap<String, RunRecord>,
) -> u64 {
    let mut rows = Vec::new();
    for (folder, r) in runs {
        for file in interval_files(&tree.join(&r.run.bucket).join(folder)) {
            let source = file.file_name().unwrap().to_string_lossy().into_owned();
            let json: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            for item in json["items"].as_array().unwrap() {
                let Some(from) = timestamp(&item["from"]) else {
                    continue;
                };
                rows.push(vec![
                    Some(from),
                    timestamp(&item["to"]),
                    Some(item.to_string()),
                    Some(r.run.build_id.clone()),
                    Some(source.clone()),
                ]);
            }
        }
    }
    emulator.load("e2e_intervals", &rows).await;
    rows.len() as u64
}

/// An evaluation's JSON with each interval reference named by its file's name only (the bucket
/// names the file by its path in the run folder, BigQuery by the name the loader recorded), and
/// the references of one claim in order: spans alike in time, kind and subject keep the order
/// they were read in, and the generated files order items by `from` only where BigQuery orders
/// rows by `from_time` then `to_time`.
fn by_file_name(evaluation: &str) -> serde_json::Value {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::Array(refs)) = map.get_mut("intervals") {
                    for r in refs.iter_mut() {
                        if let Some(file) = r["file"]
                            .as_str()
                            .map(|f| f.rsplit('/').next().unwrap().to_string())
                        {
                            r["file"] = file.into();
                        }
                    }
                    refs.sort_by_key(|r| {
                        (r["file"].as_str().map(String::from), r["item"].as_u64())
                    });
                }
                map.values_mut().for_each(walk);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut json: serde_json::Value = serde_json::from_str(evaluation).unwrap();
    walk(&mut json);
    json
}

/// The regressions' attributions in an evaluation: conditions, pending and mechanism.
fn attributions(json: &serde_json::Value) -> Vec<serde_json::Value> {
    json["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["attribution"].clone())
        .collect()
}

/// The emulator loaded with a generated tree's runs and intervals, the tree's own ingest
/// (interval files read at ingest), and sheriff's settings for a front before the emulator
/// reading intervals from BigQuery.
struct Loaded {
    emulator: Emulator,
    tree: tempfile::TempDir,
    bucket_db: common::TestDb,
    runs: u64,
    interval_rows: u64,
}

async fn loaded() -> Option<Loaded> {
    let emulator = Emulator::start().await?;
    let tree = tempfile::tempdir().unwrap();
    let truth = synth::write_tree(&scenario(), tree.path()).unwrap();
    let bucket_db = common::TestDb::sqlite().await;
    ingest_dir(&bucket_db.store, tree.path()).await;
    let from_bucket = stored(&bucket_db.store, &truth).await;
    let runs: Vec<&RunRecord> = from_bucket.values().collect();
    load(&emulator, &runs).await;
    let interval_rows = load_intervals(&emulator, tree.path(), &from_bucket).await;
    let runs = runs.len() as u64;
    Some(Loaded {
        emulator,
        tree,
        bucket_db,
        runs,
        interval_rows,
    })
}

fn bigquery_settings(url: &str, dir: &Path) -> Settings {
    let mut settings = settings(url, dir);
    settings.ingest.intervals = IntervalsMode::Bigquery;
    settings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interval_evidence_from_bigquery_attributes_as_the_interval_files_do() {
    let Some(world) = loaded().await else { return };
    let front = BigQueryFront::start(&world.emulator.url, SCAN_BYTES).await;
    let settings = bigquery_settings(&front.url, world.tree.path());
    let bq_db = common::TestDb::sqlite().await;
    let summary = ingest_bq(&bq_db.store, &settings).await.unwrap();
    assert_eq!(
        (summary.ingested, summary.failed),
        (world.runs, 0),
        "{:?}",
        summary.errors
    );
    // ingest reads no interval: every run waits for its evidence in the intervals table
    assert_eq!(
        bq_db.store.runs().pending_interval_runs().await.unwrap(),
        (world.runs, 0)
    );
    let asked: Vec<String> = front
        .log()
        .into_iter()
        .filter(|l| l.call != "results")
        .map(|l| l.label)
        .collect();
    assert!(
        asked.iter().all(|l| l == "runs"),
        "only the runs were read at ingest: {asked:?}"
    );
    front.clear_log();

    // the same evaluation as the bucket's files give, conditions and mechanism included
    let from_bq = by_file_name(&evaluation_with(&bq_db.store, &settings).await);
    let from_files = by_file_name(&evaluation_with(&world.bucket_db.store, &settings).await);
    let found = attributions(&from_bq);
    assert!(
        found.iter().any(
            |a| a["conditions"].as_array().is_some_and(|c| !c.is_empty())
                && a["mechanism"].is_object()
        ),
        "a regression with conditions and a mechanism: {found:#?}"
    );
    assert!(
        found.iter().all(|a| a.get("evidence_pending").is_none()),
        "{found:#?}"
    );
    assert_eq!(attributions(&from_bq), attributions(&from_files));
    assert_eq!(from_bq, from_files);

    // one query per run read, pruned by time and run, capped, labelled, its values bound
    let queries: Vec<_> = front
        .log()
        .into_iter()
        .filter(|l| l.call == "query")
        .collect();
    assert!(
        !queries.is_empty() && queries.iter().all(|q| q.label == "intervals"),
        "{queries:?}"
    );
    let runs: std::collections::BTreeSet<String> = queries
        .iter()
        .map(|q| {
            q.params[2]["parameterValue"]["value"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(runs.len(), queries.len(), "a run read twice");
    for q in &queries {
        assert_eq!(q.max_bytes_billed, Some(settings.bigquery.max_bytes_billed));
        assert_eq!(
            q.labels,
            serde_json::json!({"app": "sheriff", "query": "intervals"})
        );
        assert!(q.sql.contains(
            "from_time >= TIMESTAMP_SECONDS(@from) AND from_time <= TIMESTAMP_SECONDS(@to)"
        ));
        assert!(
            q.sql.contains("JobRunName = @run") && q.sql.contains("LIMIT @limit"),
            "{}",
            q.sql
        );
    }
    let rows: u64 = front.log().iter().map(|l| l.rows).sum();
    eprintln!(
        "intervals from BigQuery: {} runs read in {} queries, {rows} rows of the {} loaded",
        runs.len(),
        queries.len(),
        world.interval_rows
    );
    assert!(
        rows * 5 < world.interval_rows,
        "{rows} of {} rows read",
        world.interval_rows
    );

    // more rows than allowed: the runs are left without interval evidence, not pending
    let mut capped = settings.clone();
    capped.bigquery.max_interval_rows = 2;
    let found = attributions(&by_file_name(&evaluation_with(&bq_db.store, &capped).await));
    assert!(
        found
            .iter()
            .all(|a| a["conditions"].as_array().is_none_or(|c| c.is_empty())
                && a.get("evidence_pending").is_none()
                && a["mechanism"].is_null()),
        "{found:#?}"
    );
}

async fn cycle(store: &Store, settings: &Settings) -> CycleReport {
    run_cycle(
        store,
        &sheriff::application::warm::Warm::new(),
        settings,
        CycleOptions {
            at: end(),
            dry_run: false,
        },
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_bigquery_unreachable_interval_evidence_is_pending_and_a_later_cycle_fills_it_in() {
    let Some(world) = loaded().await else { return };
    let front = BigQueryFront::start(&world.emulator.url, SCAN_BYTES).await;
    let proxy =
        common::proxy::Proxy::start(front.url.trim_start_matches("http://").parse().unwrap()).await;
    let mut settings = bigquery_settings(
        &format!("http://127.0.0.1:{}", proxy.port),
        world.tree.path(),
    );
    settings.bigquery.max_attempts = 2;
    let db = common::TestDb::sqlite().await;
    ingest_bq(&db.store, &settings).await.unwrap();

    // BigQuery goes away: the regression is reported and its incident opened all the same
    proxy.down();
    let first = cycle(&db.store, &settings).await;
    let r = common::planted(&first);
    assert!(r.attribution.evidence_pending > 0, "{:#?}", r.attribution);
    assert!(
        r.attribution.conditions.is_empty() && r.attribution.mechanism.is_none(),
        "{:#?}",
        r.attribution
    );
    let evidence = r.attribution.evidence.join("\n");
    assert!(
        evidence.contains("interval evidence pending for"),
        "{evidence}"
    );
    assert_eq!(
        r.component, "Image Registry",
        "the backend names the owner without the intervals"
    );
    let (pending, failed) = db.store.runs().pending_interval_runs().await.unwrap();
    assert_eq!(
        pending, world.runs,
        "no run lost its place in the intervals table"
    );
    assert!(
        failed >= 1 && failed < pending,
        "one failed read stops the cycle's others: {failed} of {pending}"
    );
    assert_eq!(db.store.incidents().all().await.unwrap().len(), 1);

    // back: the next cycle reads them and fills the incident's attribution in
    proxy.up();
    let second = cycle(&db.store, &settings).await;
    let r = common::planted(&second);
    assert_eq!(r.attribution.evidence_pending, 0, "{:#?}", r.attribution);
    let c = r.attribution.conditions.first().expect("filled in");
    assert_eq!(
        (c.operator.as_str(), c.condition.as_str(), c.status.as_str()),
        ("image-registry", "Available", "False")
    );
    assert!(r.attribution.mechanism.is_some(), "{:#?}", r.attribution);
    let incidents = db.store.incidents().all().await.unwrap();
    assert_eq!(incidents.len(), 1, "one incident, kept: {incidents:#?}");
    assert_eq!(incidents[0].snapshot.report.attribution.evidence_pending, 0);
    assert_eq!(
        incidents[0].snapshot.evidence,
        "image-registry Available=False"
    );
    let (still, _) = db.store.runs().pending_interval_runs().await.unwrap();
    assert!(
        still < pending,
        "what was read is kept: {still} of {pending} still pending"
    );
}
