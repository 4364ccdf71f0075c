//! Ingest end to end: generated bucket trees, the GCS JSON API, and a corpus of broken files.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sheriff::adapters::ingest::{IngestOptions, IngestSummary, Source, ingest};
use sheriff::clients::gcs::GcsClient;
use sheriff::config::{GcsSettings, IngestSettings, IntervalsMode};
use sheriff::store::Store;
use sheriff::synth::{self, Scenario, Truth};

const BUCKET: &str = "test-platform-results";

fn generate(days: u32, leave_running: bool) -> (tempfile::TempDir, Truth) {
    let dir = tempfile::tempdir().unwrap();
    let mut scenario = Scenario::month(42, synth::day(2026, 11, 1));
    scenario.days = days;
    scenario.start = synth::day(2026, 10, 20);
    scenario.leave_last_run_running = leave_running;
    scenario.write_timelines = true;
    scenario.planted.push(synth::metal_registry_regression(2));
    let truth = synth::write_tree(&scenario, dir.path()).unwrap();
    (dir, truth)
}

/// Interval files read at ingest, from GCS too (`on_demand_evidence.rs` tests them on demand).
fn settings() -> IngestSettings {
    IngestSettings {
        intervals: IntervalsMode::Eager,
        max_file_bytes: 1_000_000,
        max_interval_file_bytes: 1_000_000,
        concurrency: 4,
        ..Default::default()
    }
}

async fn ingest_dir(store: &Store, dir: &Path) -> IngestSummary {
    ingest(
        store,
        &settings(),
        &Source::Local(dir.to_path_buf()),
        &IngestOptions::default(),
    )
    .await
    .unwrap()
}

/// Every stored run and its samples, for comparing two databases.
async fn snapshot(store: &Store, truth: &Truth) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for t in truth.finished_runs() {
        if let Some(r) = store.runs().run(&t.job, &t.build_id).await.unwrap() {
            out.insert(t.path.clone(), format!("{r:?}"));
        }
    }
    out
}

async fn check_against_truth(store: &Store, truth: &Truth) {
    for t in truth.finished_runs() {
        let r = store
            .runs()
            .run(&t.job, &t.build_id)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{} not stored", t.path));
        assert_eq!(r.run.dimensions, t.dimensions, "{}", t.path);
        assert_eq!(r.run.started_at, t.started_at);
        let seconds: BTreeMap<String, i64> = r
            .samples
            .iter()
            .map(|s| (s.backend.clone(), s.seconds))
            .collect();
        assert_eq!(seconds, t.seconds, "{}", t.path);
        if t.regressed {
            assert!(
                r.conditions
                    .iter()
                    .any(|c| c.operator == "image-registry" && c.reason == "NoReplicasAvailable"),
                "{}",
                t.path
            );
            assert!(
                r.outages
                    .iter()
                    .any(|o| o.backend == "image-registry-new-connections")
            );
        }
    }
}

