//! Database access: SQLite (the default, one file) or PostgreSQL, chosen by the URL.
//!
//! Both engines run the same SQL: `$N` placeholders, BIGINT Unix seconds for time, TEXT for
//! everything else. The pool is an enum of the two native sqlx pools rather than `AnyPool`, so
//! each engine keeps its own fast row decoding; `db.rs` runs one statement on whichever is live.
//! One file per table; SQL lives only here. Each table's functions sit behind a small handle
//! ([`Store::runs`], [`Store::cells`], [`Store::incidents`], [`Store::outbox`], …), so that the
//! store itself keeps only the pool, the id caches and what every table shares. The store
//! applies what it is told (a run, a plan, an outbox result) and decides nothing about
//! incidents; what is kept in memory over it between questions and cycles is [`crate::application::warm`]'s.

mod db;
mod error;

pub(crate) mod backfills;
pub(crate) mod cells;
pub(crate) mod changelogs;
pub(crate) mod evaluations;
pub(crate) mod incidents;
pub(crate) mod ingest_log;
pub(crate) mod intervals;
pub(crate) mod leases;
pub(crate) mod outbox;
pub(crate) mod outside_commits;
mod probes;
pub(crate) mod retention;
pub(crate) mod runs;
pub(crate) mod scope_run_reads;
pub(crate) mod trouble;
pub(crate) mod watermarks;
pub(crate) mod window_reads;

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, PgPool, SqlitePool};

pub use self::backfills::{Backfill, CellCount};
pub(crate) use self::db::{Arg, Conn, Pooled, Row, Sql, Tx, row_by_position, sql};
pub use self::error::{Result, StoreError};
pub use self::evaluations::{CycleOutcome, CycleRecord};
pub use self::ingest_log::{IngestLogEntry, LogOutcome};
pub use self::outbox::EntryState;
pub use self::retention::Cutoffs;
pub use self::runs::WriteOutcome;
use crate::config::{DatabaseSettings, Engine};

#[derive(Clone)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// The database, with small caches of the id tables that ingest touches on every run. What is
/// kept in memory over it between questions and cycles lives in [`crate::application::warm`].
pub struct Store {
    pub(crate) pool: Pool,
    /// backend name → id; backends are few and never change id.
    backend_ids: Mutex<HashMap<String, i64>>,
    /// dimensions → variant id; likewise.
    variant_ids: Mutex<HashMap<crate::model::Dimensions, i64>>,
    /// Every variant by id, for queries; only ever grows.
    variant_list: Mutex<std::sync::Arc<Vec<(i64, crate::model::Dimensions)>>>,
    /// The rules new runs are classified with (those the database was classified with, until
    /// [`crate::store::trouble::Trouble::apply`]).
    trouble: Mutex<crate::model::TroubleRules>,
    /// Since when writes fail for storage reasons (disk full, I/O, read-only, connection
    /// lost); None while they work. `/readyz` reads it.
    write_failing_since: Mutex<Option<i64>>,
    /// Injected storage faults (tests only; see `Store::inject_write_faults`).
    #[cfg(feature = "testing")]
    write_faults: Mutex<Option<WriteFaultHook>>,
}

/// Says, for each write transaction, whether its commit fails.
#[cfg(feature = "testing")]
pub type WriteFaultHook = std::sync::Arc<dyn Fn() -> bool + Send + Sync>;

/// A database error's code: SQLite's primary result code, or PostgreSQL's SQLSTATE (told apart
/// by the error's type: SQLSTATEs such as `08006` or `53100` read as numbers too).
enum ErrorCode {
    Sqlite(i64),
    Postgres(String),
}

fn error_code(e: &sqlx::Error) -> Option<ErrorCode> {
    match e {
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default().into_owned();
            if db
                .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                .is_some()
            {
                Some(ErrorCode::Postgres(code))
            } else {
                code.parse::<i64>()
                    .ok()
                    .map(|n| ErrorCode::Sqlite(n & 0xff))
            }
        }
        _ => None,
    }
}

