//! Interval evidence on demand, against the fake GCS: ingest lists a run's interval files and
//! reads none of them; attribution fetches those of the runs it uses, once, and comes to the
//! same conditions as reading every file at ingest. With the bucket unreachable the regression
//! is still reported, its evidence marked pending, and a later cycle fills it in.

use crate::common;

use std::collections::BTreeSet;

use sheriff::adapters::ingest::{IngestOptions, Source, ingest};
use sheriff::application::cycle::{CycleOptions, CycleReport, run_cycle};
use sheriff::clients::gcs::GcsClient;
use sheriff::config::{GcsSettings, IntervalsMode, Settings};
use sheriff::model::RegressionReport;
use sheriff::store::Store;
use sheriff::synth::{self, Scenario};

const BUCKET: &str = "test-platform-results";

/// An object the fake served, and its bytes.
type Served = (String, u64);

fn end() -> chrono::DateTime<chrono::Utc> {
    synth::day(2026, 11, 29)
}

/// The demo month cut to its 4.14 metal, vsphere and gcp jobs (about 500 runs): the metal
/// registry regression in its last week, with healthy platforms beside it.
fn scenario() -> Scenario {
    let mut s = Scenario::demo(end());
    s.jobs.retain(|j| {
        j.name.contains("4.14")
            && ["metal", "vsphere", "gcp"]
                .iter()
                .any(|p| j.name.contains(p))
    });
    s
}

fn is_interval_file(object: &str) -> bool {
    let name = object.rsplit('/').next().unwrap_or(object);
    name.starts_with("e2e-events") || name.starts_with("e2e-timelines")
}

/// The run folder of an object (`logs/<job>/<build>`).
fn run_of(object: &str) -> String {
    object.split('/').take(3).collect::<Vec<_>>().join("/")
}

fn settings(gcs_url: &str) -> Settings {
    let gcs = GcsSettings {
        api_url: gcs_url.to_string(),
        max_attempts: 2,
        timeout_secs: 5,
        ..Default::default()
    };
    Settings {
        gcs,
        ..Default::default()
    }
}

