//! `POST /api/v1/runs` through the router, without a socket.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use sheriff::config::{Secret, Settings};
use sheriff::edge::server::{AppState, router};
use sheriff::synth::{self, Scenario};
use tower::ServiceExt;

const TOKEN: &str = "push-token-for-tests";

fn state(db: &common::TestDb, token: Option<&str>, max_body: usize) -> AppState {
    let mut settings = Settings::default();
    settings.ingest.push_token = token.map(Secret::new);
    settings.server.max_body_bytes = max_body;
    settings.database = db.settings.clone();
    state_with(settings)
}

fn state_with(settings: Settings) -> AppState {
    // The router holds the store by Arc; tests keep their own handle through a second open.
    AppState::new(
        Arc::new(futures_block(sheriff::store::Store::open(&settings.database)).unwrap()),
        Arc::new(sheriff::application::warm::Warm::new()),
        Arc::new(settings),
    )
}

fn futures_block<F: std::future::Future>(f: F) -> F::Output {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(f))
}

/// One generated run's files, as a push body.
fn pushed_run() -> (serde_json::Value, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Scenario::month(7, synth::day(2026, 11, 1));
    s.days = 1;
    s.jobs.truncate(1);
    let truth = synth::write_tree(&s, dir.path()).unwrap();
    let run = &truth.runs[0];
    let root = dir.path().join(&s.bucket).join(&run.path);
    let mut files = BTreeMap::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                let name = e
                    .path()
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                files.insert(
                    name,
                    serde_json::Value::String(std::fs::read_to_string(e.path()).unwrap()),
                );
            }
        }
    }
    let body = serde_json::json!({"bucket": s.bucket, "path": run.path, "files": files});
    (body, run.job.clone(), run.build_id.clone())
}

fn request(token: Option<&str>, body: String) -> Request<Body> {
    let mut r = Request::post("/api/v1/runs").header("content-type", "application/json");
    if let Some(t) = token {
        r = r.header("authorization", format!("Bearer {t}"));
    }
    r.body(Body::from(body)).unwrap()
}

async fn call(state: AppState, req: Request<Body>) -> (StatusCode, serde_json::Value) {
    let response = router(state).oneshot(req).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
    )
}

