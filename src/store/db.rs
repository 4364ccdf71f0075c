//! One way to run SQL on either engine, so every query of the store is written once.
//!
//! Both engines take the same SQL (`$N` placeholders, BIGINT seconds, TEXT). A statement is a
//! [`Sql`]: its text and its bound values ([`Arg`], the few types the schema uses). A
//! [`Conn`] runs it on a SQLite or a PostgreSQL connection, each through its native driver, and
//! decodes rows into any type both drivers can build ([`Row`]). Transactions are [`Tx`];
//! a pooled connection is [`Pooled`]. The engine-specific parts are the two arms of each
//! `match` here and nowhere else.

use std::borrow::Cow;

use sqlx::postgres::{PgArguments, PgRow};
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{Arguments, AssertSqlSafe, PgConnection, Postgres, Sqlite, SqliteConnection};

use super::{Result, StoreError};

/// A value bound to a placeholder.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Int(Option<i64>),
    Real(Option<f64>),
    Text(Option<String>),
}

impl From<i64> for Arg {
    fn from(v: i64) -> Arg {
        Arg::Int(Some(v))
    }
}
impl From<Option<i64>> for Arg {
    fn from(v: Option<i64>) -> Arg {
        Arg::Int(v)
    }
}
impl From<bool> for Arg {
    fn from(v: bool) -> Arg {
        Arg::Int(Some(i64::from(v)))
    }
}
impl From<f64> for Arg {
    fn from(v: f64) -> Arg {
        Arg::Real(Some(v))
    }
}
impl From<Option<f64>> for Arg {
    fn from(v: Option<f64>) -> Arg {
        Arg::Real(v)
    }
}
impl From<&str> for Arg {
    fn from(v: &str) -> Arg {
        Arg::Text(Some(v.to_string()))
    }
}
impl From<String> for Arg {
    fn from(v: String) -> Arg {
        Arg::Text(Some(v))
    }
}
impl From<&String> for Arg {
    fn from(v: &String) -> Arg {
        Arg::Text(Some(v.clone()))
    }
}
impl From<Option<String>> for Arg {
    fn from(v: Option<String>) -> Arg {
        Arg::Text(v)
    }
}
impl From<Option<&str>> for Arg {
    fn from(v: Option<&str>) -> Arg {
        Arg::Text(v.map(str::to_string))
    }
}
impl From<&Option<String>> for Arg {
    fn from(v: &Option<String>) -> Arg {
        Arg::Text(v.clone())
    }
}

/// A statement and its bound values, in placeholder order.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    text: Cow<'static, str>,
    args: Vec<Arg>,
}

/// A statement written in the source.
pub(crate) fn sql(text: &'static str) -> Sql {
    Sql {
        text: Cow::Borrowed(text),
        args: Vec::new(),
    }
}

impl Sql {
    /// A statement whose text is put together at run time. Only sheriff's own words and
    /// placeholders go into it; values are always bound.
    pub fn built(text: String) -> Sql {
        Sql {
            text: Cow::Owned(text),
            args: Vec::new(),
        }
    }

    /// Binds the next placeholder.
    pub fn bind(mut self, value: impl Into<Arg>) -> Sql {
        self.args.push(value.into());
        self
    }

    /// Appends text (sheriff's own words, never a value).
    pub fn push(mut self, text: &str) -> Sql {
        self.text.to_mut().push_str(text);
        self
    }

    /// Appends `$k, $k+1, …` for `values` and binds them: the inside of an `IN (…)`.
    pub fn list<T: Into<Arg>>(mut self, values: impl IntoIterator<Item = T>) -> Sql {
        let mut first = true;
        for v in values {
            let n = self.args.len() + 1;
            let text = self.text.to_mut();
            if !first {
                text.push_str(", ");
            }
            text.push_str(&format!("${n}"));
            self.args.push(v.into());
            first = false;
        }
        self
    }