on_both_engines! {
    async fn a_generated_tree_ingests_exactly_and_a_second_ingest_adds_nothing(db) {
        let (dir, truth) = generate(6, true);
        let finished = truth.finished_runs().count() as u64;
        let running = truth.runs.len() as u64 - finished;
        assert!(finished >= 200, "the tree has {finished} finished runs");
        assert!(truth.runs.iter().map(|r| &r.job).collect::<std::collections::BTreeSet<_>>().len() >= 10);

        let first = ingest_dir(&db.store, dir.path()).await;
        assert_eq!((first.ingested, first.failed, first.skipped), (finished, 0, running), "{:?}", first.errors);
        assert!(first.errors.is_empty(), "{:?}", first.errors);
        assert_eq!(db.store.runs().count_runs().await.unwrap() as u64, finished);
        check_against_truth(&db.store, &truth).await;

        let second = ingest_dir(&db.store, &dir.path().join(BUCKET)).await;
        assert_eq!((second.ingested, second.failed, second.skipped), (0, 0, finished + running));
        assert_eq!(db.store.runs().count_runs().await.unwrap() as u64, finished);
    }

    async fn a_storage_failure_asking_whether_a_run_is_stored_counts_as_storage_failed(db) {
        let (dir, truth) = generate(1, false);
        // a store whose connections are gone, as after the database was lost: "already
        // stored?" fails for every run before any file is read
        let lost = Store::open(&db.settings).await.unwrap();
        lost.close().await;
        let s = ingest_dir(&lost, dir.path()).await;
        let runs = truth.finished_runs().count() as u64;
        assert_eq!((s.ingested, s.failed, s.storage_failed), (0, runs, runs), "{:?}", s.errors);
        assert!(s.errors.iter().all(|e| e.error.contains("whether the run is stored")), "{:?}", s.errors);
        // a later ingest stores them
        let again = ingest_dir(&db.store, dir.path()).await;
        assert_eq!((again.ingested, again.storage_failed), (runs, 0));
    }

    async fn a_run_whose_files_cannot_all_be_listed_is_named_in_the_summary_and_the_ingest_log(db) {
        let (dir, truth) = generate(1, false);
        // a folder nested too deep inside one run: its files cannot all be listed (as with an
        // unreadable folder, which root, running the tests, could still read)
        let run = &truth.runs[0];
        let mut deep = dir.path().join(BUCKET).join(&run.path).join("artifacts");
        for n in 0..60 {
            deep.push(format!("d{n}"));
        }
        std::fs::create_dir_all(&deep).unwrap();
        let s = ingest_dir(&db.store, dir.path()).await;
        let runs = truth.finished_runs().count() as u64;
        assert_eq!((s.ingested, s.failed, s.storage_failed), (runs - 1, 1, 0), "{:?}", s.errors);
        assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
        assert_eq!(s.errors[0].run, run.path);
        assert!(s.errors[0].error.contains("cannot all be listed"), "{:?}", s.errors);
        let log = db.store.ingest_log().recent(Some(sheriff::store::LogOutcome::Failed), 10).await.unwrap();
        assert!(log.iter().any(|e| e.run_path == run.path && e.error.contains("cannot all be listed")), "{log:?}");
    }

    async fn one_job_folder_or_one_run_folder_is_a_source_too(db) {
        let (dir, truth) = generate(2, false);
        let job = &truth.runs[0].job;
        let job_runs = truth.runs.iter().filter(|r| &r.job == job).count() as u64;
        let s = ingest_dir(&db.store, &dir.path().join(BUCKET).join("logs").join(job)).await;
        assert_eq!(s.ingested, job_runs);
        let last = truth.runs.iter().rfind(|r| r.job != *job).unwrap();
        let s = ingest_dir(&db.store, &dir.path().join(BUCKET).join(&last.path)).await;
        assert_eq!(s.ingested, 1);
        let stored = db.store.runs().run(&last.job, &last.build_id).await.unwrap().unwrap();
        assert_eq!(stored.run.path, last.path);
        assert_eq!(stored.run.bucket, BUCKET);
    }

    async fn the_gcs_json_api_ingests_to_the_same_content_as_the_local_tree(db) {
        let (dir, truth) = generate(5, false);
        let reference = common::TestDb::sqlite().await;
        ingest_dir(&reference.store, dir.path()).await;

        let fake = common::gcs::FakeGcs::start(dir.path(), 7).await;
        let client = GcsClient::new(&GcsSettings { api_url: fake.url.clone(), max_attempts: 6, ..Default::default() }).unwrap();
        let source = Source::Gcs { client, bucket: BUCKET.into(), prefix: "logs/".into() };
        let summary = ingest(&db.store, &settings(), &source, &IngestOptions::default()).await.unwrap();
        assert_eq!(summary.failed, 0, "{:?}", summary.errors);
        assert_eq!(summary.ingested, truth.finished_runs().count() as u64);
        assert!(fake.injected_failures() > 10, "the fake injected {} failures", fake.injected_failures());
        assert_eq!(snapshot(&db.store, &truth).await, snapshot(&reference.store, &truth).await);

        // Only what sheriff reads is downloaded: no build logs, no duplicate timelines.
        let per_run = fake.downloads() as f64 / summary.ingested as f64;
        assert!(per_run < 10.0, "{per_run} downloads per run");

        // A second pass downloads nothing: stored runs are skipped before any file is read.
        let before = fake.downloads();
        let again = ingest(&db.store, &settings(), &source, &IngestOptions::default()).await.unwrap();
        assert_eq!(again.ingested, 0);
        assert_eq!(fake.downloads(), before);
    }

    async fn a_corpus_of_broken_files_is_reported_and_the_good_runs_all_land(db) {
        let (dir, truth) = generate(2, false);
        let first = ingest_dir(&db.store, dir.path()).await;
        let good = truth.finished_runs().count() as u64;
        assert_eq!(first.ingested, good);
        let before = snapshot(&db.store, &truth).await;

        let cases = broken_corpus(&dir.path().join(BUCKET), &truth);
        assert!(cases.len() >= 20);
        let summary = ingest_dir(&db.store, dir.path()).await;

        let expected_failed = cases.iter().filter(|c| matches!(c.expect, Expect::Failed(_))).count() as u64;
        let expected_stored = cases.iter().filter(|c| matches!(c.expect, Expect::Warning(_))).count() as u64;
        assert_eq!(summary.failed, expected_failed, "{:#?}", summary.errors);
        assert_eq!(summary.ingested, expected_stored, "{:#?}", summary.errors);
        for case in &cases {
            let stored = db.store.runs().has_run(&case.job, &case.build).await.unwrap();
            let errors: Vec<_> = summary.errors.iter().filter(|e| e.run.ends_with(&case.build)).collect();
            match &case.expect {
                Expect::Failed(file) | Expect::Warning(file) => {
                    let failed = matches!(case.expect, Expect::Failed(_));
                    assert_eq!(stored, !failed, "{}: stored = {stored}", case.what);
                    assert!(
                        errors.iter().any(|e| e.file.contains(file.as_str()) && !e.error.is_empty()),
                        "{}: no error naming {file}: {errors:#?}",
                        case.what
                    );
                }
                Expect::Skipped => assert!(!stored && errors.is_empty(), "{}", case.what),
            }
        }
        // Nothing stored before was touched.
        assert_eq!(snapshot(&db.store, &truth).await, before);
        assert_eq!(db.store.runs().count_runs().await.unwrap() as u64, good + expected_stored);
        // And the failures are in the ingest log, naming run and file.
        let logged = db.store.ingest_log().recent(Some(sheriff::store::LogOutcome::Failed), 100).await.unwrap();
        assert!(logged.len() as u64 >= expected_failed);
        assert!(logged.iter().all(|e| !e.run_path.is_empty() && !e.error.is_empty()));
    }
}

