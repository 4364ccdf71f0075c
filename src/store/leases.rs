//! `leases`: who holds each named lease and until when, so that one replica at a time runs a
//! scheduled job, and one holds a SQLite database.

use super::{Result, Store, sql};

/// The leases that keep scheduled work and the SQLite replica to one holder at a time.
/// Reached through [`Store::leases`].
#[derive(Clone, Copy)]
pub struct Leases<'a> {
    pub(super) store: &'a Store,
}

impl Leases<'_> {
    /// Takes or renews the lease `name` for `holder` until `now + secs`; false if another holder
    /// has it. One replica runs each scheduled job this way, on either engine.
    pub async fn take(self, name: &str, holder: &str, now: i64, secs: i64) -> Result<bool> {
        let q = sql("INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at \
                 WHERE leases.holder = excluded.holder OR leases.expires_at <= $4")
        .bind(name)
        .bind(holder)
        .bind(now + secs)
        .bind(now);
        let taken = self.store.execute(q).await?;
        Ok(taken == 1)
    }

    /// Who holds the lease `name` and until when, if anyone ever took it.
    pub async fn holder(self, name: &str) -> Result<Option<(String, i64)>> {
        self.store
            .fetch_optional(sql("SELECT holder, expires_at FROM leases WHERE name = $1").bind(name))
            .await
    }

    /// Takes the lease `name` over from `from`, a holder known to be gone, until `now + secs`;
    /// false if someone else took it meanwhile.
    pub async fn take_over(
        self,
        name: &str,
        from: &str,
        holder: &str,
        now: i64,
        secs: i64,
    ) -> Result<bool> {
        let q =
            sql("UPDATE leases SET holder = $1, expires_at = $2 WHERE name = $3 AND holder = $4")
                .bind(holder)
                .bind(now + secs)
                .bind(name)
                .bind(from);
        Ok(self.store.execute(q).await? == 1)
    }

    /// Gives a lease up early (a clean shutdown), so another replica need not wait it out.
    pub async fn release(self, name: &str, holder: &str) -> Result<()> {
        self.store
            .execute(
                sql("DELETE FROM leases WHERE name = $1 AND holder = $2")
                    .bind(name)
                    .bind(holder),
            )
            .await
            .map(|_| ())
    }
}
