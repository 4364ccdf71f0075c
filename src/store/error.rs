//! The store's one error type: what went wrong, told apart by what a caller can do about it.
//!
//! A storage failure ([`StoreError::retryable`]: the disk, the file, the connection) passes
//! and a later try may succeed; a statement or value the database refuses, a row the store
//! cannot read back, or a write it refuses fails the same way every time. Callers above the
//! store keep their own error type (`?` converts), and [`super::is_storage_error`] finds a
//! `StoreError` in any error's chain.
//!
//! A variant that wraps another error says its text after its own (`no database connection:
//! pool timed out …`) instead of handing it on as a `source()`, so that a `StoreError` printed
//! as it is tells the whole cause, and printed inside an application's error chain tells it once.

/// The result of every store function.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Why a store function failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed a statement: its storage (disk full, I/O, the connection lost), or
    /// the statement or a value it refused.
    #[error(transparent)]
    Storage(#[from] sqlx::Error),
    /// No connection could be had from the pool (the database down, or every connection busy).
    #[error("no database connection: {0}")]
    Connection(sqlx::Error),
    /// The database could not be opened: a bad URL, its folder not made, the server not reached.
    #[error("{doing}: {cause}")]
    Open {
        /// What was tried, with the database's address.
        doing: String,
        /// What failed it.
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The embedded migrations could not be applied.
    #[error("applying database migrations: {0}")]
    Migration(sqlx::migrate::MigrateError),
    /// A row the store needs is not there.
    #[error("no {what} {key}")]
    NotFound {
        /// What kind of row (`incident`, `row`).
        what: &'static str,
        /// Which one.
        key: String,
    },
    /// A stored row the store cannot read back: a malformed sample or histogram, an unreadable
    /// snapshot or JSON column. The same row fails every time.
    #[error("{detail}")]
    Corrupt {
        /// The table the row is in.
        table: &'static str,
        /// Which row, and what is wrong with it.
        detail: String,
    },
    /// A write the store refuses because it would make the stored data wrong (a backfill over
    /// days already counted), or a question this database cannot answer.
    #[error("{0}")]
    Refused(String),
    /// A value could not be written as JSON. Made at the call that encodes (no `From`), so a
    /// serde error from elsewhere never passes for the store's own.
    #[error(transparent)]
    Encode(serde_json::Error),
    /// A thread of the store's own panicked (`thread` says which, `message` what it said): a bug
    /// in sheriff, not bad data, and asking again runs the same code.
    #[error("{thread} panicked: {message}")]
    Panicked {
        thread: &'static str,
        message: String,
    },
}

impl StoreError {
    /// A stored row that cannot be read, `what` saying which and `why` what is wrong with it.
    pub(crate) fn corrupt(
        table: &'static str,
        what: impl std::fmt::Display,
        why: impl std::fmt::Display,
    ) -> StoreError {
        StoreError::Corrupt {
            table,
            detail: format!("{what}: {why}"),
        }
    }

    /// A stored row that cannot be read, `detail` saying all there is.
    pub(crate) fn malformed(table: &'static str, detail: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            table,
            detail: detail.into(),
        }
    }

    /// Whether the storage itself failed (the disk, the file, the connection): a later try may
    /// succeed. Bad data, a refused statement or value, and a missing row are not.
    pub fn retryable(&self) -> bool {
        match self {
            StoreError::Storage(e) | StoreError::Connection(e) => super::is_storage_failure(e),
            StoreError::Open { cause, .. } => cause
                .downcast_ref::<sqlx::Error>()
                .is_some_and(super::is_storage_failure),
            StoreError::Migration(
                sqlx::migrate::MigrateError::Execute(e)
                | sqlx::migrate::MigrateError::ExecuteMigration(e, _),
            ) => super::is_storage_failure(e),
            StoreError::Migration(_)
            | StoreError::NotFound { .. }
            | StoreError::Corrupt { .. }
            | StoreError::Refused(_)
            | StoreError::Encode(_)
            | StoreError::Panicked { .. } => false,
        }
    }

    /// Whether asking again can only fail the same way: a stored row that does not decode (in
    /// the store's reading or the database's), a value that cannot be encoded, a write, a value
    /// or a constraint refused, a missing row or column, a panic of the store's own code. Unlike [`StoreError::retryable`] (the storage itself failing, what
    /// readiness reports), a busy or locked database, a serialization failure or a statement
    /// a newer schema refuses during a rolling deploy are not: they may pass.
    pub fn fails_every_time(&self) -> bool {
        match self {
            StoreError::Corrupt { .. }
            | StoreError::Encode(_)
            | StoreError::Refused(_)
            | StoreError::NotFound { .. }
            | StoreError::Panicked { .. } => true,
            StoreError::Storage(e) => super::fails_the_same(e),
            StoreError::Connection(_) | StoreError::Open { .. } | StoreError::Migration(_) => false,
        }
    }

    /// Whether the database refused a value as such (PostgreSQL's class 22, data exception: a
    /// NUL in text, a number out of range; SQLite's TOOBIG): the same value fails every time, so
    /// it is the data's fault, never one a retry gets past.
    pub(crate) fn refused_value(&self) -> bool {
        match self {
            StoreError::Storage(e) => super::is_refused(e),
            _ => false,
        }
    }
}