on_both_engines! {
    async fn a_pushed_run_is_stored_once(db) {
        let (body, job, build) = pushed_run();
        let st = state(&db, Some(TOKEN), 32 << 20);
        let (status, answer) = call(st.clone(), request(Some(TOKEN), body.to_string())).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        assert!(db.store.runs().has_run(&job, &build).await.unwrap());
        let (status, answer) = call(st, request(Some(TOKEN), body.to_string())).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["outcome"], "already stored");
        assert_eq!(db.store.runs().count_runs().await.unwrap(), 1);
    }

    async fn a_conflicting_re_push_is_refused_with_409_and_the_stored_run_kept(db) {
        let (mut body, job, build) = pushed_run();
        let st = state(&db, Some(TOKEN), 32 << 20);
        assert_eq!(call(st.clone(), request(Some(TOKEN), body.to_string())).await.0, StatusCode::CREATED);
        let before = db.store.runs().run(&job, &build).await.unwrap().unwrap();
        let name = body["files"].as_object().unwrap().keys().find(|k| k.contains("backend-disruption")).unwrap().clone();
        body["files"][&name] = serde_json::json!({"BackendDisruptions": {"image-registry-new-connections": {"Name": "image-registry-new-connections", "ConnectionType": "New", "DisruptedDuration": "777s"}}});
        let (status, answer) = call(st.clone(), request(Some(TOKEN), body.to_string())).await;
        assert_eq!(status, StatusCode::CONFLICT, "{answer}");
        assert!(answer["errors"][0]["error"].as_str().unwrap().contains("already stored with other content"), "{answer}");
        assert_eq!(db.store.runs().run(&job, &build).await.unwrap().unwrap().samples, before.samples, "kept as stored");
        let log = db.store.ingest_log().recent(Some(sheriff::store::LogOutcome::Conflict), 10).await.unwrap();
        assert_eq!(log.len(), 1, "the conflict is in the ingest log");
        // with force it replaces; the lower-case bearer scheme is the same token
        body["force"] = serde_json::json!(true);
        let req = Request::post("/api/v1/runs").header("content-type", "application/json").header("authorization", format!("bearer {TOKEN}")).body(Body::from(body.to_string())).unwrap();
        let (status, answer) = call(st, req).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        assert!(db.store.runs().run(&job, &build).await.unwrap().unwrap().samples.iter().any(|s| s.seconds == 777));
    }

    async fn a_wrong_or_missing_token_is_refused_and_stores_nothing(db) {
        let (body, _, _) = pushed_run();
        let st = state(&db, Some(TOKEN), 32 << 20);
        for token in [None, Some("wrong"), Some("")] {
            let (status, _) = call(st.clone(), request(token, body.to_string())).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
        // the token is checked before the body is read: a huge or broken body without it is
        // refused as unauthenticated, never parsed
        let junk = format!("{{\"path\": \"logs/j/1\", \"files\": {{\"x\": [{}0]}}", "0,".repeat(100_000));
        let (status, _) = call(st.clone(), request(Some("wrong"), junk)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, answer) = call(state(&db, None, 32 << 20), request(Some(TOKEN), body.to_string())).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
        assert_eq!(db.store.runs().count_runs().await.unwrap(), 0);
    }

    async fn an_empty_configured_token_is_never_satisfied_by_a_missing_header(db) {
        // loading refuses an empty token; this holds even for settings built in code
        let (body, _, _) = pushed_run();
        let st = state(&db, Some(""), 32 << 20);
        for token in [None, Some("")] {
            let (status, _) = call(st.clone(), request(token, body.to_string())).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
        assert_eq!(db.store.runs().count_runs().await.unwrap(), 0);
    }

    async fn a_broken_run_is_refused_naming_the_file(db) {
        let (mut body, job, build) = pushed_run();
        let name = body["files"].as_object().unwrap().keys().find(|k| k.contains("backend-disruption")).unwrap().clone();
        body["files"][&name] = serde_json::json!("{\"BackendDisruptions\": {");
        let (status, answer) = call(state(&db, Some(TOKEN), 32 << 20), request(Some(TOKEN), body.to_string())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert!(answer["errors"][0]["file"].as_str().unwrap().contains("backend-disruption"), "{answer}");
        assert!(!db.store.runs().has_run(&job, &build).await.unwrap());
    }

    async fn a_nul_character_in_artifact_text_is_refused_alike_on_both_engines_naming_the_file(db) {
        // in a backend name: the disruption file is refused (422, do not retry as is), twice alike
        let (mut body, job, build) = pushed_run();
        let name = body["files"].as_object().unwrap().keys().find(|k| k.contains("backend-disruption")).unwrap().clone();
        body["files"][&name] = serde_json::json!(r#"{"BackendDisruptions": {"nul\u0000be-new-connections": {"DisruptedDuration": "3s"}}}"#);
        for _ in 0..2 {
            let (status, answer) = call(state(&db, Some(TOKEN), 32 << 20), request(Some(TOKEN), body.to_string())).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
            assert_eq!(answer["errors"][0]["file"].as_str().unwrap(), name, "{answer}");
            assert!(answer["errors"][0]["error"].as_str().unwrap().contains("NUL"), "{answer}");
        }
        assert!(!db.store.runs().has_run(&job, &build).await.unwrap());

        // in prowjob.json (job name, payload tag): the run is stored without that file, which
        // a warning names; the job name comes from the run's path
        let (mut body, job, build) = pushed_run();
        let prowjob = body["files"].as_object().unwrap().keys().find(|k| k.ends_with("prowjob.json")).cloned();
        let prowjob = prowjob.unwrap_or_else(|| "prowjob.json".to_string());
        body["files"][&prowjob] = serde_json::json!(format!(
            r#"{{"spec": {{"job": "{job}\u0000x"}}, "metadata": {{"annotations": {{"release.openshift.io/tag": "4.14.0\u0000"}}}}, "status": {{"build_id": "{build}"}}}}"#
        ));
        let (status, answer) = call(state(&db, Some(TOKEN), 32 << 20), request(Some(TOKEN), body.to_string())).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        assert!(answer.to_string().contains(&prowjob) && answer.to_string().contains("NUL"), "{answer}");
        let stored = db.store.runs().run(&job, &build).await.unwrap().unwrap();
        assert!(!stored.run.job_name.contains('\0') && !stored.run.payload.contains('\0'));
    }

    async fn pushes_beyond_the_concurrency_wait_their_turn_with_503_and_retry_after(db) {
        let (body, job, build) = pushed_run();
        let mut settings = Settings::default();
        settings.ingest.push_token = Some(Secret::new(TOKEN));
        settings.ingest.push_concurrency = 1;
        settings.database = db.settings.clone();
        let st = state_with(settings);
        // one push whose body is still arriving holds the only slot
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<axum::body::Bytes, std::io::Error>>();
        let slow = Request::post("/api/v1/runs")
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(Body::from_stream(rx))
            .unwrap();
        let first = tokio::spawn(call(st.clone(), slow));
        for _ in 0..300 {
            if st.push_slots.available_permits() == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let response = router(st.clone()).oneshot(request(Some(TOKEN), body.to_string())).await.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()["retry-after"], "5");
        assert!(!db.store.runs().has_run(&job, &build).await.unwrap(), "the turned-away push stored nothing");
        // the first finishes, and its slot is free again
        tx.unbounded_send(Ok(axum::body::Bytes::from(body.to_string()))).unwrap();
        drop(tx);
        let (status, answer) = first.await.unwrap();
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        assert_eq!(st.push_slots.available_permits(), 1);
        let (status, answer) = call(st, request(Some(TOKEN), body.to_string())).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }

    async fn malformed_and_oversized_bodies_are_refused(db) {
        let (status, _) = call(state(&db, Some(TOKEN), 32 << 20), request(Some(TOKEN), "{\"path\": ".into())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let (status, _) = call(state(&db, Some(TOKEN), 32 << 20), request(Some(TOKEN), r#"{"path": "../../etc", "files": {}}"#.into())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let (body, _, _) = pushed_run();
        let (status, _) = call(state(&db, Some(TOKEN), 1024), request(Some(TOKEN), body.to_string())).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    }
}

/// A write the database refuses (an injected I/O error): the pusher is told to retry (503),
/// not that its file is bad (422), and nothing of the write is left behind; `sheriff ingest`
/// exits 2 for the same cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storage_failure_is_retryable_not_a_bad_file() {
    let db = common::TestDb::sqlite().await;
    let pool = sqlx::SqlitePool::connect(db.url().as_str()).await.unwrap();
    sqlx::query(
        "CREATE TRIGGER injected_fault BEFORE INSERT ON job_runs BEGIN SELECT RAISE(ABORT, 'disk I/O error (injected)'); END",
    )
    .execute(&pool)
    .await
    .unwrap();
    let (body, job, build) = pushed_run();
    let (status, answer) = call(
        state(&db, Some(TOKEN), 32 << 20),
        request(Some(TOKEN), body.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    assert!(
        answer["errors"][0]["error"]
            .as_str()
            .unwrap()
            .contains("storing the run failed"),
        "{answer}"
    );
    assert!(!db.store.runs().has_run(&job, &build).await.unwrap());
    // The failed write leaves none of its backend or variant rows behind (D13).
    for table in ["backends", "variants"] {
        let rows: i64 =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(rows, 0, "{table} rows left by a failed write");
    }

    let dir = tempfile::tempdir().unwrap();
    let mut s = Scenario::month(5, synth::day(2026, 11, 29));
    s.days = 1;
    s.noise_intervals = 0;
    synth::write_tree(&s, dir.path()).unwrap();
    let ingest = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_sheriff"))
            .args(["ingest", dir.path().to_str().unwrap(), "--format", "json"])
            .env("SHERIFF__DATABASE__URL", db.url())
            .env("RUST_LOG", "off")
            .output()
            .unwrap()
    };
    let out = ingest();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(summary["storage_failed"].as_u64().unwrap() > 0, "{summary}");
    sqlx::query("DROP TRIGGER injected_fault")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(ingest().status.code(), Some(0), "the retry stores them");
}

/// A value the database refuses as such (PostgreSQL's data exceptions, class 22) fails the
/// same way every time: the pusher is told its run is refused (422), not to retry (503).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_the_database_refuses_is_a_refused_run_not_a_retry() {
    let Some(db) = common::TestDb::postgres().await else {
        eprintln!("skipped: {} is not set", common::POSTGRES_ENV);
        return;
    };
    let pool = sqlx::PgPool::connect(db.url().as_str()).await.unwrap();
    for statement in [
        "CREATE FUNCTION refuse_run() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'invalid byte sequence (injected)' USING ERRCODE = '22021'; END $$ LANGUAGE plpgsql",
        "CREATE TRIGGER refuse_run BEFORE INSERT ON job_runs FOR EACH ROW EXECUTE FUNCTION refuse_run()",
    ] {
        sqlx::query(statement).execute(&pool).await.unwrap();
    }
    let (body, job, build) = pushed_run();
    let (status, answer) = call(
        state(&db, Some(TOKEN), 32 << 20),
        request(Some(TOKEN), body.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert!(
        answer["errors"][0]["error"]
            .as_str()
            .unwrap()
            .contains("refused a value"),
        "{answer}"
    );
    assert!(!db.store.runs().has_run(&job, &build).await.unwrap());
    pool.close().await;
}

/// A connection holding the runs table locked, as a hung database looks to a push: PostgreSQL's
/// `ACCESS EXCLUSIVE` lock, SQLite's exclusive transaction. Released when dropped.
enum Hang {
    Postgres(#[allow(dead_code)] sqlx::PgConnection),
    Sqlite(#[allow(dead_code)] sqlx::SqliteConnection),
}

async fn hang(db: &common::TestDb) -> Hang {
    use sqlx::Connection as _;
    if db.url().starts_with("postgres") {
        let mut conn = sqlx::PgConnection::connect(&db.url()).await.unwrap();
        sqlx::raw_sql("BEGIN; LOCK TABLE job_runs IN ACCESS EXCLUSIVE MODE")
            .execute(&mut conn)
            .await
            .unwrap();
        Hang::Postgres(conn)
    } else {
        let mut conn = sqlx::SqliteConnection::connect(&db.url()).await.unwrap();
        sqlx::raw_sql("BEGIN EXCLUSIVE")
            .execute(&mut conn)
            .await
            .unwrap();
        Hang::Sqlite(conn)
    }
}

on_both_engines! {
    // With the database hung (a lock held, not a refused connection), a push is answered 503
    // "storage unavailable, retry later" within `ingest.push_store_timeout_secs`, not 408 after
    // the request's 60 s; once the lock goes, the same push is stored.
    async fn a_hung_database_answers_a_push_503_within_the_store_timeout(db) {
        let (body, job, build) = pushed_run();
        let mut settings = Settings::default();
        settings.ingest.push_token = Some(Secret::new(TOKEN));
        settings.ingest.push_store_timeout_secs = 2;
        settings.database = db.settings.clone();
        let st = state_with(settings);
        let held = hang(&db).await;
        let started = std::time::Instant::now();
        let (status, answer) = call(st.clone(), request(Some(TOKEN), body.to_string())).await;
        let waited = started.elapsed();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
        assert!(answer["errors"][0]["error"].as_str().unwrap().contains("storage unavailable, retry later"), "{answer}");
        assert!(waited < std::time::Duration::from_secs(6), "answered after {waited:?}");
        drop(held);
        let (status, answer) = call(st, request(Some(TOKEN), body.to_string())).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
        assert!(db.store.runs().has_run(&job, &build).await.unwrap());
    }
}

/// PostgreSQL itself gives up a statement held longer than `database.statement_timeout_secs`
/// (SQLSTATE 57014): a storage failure, 503, even when the push's own time limit is longer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_held_past_the_statement_timeout_is_a_storage_failure() {
    let Some(db) = common::TestDb::postgres().await else {
        eprintln!("skipped: {} is not set", common::POSTGRES_ENV);
        return;
    };
    let (body, job, build) = pushed_run();
    let mut settings = Settings::default();
    settings.ingest.push_token = Some(Secret::new(TOKEN));
    settings.ingest.push_store_timeout_secs = 60;
    settings.database = db.settings.clone();
    settings.database.statement_timeout_secs = 1;
    let st = state_with(settings);
    let held = hang(&db).await;
    let started = std::time::Instant::now();
    let (status, answer) = call(st, request(Some(TOKEN), body.to_string())).await;
    let waited = started.elapsed();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    let error = answer["errors"][0]["error"].as_str().unwrap();
    assert!(
        error.contains("storing the run failed") && error.contains("statement timeout"),
        "{answer}"
    );
    assert!(
        waited < std::time::Duration::from_secs(6),
        "answered after {waited:?}"
    );
    drop(held);
    assert!(!db.store.runs().has_run(&job, &build).await.unwrap());
}