/// Whether a database error is the storage's own trouble (the disk, the file, the connection),
/// not a bad statement or bad data: SQLite's FULL, IOERR, READONLY, CANTOPEN, CORRUPT, NOTADB,
/// PROTOCOL; PostgreSQL's classes 08 (connection), 53 (resources: disk full), 57 (operator
/// intervention), 58 (system: I/O); or the connection or pool itself failing (a connection
/// cut mid-handshake answers with a protocol error).
fn is_storage_failure(e: &sqlx::Error) -> bool {
    let connection = matches!(
        e,
        sqlx::Error::Io(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed
    );
    connection
        || error_code(e).is_some_and(|code| match code {
            ErrorCode::Sqlite(n) => matches!(n, 8 | 10 | 11 | 13 | 14 | 15 | 26),
            ErrorCode::Postgres(c) => ["08", "53", "57", "58"]
                .iter()
                .any(|class| c.starts_with(class)),
        })
}

/// Whether a database error refuses a value as such: PostgreSQL's class 22 (data exception),
/// SQLite's TOOBIG ([`StoreError::refused_value`]).
fn is_refused(e: &sqlx::Error) -> bool {
    error_code(e).is_some_and(|code| match code {
        ErrorCode::Sqlite(n) => n == 18,
        ErrorCode::Postgres(c) => c.starts_with("22"),
    })
}

/// Whether a database error comes back the same on every try: a stored value that does not
/// decode into its type, a column or type that is not there, a constraint refused
/// (PostgreSQL's class 23, SQLite's CONSTRAINT), or a value refused ([`is_refused`]).
fn fails_the_same(e: &sqlx::Error) -> bool {
    matches!(
        e,
        sqlx::Error::ColumnDecode { .. }
            | sqlx::Error::Decode(_)
            | sqlx::Error::TypeNotFound { .. }
            | sqlx::Error::ColumnNotFound(_)
            | sqlx::Error::ColumnIndexOutOfBounds { .. }
    ) || is_refused(e)
        || error_code(e).is_some_and(|code| match code {
            ErrorCode::Sqlite(n) => n == 19,
            ErrorCode::Postgres(c) => c.starts_with("23"),
        })
}

/// The store's error in an error's chain (a [`StoreError`] itself, or an application error
/// that carries one), if there is one.
fn store_error<'e>(e: &'e (dyn std::error::Error + 'static)) -> Option<&'e StoreError> {
    std::iter::successors(Some(e), |e| e.source()).find_map(|e| e.downcast_ref::<StoreError>())
}

/// Whether an error (a [`StoreError`], or an application error carrying one) is the storage's
/// own trouble: [`StoreError::retryable`].
pub fn is_storage_error<E>(e: &E) -> bool
where
    E: AsRef<dyn std::error::Error + 'static> + ?Sized,
{
    store_error(e.as_ref()).is_some_and(StoreError::retryable)
}

impl AsRef<dyn std::error::Error + 'static> for StoreError {
    fn as_ref(&self) -> &(dyn std::error::Error + 'static) {
        self
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("engine", &self.engine())
            .finish()
    }
}

/// What `migrate` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationReport {
    /// Versions applied by this call (empty when the schema was already current).
    pub applied: Vec<i64>,
    /// The newest version now in the database.
    pub current: i64,
}

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