async fn ingest_gcs(store: &Store, settings: &Settings) -> u64 {
    let client = GcsClient::new(&settings.gcs).unwrap();
    let source = Source::Gcs {
        client,
        bucket: BUCKET.into(),
        prefix: "logs/".into(),
    };
    let summary = ingest(store, &settings.ingest, &source, &IngestOptions::default())
        .await
        .unwrap();
    assert_eq!(summary.failed, 0, "{:?}", summary.errors);
    summary.ingested
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

/// The top condition as a person reads it: which, how often, how much of the outage.
fn top(r: &RegressionReport) -> String {
    let c = r
        .attribution
        .conditions
        .first()
        .expect("a condition behind the outages");
    format!(
        "{} {}={} ({}) in {}/{} runs, {} healthy, {:.3} covered",
        c.operator,
        c.condition,
        c.status,
        c.reason,
        c.runs_with,
        c.runs,
        c.healthy_with,
        c.covered_share
    )
}

on_both_engines! {
    async fn on_demand_evidence_attributes_as_eager_reading_does_and_fetches_only_the_evidence_runs(db) {
        let dir = tempfile::tempdir().unwrap();
        let truth = synth::write_tree(&scenario(), dir.path()).unwrap();
        let runs = truth.finished_runs().count() as u64;
        let fake = common::gcs::FakeGcs::start(dir.path(), 0).await;

        // The reference: every interval file read at ingest.
        let eager = common::TestDb::sqlite().await;
        let mut eager_settings = settings(&fake.url);
        eager_settings.ingest.intervals = IntervalsMode::Eager;
        assert_eq!(ingest_gcs(&eager.store, &eager_settings).await, runs);
        let all: Vec<(String, u64)> = fake.downloaded().into_iter().filter(|(o, _)| is_interval_file(o)).collect();
        let eager_runs: BTreeSet<String> = all.iter().map(|(o, _)| run_of(o)).collect();
        assert_eq!(eager_runs.len() as u64, runs, "eager reading downloads every run's interval files");
        let eager_report = cycle(&eager.store, &eager_settings).await;
        let expected = top(common::planted(&eager_report));

        // On demand (the default for gs://): ingest downloads no interval file at all.
        let settings = settings(&fake.url);
        assert_eq!(settings.ingest.intervals, IntervalsMode::Auto);
        let before = fake.downloaded().len();
        assert_eq!(ingest_gcs(&db.store, &settings).await, runs);
        let at_ingest: Vec<(String, u64)> = fake.downloaded()[before..].to_vec();
        assert!(at_ingest.iter().all(|(o, _)| !is_interval_file(o)), "an interval file was read at ingest");
        assert_eq!(db.store.runs().pending_interval_runs().await.unwrap(), (runs, 0));

        // The cycle fetches the evidence runs' files: the same top condition, from those runs only.
        let mark = fake.downloaded().len();
        let report = cycle(&db.store, &settings).await;
        let r = common::planted(&report);
        assert_eq!(top(r), expected);
        assert_eq!(r.attribution.evidence_pending, 0);
        assert_eq!(r.attribution.confidence, common::planted(&eager_report).attribution.confidence);
        let fetched: Vec<(String, u64)> = fake.downloaded()[mark..].to_vec();
        assert!(fetched.iter().all(|(o, _)| is_interval_file(o)), "{fetched:?}");
        let fetched_runs: BTreeSet<String> = fetched.iter().map(|(o, _)| run_of(o)).collect();
        let evidence_runs = Settings::default().attribute.evidence_runs;
        let c = &r.attribution.conditions[0];
        // the regression's disrupted runs and as many healthy runs before its onset
        assert_eq!(fetched_runs.len(), c.runs + c.healthy_runs, "{c:?}");
        assert!(c.runs == evidence_runs && c.healthy_runs == evidence_runs, "{c:?}");
        let each_once: BTreeSet<&String> = fetched.iter().map(|(o, _)| o).collect();
        assert_eq!(each_once.len(), fetched.len(), "a file fetched twice");
        let (pending, _) = db.store.runs().pending_interval_runs().await.unwrap();
        assert_eq!(pending, runs - fetched_runs.len() as u64, "what was fetched is kept");

        // Bytes per run: what ingest and attribution read, against reading every file.
        let read_on_demand: u64 = at_ingest.iter().chain(&fetched).map(|(_, b)| b).sum();
        let read_eagerly: u64 = fake.downloaded()[..before].iter().map(|(_, b)| b).sum();
        println!(
            "on demand: {} bytes per run ({} runs, {} fetched for evidence); eager: {} bytes per run",
            read_on_demand / runs,
            runs,
            fetched_runs.len(),
            read_eagerly / runs
        );
        assert!(read_on_demand < read_eagerly, "{read_on_demand} ≥ {read_eagerly}");

        // The next cycle (following the incident now open) uses what was fetched: no file is
        // downloaded twice, and only runs it had not used before are fetched.
        let mark = fake.downloaded().len();
        let again = cycle(&db.store, &settings).await;
        assert_eq!(top(common::planted(&again)), expected);
        let later: Vec<(String, u64)> = fake.downloaded()[mark..].to_vec();
        assert!(later.iter().all(|(o, _)| !fetched_runs.contains(&run_of(o))), "{later:?}");
        assert!(later.len() < fetched.len() / 2, "{} files fetched again", later.len());
    }

    async fn evidence_pending_while_the_bucket_is_down_is_filled_in_by_a_later_cycle(db) {
        let dir = tempfile::tempdir().unwrap();
        synth::write_tree(&scenario(), dir.path()).unwrap();
        let fake = common::gcs::FakeGcs::start(dir.path(), 0).await;
        let proxy = common::proxy::Proxy::start(fake.url.trim_start_matches("http://").parse().unwrap()).await;
        let settings = settings(&format!("http://127.0.0.1:{}", proxy.port));
        ingest_gcs(&db.store, &settings).await;

        // The bucket goes away: the regression is reported all the same, its evidence pending.
        proxy.down();
        let first = cycle(&db.store, &settings).await;
        let r = common::planted(&first);
        assert!(r.attribution.evidence_pending > 0, "{:#?}", r.attribution);
        assert!(r.attribution.conditions.is_empty(), "{:?}", r.attribution.conditions);
        let evidence = r.attribution.evidence.join("\n");
        assert!(evidence.contains("interval evidence pending for"), "{evidence}");
        assert_eq!(r.component, "Image Registry", "the backend names the owner without the files");
        let (pending, failed) = db.store.runs().pending_interval_runs().await.unwrap();
        assert!(failed >= 1 && failed < pending, "one failed fetch stops the cycle's others: {failed} of {pending}");
        let status = sheriff::edge::text::status(&sheriff::application::board::status(&db.store, end().timestamp()).await.unwrap());
        assert!(status.contains(&format!("interval evidence: {failed} run(s) whose files could not be fetched yet")), "{status}");

        // Back: the next cycle fetches them and fills the incident's attribution in.
        proxy.up();
        let second = cycle(&db.store, &settings).await;
        let r = common::planted(&second);
        assert_eq!(r.attribution.evidence_pending, 0, "{:#?}", r.attribution);
        let c = r.attribution.conditions.first().expect("filled in");
        assert_eq!((c.operator.as_str(), c.condition.as_str(), c.status.as_str()), ("image-registry", "Available", "False"));
        let evidence = r.attribution.evidence.join("\n");
        assert!(!evidence.contains("interval evidence pending"), "{evidence}");
        assert!(evidence.contains("image-registry Available=False (NoReplicasAvailable)"), "{evidence}");
        assert!(r.attribution.summary.contains("overlapped image-registry Available=False"), "{}", r.attribution.summary);
        let incidents = db.store.incidents().all().await.unwrap();
        assert_eq!(incidents.len(), 1, "one incident, kept: {incidents:#?}");
        assert_eq!(incidents[0].snapshot.report.attribution.evidence_pending, 0);
        assert_eq!(incidents[0].snapshot.evidence, "image-registry Available=False", "the incident's evidence too");
        let status = sheriff::edge::text::status(&sheriff::application::board::status(&db.store, end().timestamp()).await.unwrap());
        assert!(!status.contains("interval evidence:"), "{status}");
    }
}

/// The bytes a run costs on demand and eagerly, with interval files of realistic size (over
/// 10 MB each): `cargo test --release --test integration -- --ignored measure_bytes --nocapture`.
/// A month of the 4.14 metal and vsphere jobs, the metal registry regression in its last week.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: writes about 2 GB of interval files"]
async fn measure_bytes_fetched_per_run_with_ten_megabyte_interval_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut scenario = Scenario::demo(end());
    scenario.jobs.retain(|j| {
        j.name.contains("4.14") && (j.name.contains("metal") || j.name.contains("vsphere"))
    });
    scenario.noise_intervals = 25_000;
    let truth = synth::write_tree(&scenario, dir.path()).unwrap();
    let runs = truth.finished_runs().count() as u64;
    let fake = common::gcs::FakeGcs::start(dir.path(), 0).await;
    let mut settings = settings(&fake.url);
    settings.ingest.max_interval_file_bytes = 64 << 20;

    let eager = common::TestDb::sqlite().await;
    let mut eager_settings = settings.clone();
    eager_settings.ingest.intervals = IntervalsMode::Eager;
    let started = std::time::Instant::now();
    assert_eq!(ingest_gcs(&eager.store, &eager_settings).await, runs);
    let eager_seconds = started.elapsed().as_secs_f64();
    let read_eagerly: Vec<(String, u64)> = fake.downloaded();
    let smallest = read_eagerly
        .iter()
        .filter(|(o, b)| is_interval_file(o) && *b > 1_000)
        .map(|(_, b)| *b)
        .min();
    assert!(
        smallest.unwrap() >= 10 << 20,
        "interval files of {smallest:?} bytes"
    );
    let eager_report = cycle(&eager.store, &eager_settings).await;

    let db = common::TestDb::sqlite().await;
    let mark = fake.downloaded().len();
    let started = std::time::Instant::now();
    assert_eq!(ingest_gcs(&db.store, &settings).await, runs);
    let on_demand_seconds = started.elapsed().as_secs_f64();
    let report = cycle(&db.store, &settings).await;
    assert_eq!(
        top(common::planted(&report)),
        top(common::planted(&eager_report))
    );
    let read_on_demand: Vec<(String, u64)> = fake.downloaded()[mark..].to_vec();
    let (fetched, at_ingest): (Vec<Served>, Vec<Served>) = read_on_demand
        .iter()
        .cloned()
        .partition(|(o, _)| is_interval_file(o));
    let fetched_runs: BTreeSet<String> = read_on_demand
        .iter()
        .filter(|(o, _)| is_interval_file(o))
        .map(|(o, _)| run_of(o))
        .collect();
    let bytes = |files: &[(String, u64)]| files.iter().map(|(_, b)| b).sum::<u64>();
    println!(
        "{runs} runs, interval files of {} MB and more: eager {} bytes per run (ingest {eager_seconds:.1} s); \
         on demand {} bytes per run in all: {} at ingest (ingest {on_demand_seconds:.1} s), and {} bytes for the \
         {} runs whose interval files attribution fetched",
        smallest.unwrap() >> 20,
        bytes(&read_eagerly) / runs,
        bytes(&read_on_demand) / runs,
        bytes(&at_ingest) / runs,
        bytes(&fetched),
        fetched_runs.len()
    );
    assert!(bytes(&read_on_demand) * 4 < bytes(&read_eagerly));
}
