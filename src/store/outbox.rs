//! The outbox: side effects waiting to be delivered, claimed by one worker at a time under a
//! lease, in order per lane (an incident's Slack thread, its Jira issue, a channel's summaries).

use serde::Serialize;

use super::incidents::{NewEntry, enqueue};
use super::{Result, Sql, Store, StoreError, row_by_position, sql};
use crate::domain::incidents::plan::{Effect, EffectKind};

/// Where an entry is: waiting (or being delivered), given up on, delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryState {
    Pending,
    Dead,
    Done,
}

impl EntryState {
    pub const ALL: [EntryState; 3] = [EntryState::Pending, EntryState::Dead, EntryState::Done];

    /// Its name in the outbox table.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::Pending => "pending",
            EntryState::Dead => "dead",
            EntryState::Done => "done",
        }
    }

    pub fn parse(s: &str) -> Option<EntryState> {
        EntryState::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

impl std::fmt::Display for EntryState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A state the outbox table holds that is none of [`EntryState`]'s.
#[derive(Debug, thiserror::Error)]
#[error("unknown outbox entry state `{0}`")]
pub struct UnknownState(String);

impl TryFrom<String> for EntryState {
    type Error = UnknownState;

    fn try_from(s: String) -> std::result::Result<EntryState, UnknownState> {
        EntryState::parse(&s).ok_or(UnknownState(s))
    }
}

/// An entry a worker has claimed.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct OutboxEntry {
    pub id: i64,
    pub idempotency_key: String,
    pub lane: String,
    /// The effect's kind as stored: a kind this version does not know is still read, and dead
    /// letters when delivered ([`OutboxEntry::effect_kind`] is None).
    pub kind: String,
    pub incident_id: Option<i64>,
    pub payload: String,
    #[sqlx(try_from = "String")]
    pub state: EntryState,
    /// Attempts so far, this one included once claimed.
    pub attempts: i64,
    pub next_attempt_at: i64,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
}

impl OutboxEntry {
    /// The kind of effect it holds, when this version knows it.
    pub fn effect_kind(&self) -> Option<EffectKind> {
        EffectKind::parse(&self.kind)
    }
}

const ENTRY_COLUMNS: &str = "id, idempotency_key, lane, kind, incident_id, payload, state, attempts, \
    next_attempt_at, last_error, created_at, delivered_at";

/// Claims the first due entry of its lane; `$1` worker, `$2` lease end, `$3` now. PostgreSQL
/// skips rows another worker has locked.
fn claim_sql(postgres: bool) -> Sql {
    Sql::built(format!(
        "UPDATE outbox SET attempts = attempts + 1, locked_by = $1, locked_until = $2 \
         WHERE id = (SELECT o.id FROM outbox o WHERE o.state = 'pending' AND o.next_attempt_at <= $3 \
         AND o.locked_until <= $3 AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.lane = o.lane \
         AND p.id < o.id AND p.state = 'pending') ORDER BY o.id LIMIT 1{}) AND state = 'pending' RETURNING {ENTRY_COLUMNS}",
        if postgres {
            " FOR UPDATE SKIP LOCKED"
        } else {
            ""
        }
    ))
}

/// What a delivery left to remember.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DeliveryResult {
    SlackPosted { channel: String, ts: String },
    JiraFiled { key: String },
    Done { note: String },
}

/// What a worker's drain (`application::outbox::Worker::drain`) did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DrainReport {
    pub delivered: usize,
    pub retrying: usize,
    pub dead: usize,
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

/// The outbox: notifications waiting, claimed, delivered or failed.
/// Reached through [`Store::outbox`].
#[derive(Clone, Copy)]
pub struct Outbox<'a> {
    pub(super) store: &'a Store,
}

