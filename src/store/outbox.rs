//! The outbox: side effects waiting to be delivered, claimed by one worker at a time under a
//! lease, in order per lane (an incident's Slack thread, its Jira issue, a channel's summaries).

use anyhow::Result;
use serde::Serialize;

use super::{Store, with_pool};

/// An entry a worker has claimed.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct OutboxEntry {
    pub id: i64,
    pub idempotency_key: String,
    pub lane: String,
    pub kind: String,
    pub incident_id: Option<i64>,
    pub payload: String,
    pub state: String,
    /// Attempts so far, this one included once claimed.
    pub attempts: i64,
    pub next_attempt_at: i64,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
}

macro_rules! entry_columns {
    () => {
        "id, idempotency_key, lane, kind, incident_id, payload, state, attempts, next_attempt_at, last_error, \
         created_at, delivered_at"
    };
}

/// Claims the first due entry of its lane; `$1` worker, `$2` lease end, `$3` now.
macro_rules! claim_sql {
    ($lock:literal) => {
        concat!(
            "UPDATE outbox SET attempts = attempts + 1, locked_by = $1, locked_until = $2 \
             WHERE id = (SELECT o.id FROM outbox o WHERE o.state = 'pending' AND o.next_attempt_at <= $3 \
             AND o.locked_until <= $3 AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.lane = o.lane \
             AND p.id < o.id AND p.state = 'pending') ORDER BY o.id LIMIT 1",
            $lock,
            ") AND state = 'pending' RETURNING ",
            entry_columns!()
        )
    };
}

/// What a delivery left to remember.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DeliveryResult {
    SlackPosted { channel: String, ts: String },
    JiraFiled { key: String },
    Done { note: String },
}

/// Outbox depth for `sheriff status` and the metrics.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct OutboxCounts {
    pub pending: i64,
    /// Pending entries that have failed at least once.
    pub retrying: i64,
    pub dead: i64,
    pub done: i64,
    /// Seconds since the oldest pending entry was written.
    pub oldest_pending_age_secs: Option<i64>,
}

impl Store {
    /// Claims the next deliverable entry for `worker` until `now + lease`: pending, due, not
    /// held by a live lease, and first in its lane. Counts the attempt before anything is sent,
    /// so a worker that dies mid-delivery leaves a trace that the next one sees.
    pub async fn claim_outbox(&self, worker: &str, now: i64, lease_secs: i64) -> Result<Option<OutboxEntry>> {
        let row: Option<OutboxEntry> = with_pool!(self, pool, dialect => {
            let sql = if dialect.is_postgres { claim_sql!(" FOR UPDATE SKIP LOCKED") } else { claim_sql!("") };
            sqlx::query_as(sql)
            .bind(worker)
            .bind(now + lease_secs)
            .bind(now)
            .fetch_optional(pool)
            .await?
        });
        Ok(row)
    }

    /// Marks a claimed entry delivered and writes what the delivery learned (the Slack `ts`, the
    /// Jira key) to its incident, in one transaction. False when the lease was lost meanwhile.
    pub async fn complete_outbox(
        &self,
        entry: &OutboxEntry,
        worker: &str,
        now: i64,
        result: &DeliveryResult,
    ) -> Result<bool> {
        let done = with_pool!(self, pool, dialect => {
            let mut tx = pool.begin_with(dialect.begin_write).await?;
            let updated = sqlx::query(
                "UPDATE outbox SET state = 'done', delivered_at = $3, result = $4, locked_until = 0, last_error = NULL \
                 WHERE id = $1 AND locked_by = $2 AND state = 'pending'",
            )
            .bind(entry.id)
            .bind(worker)
            .bind(now)
            .bind(serde_json::to_string(result)?)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if let Some(incident) = entry.incident_id {
                match result {
                    DeliveryResult::SlackPosted { channel, ts } if entry.kind == "slack_post" => {
                        sqlx::query("UPDATE incidents SET slack_channel = $2, slack_ts = $3 WHERE id = $1")
                            .bind(incident)
                            .bind(channel)
                            .bind(ts)
                            .execute(&mut *tx)
                            .await?;
                    }
                    DeliveryResult::JiraFiled { key } => {
                        sqlx::query("UPDATE incidents SET jira_key = $2 WHERE id = $1")
                            .bind(incident)
                            .bind(key)
                            .execute(&mut *tx)
                            .await?;
                    }
                    _ => {}
                }
            }
            tx.commit().await?;
            updated == 1
        });
        Ok(done)
    }

