//! Storage faults on SQLite: the database on a small tmpfs that a test fills up and empties
//! again. A disk-full error must not poison the pool (D1): once there is space, every write
//! works again and `/readyz` is back; while writes fail `/readyz` says so. A silence answered
//! as made is stored (D2): during the fault the person is told it failed, nothing is half
//! written, and afterwards it works. The test skips, saying why, where a tmpfs cannot be
//! mounted (it needs root).

use std::io::Write as _;
use std::str::FromStr as _;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use sheriff::config::{DatabaseSettings, DatabaseUrl, Settings};
use sheriff::store::Store;
use sheriff::synth::{self, Scenario};
use tower::ServiceExt as _;

/// A tmpfs of `mb` MiB at a fresh folder, unmounted on drop.
struct Tiny {
    dir: tempfile::TempDir,
}

impl Tiny {
    fn mount(mb: u32) -> Option<Tiny> {
        let dir = tempfile::tempdir().ok()?;
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mb}m"), "tmpfs"])
            .arg(dir.path())
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "skipped: cannot mount a tmpfs here ({}); storage faults need root",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(Tiny { dir })
    }

    fn path(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Fills what space is left with a file; the file.
    fn fill(&self) -> std::path::PathBuf {
        let p = self.path().join("filler");
        let mut f = std::fs::File::create(&p).unwrap();
        let block = vec![0u8; 64 * 1024];
        while f.write_all(&block).is_ok() {}
        let _ = f.flush();
        p
    }
}

impl Drop for Tiny {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

async fn ready(state: &sheriff::edge::server::AppState) -> u16 {
    let r = sheriff::edge::server::router(state.clone())
        .oneshot(Request::get("/readyz").body(Body::empty()).unwrap())
        .await
        .unwrap();
    r.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_plainly_and_once_it_has_space_every_write_works_again() {
    sheriff::init_crypto();
    let Some(tiny) = Tiny::mount(24) else { return };
    let url = format!("sqlite://{}", tiny.path().join("s.db").display());
    let db = DatabaseSettings {
        url: DatabaseUrl::from_str(&url).unwrap(),
        ..Default::default()
    };
    let store = Arc::new(Store::open(&db).await.unwrap());
    let mut s = Scenario::month(5, synth::day(2026, 11, 29));
    s.days = 6;
    s.start = synth::day(2026, 11, 23);
    // One run of every variant first, so that during the fault the runs' own transaction is
    // what fails (the variants and backends exist), not the creation of their ids.
    let all = synth::run_records(&s);
    let mut seen = std::collections::HashSet::new();
    let (before, rest): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|r| seen.insert(r.run.dimensions.clone()));
    let records: Vec<_> = before.iter().chain(&rest).cloned().collect();
    store.runs().write_runs(&before, false).await.unwrap();
    let state = sheriff::edge::server::AppState::new(
        store.clone(),
        Arc::new(sheriff::application::warm::Warm::new()),
        Arc::new(Settings::default()),
    );
    assert_eq!(ready(&state).await, 200);

    let filler = tiny.fill();
    let mut failed = 0;
    for chunk in rest[..200].chunks(10) {
        if let Err(e) = store.runs().write_runs(chunk, false).await {
            failed += 1;
            let text = format!("{e:#}");
            eprintln!(
                "write failed: {text} (storage: {})",
                sheriff::store::is_storage_error(&e)
            );
            assert!(
                !text.contains("transaction depth"),
                "the real cause is reported: {text}"
            );
        }
    }
    assert!(failed > 0, "the full disk made writes fail");
    assert_eq!(ready(&state).await, 503, "not ready while writes fail");
    // a silence asked for now is refused, and nothing of it is kept
    let target =
        sheriff::domain::incidents::silence::Target::parse(&["backend=image-registry-*"]).unwrap();
    let now = chrono::Utc::now().timestamp();
    let asked = sheriff::application::actions::silence(
        &store,
        &target,
        3600,
        "disk full",
        &sheriff::application::actions::Operator::local_named("me"),
        now,
    )
    .await;
    assert!(
        asked.is_err(),
        "a silence is not acknowledged unless stored: {asked:?}"
    );

    std::fs::remove_file(filler).unwrap();
    // space again: every connection of the pool writes again
    for chunk in rest[200..].chunks(10) {
        store
            .runs()
            .write_runs(chunk, false)
            .await
            .expect("writes work again once there is space");
    }
    assert_eq!(ready(&state).await, 200, "ready again");
    let id = sheriff::application::actions::silence(
        &store,
        &target,
        3600,
        "disk fine",
        &sheriff::application::actions::Operator::local_named("me"),
        now + 1,
    )
    .await
    .unwrap()
    .id;
    let kept = store.incidents().silences(now + 2).await.unwrap();
    assert_eq!(
        kept.iter().map(|s| s.id).collect::<Vec<_>>(),
        vec![id],
        "exactly the acknowledged silence is stored"
    );
    // everything that was refused can be written now, and nothing that failed was half kept
    let outcomes = store.runs().write_runs(&rest[..200], false).await.unwrap();
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, sheriff::store::WriteOutcome::Inserted))
    );
    assert_eq!(
        store.runs().count_runs().await.unwrap() as usize,
        records.len()
    );
    store.close().await;
}

