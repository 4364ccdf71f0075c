//! `outside_commits`: the commits of a repository outside the payload in one window, kept once
//! read from GitHub (a past window's commits do not change).

use super::{Result, Store, sql};

/// What GitHub said, kept: the commits outside a payload. Reached through
/// [`Store::outside_commits`].
#[derive(Clone, Copy)]
pub struct OutsideCommits<'a> {
    pub(super) store: &'a Store,
}

impl OutsideCommits<'_> {
    /// The kept commits (as JSON) of `repository` under `path` from `since` to `until`.
    pub async fn commits(
        self,
        repository: &str,
        path: &str,
        since: i64,
        until: i64,
    ) -> Result<Option<String>> {
        let row: Option<(String,)> = self.store
            .fetch_optional(
                sql("SELECT body FROM outside_commits WHERE repository = $1 AND path = $2 AND since = $3 AND until = $4")
                    .bind(repository)
                    .bind(path)
                    .bind(since)
                    .bind(until),
            )
            .await?;
        Ok(row.map(|(b,)| b))
    }

    /// Keeps the commits of one window.
    pub async fn keep_commits(
        self,
        repository: &str,
        path: &str,
        (since, until): (i64, i64),
        body: &str,
    ) -> Result<()> {
        self.store.execute(
            sql("INSERT INTO outside_commits (repository, path, since, until, body, fetched_at) VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (repository, path, since, until) DO NOTHING")
            .bind(repository)
            .bind(path)
            .bind(since)
            .bind(until)
            .bind(body)
            .bind(chrono::Utc::now().timestamp()),
        )
        .await?;
        Ok(())
    }
}