impl Store {
    /// The stored runs (`job_runs`) and what each carries.
    pub fn runs(&self) -> runs::Runs<'_> {
        runs::Runs { store: self }
    }

    /// The cells' per-day histograms (`cell_days`) and the change log (`data_version`).
    pub fn cells(&self) -> cells::Cells<'_> {
        cells::Cells { store: self }
    }

    /// What evaluation reads and records: windows, group states, cycles, thresholds.
    pub fn evaluations(&self) -> evaluations::Evaluations<'_> {
        evaluations::Evaluations { store: self }
    }

    /// The incidents, their events and silences: plans applied with their outbox entries.
    pub fn incidents(&self) -> incidents::Incidents<'_> {
        incidents::Incidents { store: self }
    }

    /// The outbox: notifications waiting, claimed, delivered or failed.
    pub fn outbox(&self) -> outbox::Outbox<'_> {
        outbox::Outbox { store: self }
    }

    /// The leases that keep scheduled work and the SQLite replica to one holder at a time.
    pub fn leases(&self) -> leases::Leases<'_> {
        leases::Leases { store: self }
    }

    /// Pruning old rows in bounded batches.
    pub fn retention(&self) -> retention::Retention<'_> {
        retention::Retention { store: self }
    }

    /// The CI-trouble rules the runs are classified with, and reclassification when they change.
    pub fn trouble(&self) -> trouble::Trouble<'_> {
        trouble::Trouble { store: self }
    }

    /// Push-down backfills: counted days written whole and sealed.
    pub fn backfills(&self) -> backfills::Backfills<'_> {
        backfills::Backfills { store: self }
    }

    /// The release controller's changelogs between payloads, kept.
    pub(crate) fn changelogs(&self) -> changelogs::Changelogs<'_> {
        changelogs::Changelogs { store: self }
    }

    /// The commits GitHub listed outside a payload, kept.
    pub(crate) fn outside_commits(&self) -> outside_commits::OutsideCommits<'_> {
        outside_commits::OutsideCommits { store: self }
    }

    /// What ingest did: its log of files read and refused, and each source's watermark.
    pub fn ingest_log(&self) -> ingest_log::IngestLog<'_> {
        ingest_log::IngestLog { store: self }
    }

    /// Opens the database (creating a SQLite file and its folder on first use). Does not migrate.
    pub async fn connect(settings: &DatabaseSettings) -> Result<Store> {
        let pool = match settings.url.engine() {
            Engine::Sqlite => Pool::Sqlite(connect_sqlite(settings).await?),
            Engine::Postgres => Pool::Postgres(connect_postgres(settings).await?),
        };
        Ok(Store {
            pool,
            backend_ids: Mutex::new(HashMap::new()),
            variant_ids: Mutex::new(HashMap::new()),
            variant_list: Mutex::default(),
            trouble: Mutex::default(),
            write_failing_since: Mutex::default(),
            #[cfg(feature = "testing")]
            write_faults: Mutex::default(),
        })
    }

    /// Connects and brings the schema up to date: what every command does at start.
    pub async fn open(settings: &DatabaseSettings) -> Result<Store> {
        let store = Store::connect(settings).await?;
        store.migrate().await?;
        if let Some(rules) = store.trouble().stored().await? {
            *store.trouble.lock().expect("rules lock") = rules;
        }
        Ok(store)
    }

    /// Opens the database as sheriff's configuration wants it: migrated, and its runs classified
    /// by the configured CI-trouble rules (reclassified when they changed).
    pub(crate) async fn open_configured(settings: &crate::config::Settings) -> Result<Store> {
        let store = Store::open(&settings.database).await?;
        store.trouble().apply(&settings.evaluate.ci_trouble).await?;
        Ok(store)
    }

    pub fn engine(&self) -> Engine {
        match self.pool {
            Pool::Sqlite(_) => Engine::Sqlite,
            Pool::Postgres(_) => Engine::Postgres,
        }
    }

    /// Applies the embedded migrations not yet in the database; a second call applies none.
    pub async fn migrate(&self) -> Result<MigrationReport> {
        let before = self.applied_versions().await?;
        match &self.pool {
            Pool::Sqlite(pool) => SQLITE_MIGRATIONS.run(pool).await,
            Pool::Postgres(pool) => POSTGRES_MIGRATIONS.run(pool).await,
        }
        .map_err(StoreError::Migration)?;
        let after = self.applied_versions().await?;
        let applied = after
            .iter()
            .copied()
            .filter(|v| !before.contains(v))
            .collect();
        Ok(MigrationReport {
            applied,
            current: after.iter().copied().max().unwrap_or(0),
        })
    }

    async fn applied_versions(&self) -> Result<Vec<i64>> {
        let exists: i64 = self
            .scalar(sql(if self.engine() == Engine::Postgres {
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = '_sqlx_migrations' \
                 AND table_schema = current_schema()"
            } else {
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'"
            }))
            .await?;
        if exists == 0 {
            return Ok(Vec::new());
        }
        let rows: Vec<(i64,)> = self
            .fetch_all(sql(
                "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version",
            ))
            .await?;
        Ok(rows.into_iter().map(|r| r.0).collect())
    }

    /// Cheap liveness check of the database, for `/readyz`.
    pub async fn ping(&self) -> Result<()> {
        self.execute(sql("SELECT 1")).await.map(|_| ())
    }

    /// After a large batch of writes: folds SQLite's write-ahead log back into the database so
    /// reads stop paying for it (SQLite's own checkpoints only keep up in steady state).
    /// Nothing to do on PostgreSQL.
    pub async fn checkpoint(&self) -> Result<()> {
        if self.engine() == Engine::Sqlite {
            self.execute(sql("PRAGMA wal_checkpoint(TRUNCATE)")).await?;
        }
        Ok(())
    }

    /// Closes every pooled connection (SQLite then checkpoints its WAL).
    pub async fn close(&self) {
        match &self.pool {
            Pool::Sqlite(p) => p.close().await,
            Pool::Postgres(p) => p.close().await,
        }
    }

    /// A connection from the pool, for a few statements outside a transaction.
    pub(crate) async fn acquire(&self) -> Result<Pooled> {
        Ok(match &self.pool {
            Pool::Sqlite(p) => Pooled::Sqlite(p.acquire().await.map_err(StoreError::Connection)?),
            Pool::Postgres(p) => {
                Pooled::Postgres(p.acquire().await.map_err(StoreError::Connection)?)
            }
        })
    }

    /// Notes how a write ended: a storage failure marks writes as failing (from its time on,
    /// until a write succeeds); any success clears it. The result is passed on unchanged.
    pub(crate) fn tracked<T>(&self, result: Result<T>) -> Result<T> {
        let mut failing = self.write_failing_since.lock().expect("health lock");
        match &result {
            Ok(_) => *failing = None,
            Err(e) if e.retryable() => {
                if failing.is_none() {
                    tracing::error!("database writes are failing: {e:#}");
                }
                failing.get_or_insert(chrono::Utc::now().timestamp());
            }
            Err(_) => {}
        }
        result
    }

    /// Since when writes have been failing for storage reasons, if they are.
    pub(crate) fn writes_failing_since(&self) -> Option<i64> {
        *self.write_failing_since.lock().expect("health lock")
    }

    /// Tries a small write (a probe row, written and removed in one transaction); a success
    /// clears the failing mark.
    pub(crate) async fn probe_write(&self) -> Result<()> {
        let probe = async {
            let mut tx = self.begin_write().await?;
            let mut c = tx.conn();
            let now = chrono::Utc::now().timestamp();
            c.execute(
                sql("INSERT INTO leases (name, holder, expires_at) VALUES ('readyz-probe', 'readyz', $1) \
                 ON CONFLICT (name) DO UPDATE SET expires_at = $1")
                .bind(now),
            )
            .await?;
            c.execute(sql("DELETE FROM leases WHERE name = 'readyz-probe'"))
                .await?;
            tx.commit().await
        };
        self.tracked(probe.await)
    }

    /// Starts a transaction that will write. SQLite takes the write lock up front, so a
    /// transaction that reads first cannot fail with SQLITE_BUSY when it later writes.
    pub(crate) async fn begin_write(&self) -> Result<Tx> {
        let inner = match &self.pool {
            Pool::Sqlite(p) => db::TxInner::Sqlite(p.begin_with("BEGIN IMMEDIATE").await?),
            Pool::Postgres(p) => db::TxInner::Postgres(p.begin().await?),
        };
        Ok(Tx {
            inner,
            #[cfg(feature = "testing")]
            fail_commit: self
                .write_faults
                .lock()
                .expect("hook lock")
                .clone()
                .is_some_and(|fails| fails()),
        })
    }

    /// Makes write transactions fail at their commit whenever `hook` says so, as a full disk
    /// would: for tests of what sheriff does when storage fails (a cycle, a delivery, a
    /// silence). None (the default) turns it off.
    #[cfg(feature = "testing")]
    pub fn inject_write_faults(&self, hook: Option<WriteFaultHook>) {
        *self.write_faults.lock().expect("hook lock") = hook;
    }

    pub(crate) async fn execute(&self, q: Sql) -> Result<u64> {
        self.acquire().await?.conn().execute(q).await
    }

    pub(crate) async fn fetch_all<R: Row>(&self, q: Sql) -> Result<Vec<R>> {
        self.acquire().await?.conn().fetch_all(q).await
    }

    pub(crate) async fn fetch_optional<R: Row>(&self, q: Sql) -> Result<Option<R>> {
        self.acquire().await?.conn().fetch_optional(q).await
    }

    pub(crate) async fn fetch_one<R: Row>(&self, q: Sql) -> Result<R> {
        self.acquire().await?.conn().fetch_one(q).await
    }

    pub(crate) async fn scalar<T>(&self, q: Sql) -> Result<T>
    where
        (T,): Row,
    {
        self.acquire().await?.conn().scalar(q).await
    }
}

