//! Shared by the integration tests: a fresh database per test on SQLite and PostgreSQL.

pub mod app;
pub mod bigquery;
pub mod faults;
pub mod gcs;
pub mod github;
pub mod jira;
pub mod proxy;
pub mod release_controller;
pub mod slack;

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use sheriff::config::{DatabaseSettings, DatabaseUrl};
use sheriff::store::Store;

/// Set to a PostgreSQL server URL (any database on it) to run every store test on PostgreSQL
/// too. Each test creates its own uniquely named database there and drops it afterwards.
pub const POSTGRES_ENV: &str = "SHERIFF_TEST_POSTGRES_URL";

/// A migrated, empty database for one test; dropped (PostgreSQL) or deleted (SQLite) after it.
pub struct TestDb {
    pub settings: DatabaseSettings,
    pub store: Store,
    _dir: Option<tempfile::TempDir>,
    postgres: Option<(String, String)>,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

impl TestDb {
    pub async fn sqlite() -> TestDb {
        sheriff::init_crypto();
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("sheriff.db").display());
        let settings = DatabaseSettings {
            url: DatabaseUrl::from_str(&url).unwrap(),
            ..Default::default()
        };
        let store = Store::open(&settings)
            .await
            .expect("open SQLite test database");
        TestDb {
            settings,
            store,
            _dir: Some(dir),
            postgres: None,
        }
    }

    /// `None` when `SHERIFF_TEST_POSTGRES_URL` is not set; a panic naming the server when it is
    /// set and the server cannot be reached, so a misconfigured CI never passes silently.
    pub async fn postgres() -> Option<TestDb> {
        sheriff::init_crypto();
        let admin_url = std::env::var(POSTGRES_ENV).ok().filter(|u| !u.is_empty())?;
        let name = format!(
            "sheriff_test_{}_{}_{}",
            std::process::id(),
            chrono::Utc::now().timestamp_micros(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let admin = sqlx::PgPool::connect(&admin_url).await.unwrap_or_else(|e| {
            panic!(
                "{POSTGRES_ENV} is set to {admin_url} but PostgreSQL cannot be reached there: {e}"
            )
        });
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&admin)
            .await
            .unwrap_or_else(|e| panic!("cannot create test database {name}: {e}"));
        admin.close().await;
        let url = replace_database(&admin_url, &name);
        let settings = DatabaseSettings {
            url: DatabaseUrl::from_str(&url).unwrap(),
            ..Default::default()
        };
        let store = Store::open(&settings)
            .await
            .expect("open PostgreSQL test database");
        Some(TestDb {
            settings,
            store,
            _dir: None,
            postgres: Some((admin_url, name)),
        })
    }

    /// A database URL for a child process (`sheriff …` run as a command).
    pub fn url(&self) -> String {
        self.settings.url.expose().to_string()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some((admin_url, name)) = self.postgres.take() {
            // Drop runs outside async context; a short-lived runtime on its own thread does it.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    if let Ok(admin) = sqlx::PgPool::connect(&admin_url).await {
                        let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                            "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                        )))
                        .execute(&admin)
                        .await;
                        admin.close().await;
                    }
                });
            })
            .join();
        }
    }
}

/// Stores a month of generated runs ending at `end`, with the metal image-registry regression in
/// its last week, written as a bulk load writes them (ingest has tests of its own).
pub async fn load_metal_regression(store: &Store, seed: u64, end: chrono::DateTime<chrono::Utc>) {
    let mut scenario = sheriff::synth::Scenario::month(seed, end);
    scenario
        .planted
        .push(sheriff::synth::metal_registry_regression(21));
    for chunk in sheriff::synth::run_records(&scenario).chunks(500) {
        store.runs().write_runs(chunk, false).await.unwrap();
    }
}

/// The same server URL with another database name.
pub fn replace_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[scheme_end..].find('/') {
        Some(i) => &base[..scheme_end + i],
        None => base,
    };
    format!("{base}/{database}{query}")
}

/// The package cargo is testing now: its run-time `CARGO_MANIFEST_DIR`, not the folder a
/// cached test binary was built in (CI builds clones at two paths with one build cache).
pub fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        std::path::PathBuf::from,
    )
}

/// Defines each test twice, as `<name>::sqlite` and `<name>::postgres`, with `$db` a fresh
/// [`TestDb`]. The PostgreSQL twin returns early (and says so) when no server is configured.
#[macro_export]
macro_rules! on_both_engines {
    ($(async fn $name:ident($db:ident) $body:block)*) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let $db = $crate::common::TestDb::sqlite().await;
                    $body
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    let Some($db) = $crate::common::TestDb::postgres().await else {
                        eprintln!("skipped: {} is not set", $crate::common::POSTGRES_ENV);
                        return;
                    };
                    $body
                }
            }
        )*
    };
}

/// The cycle's one active regression, on metal: the planted one (the evidence tests' worlds hold
/// exactly one).
pub fn planted(
    report: &sheriff::application::cycle::CycleReport,
) -> &sheriff::model::RegressionReport {
    let active: Vec<&sheriff::model::RegressionReport> = report
        .regressions
        .iter()
        .filter(|r| r.status.is_active())
        .collect();
    assert_eq!(active.len(), 1, "{active:#?}");
    assert_eq!(
        active[0].scope.single(sheriff::model::Dimension::Platform),
        Some("metal")
    );
    active[0]
}