impl StoreError {
    /// The panic of the store's thread `thread`, with its message when it is text.
    pub(crate) fn panicked(
        thread: &'static str,
        payload: &(dyn std::any::Any + Send),
    ) -> StoreError {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        StoreError::Panicked { thread, message }
    }
}

impl From<crate::model::histogram::HistogramError> for StoreError {
    /// Every histogram the store decodes is a stored one.
    fn from(e: crate::model::histogram::HistogramError) -> StoreError {
        StoreError::malformed("cell_days", e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::StoreError;
    use crate::store::{Store, is_storage_error, sql};

    #[test]
    fn a_panicked_store_thread_is_a_bug_not_corrupt_data_and_not_retried() {
        let payload = std::thread::spawn(|| panic!("index out of bounds"))
            .join()
            .unwrap_err();
        let e = StoreError::panicked("a cell_days decoding thread", &*payload);
        assert!(matches!(e, StoreError::Panicked { .. }), "{e:?}");
        assert!(!e.retryable() && e.fails_every_time());
        assert_eq!(
            e.to_string(),
            "a cell_days decoding thread panicked: index out of bounds"
        );
    }

    async fn store(dir: &tempfile::TempDir) -> Store {
        let settings = crate::config::DatabaseSettings {
            url: format!("sqlite://{}", dir.path().join("errors.db").display())
                .parse()
                .unwrap(),
            ..Default::default()
        };
        Store::open(&settings).await.unwrap()
    }

    #[tokio::test]
    async fn unreadable_stored_rules_are_corrupt_and_not_retried() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        store
            .execute(sql(
                "INSERT INTO classification (id, rules) VALUES (1, 'not json')",
            ))
            .await
            .unwrap();
        let e = store.trouble().stored().await.unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::Corrupt {
                    table: "classification",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(!e.retryable() && e.fails_every_time());
        let text = e.to_string();
        assert!(
            text.starts_with("the stored CI-trouble rules do not parse: expected"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_missing_row_is_not_found_and_a_bad_statement_is_not_storage_trouble() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        let e = store
            .scalar::<i64>(sql("SELECT 1 WHERE 0 = 1"))
            .await
            .unwrap_err();
        assert!(
            matches!(e, StoreError::NotFound { what: "row", .. }),
            "{e:?}"
        );
        assert!(e.fails_every_time());
        let e = store
            .execute(sql("SELECT * FROM no_such_table"))
            .await
            .unwrap_err();
        assert!(
            matches!(e, StoreError::Storage(_)) && !e.retryable(),
            "{e:?}"
        );
        assert!(!is_storage_error(&e));
        // not storage trouble, and yet it may pass: a replica that has not migrated yet
        assert!(!e.fails_every_time(), "{e:?}");
        store
            .execute(sql("CREATE TABLE once (id INTEGER PRIMARY KEY)"))
            .await
            .unwrap();
        store
            .execute(sql("INSERT INTO once (id) VALUES (1)"))
            .await
            .unwrap();
        let e = store
            .execute(sql("INSERT INTO once (id) VALUES (1)"))
            .await
            .unwrap_err();
        assert!(e.fails_every_time(), "a constraint refused: {e:?}");
    }

    /// An application's error that carries a store error.
    #[derive(Debug, thiserror::Error)]
    #[error("reading the windows")]
    struct Reading(#[source] StoreError);

    /// A closed pool is storage trouble, found the same inside an application's error.
    #[tokio::test]
    async fn a_closed_database_is_retryable_through_any_context() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        store.close().await;
        let e = store.ping().await.unwrap_err();
        assert!(
            matches!(e, StoreError::Connection(_)) && e.retryable(),
            "{e:?}"
        );
        assert!(
            format!("{e}").starts_with("no database connection: "),
            "{e}"
        );
        let wrapped: Box<dyn std::error::Error> = Box::new(Reading(e));
        assert!(is_storage_error(&wrapped));
    }
}