/// Opens a pool on the SQLite file of `settings` (creating the file and its folder on first use).
async fn connect_sqlite(settings: &DatabaseSettings) -> Result<SqlitePool> {
    let acquire = Duration::from_secs(settings.acquire_timeout_secs);
    let options = SqliteConnectOptions::from_str(settings.url.expose())
        .map_err(|e| open(format!("invalid sqlite URL {}", settings.url), e))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // Pruning frees pages that `PRAGMA incremental_vacuum` hands back (takes
        // effect on databases created with it; an older one needs one VACUUM).
        .auto_vacuum(sqlx::sqlite::SqliteAutoVacuum::Incremental)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(30))
        .foreign_keys(true)
        // 32 MiB of page cache and in-memory temporary tables: aggregations stay in RAM.
        .pragma("cache_size", "-32768")
        .pragma("temp_store", "memory");

    if let Some(parent) = options.get_filename().parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent).map_err(|e| {
            open(
                format!(
                    "cannot create the folder of the SQLite file {}",
                    parent.display()
                ),
                e,
            )
        })?;
    }

    SqlitePoolOptions::new()
        .max_connections(settings.max_connections)
        .acquire_timeout(acquire)
        // After a disk-full or I/O error SQLite rolls a transaction back by itself,
        // the driver's own ROLLBACK then fails, and the connection would go on
        // believing it is inside a transaction, failing every later one. A queued
        // rollback runs before the ping; one still "in a transaction" after it is
        // closed instead of reused.
        .before_acquire(|conn, _| {
            Box::pin(async move {
                conn.ping().await?;
                Ok(!conn.is_in_transaction())
            })
        })
        .connect_with(options)
        .await
        .map_err(|e| open(format!("cannot open SQLite database {}", settings.url), e))
}

