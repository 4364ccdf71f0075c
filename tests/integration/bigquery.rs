//! The BigQuery source end to end, against the Crucible emulator loaded with the rows the
//! CI's disruption uploader would have loaded for a generated bucket tree: the same stored runs,
//! day histograms and evaluation as the bucket ingest; an incremental second ingest; late rows;
//! bucket and BigQuery mixed; and the bytes cap, 429 and 500 as BigQuery answers them.

use crate::common;
use sheriff::model::DAY;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use common::bigquery::{BigQueryFront, DATASET, Emulator, Fault, PROJECT, ts};
use sheriff::adapters::ingest::{IngestOptions, IngestSummary, Source, ingest};
use sheriff::application::cycle::{CycleOptions, run_cycle};
use sheriff::config::{BigQuerySettings, IngestSettings, IntervalsMode, Settings};
use sheriff::model::RunRecord;
use sheriff::store::Store;
use sheriff::synth::{self, Scenario, Truth};

/// What a query "scans" in the front: the dry-run estimate and what the cap is held to.
pub(crate) const SCAN_BYTES: u64 = 20 * 1024 * 1024;

pub(crate) fn end() -> chrono::DateTime<chrono::Utc> {
    synth::day(2026, 11, 29)
}

/// The demo month cut to its 4.14 metal, vsphere and gcp jobs (about 500 runs), the metal
/// registry regression in its last week.
pub(crate) fn scenario() -> Scenario {
    let mut s = Scenario::demo(end());
    s.jobs.retain(|j| {
        j.name.contains("4.14")
            && ["metal", "vsphere", "gcp"]
                .iter()
                .any(|p| j.name.contains(p))
    });
    s
}

fn source() -> String {
    format!("bq://{PROJECT}/{DATASET}")
}

fn ingest_settings() -> IngestSettings {
    IngestSettings {
        intervals: IntervalsMode::Eager,
        concurrency: 4,
        ..Default::default()
    }
}

/// sheriff's settings for the front at `url`, with a token file in `dir`.
pub(crate) fn settings(url: &str, dir: &Path) -> Settings {
    let token = dir.join("bigquery-token");
    std::fs::write(&token, "test-access-token\n").unwrap();
    let bigquery = BigQuerySettings {
        api_url: url.to_string(),
        token_file: Some(token),
        page_rows: 500,
        max_attempts: 3,
        timeout_secs: 60,
        ..Default::default()
    };
    Settings {
        bigquery,
        ingest: ingest_settings(),
        ..Default::default()
    }
}

pub(crate) async fn ingest_bq(store: &Store, settings: &Settings) -> anyhow::Result<IngestSummary> {
    let source = Source::parse(&source(), settings)?;
    Ok(ingest(store, &settings.ingest, &source, &IngestOptions::default()).await?)
}