enum Expect {
    /// Not stored; an error names this file.
    Failed(String),
    /// Stored; a warning names this file.
    Warning(String),
    /// Not stored, no error (still running).
    Skipped,
}

struct Case {
    what: &'static str,
    job: String,
    build: String,
    expect: Expect,
}

fn find(dir: &Path, prefix: &str) -> PathBuf {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if e.file_name().to_string_lossy().starts_with(prefix) {
                return p;
            }
        }
    }
    panic!("no {prefix}* under {}", dir.display());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Copies a good run to a new build id (prowjob.json rewritten to match) and breaks one thing.
fn broken_corpus(bucket: &Path, truth: &Truth) -> Vec<Case> {
    let template = truth
        .finished_runs()
        .find(|r| r.dimensions.release == "4.14" && r.dimensions.upgrade_type != "none")
        .unwrap();
    let source = bucket.join(&template.path);
    let mut cases = Vec::new();
    let mut add = |what: &'static str, expect: Expect, breaks: &dyn Fn(&Path)| {
        let build = format!("9{:018}", cases.len() + 1);
        let target = source.parent().unwrap().join(&build);
        copy_dir(&source, &target);
        let prowjob = target.join("prowjob.json");
        let mut pj: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&prowjob).unwrap()).unwrap();
        pj["status"]["build_id"] = serde_json::json!(build);
        std::fs::write(&prowjob, pj.to_string()).unwrap();
        breaks(&target);
        cases.push(Case {
            what,
            job: template.job.clone(),
            build,
            expect,
        });
    };
    let truncate = |p: PathBuf| {
        let b = std::fs::read(&p).unwrap();
        std::fs::write(&p, &b[..b.len() / 2]).unwrap();
    };
    let binary: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let huge = |p: PathBuf| {
        let mut s = String::from("{\"items\": [");
        while s.len() < 1_500_000 {
            s.push_str("{\"level\": \"Info\", \"source\": \"PodState\", \"from\": \"2026-10-20T00:00:00Z\", \"to\": null},");
        }
        s.push_str("{}]}");
        std::fs::write(p, s).unwrap();
    };
    let f = |s: &str| Expect::Failed(s.into());
    let w = |s: &str| Expect::Warning(s.into());

    add("truncated disruption file", f("backend-disruption"), &|d| {
        truncate(find(d, "backend-disruption"))
    });
    add(
        "disruption file with wrong types",
        f("backend-disruption"),
        &|d| {
            std::fs::write(
            find(d, "backend-disruption"),
            r#"{"BackendDisruptions": {"kube-api-new-connections": {"DisruptedDuration": true}}}"#,
        )
        .unwrap()
        },
    );
    add(
        "disruption file of an unknown schema",
        f("backend-disruption"),
        &|d| std::fs::write(find(d, "backend-disruption"), r#"{"items": []}"#).unwrap(),
    );
    add("empty disruption file", f("backend-disruption"), &|d| {
        std::fs::write(find(d, "backend-disruption"), "").unwrap()
    });
    add("binary disruption file", f("backend-disruption"), &|d| {
        std::fs::write(find(d, "backend-disruption"), &binary).unwrap()
    });
    add("huge disruption file", f("backend-disruption"), &|d| {
        huge(find(d, "backend-disruption"))
    });
    add("unparseable duration", f("backend-disruption"), &|d| {
        std::fs::write(
            find(d, "backend-disruption"),
            r#"{"BackendDisruptions": {"kube-api-new-connections": {"DisruptedDuration": "12 parsecs"}}}"#,
        )
        .unwrap()
    });
    add("negative duration", f("backend-disruption"), &|d| {
        std::fs::write(
            find(d, "backend-disruption"),
            r#"{"BackendDisruptions": {"kube-api-new-connections": {"DisruptedDuration": "-3s"}}}"#,
        )
        .unwrap()
    });
    add(
        "disruption file that is JSON null",
        f("backend-disruption"),
        &|d| std::fs::write(find(d, "backend-disruption"), "null").unwrap(),
    );
    add("no start time anywhere", f("started.json"), &|d| {
        std::fs::write(d.join("started.json"), "{\"timestamp\": \"whenever\"}").unwrap();
        std::fs::remove_file(d.join("prowjob.json")).unwrap();
    });
    add("truncated cluster-data", w("cluster-data"), &|d| {
        truncate(find(d, "cluster-data"))
    });
    add("cluster-data with wrong types", w("cluster-data"), &|d| {
        std::fs::write(
            find(d, "cluster-data"),
            r#"{"Release": 4.14, "Platform": ["aws"]}"#,
        )
        .unwrap()
    });
    add("binary cluster-data", w("cluster-data"), &|d| {
        std::fs::write(find(d, "cluster-data"), &binary).unwrap()
    });
    add("empty cluster-data", w("cluster-data"), &|d| {
        std::fs::write(find(d, "cluster-data"), "").unwrap()
    });
    add("truncated interval file", w("e2e-events"), &|d| {
        truncate(find(d, "e2e-events"))
    });
    add(
        "interval file of an unknown schema",
        w("e2e-events"),
        &|d| std::fs::write(find(d, "e2e-events"), r#"{"BackendDisruptions": {}}"#).unwrap(),
    );
    add("huge interval file", w("e2e-events"), &|d| {
        huge(find(d, "e2e-events"))
    });
    add("binary interval file", w("e2e-events"), &|d| {
        std::fs::write(find(d, "e2e-events"), &binary).unwrap()
    });
    add("interval with a bad time", w("e2e-events"), &|d| {
        std::fs::write(
            find(d, "e2e-events"),
            r#"{"items": [{"level": "Error", "source": "Disruption", "from": "yesterday", "to": null}]}"#,
        )
        .unwrap()
    });
    add("empty interval file", w("e2e-events"), &|d| {
        std::fs::write(find(d, "e2e-events"), "").unwrap()
    });
    add("truncated prowjob.json", w("prowjob.json"), &|d| {
        truncate(d.join("prowjob.json"))
    });
    add("garbage finished.json", w("finished.json"), &|d| {
        std::fs::write(d.join("finished.json"), "{\"timestamp\": [}").unwrap()
    });
    add(
        "an odd file name",
        w("backend-disruption_20261020-000000.json.gz"),
        &|d| {
            let p = find(d, "backend-disruption");
            std::fs::write(
                p.with_file_name("backend-disruption_20261020-000000.json.gz"),
                &binary,
            )
            .unwrap();
        },
    );
    add("no disruption files at all", w(""), &|d| {
        while let Some(p) = std::iter::once(()).find_map(|_| {
            let mut stack = vec![d.to_path_buf()];
            while let Some(x) = stack.pop() {
                for e in std::fs::read_dir(&x).unwrap().flatten() {
                    if e.path().is_dir() {
                        stack.push(e.path());
                    } else if e
                        .file_name()
                        .to_string_lossy()
                        .starts_with("backend-disruption")
                    {
                        return Some(e.path());
                    }
                }
            }
            None
        }) {
            std::fs::remove_file(p).unwrap();
        }
    });
    add("still running", Expect::Skipped, &|d| {
        std::fs::remove_file(d.join("finished.json")).unwrap()
    });
    cases
}

/// A folder nested too deep, in the tree or inside one run, costs that folder or that run, not
/// the ingest: the rest is stored, and the skipped run is stored by a later ingest once fixed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_too_deep_skips_itself_not_the_whole_ingest() {
    let db = common::TestDb::sqlite().await;
    let (dir, truth) = generate(1, false);
    let deep = |from: PathBuf| {
        let mut p = from;
        for _ in 0..60 {
            p.push("d");
        }
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("prowjob.json"), "{}").unwrap();
    };
    deep(dir.path().join(BUCKET).join("logs"));
    let victim = truth.finished_runs().next().unwrap();
    let run_dir = dir.path().join(BUCKET).join(&victim.path);
    deep(run_dir.join("artifacts"));
    let summary = ingest_dir(&db.store, dir.path()).await;
    let finished = truth.finished_runs().count() as u64;
    assert_eq!(summary.ingested, finished - 1, "{summary:?}");
    assert!(
        !db.store
            .runs()
            .has_run(&victim.job, &victim.build_id)
            .await
            .unwrap()
    );
    std::fs::remove_dir_all(run_dir.join("artifacts").join("d")).unwrap();
    let again = ingest_dir(&db.store, dir.path()).await;
    assert_eq!(again.ingested, 1, "{again:?}");
    assert!(
        db.store
            .runs()
            .has_run(&victim.job, &victim.build_id)
            .await
            .unwrap()
    );
}