/// Runs one statement on the test database, whichever engine it is; the rows it changed.
async fn run_sql(db: &crate::common::TestDb, statement: &str) -> u64 {
    match db.store.engine() {
        sheriff::config::Engine::Sqlite => {
            let pool = sqlx::SqlitePool::connect(db.url().as_str()).await.unwrap();
            let done = sqlx::query(sqlx::AssertSqlSafe(statement.to_string()))
                .execute(&pool)
                .await
                .unwrap();
            pool.close().await;
            done.rows_affected()
        }
        sheriff::config::Engine::Postgres => {
            let pool = sqlx::PgPool::connect(db.url().as_str()).await.unwrap();
            let done = sqlx::query(sqlx::AssertSqlSafe(statement.to_string()))
                .execute(&pool)
                .await
                .unwrap();
            pool.close().await;
            done.rows_affected()
        }
    }
}

on_both_engines! {
    async fn a_failed_cycle_that_cannot_be_recorded_is_recorded_once_the_database_takes_writes_again(db) {
        use sheriff::store::{CycleOutcome, CycleRecord};
        let failed = CycleRecord {
            started_at: 1_700_000_000,
            finished_at: 1_700_000_001,
            evaluated_at: 1_700_000_000,
            outcome: CycleOutcome::Failed,
            error: "the database went away".into(),
            ..Default::default()
        };
        // the cycles' table cannot be written (as with the database down)
        run_sql(&db, "ALTER TABLE eval_cycles RENAME TO eval_cycles_away").await;
        let unrecorded = sheriff::application::cycle::Unrecorded::default();
        assert!(unrecorded.record(&db.store, &failed).await.is_err());
        assert!(unrecorded.record_kept(&db.store).await.is_err(), "still cannot write");
        run_sql(&db, "ALTER TABLE eval_cycles_away RENAME TO eval_cycles").await;
        assert_eq!(unrecorded.record_kept(&db.store).await.unwrap(), 1, "recorded once writes work");
        assert_eq!(unrecorded.record_kept(&db.store).await.unwrap(), 0, "and only once");
        assert_eq!(db.store.evaluations().count_cycles().await.unwrap(), 1);
    }
}

on_both_engines! {
    async fn a_cycle_whose_outcome_cannot_be_committed_is_recorded_as_failed(db) {
        use sheriff::application::cycle::{CycleOptions, Unrecorded, run_cycle_keeping};
        let warm = sheriff::application::warm::Warm::new();
        let unrecorded = Unrecorded::default();
        let at = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let options = CycleOptions { at, dry_run: false };
        // every write transaction fails at its commit; a plain write still works
        db.store.inject_write_faults(Some(Arc::new(|| true)));
        let failed = run_cycle_keeping(&db.store, &warm, &unrecorded, &Settings::default(), options).await;
        db.store.inject_write_faults(None);
        let e = failed.expect_err("the cycle's transaction could not commit");
        assert!(sheriff::store::is_storage_error(&anyhow::Error::from(e)));
        assert_eq!(db.store.evaluations().count_cycles().await.unwrap(), 1);
        let failed = "UPDATE eval_cycles SET error = error WHERE outcome = 'failed' AND error LIKE 'storing the cycle failed%'";
        assert_eq!(run_sql(&db, failed).await, 1, "recorded as failed, saying why");
        assert_eq!(unrecorded.record_kept(&db.store).await.unwrap(), 0, "nothing kept: it was recorded");
    }
}