pub(crate) async fn ingest_dir(store: &Store, dir: &Path) -> IngestSummary {
    let s = ingest(
        store,
        &ingest_settings(),
        &Source::Local(dir.to_path_buf()),
        &IngestOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(s.failed, 0, "{:?}", s.errors);
    s
}

/// The stored runs of `truth`, by run folder.
pub(crate) async fn stored(store: &Store, truth: &Truth) -> BTreeMap<String, RunRecord> {
    let mut out = BTreeMap::new();
    for t in truth.finished_runs() {
        if let Some(r) = store.runs().run(&t.job, &t.build_id).await.unwrap() {
            out.insert(t.path.clone(), r);
        }
    }
    out
}

/// The rows the CI's uploader loads for these runs and their jobs.
pub(crate) async fn load(emulator: &Emulator, runs: &[&RunRecord]) {
    load_runs(emulator, runs).await;
    load_jobs(emulator, runs).await;
}

/// One `BackendDisruption_JobRuns` row per run, one `BackendDisruption` row per run and backend.
async fn load_runs(emulator: &Emulator, runs: &[&RunRecord]) {
    let (mut job_runs, mut backends) = (Vec::new(), Vec::new());
    let text = |s: &str| Some(s.to_string());
    for r in runs {
        let run = &r.run;
        let start = run.started_at.timestamp();
        let end = run.finished_at.map_or(start, |f| f.timestamp());
        let mnu = Some(run.dimensions.master_nodes_updated.clone()).filter(|m| !m.is_empty());
        let (build, job, state, payload) = (
            text(&run.build_id),
            text(&run.job_name),
            text(&run.state),
            text(&run.payload),
        );
        job_runs.push(vec![
            build.clone(),
            job.clone(),
            state.clone(),
            ts(start),
            ts(end),
            payload.clone(),
            text("build01"),
            mnu.clone(),
        ]);
        for s in &r.samples {
            backends.push(vec![
                text(&s.backend),
                Some(s.seconds.to_string()),
                job.clone(),
                build.clone(),
                ts(start),
                ts(end),
                text("build01"),
                payload.clone(),
                mnu.clone(),
                state.clone(),
            ]);
        }
    }
    emulator.load("BackendDisruption_JobRuns", &job_runs).await;
    emulator.load("BackendDisruption", &backends).await;
}

/// One `Jobs` row per job of these runs, with its variants.
async fn load_jobs(emulator: &Emulator, runs: &[&RunRecord]) {
    let mut jobs = BTreeMap::new();
    let text = |s: &str| Some(s.to_string());
    for r in runs {
        let run = &r.run;
        let d = &run.dimensions;
        let prefix = run.path.rsplit_once('/').map_or("", |(p, _)| p);
        jobs.entry(run.job_name.clone()).or_insert_with(|| {
            vec![
                text(&run.job_name),
                text(&run.bucket),
                text(prefix),
                text("true"),
                text("true"),
                text(&d.platform),
                text(&d.network),
                text(&d.network_stack),
                text(&d.topology),
                text(&d.release),
                Some(d.from_release.clone()).filter(|f| !f.is_empty()),
            ]
        });
    }
    emulator
        .load("Jobs", &jobs.into_values().collect::<Vec<_>>())
        .await;
}

/// A record as BigQuery can give it: no link (Prow's own, from `prowjob.json`, is not in the
/// tables) and no interval evidence (not in these tables).
fn without_files(r: &RunRecord) -> RunRecord {
    let mut r = r.clone();
    r.run.url.clear();
    r.outages.clear();
    r.conditions.clear();
    r.interval_files.clear();
    r.timeline.clear();
    r
}

/// Every backend's day histograms in every variant, keyed by the variant's dimensions (ids
/// differ between databases).
async fn histograms(store: &Store, days: std::ops::Range<i64>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let variants = store.variants().await.unwrap();
    let kept = sheriff::application::warm::Queries::default();
    for backend in store.backend_names().await.unwrap() {
        for (id, dims) in variants.iter() {
            let h = kept
                .daily_histograms(store, &backend, &HashSet::from([*id]), days.clone())
                .await
                .unwrap();
            if !h.is_empty() {
                out.insert(format!("{backend} {dims:?}"), format!("{h:?}"));
            }
        }
    }
    out
}

/// The evaluation's JSON with every link to a run and the cycle's own duration taken out.
async fn evaluation(store: &Store) -> String {
    evaluation_with(store, &Settings::default()).await
}

/// [`evaluation`] under `settings` (where interval evidence on demand is read from).
pub(crate) async fn evaluation_with(store: &Store, settings: &Settings) -> String {
    let report = run_cycle(
        store,
        &sheriff::application::warm::Warm::new(),
        settings,
        CycleOptions {
            at: end(),
            dry_run: true,
        },
    )
    .await
    .unwrap();
    let mut json = serde_json::to_value(&report).unwrap();
    json.as_object_mut().unwrap().remove("seconds");
    let text = serde_json::to_string_pretty(&json).unwrap();
    let links = regex::Regex::new(r#""(https://prow\.ci\.openshift\.org/view/gs/[^"]*)""#).unwrap();
    links.replace_all(&text, "\"<run url>\"").into_owned()
}

/// Takes a tree's interval files away (BigQuery's disruption tables do not hold intervals).
fn remove_interval_files(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            remove_interval_files(&path);
        } else if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("e2e-")
        {
            std::fs::remove_file(&path).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bigquery_ingest_stores_what_the_bucket_ingest_stores() {
    let Some(emulator) = Emulator::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let truth = synth::write_tree(&scenario(), dir.path()).unwrap();
    let bucket_db = common::TestDb::sqlite().await;
    ingest_dir(&bucket_db.store, dir.path()).await;
    let from_bucket = stored(&bucket_db.store, &truth).await;
    assert!(from_bucket.len() >= 380, "{} runs", from_bucket.len());
    load(&emulator, &from_bucket.values().collect::<Vec<_>>()).await;

    let front = BigQueryFront::start(&emulator.url, SCAN_BYTES).await;
    let settings = settings(&front.url, dir.path());
    let bq_db = common::TestDb::sqlite().await;
    let started = std::time::Instant::now();
    let summary = ingest_bq(&bq_db.store, &settings).await.unwrap();
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(
        (summary.ingested, summary.failed),
        (from_bucket.len() as u64, 0),
        "{:?}",
        summary.errors
    );
    let rows: u64 = front.log().iter().map(|l| l.rows).sum();
    eprintln!(
        "bq ingest: {} runs, {rows} rows, {seconds:.2} s",
        summary.ingested
    );

    // the same runs, samples, dimensions, payloads and times
    let from_bq = stored(&bq_db.store, &truth).await;
    assert_eq!(
        from_bq.keys().collect::<Vec<_>>(),
        from_bucket.keys().collect::<Vec<_>>()
    );
    for (path, b) in &from_bucket {
        assert_eq!(without_files(&from_bq[path]), without_files(b), "{path}");
    }
    // the same day histograms
    let days = (end() - chrono::Duration::days(60)).timestamp() / DAY..end().timestamp() / DAY + 1;
    let (a, b) = (
        histograms(&bucket_db.store, days.clone()).await,
        histograms(&bq_db.store, days).await,
    );
    assert!(!a.is_empty());
    assert_eq!(a, b);

    // the same evaluation as the bucket's, apart from the links to runs, once the bucket's
    // interval files (which the disruption tables do not hold) are left out
    let bq = evaluation(&bq_db.store).await;
    assert!(
        bq.contains("\"family\": \"image-registry\""),
        "the regression is found"
    );
    assert_ne!(
        bq,
        evaluation(&bucket_db.store).await,
        "interval evidence is only in the bucket"
    );
    remove_interval_files(dir.path());
    let files_only = common::TestDb::sqlite().await;
    ingest_dir(&files_only.store, dir.path()).await;
    assert_eq!(bq, evaluation(&files_only.store).await);

    // every query carried the cap and the labels, and bound its values as parameters
    let queries: Vec<_> = front
        .log()
        .into_iter()
        .filter(|l| l.call == "query")
        .collect();
    assert!(queries.iter().all(|q| q.label == "runs"));
    assert_eq!(queries.len(), 1, "{queries:?}");
    for q in &queries {
        assert_eq!(q.max_bytes_billed, Some(settings.bigquery.max_bytes_billed));
        assert_eq!(
            q.labels,
            serde_json::json!({"app": "sheriff", "query": "runs"})
        );
        assert!(
            q.sql.contains("@since") && !q.sql.contains("TIMESTAMP_SECONDS(0)"),
            "{}",
            q.sql
        );
        assert_eq!(q.params[0]["name"], "since");
    }
    assert!(
        front.log().iter().any(|l| l.call == "results"),
        "the result was read page by page"
    );
}

/// A week of generated runs as records, by start, for loading rows directly.
fn week_of_runs() -> Vec<RunRecord> {
    let mut s = Scenario::month(7, end());
    s.days = 7;
    s.start = end() - chrono::Duration::days(7);
    s.jobs.retain(|j| j.name.contains("4.14"));
    let mut runs = synth::run_records(&s);
    runs.sort_by_key(|r| {
        (
            r.run.started_at,
            r.run.job_name.clone(),
            r.run.build_id.clone(),
        )
    });
    runs
}

/// The rows the runs query returns for these runs: one per backend, one for a run without.
fn rows_of(runs: &[&RunRecord]) -> u64 {
    runs.iter().map(|r| r.samples.len().max(1) as u64).sum()
}

fn query_rows(front: &BigQueryFront) -> u64 {
    front
        .log()
        .iter()
        .filter(|l| l.call != "dry_run" && l.status == 200)
        .map(|l| l.rows)
        .sum()
}

on_both_engines! {
    async fn a_second_ingest_reads_only_rows_past_the_watermark_and_takes_late_rows_once(db) {
        let Some(emulator) = Emulator::start().await else { return };
        let dir = tempfile::tempdir().unwrap();
        let runs = week_of_runs();
        let front = BigQueryFront::start(&emulator.url, SCAN_BYTES).await;
        let mut settings = settings(&front.url, dir.path());
        settings.bigquery.overlap_hours = 24;
        let overlap = 24 * 3_600;

        // the first load: runs up to two days before the end, less a few the uploader is late with
        let cut = (end() - chrono::Duration::days(2)).timestamp();
        let first: Vec<&RunRecord> = runs.iter().filter(|r| r.run.started_at.timestamp() < cut).collect();
        let watermark = first.last().unwrap().run.started_at.timestamp();
        let late_inside: Vec<&RunRecord> = first
            .iter()
            .copied()
            .filter(|r| {
                let t = r.run.started_at.timestamp();
                t >= watermark - overlap / 2 && t < watermark
            })
            .step_by(3)
            .collect();
        let late_outside =
            first.iter().copied().find(|r| r.run.started_at.timestamp() < watermark - 2 * overlap).unwrap();
        assert!(late_inside.len() >= 3, "{} late runs", late_inside.len());
        let is_late = |r: &RunRecord| {
            late_inside.iter().any(|l| l.run.build_id == r.run.build_id)
                || r.run.build_id == late_outside.run.build_id
        };
        let loaded: Vec<&RunRecord> = first.iter().copied().filter(|r| !is_late(r)).collect();
        load_jobs(&emulator, &runs.iter().collect::<Vec<_>>()).await;
        load_runs(&emulator, &loaded).await;
        let s = ingest_bq(&db.store, &settings).await.unwrap();
        assert_eq!((s.ingested, s.failed), (loaded.len() as u64, 0), "{:?}", s.errors);
        assert_eq!(query_rows(&front), rows_of(&loaded));
        assert_eq!(db.store.ingest_log().watermark(&source()).await.unwrap(), Some(watermark));

        // the second load: the rest of the week, and the late runs
        front.clear_log();
        let rest: Vec<&RunRecord> = runs.iter().filter(|r| r.run.started_at.timestamp() >= cut).collect();
        let mut second = rest.clone();
        second.extend(late_inside.iter().copied());
        second.push(late_outside);
        load_runs(&emulator, &second).await;
        let s = ingest_bq(&db.store, &settings).await.unwrap();
        // read: the rows from the watermark less the overlap, not the whole table
        let since = watermark - overlap;
        let in_range: Vec<&RunRecord> = runs.iter().filter(|r| r.run.started_at.timestamp() >= since).collect();
        let read = query_rows(&front);
        assert_eq!(read, rows_of(&in_range));
        assert!(read < rows_of(&runs.iter().collect::<Vec<_>>()) / 2, "{read} rows read");
        // the late runs inside the overlap are taken, once; older ones are past the overlap
        assert_eq!(s.ingested, (rest.len() + late_inside.len()) as u64, "{:?}", s.errors);
        for r in &late_inside {
            assert!(db.store.runs().has_run(&r.run.job_name, &r.run.build_id).await.unwrap());
        }
        assert!(!db.store.runs().has_run(&late_outside.run.job_name, &late_outside.run.build_id).await.unwrap());
        assert_eq!(db.store.runs().count_runs().await.unwrap() as usize, loaded.len() + rest.len() + late_inside.len());

        // a third ingest adds nothing
        let s = ingest_bq(&db.store, &settings).await.unwrap();
        assert_eq!(s.ingested, 0);
        eprintln!(
            "incremental: first {} rows, second {read} rows of {} in the table",
            rows_of(&loaded),
            rows_of(&runs.iter().collect::<Vec<_>>())
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_and_bigquery_sources_mixed_store_each_run_once() {
    let Some(emulator) = Emulator::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut s = Scenario::month(11, end());
    s.days = 4;
    s.start = end() - chrono::Duration::days(4);
    let truth = synth::write_tree(&s, dir.path()).unwrap();
    let reference = common::TestDb::sqlite().await;
    ingest_dir(&reference.store, dir.path()).await;
    let all = stored(&reference.store, &truth).await;
    let runs: Vec<&RunRecord> = all.values().collect();
    load(&emulator, &runs).await;
    let front = BigQueryFront::start(&emulator.url, SCAN_BYTES).await;
    let settings = settings(&front.url, dir.path());

    // bucket first, then BigQuery: every run is already stored
    let db = common::TestDb::sqlite().await;
    ingest_dir(&db.store, dir.path()).await;
    let s = ingest_bq(&db.store, &settings).await.unwrap();
    assert_eq!(
        (s.ingested, s.skipped, s.conflicts),
        (0, runs.len() as u64, 0),
        "{:?}",
        s.errors
    );
    assert_eq!(
        db.store.runs().count_runs().await.unwrap() as usize,
        runs.len()
    );

    // BigQuery first, then the bucket: likewise
    let db = common::TestDb::sqlite().await;
    let s = ingest_bq(&db.store, &settings).await.unwrap();
    assert_eq!(s.ingested, runs.len() as u64);
    let s = ingest_dir(&db.store, dir.path()).await;
    assert_eq!(s.ingested, 0, "{:?}", s.errors);
    assert_eq!(
        db.store.runs().count_runs().await.unwrap() as usize,
        runs.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_over_the_bytes_cap_is_refused_naming_the_query_and_the_cap() {
    let Some(emulator) = Emulator::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runs = week_of_runs();
    load(&emulator, &runs.iter().take(20).collect::<Vec<_>>()).await;
    let front = BigQueryFront::start(&emulator.url, SCAN_BYTES).await;
    let mut settings = settings(&front.url, dir.path());
    settings.bigquery.max_bytes_billed = 1_000_000;
    let db = common::TestDb::sqlite().await;
    let e = format!("{:#}", ingest_bq(&db.store, &settings).await.unwrap_err());
    assert!(e.contains("query `runs`"), "{e}");
    assert!(
        e.contains("bigquery.max_bytes_billed = 1000000 bytes"),
        "{e}"
    );
    assert!(e.contains("bytesBilledLimitExceeded"), "{e}");
    // refused, not retried, and nothing stored or marked read
    assert_eq!(front.log().iter().filter(|l| l.call == "query").count(), 1);
    assert_eq!(db.store.runs().count_runs().await.unwrap(), 0);
    assert_eq!(
        db.store.ingest_log().watermark(&source()).await.unwrap(),
        None
    );

    settings.bigquery.max_bytes_billed = SCAN_BYTES;
    assert_eq!(ingest_bq(&db.store, &settings).await.unwrap().ingested, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_and_server_errors_are_retried_honouring_retry_after() {
    let Some(emulator) = Emulator::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runs = week_of_runs();
    load(&emulator, &runs.iter().take(30).collect::<Vec<_>>()).await;
    let front = BigQueryFront::start(&emulator.url, SCAN_BYTES).await;
    let settings = settings(&front.url, dir.path());

    // two 429s with Retry-After: 1, then the query and its pages go through
    let db = common::TestDb::sqlite().await;
    front.inject([
        Fault::RateLimited { retry_after: 1 },
        Fault::RateLimited { retry_after: 1 },
    ]);
    let started = std::time::Instant::now();
    let s = ingest_bq(&db.store, &settings).await.unwrap();
    assert_eq!(s.ingested, 30);
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let statuses: Vec<u16> = front
        .log()
        .iter()
        .filter(|l| l.call == "query")
        .map(|l| l.status)
        .collect();
    assert_eq!(statuses, [429, 429, 200]);

    // a 500 is retried too; one on every attempt gives up, naming the query
    let db = common::TestDb::sqlite().await;
    front.clear_log();
    front.inject([Fault::Internal]);
    assert_eq!(ingest_bq(&db.store, &settings).await.unwrap().ingested, 30);
    let db = common::TestDb::sqlite().await;
    front.inject([Fault::Internal, Fault::Internal, Fault::Internal]);
    let e = format!("{:#}", ingest_bq(&db.store, &settings).await.unwrap_err());
    assert!(
        e.contains("query `runs`")
            && e.contains("internalError")
            && e.contains("gave up after 3 attempts"),
        "{e}"
    );
    assert_eq!(db.store.runs().count_runs().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_token_file_is_an_error_and_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let front = BigQueryFront::start("http://127.0.0.1:9", SCAN_BYTES).await;
    let settings = settings(&front.url, dir.path());
    std::fs::write(settings.bigquery.token_file.as_ref().unwrap(), "\n").unwrap();
    let db = common::TestDb::sqlite().await;
    let e = format!("{:#}", ingest_bq(&db.store, &settings).await.unwrap_err());
    assert!(e.contains("is empty"), "{e}");
    assert!(front.log().is_empty(), "{:?}", front.log());
}

/// A token endpoint as Google's: the JWT bearer grant, its RS256 signature checked with the
/// key's public half; it counts the tokens it gave.
async fn token_endpoint(
    public_key: Vec<u8>,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use axum::extract::{Form, State};
    use base64::Engine;
    let given = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let state = (public_key, given.clone());
    let token = |State((key, given)): State<(
        Vec<u8>,
        std::sync::Arc<std::sync::atomic::AtomicU64>,
    )>,
                 Form(form): Form<BTreeMap<String, String>>| async move {
        assert_eq!(
            form["grant_type"],
            "urn:ietf:params:oauth:grant-type:jwt-bearer"
        );
        let parts: Vec<&str> = form["assertion"].split('.').collect();
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let signature = b64.decode(parts[2]).unwrap();
        let verified = ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            &key,
        )
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature);
        let claims: serde_json::Value =
            serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
        if verified.is_err() || claims["iss"] != "sheriff@ci-test-project.iam.gserviceaccount.com" {
            let body = serde_json::json!({"error": "invalid_grant", "error_description": "Invalid JWT Signature."});
            return (axum::http::StatusCode::BAD_REQUEST, axum::Json(body));
        }
        assert!(
            claims["scope"].as_str().unwrap().contains("bigquery"),
            "{claims}"
        );
        given.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let body = serde_json::json!({"access_token": "ya29.test-access-token", "expires_in": 3599, "token_type": "Bearer"});
        (axum::http::StatusCode::OK, axum::Json(body))
    };
    let app = axum::Router::new()
        .route("/token", axum::routing::post(token))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/token", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, given)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_key_is_exchanged_for_a_token_used_until_it_expires() {
    use base64::Engine;
    let Some(emulator) = Emulator::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runs = week_of_runs();
    load(&emulator, &runs.iter().take(40).collect::<Vec<_>>()).await;
    let pem = std::fs::read_to_string(
        common::manifest_dir().join("tests/fixtures/bigquery/service-account-test-key.pem"),
    )
    .unwrap();
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap();
    let pair = ring::signature::RsaKeyPair::from_pkcs8(&der).unwrap();
    let (token_uri, given) = token_endpoint(
        ring::signature::KeyPair::public_key(&pair)
            .as_ref()
            .to_vec(),
    )
    .await;
    let key_file = dir.path().join("service-account.json");
    let key = serde_json::json!({"type": "service_account", "client_email": "sheriff@ci-test-project.iam.gserviceaccount.com",
        "private_key": pem, "token_uri": token_uri});
    std::fs::write(&key_file, key.to_string()).unwrap();
    let front = BigQueryFront::start(&emulator.url, SCAN_BYTES).await;
    let mut settings = settings(&front.url, dir.path());
    settings.bigquery.token_file = None;
    settings.bigquery.credentials_file = Some(key_file.clone());
    settings.bigquery.page_rows = 100;

    let db = common::TestDb::sqlite().await;
    assert_eq!(ingest_bq(&db.store, &settings).await.unwrap().ingested, 40);
    let calls = front.log();
    assert!(
        calls.len() > 3,
        "a dry run, the query and its pages: {calls:?}"
    );
    assert!(
        calls
            .iter()
            .all(|c| c.authorization == "Bearer ya29.test-access-token"),
        "{calls:?}"
    );
    // one token for every call of the ingest
    assert_eq!(given.load(std::sync::atomic::Ordering::SeqCst), 1);

    // another key's signature is refused, and the ingest says by whom
    let other = key.as_object().unwrap().clone();
    let mut other = serde_json::Value::Object(other);
    other["client_email"] = "someone-else@example.iam.gserviceaccount.com".into();
    std::fs::write(&key_file, other.to_string()).unwrap();
    let e = format!("{:#}", ingest_bq(&db.store, &settings).await.unwrap_err());
    assert!(
        e.contains("invalid_grant") && e.contains("someone-else@"),
        "{e}"
    );
    assert!(!e.contains("PRIVATE KEY"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_ingests_a_bigquery_dataset_on_its_schedule_incrementally() {
    let Some(emulator) = Emulator::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runs = week_of_runs();
    let (first, later) = runs.split_at(runs.len() / 2);
    load_jobs(&emulator, &runs.iter().collect::<Vec<_>>()).await;
    load_runs(&emulator, &first.iter().collect::<Vec<_>>()).await;
    let front = BigQueryFront::start(&emulator.url, SCAN_BYTES).await;
    let db = common::TestDb::sqlite().await;
    let mut settings = settings(&front.url, dir.path());
    settings.database = db.settings.clone();
    settings.schedule.evaluate = "0 0 1 1 *".into();
    settings
        .schedule
        .ingest
        .push(sheriff::config::IngestSchedule {
            source: source(),
            cron: "* * * * * *".into(),
            since_days: 60,
        });
    let app = common::app::spawn_app(settings).await;
    let wait_for = async |n: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while db.store.runs().count_runs().await.unwrap() as usize != n {
            assert!(
                std::time::Instant::now() < deadline,
                "{n} runs not stored within 60 s"
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    };
    wait_for(first.len()).await;
    load_runs(&emulator, &later.iter().collect::<Vec<_>>()).await;
    wait_for(runs.len()).await;
    // later ticks read from the watermark, not the whole table
    let last = first.last().unwrap().run.started_at.timestamp();
    assert!(
        db.store
            .ingest_log()
            .watermark(&source())
            .await
            .unwrap()
            .unwrap()
            >= last
    );
    let since = (last - 48 * 3_600).to_string();
    assert!(
        front
            .log()
            .iter()
            .any(|l| l.call == "query" && l.params[0]["parameterValue"]["value"] == since.as_str())
    );
    app.stop().await;
}

async fn backfill_bq(
    store: &Store,
    settings: &Settings,
    days: std::ops::Range<i64>,
) -> anyhow::Result<sheriff::adapters::ingest::bigquery::backfill::BackfillSummary> {
    let Source::BigQuery(dataset) = Source::parse(&source(), settings)? else {
        unreachable!()
    };
    let at = |day: i64| chrono::DateTime::from_timestamp(day * DAY, 0).unwrap();
    let summary = sheriff::adapters::ingest::bigquery::backfill::backfill(
        store,
        &dataset,
        at(days.start),
        at(days.end),
    )
    .await?;
    Ok(summary)
}

/// The UTC days of the scenario's runs, the end exclusive.
fn scenario_days(runs: &[&RunRecord]) -> std::ops::Range<i64> {
    let day = |r: &&RunRecord| r.run.started_at.timestamp().div_euclid(DAY);
    runs.iter().map(day).min().unwrap()..runs.iter().map(day).max().unwrap() + 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_down_backfill_gives_the_day_histograms_of_the_run_by_run_read() {
    let Some(emulator) = Emulator::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let truth = synth::write_tree(&scenario(), dir.path()).unwrap();
    let reference = common::TestDb::sqlite().await;
    ingest_dir(&reference.store, dir.path()).await;
    let all = stored(&reference.store, &truth).await;
    let runs: Vec<&RunRecord> = all.values().collect();
    load(&emulator, &runs).await;
    let front = BigQueryFront::start(&emulator.url, SCAN_BYTES).await;
    let settings = settings(&front.url, dir.path());
    let days = scenario_days(&runs);

    // run by run
    let by_run = common::TestDb::sqlite().await;
    let started = std::time::Instant::now();
    let s = ingest_bq(&by_run.store, &settings).await.unwrap();
    let run_seconds = started.elapsed().as_secs_f64();
    assert_eq!(
        (s.ingested, s.failed),
        (runs.len() as u64, 0),
        "{:?}",
        s.errors
    );
    let run_rows = query_rows(&front);

    // pushed down
    front.clear_log();
    let counted = common::TestDb::sqlite().await;
    let started = std::time::Instant::now();
    let b = backfill_bq(&counted.store, &settings, days.clone())
        .await
        .unwrap();
    let count_seconds = started.elapsed().as_secs_f64();
    let count_rows = query_rows(&front);
    assert_eq!(b.rows, count_rows);
    eprintln!(
        "{} runs over {} days: run by run {run_rows} rows in {run_seconds:.2} s; pushed down {count_rows} rows in {count_seconds:.2} s ({} samples, {} of CI-troubled runs left out)",
        runs.len(),
        days.end - days.start,
        b.report.samples,
        b.report.troubled_samples
    );

    // the same day histograms, with the CI-troubled runs left out of both
    let (a, c) = (
        histograms(&by_run.store, days.clone()).await,
        histograms(&counted.store, days.clone()).await,
    );
    assert!(!a.is_empty());
    assert_eq!(a, c);
    assert!(
        b.report.troubled_samples > 0,
        "the scenario has CI-troubled runs"
    );
    assert!(
        count_rows < run_rows,
        "{count_rows} rows pushed down, {run_rows} run by run"
    );
    assert_eq!(
        counted.store.runs().count_runs().await.unwrap(),
        0,
        "no run is stored"
    );

    // the evaluation finds the same regressions with the same numbers; what it takes from stored
    // runs (sample runs, the onset's payloads, the contrast, troubled runs in scope, and the
    // tests run on them, hence q) only the run-by-run store has
    let regressions = async |store: &Store| {
        let report: serde_json::Value = serde_json::from_str(&evaluation(store).await).unwrap();
        let mut list = report["regressions"].as_array().unwrap().clone();
        let from_runs: Vec<serde_json::Value> = list
            .iter_mut()
            .map(|r| {
                let r = r.as_object_mut().unwrap();
                let keys = [
                    "sample_jobs",
                    "onset",
                    "attribution",
                    "ci_troubled_runs",
                    "q_value",
                ];
                serde_json::json!(keys.map(|k| r.remove(k)))
            })
            .collect();
        (list, from_runs)
    };
    let ((found, details), (found_counted, details_counted)) = (
        regressions(&by_run.store).await,
        regressions(&counted.store).await,
    );
    assert!(!found.is_empty());
    assert_eq!(found, found_counted);
    assert!(
        details[0][0].as_array().is_some_and(|s| !s.is_empty()),
        "sample runs, run by run"
    );
    assert_eq!(
        details_counted[0][0],
        serde_json::json!([]),
        "no sample run from counts"
    );

    // both queries (the jobs, then the counts) carried the cap and the labels, their values
    // bound as parameters, each estimated by a dry run first
    let queries: Vec<_> = front
        .log()
        .into_iter()
        .filter(|l| l.call == "query")
        .collect();
    let names: Vec<&str> = queries.iter().map(|q| q.label.as_str()).collect();
    assert_eq!(names, ["backfill_jobs", "backfill"]);
    for q in &queries {
        assert_eq!(q.max_bytes_billed, Some(settings.bigquery.max_bytes_billed));
        assert_eq!(
            q.labels,
            serde_json::json!({"app": "sheriff", "query": q.label})
        );
        assert!(
            front
                .log()
                .iter()
                .any(|l| l.call == "dry_run" && l.label == q.label)
        );
        assert!(
            q.sql.contains("@from") && !q.sql.contains(&days.start.to_string()),
            "{}",
            q.sql
        );
    }
    assert!(
        queries[1].sql.contains("@liveness") && queries[1].sql.contains("@variants"),
        "{}",
        queries[1].sql
    );
}

on_both_engines! {
    async fn backfilled_days_are_sealed_so_mixing_ingests_never_counts_a_run_twice(db) {
        let Some(emulator) = Emulator::start().await else { return };
        let dir = tempfile::tempdir().unwrap();
        let mut s = Scenario::month(11, end());
        s.days = 6;
        s.start = end() - chrono::Duration::days(6);
        let truth = synth::write_tree(&s, dir.path()).unwrap();
        let reference = common::TestDb::sqlite().await;
        ingest_dir(&reference.store, dir.path()).await;
        let all = stored(&reference.store, &truth).await;
        let runs: Vec<&RunRecord> = all.values().collect();
        load(&emulator, &runs).await;
        let front = BigQueryFront::start(&emulator.url, SCAN_BYTES).await;
        let mut settings = settings(&front.url, dir.path());
        settings.bigquery.overlap_hours = 24;
        let days = scenario_days(&runs);
        let mid = (days.start + days.end) / 2;
        let before_mid = runs.iter().filter(|r| r.run.started_at.timestamp() < mid * DAY).count();
        assert!(before_mid > 20 && before_mid < runs.len() - 20, "{before_mid} of {} runs", runs.len());

        // the first days as counts, then BigQuery run by run: it reads from the sealed days' end
        backfill_bq(&db.store, &settings, days.start..mid).await.unwrap();
        front.clear_log();
        let s = ingest_bq(&db.store, &settings).await.unwrap();
        assert_eq!((s.ingested, s.failed), ((runs.len() - before_mid) as u64, 0), "{:?}", s.errors);
        let query = front.log().into_iter().find(|l| l.call == "query").unwrap();
        assert_eq!(query.params[0]["parameterValue"]["value"], (mid * DAY).to_string().as_str());
        // then the whole bucket: its runs of the sealed days are not stored, the others are stored already
        let s = ingest_dir(&db.store, dir.path()).await;
        assert_eq!(s.ingested, 0, "{:?}", s.errors);
        assert_eq!(db.store.runs().count_runs().await.unwrap() as usize, runs.len() - before_mid);
        // and BigQuery again from the start
        let s = ingest(
            &db.store,
            &settings.ingest,
            &Source::parse(&source(), &settings).unwrap(),
            &IngestOptions { force: true, ..Default::default() },
        )
        .await
        .unwrap();
        assert_eq!(s.failed, 0, "{:?}", s.errors);
        assert_eq!(db.store.runs().count_runs().await.unwrap() as usize, runs.len() - before_mid);
        // every run counted once: the histograms of the run-by-run read
        let expected = histograms(&reference.store, days.clone()).await;
        assert_eq!(histograms(&db.store, days.clone()).await, expected);

        // a backfill over days already filled, or with runs stored, is refused and changes nothing
        let overlapping = days.start + 1..mid + 1;
        let e = format!("{:#}", backfill_bq(&db.store, &settings, overlapping).await.unwrap_err());
        assert!(e.contains("backfilled already"), "{e}");
        let e = format!("{:#}", backfill_bq(&db.store, &settings, mid..days.end).await.unwrap_err());
        assert!(e.contains("stored already"), "{e}");
        assert_eq!(histograms(&db.store, days).await, expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backfill_command_prints_what_it_filled_as_json() {
    let Some(emulator) = Emulator::start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runs = week_of_runs();
    load(&emulator, &runs.iter().collect::<Vec<_>>()).await;
    let front = BigQueryFront::start(&emulator.url, SCAN_BYTES).await;
    let token = dir.path().join("token");
    std::fs::write(&token, "test-access-token\n").unwrap();
    let db = format!("sqlite://{}", dir.path().join("b.db").display());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sheriff"))
        .args([
            "ingest",
            &source(),
            "--backfill",
            "--from",
            "2026-11-22",
            "--to",
            "2026-11-29",
            "--format",
            "json",
        ])
        .current_dir(dir.path())
        .env("SHERIFF__DATABASE__URL", &db)
        .env("SHERIFF__BIGQUERY__API_URL", &front.url)
        .env("SHERIFF__BIGQUERY__TOKEN_FILE", &token)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let samples: u64 = runs.iter().map(|r| r.samples.len() as u64).sum();
    assert_eq!(
        (json["from"].as_str(), json["to"].as_str()),
        (Some("2026-11-22"), Some("2026-11-29"))
    );
    assert_eq!(
        json["samples"].as_u64().unwrap() + json["troubled_samples"].as_u64().unwrap(),
        samples,
        "{json}"
    );
    assert_eq!(json["rows"].as_u64(), Some(query_rows(&front)), "{json}");
}

/// The calibrated CI world, whose metal jobs' `gcp-network-liveness-*` probes are broken (down
/// in every run) and which has spells of CI trouble: the backfill leaves out the runs a working
/// probe says were troubled, and keeps those only a broken one flags, as the run-by-run read does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_calibrated_world_the_backfill_judges_ci_trouble_as_the_run_by_run_read() {
    let Some((b, _)) = compare_on_world(0.5).await else {
        return;
    };
    assert!(b.report.troubled_samples > 0);
}

/// Rows and wall time of the two reads on the calibrated world at ten times its usual rate
/// (`SHERIFF_MEASURE_SCALE` sets the rate, 5.0 by default; docs/performance.md has the figures):
/// `cargo test --test integration -- --ignored measure_push_down --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: minutes of loading and reading"]
async fn measure_push_down_backfill_against_the_run_by_run_read() {
    let scale = std::env::var("SHERIFF_MEASURE_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    let Some((b, line)) = compare_on_world(scale).await else {
        return;
    };
    eprintln!("{line}\nbackfill: {b:?}");
}

/// Loads the calibrated world at `scale` into the emulator, reads it run by run into one store
/// and by the backfill into another, and checks their day histograms are the same: the
/// backfill's summary and a line of rows and times.
async fn compare_on_world(
    scale: f64,
) -> Option<(
    sheriff::adapters::ingest::bigquery::backfill::BackfillSummary,
    String,
)> {
    let emulator = Emulator::start().await?;
    let dir = tempfile::tempdir().unwrap();
    let mut spec = synth::world::WorldSpec::new(20231114, end(), Vec::new());
    spec.scale = scale;
    let world = synth::world::build(&spec).unwrap();
    let runs: Vec<&RunRecord> = world.records.iter().collect();
    let samples: usize = runs.iter().map(|r| r.samples.len()).sum();
    load_jobs(&emulator, &runs).await;
    for chunk in runs.chunks(5_000) {
        insert_runs(&emulator, chunk).await;
    }
    let front = BigQueryFront::start(&emulator.url, SCAN_BYTES).await;
    let mut settings = settings(&front.url, dir.path());
    settings.bigquery.page_rows = 10_000;
    let days = scenario_days(&runs);

    let by_run = common::TestDb::sqlite().await;
    let started = std::time::Instant::now();
    let s = ingest_bq(&by_run.store, &settings).await.unwrap();
    let run_seconds = started.elapsed().as_secs_f64();
    assert_eq!(s.failed, 0, "{:?}", s.errors);
    let run_rows = query_rows(&front);

    front.clear_log();
    let counted = common::TestDb::sqlite().await;
    let started = std::time::Instant::now();
    let b = backfill_bq(&counted.store, &settings, days.clone())
        .await
        .unwrap();
    let count_seconds = started.elapsed().as_secs_f64();
    let count_rows = query_rows(&front);
    // the jobs' list fits in its first page
    let jobs: u64 = front
        .log()
        .iter()
        .filter(|l| l.label == "backfill_jobs" && l.call == "query")
        .map(|l| l.rows)
        .sum();
    let line = format!(
        "{} runs, {samples} samples over {} days: run by run {run_rows} rows in {run_seconds:.1} s; pushed down {count_rows} rows ({jobs} of jobs, {} of counts) in {count_seconds:.1} s",
        runs.len(),
        days.end - days.start,
        count_rows - jobs,
    );
    assert_eq!(
        histograms(&by_run.store, days.clone()).await,
        histograms(&counted.store, days).await
    );
    assert!(count_rows < run_rows, "{line}");
    Some((b, line))
}

/// The runs' rows as [`load_runs`] loads them (the columns sheriff reads), inserted by one
/// statement per table from a packed string: the emulator's CSV loads take 100 s for 40,000 rows.
async fn insert_runs(emulator: &Emulator, runs: &[&RunRecord]) {
    let (mut job_runs, mut backends) = (Vec::new(), Vec::new());
    for r in runs {
        let run = &r.run;
        let start = run.started_at.timestamp();
        let end = run.finished_at.map_or(start, |f| f.timestamp());
        let fields = [
            &run.build_id,
            &run.job_name,
            &run.state,
            &run.payload,
            &run.dimensions.master_nodes_updated,
        ];
        assert!(
            fields.iter().all(|f| !f.contains([',', ';', '\''])),
            "{fields:?}"
        );
        job_runs.push(format!(
            "{},{},{},{start},{end},{},{}",
            run.build_id, run.job_name, run.state, run.payload, run.dimensions.master_nodes_updated
        ));
        for s in &r.samples {
            assert!(!s.backend.contains([',', ';', '\'']), "{}", s.backend);
            backends.push(format!("{},{},{}", s.backend, s.seconds, run.build_id));
        }
    }
    let field = |n: usize| format!("SPLIT(e, ',')[OFFSET({n})]");
    let nullable = |n: usize| format!("NULLIF({}, '')", field(n));
    let time = |n: usize| format!("TIMESTAMP_SECONDS(CAST({} AS INT64))", field(n));
    emulator
        .run(&format!(
            "INSERT INTO {DATASET}.BackendDisruption_JobRuns (Name, JobName, Status, StartTime, EndTime, ReleaseTag, MasterNodesUpdated) \
             SELECT {}, {}, {}, {}, {}, {}, {} FROM UNNEST(SPLIT('{}', ';')) AS e",
            field(0),
            field(1),
            field(2),
            time(3),
            time(4),
            field(5),
            nullable(6),
            job_runs.join(";")
        ))
        .await;
    if !backends.is_empty() {
        emulator
            .run(&format!(
                "INSERT INTO {DATASET}.BackendDisruption (BackendName, DisruptionSeconds, JobRunName) \
                 SELECT {}, CAST({} AS INT64), {} FROM UNNEST(SPLIT('{}', ';')) AS e",
                field(0),
                field(1),
                field(2),
                backends.join(";")
            ))
            .await;
    }
}