/// A GCS object is written to a temporary file as it arrives, its bytes counted: one past the
/// limit (an object larger than when it was listed) stops the download with the limit's error,
/// and the temporary file goes when its path is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gcs_download_is_spooled_to_a_temporary_file_and_stops_at_the_limit() {
    sheriff::init_crypto();
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("bucket/logs/job/1");
    std::fs::create_dir_all(&run).unwrap();
    let body = "x".repeat(300_000);
    std::fs::write(run.join("e2e-events_1.json"), &body).unwrap();
    let fake = common::gcs::FakeGcs::start(root.path(), 0).await;
    let client = GcsClient::new(&GcsSettings {
        api_url: fake.url.clone(),
        ..Default::default()
    })
    .unwrap();
    let object = "logs/job/1/e2e-events_1.json";
    let spooled = client
        .download_to_file("bucket", object, 300_000)
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&spooled).unwrap(), body);
    let path = spooled.to_path_buf();
    drop(spooled);
    assert!(
        !path.exists(),
        "the temporary file is removed with its path"
    );
    let err = client
        .download_to_file("bucket", object, 299_999)
        .await
        .unwrap_err();
    assert!(
        matches!(err.failure, sheriff::clients::gcs::Failure::TooLarge { .. }),
        "{err:#}"
    );
    assert!(
        format!("{err:#}").contains("larger than the 299999-byte limit"),
        "{err:#}"
    );
}