    /// Appends ` VALUES (…), (…)`: one row of placeholders per item, `row` giving its values.
    pub fn values<T>(mut self, items: &[T], row: impl Fn(&T) -> Vec<Arg>) -> Sql {
        self.text.to_mut().push_str(" VALUES ");
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.text.to_mut().push_str(", ");
            }
            self.text.to_mut().push('(');
            let values = row(item);
            for (j, v) in values.into_iter().enumerate() {
                let n = self.args.len() + 1;
                let text = self.text.to_mut();
                if j > 0 {
                    text.push_str(", ");
                }
                text.push_str(&format!("${n}"));
                self.args.push(v);
            }
            self.text.to_mut().push(')');
        }
        self
    }

    fn sqlite(self) -> Result<(AssertSqlSafe<Cow<'static, str>>, SqliteArguments)> {
        let mut a = SqliteArguments::default();
        for arg in self.args {
            match arg {
                Arg::Int(v) => a.add(v),
                Arg::Real(v) => a.add(v),
                Arg::Text(v) => a.add(v),
            }
            .map_err(sqlx::Error::Encode)?;
        }
        Ok((AssertSqlSafe(self.text), a))
    }

    fn postgres(self) -> Result<(AssertSqlSafe<Cow<'static, str>>, PgArguments)> {
        let mut a = PgArguments::default();
        for arg in self.args {
            match arg {
                Arg::Int(v) => a.add(v),
                Arg::Real(v) => a.add(v),
                Arg::Text(v) => a.add(v),
            }
            .map_err(sqlx::Error::Encode)?;
        }
        Ok((AssertSqlSafe(self.text), a))
    }
}

/// A type both drivers decode rows into (tuples of the schema's types, `FromRow` structs).
pub(crate) trait Row:
    for<'r> sqlx::FromRow<'r, SqliteRow> + for<'r> sqlx::FromRow<'r, PgRow> + Send + Unpin
{
}
impl<T> Row for T where
    T: for<'r> sqlx::FromRow<'r, SqliteRow> + for<'r> sqlx::FromRow<'r, PgRow> + Send + Unpin
{
}

/// Implements [`sqlx::FromRow`] on both engines for a row struct whose fields are read by
/// column position, in the order they are listed: for statements whose columns are expressions
/// (`COUNT(*)`, `SUM(…)`, `CAST(…)`) or repeat a name, which a by-name
/// `#[derive(sqlx::FromRow)]` cannot read without changing the statement.
macro_rules! row_by_position {
    ($row:ident { $($field:ident),+ $(,)? }) => {
        $crate::store::db::row_by_position!(@engine sqlx::sqlite::SqliteRow, $row { $($field),+ });
        $crate::store::db::row_by_position!(@engine sqlx::postgres::PgRow, $row { $($field),+ });
    };
    (@engine $engine:ty, $row:ident { $($field:ident),+ }) => {
        impl<'r> sqlx::FromRow<'r, $engine> for $row {
            fn from_row(row: &'r $engine) -> sqlx::Result<Self> {
                use sqlx::Row as _;
                let mut column = 0usize..;
                Ok($row { $($field: row.try_get(column.next().unwrap_or_default())?),+ })
            }
        }
    };
}
pub(crate) use row_by_position;

