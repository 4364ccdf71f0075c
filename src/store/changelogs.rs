//! `changelogs`: the release controller's changelog between two payloads, kept once read (a
//! changelog between two existing payloads never changes).

use super::{Result, Store, sql};

/// What the release controller said, kept: the changelogs between payloads. Reached through
/// [`Store::changelogs`].
#[derive(Clone, Copy)]
pub struct Changelogs<'a> {
    pub(super) store: &'a Store,
}

impl Changelogs<'_> {
    /// A kept changelog between two payloads.
    pub async fn changelog(
        self,
        architecture: &str,
        from: &str,
        to: &str,
    ) -> Result<Option<String>> {
        let row: Option<(String,)> = self
            .store
            .fetch_optional(
                sql("SELECT body FROM changelogs WHERE architecture = $1 AND from_tag = $2 AND to_tag = $3")
                    .bind(architecture)
                    .bind(from)
                    .bind(to),
            )
            .await?;
        Ok(row.map(|(b,)| b))
    }

    /// Keeps a changelog between two payloads (they never change).
    pub async fn keep_changelog(
        self,
        architecture: &str,
        from: &str,
        to: &str,
        body: &str,
    ) -> Result<()> {
        self.store.execute(
            sql("INSERT INTO changelogs (architecture, from_tag, to_tag, body, fetched_at) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (architecture, from_tag, to_tag) DO NOTHING")
            .bind(architecture)
            .bind(from)
            .bind(to)
            .bind(body)
            .bind(chrono::Utc::now().timestamp()),
        )
        .await?;
        Ok(())
    }
}