    /// Records a failed attempt: retry at `retry_at`, or dead-letter it (`retry_at` = None).
    pub async fn fail_outbox(
        &self,
        entry: &OutboxEntry,
        worker: &str,
        error: &str,
        retry_at: Option<i64>,
    ) -> Result<()> {
        let (state, next) = match retry_at {
            Some(t) => ("pending", t),
            None => ("dead", entry.next_attempt_at),
        };
        with_pool!(self, pool => {
            sqlx::query(
                "UPDATE outbox SET state = $3, next_attempt_at = $4, last_error = $5, locked_until = 0 \
                 WHERE id = $1 AND locked_by = $2 AND state = 'pending'",
            )
            .bind(entry.id)
            .bind(worker)
            .bind(state)
            .bind(next)
            .bind(error)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Puts dead entries back in the queue (one by number, or all with `None`); how many.
    pub async fn retry_outbox(&self, id: Option<i64>, now: i64) -> Result<u64> {
        Ok(with_pool!(self, pool => {
            sqlx::query(
                "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = $2, locked_until = 0 \
                 WHERE state = 'dead' AND ($1 IS NULL OR id = $1)",
            )
            .bind(id)
            .bind(now)
            .execute(pool)
            .await?
            .rows_affected()
        }))
    }

    pub async fn outbox_counts(&self, now: i64) -> Result<OutboxCounts> {
        let rows: Vec<(String, i64, i64, Option<i64>)> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT state, COUNT(*), COALESCE(SUM(CASE WHEN attempts > 0 THEN 1 ELSE 0 END), 0), MIN(created_at) \
                 FROM outbox GROUP BY state",
            )
            .fetch_all(pool)
            .await?
        });
        let mut c = OutboxCounts::default();
        for (state, n, retried, oldest) in rows {
            match state.as_str() {
                "pending" => {
                    c.pending = n;
                    c.retrying = retried;
                    c.oldest_pending_age_secs = oldest.map(|t| (now - t).max(0));
                }
                "dead" => c.dead = n,
                "done" => c.done = n,
                _ => {}
            }
        }
        Ok(c)
    }

    /// Entries in `state` (`pending`, `dead`, `done`), oldest first, at most `limit`.
    pub async fn outbox_entries(&self, state: &str, limit: i64) -> Result<Vec<OutboxEntry>> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(concat!("SELECT ", entry_columns!(), " FROM outbox WHERE state = $1 ORDER BY id LIMIT $2"))
                .bind(state)
                .bind(limit)
                .fetch_all(pool)
                .await?
        }))
    }

    /// When the next pending entry falls due, if any is waiting.
    pub async fn next_outbox_due(&self) -> Result<Option<i64>> {
        Ok(with_pool!(self, pool => {
            sqlx::query_scalar::<_, Option<i64>>(
                "SELECT MIN(CASE WHEN locked_until > next_attempt_at THEN locked_until ELSE next_attempt_at END) \
                 FROM outbox WHERE state = 'pending'",
            )
            .fetch_one(pool)
            .await?
        }))
    }

    /// Takes or renews the lease `name` for `holder` until `now + secs`; false if another holder
    /// has it. One replica runs each scheduled job this way, on either engine.
    pub async fn take_lease(&self, name: &str, holder: &str, now: i64, secs: i64) -> Result<bool> {
        let taken = with_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at \
                 WHERE leases.holder = excluded.holder OR leases.expires_at <= $4",
            )
            .bind(name)
            .bind(holder)
            .bind(now + secs)
            .bind(now)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(taken == 1)
    }

    /// Gives a lease up early (a clean shutdown), so another replica need not wait it out.
    pub async fn release_lease(&self, name: &str, holder: &str) -> Result<()> {
        with_pool!(self, pool => {
            sqlx::query("DELETE FROM leases WHERE name = $1 AND holder = $2").bind(name).bind(holder).execute(pool).await?;
        });
        Ok(())
    }
}