/// A connection of either engine, borrowed from a pool or a transaction.
pub(crate) enum Conn<'c> {
    Sqlite(&'c mut SqliteConnection),
    Postgres(&'c mut PgConnection),
}

impl Conn<'_> {
    pub fn is_postgres(&self) -> bool {
        matches!(self, Conn::Postgres(_))
    }

    /// Runs a statement; the rows it changed.
    pub async fn execute(&mut self, q: Sql) -> Result<u64> {
        Ok(match self {
            Conn::Sqlite(c) => {
                let (text, args) = q.sqlite()?;
                sqlx::query_with(text, args)
                    .execute(&mut **c)
                    .await?
                    .rows_affected()
            }
            Conn::Postgres(c) => {
                let (text, args) = q.postgres()?;
                sqlx::query_with(text, args)
                    .execute(&mut **c)
                    .await?
                    .rows_affected()
            }
        })
    }

    pub async fn fetch_all<R: Row>(&mut self, q: Sql) -> Result<Vec<R>> {
        Ok(match self {
            Conn::Sqlite(c) => {
                let (text, args) = q.sqlite()?;
                sqlx::query_as_with::<Sqlite, R, _>(text, args)
                    .fetch_all(&mut **c)
                    .await?
            }
            Conn::Postgres(c) => {
                let (text, args) = q.postgres()?;
                sqlx::query_as_with::<Postgres, R, _>(text, args)
                    .fetch_all(&mut **c)
                    .await?
            }
        })
    }

    pub async fn fetch_optional<R: Row>(&mut self, q: Sql) -> Result<Option<R>> {
        Ok(match self {
            Conn::Sqlite(c) => {
                let (text, args) = q.sqlite()?;
                sqlx::query_as_with::<Sqlite, R, _>(text, args)
                    .fetch_optional(&mut **c)
                    .await?
            }
            Conn::Postgres(c) => {
                let (text, args) = q.postgres()?;
                sqlx::query_as_with::<Postgres, R, _>(text, args)
                    .fetch_optional(&mut **c)
                    .await?
            }
        })
    }

    pub async fn fetch_one<R: Row>(&mut self, q: Sql) -> Result<R> {
        self.fetch_optional(q)
            .await?
            .ok_or_else(|| StoreError::NotFound {
                what: "row",
                key: "from the statement".into(),
            })
    }

    /// The first column of the one row a statement returns.
    pub async fn scalar<T>(&mut self, q: Sql) -> Result<T>
    where
        (T,): Row,
    {
        Ok(self.fetch_one::<(T,)>(q).await?.0)
    }
}

/// A connection taken from the pool for a few statements.
pub(crate) enum Pooled {
    Sqlite(sqlx::pool::PoolConnection<Sqlite>),
    Postgres(sqlx::pool::PoolConnection<Postgres>),
}

impl Pooled {
    pub fn conn(&mut self) -> Conn<'_> {
        match self {
            Pooled::Sqlite(c) => Conn::Sqlite(c),
            Pooled::Postgres(c) => Conn::Postgres(c),
        }
    }
}

/// A transaction. Dropped without [`Tx::commit`], it rolls back.
pub(crate) enum TxInner {
    Sqlite(sqlx::Transaction<'static, Sqlite>),
    Postgres(sqlx::Transaction<'static, Postgres>),
}

/// A write transaction. `fail_commit` (with the `testing` feature) is set only by an injected
/// storage fault: the commit then rolls back and fails as a full disk would.
pub(crate) struct Tx {
    pub(crate) inner: TxInner,
    #[cfg(feature = "testing")]
    pub(crate) fail_commit: bool,
}

impl Tx {
    pub fn conn(&mut self) -> Conn<'_> {
        match &mut self.inner {
            TxInner::Sqlite(t) => Conn::Sqlite(t),
            TxInner::Postgres(t) => Conn::Postgres(t),
        }
    }

    pub async fn commit(self) -> Result<()> {
        #[cfg(feature = "testing")]
        if self.fail_commit {
            self.rollback().await?;
            return Err(sqlx::Error::Io(std::io::Error::other(
                "database or disk is full (injected fault)",
            ))
            .into());
        }
        match self.inner {
            TxInner::Sqlite(t) => t.commit().await?,
            TxInner::Postgres(t) => t.commit().await?,
        }
        Ok(())
    }

    /// Ends the transaction without keeping anything (what dropping it does, but waited for).
    pub async fn rollback(self) -> Result<()> {
        match self.inner {
            TxInner::Sqlite(t) => t.rollback().await?,
            TxInner::Postgres(t) => t.rollback().await?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_values_number_their_placeholders_after_the_bound_ones() {
        let q = sql("SELECT x FROM t WHERE a = $1 AND b IN (")
            .bind(7i64)
            .list([1i64, 2, 3])
            .push(")");
        assert_eq!(q.text, "SELECT x FROM t WHERE a = $1 AND b IN ($2, $3, $4)");
        assert_eq!(q.args.len(), 4);
        let rows = [(1i64, "a"), (2, "b")];
        let q = sql("INSERT INTO t (n, s)").values(&rows, |(n, s)| vec![(*n).into(), (*s).into()]);
        assert_eq!(q.text, "INSERT INTO t (n, s) VALUES ($1, $2), ($3, $4)");
        assert_eq!(q.args[3], Arg::Text(Some("b".into())));
    }
}