impl Outbox<'_> {
    /// Claims the next deliverable entry for `worker` until `now + lease`: pending, due, not
    /// held by a live lease, and first in its lane. Counts the attempt before anything is sent,
    /// so a worker that dies mid-delivery leaves a trace that the next one sees.
    pub async fn claim(
        self,
        worker: &str,
        now: i64,
        lease_secs: i64,
    ) -> Result<Option<OutboxEntry>> {
        let result: Result<Option<OutboxEntry>> = async {
            let q = claim_sql(self.store.engine() == crate::config::Engine::Postgres)
                .bind(worker)
                .bind(now + lease_secs)
                .bind(now);
            self.store.fetch_optional(q).await
        }
        .await;
        self.store.tracked(result)
    }

    /// Marks a claimed entry delivered and writes what the delivery learned (the Slack `ts`, the
    /// Jira key) to its incident, in one transaction. A filed Jira issue queues `then` (see
    /// [`crate::domain::incidents::plan::after_filing`]) in the same transaction, when the incident's
    /// parent message is posted or queued. False when the lease was lost meanwhile.
    pub async fn complete(
        self,
        entry: &OutboxEntry,
        worker: &str,
        now: i64,
        result: &DeliveryResult,
        then: &[Effect],
    ) -> Result<bool> {
        let result: Result<bool> = async {
            let mut tx = self.store.begin_write().await?;
            let mut c = tx.conn();
            let q =
                sql("UPDATE outbox SET state = 'done', delivered_at = $3, result = $4, locked_until = 0, \
                     last_error = NULL WHERE id = $1 AND locked_by = $2 AND state = 'pending'")
                .bind(entry.id)
                .bind(worker)
                .bind(now)
                .bind(serde_json::to_string(result).map_err(StoreError::Encode)?);
            let updated = c.execute(q).await?;
            if let Some(incident) = entry.incident_id {
                match result {
                    DeliveryResult::SlackPosted { channel, ts }
                        if entry.effect_kind() == Some(EffectKind::SlackPost) =>
                    {
                        let q = sql("UPDATE incidents SET slack_channel = $2, slack_ts = $3 WHERE id = $1")
                            .bind(incident)
                            .bind(channel)
                            .bind(ts);
                        c.execute(q).await?;
                    }
                    DeliveryResult::JiraFiled { key } => {
                        c.execute(
                            sql("UPDATE incidents SET jira_key = $2 WHERE id = $1").bind(incident).bind(key),
                        )
                        .await?;
                        let parent: i64 = c
                            .scalar(
                                sql("SELECT (SELECT COUNT(*) FROM incidents WHERE id = $1 AND slack_ts IS NOT NULL) \
                                     + (SELECT COUNT(*) FROM outbox WHERE incident_id = $1 AND kind = 'slack_post')")
                                .bind(incident),
                            )
                            .await?;
                        if parent > 0 {
                            let queued_at = chrono::Utc::now().timestamp();
                            for effect in then {
                                let e = NewEntry::following(effect, incident, &format!("filed-{key}"));
                                enqueue(&mut c, queued_at, &e).await?;
                            }
                        }
                    }
                    _ => {}
                }
            }
            tx.commit().await?;
            Ok(updated == 1)
        }
        .await;
        self.store.tracked(result)
    }

    /// Records a failed attempt: retry at `retry_at`, or dead-letter it (`retry_at` = None).
    pub async fn fail(
        self,
        entry: &OutboxEntry,
        worker: &str,
        error: &str,
        retry_at: Option<i64>,
    ) -> Result<()> {
        let (state, next) = match retry_at {
            Some(t) => (EntryState::Pending, t),
            None => (EntryState::Dead, entry.next_attempt_at),
        };
        let q = sql(
            "UPDATE outbox SET state = $3, next_attempt_at = $4, last_error = $5, locked_until = 0 \
                 WHERE id = $1 AND locked_by = $2 AND state = 'pending'",
        )
        .bind(entry.id)
        .bind(worker)
        .bind(state.as_str())
        .bind(next)
        .bind(error);
        self.store.execute(q).await.map(|_| ())
    }

    /// Puts dead entries back in the queue (one by number, or all with `None`); how many.
    pub async fn retry(self, id: Option<i64>, now: i64) -> Result<u64> {
        let q = match id {
            Some(id) => sql(
                "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = $2, locked_until = 0 \
                     WHERE state = 'dead' AND id = $1",
            )
            .bind(id),
            None => sql(
                "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = $1, locked_until = 0 \
                     WHERE state = 'dead'",
            ),
        };
        self.store.execute(q.bind(now)).await
    }

    /// The entries in each state, and how many pending ones failed before, the oldest's age.
    pub async fn counts(self, now: i64) -> Result<OutboxCounts> {
        let rows: Vec<StateCount> = self
            .store
            .fetch_all(sql(
                "SELECT state, COUNT(*), COALESCE(SUM(CASE WHEN attempts > 0 THEN 1 ELSE 0 END), 0), \
                 MIN(created_at) FROM outbox GROUP BY state",
            ))
            .await?;
        let mut c = OutboxCounts::default();
        for StateCount {
            state,
            entries: n,
            retried,
            oldest,
        } in rows
        {
            match EntryState::parse(&state) {
                Some(EntryState::Pending) => {
                    c.pending = n;
                    c.retrying = retried;
                    c.oldest_pending_age_secs = oldest.map(|t| (now - t).max(0));
                }
                Some(EntryState::Dead) => c.dead = n,
                Some(EntryState::Done) => c.done = n,
                None => {}
            }
        }
        Ok(c)
    }

    /// Entries in `state`, oldest first, at most `limit`.
    pub async fn entries(self, state: EntryState, limit: i64) -> Result<Vec<OutboxEntry>> {
        let q = Sql::built(format!(
            "SELECT {ENTRY_COLUMNS} FROM outbox WHERE state = $1 ORDER BY id LIMIT $2"
        ))
        .bind(state.as_str())
        .bind(limit);
        self.store.fetch_all(q).await
    }

    /// When the next pending entry falls due, if any is waiting.
    pub async fn next_due(self) -> Result<Option<i64>> {
        self.store.scalar(sql(
            "SELECT MIN(CASE WHEN locked_until > next_attempt_at THEN locked_until ELSE next_attempt_at END) \
                 FROM outbox WHERE state = 'pending'",
        ))
        .await
    }
}

/// The outbox entries in one state.
struct StateCount {
    state: String,
    entries: i64,
    /// Those tried at least once.
    retried: i64,
    /// When the oldest was created (Unix seconds).
    oldest: Option<i64>,
}
row_by_position!(StateCount {
    state,
    entries,
    retried,
    oldest
});