/// Opens a pool on the PostgreSQL database of `settings`.
async fn connect_postgres(settings: &DatabaseSettings) -> Result<PgPool> {
    let acquire = Duration::from_secs(settings.acquire_timeout_secs);
    let mut options = PgConnectOptions::from_str(settings.url.expose())
        .map_err(|e| open(format!("invalid postgres URL {}", settings.url), e))?;
    if let Some(password) = &settings.password {
        options = options.password(password.expose());
    }
    // a statement held up (a lock, a hung server) fails as a storage error (57014)
    let statement_timeout = format!("{}s", settings.statement_timeout_secs);
    options = options.options([("statement_timeout", statement_timeout.as_str())]);
    PgPoolOptions::new()
        .max_connections(settings.max_connections)
        .acquire_timeout(acquire)
        .connect_with(options)
        .await
        .map_err(|e| {
            open(
                format!("cannot connect to PostgreSQL at {}", settings.url),
                e,
            )
        })
}

/// The database could not be opened, `doing` saying what was tried.
fn open(doing: String, e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Open {
        doing,
        cause: Box::new(e),
    }
}

/// Unix seconds of a time, the only form time takes in the database.
pub(crate) fn to_secs(t: chrono::DateTime<chrono::Utc>) -> i64 {
    t.timestamp()
}

pub(crate) fn from_secs(s: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp(s, 0).unwrap_or_default()
}
