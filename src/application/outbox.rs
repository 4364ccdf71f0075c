//! Draining the outbox: a [`Worker`] claims one entry at a time under a lease (counting the
//! attempt first), delivers it through the [`Sinks`], and records the result; on failure it
//! retries with exponential backoff and jitter, honouring `Retry-After`, and dead-letters the
//! entry after `outbox.max_attempts` or at once when the remote side refuses it for good.

use std::sync::Arc;
#[cfg(feature = "testing")]
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

pub use crate::adapters::notify::Sinks;
use crate::clients::SetupError;
use crate::config::OutboxSettings;
pub use crate::store::outbox::DrainReport;
use crate::store::outbox::{DeliveryResult, OutboxEntry};
use crate::store::{Store, StoreError};

/// Wall-clock seconds; with the `testing` feature, plus an offset tests move forward instead of
/// sleeping.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    #[cfg(feature = "testing")]
    offset: Arc<AtomicI64>,
}

impl Clock {
    pub fn now(&self) -> i64 {
        #[cfg(feature = "testing")]
        let offset = self.offset.load(Ordering::Relaxed);
        #[cfg(not(feature = "testing"))]
        let offset = 0;
        chrono::Utc::now().timestamp() + offset
    }

    #[cfg(feature = "testing")]
    pub fn advance(&self, secs: i64) {
        self.offset.fetch_add(secs, Ordering::Relaxed);
    }
}

/// Points where a test may stop a worker as if its process died.
#[cfg(feature = "testing")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillPoint {
    /// The entry is claimed; nothing sent.
    Claimed,
    /// The remote side accepted; the local commit has not happened.
    Accepted,
}

/// Says whether a worker dies at a point, with the entry it holds.
#[cfg(feature = "testing")]
pub(crate) type FaultHook = Arc<dyn Fn(KillPoint, &OutboxEntry) -> bool + Send + Sync>;

/// How one step of the worker went.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    Delivered(i64),
    Retrying(i64),
    Dead(i64),
    /// Stopped by a [`FaultHook`] as if the process had died.
    #[cfg(feature = "testing")]
    Killed(i64),
    /// Nothing due.
    Idle,
}

/// Delivers outbox entries. Several workers (in several replicas) may run at once.
pub struct Worker {
    pub store: Arc<Store>,
    pub sinks: Arc<Sinks>,
    pub settings: OutboxSettings,
    pub id: String,
    pub clock: Clock,
    /// Where a test kills the worker.
    #[cfg(feature = "testing")]
    pub faults: Option<FaultHook>,
}

impl Worker {
    pub fn new(store: Arc<Store>, sinks: Arc<Sinks>, settings: OutboxSettings) -> Worker {
        let id = format!(
            "{}-{}",
            crate::support::process::hostname(),
            crate::support::process::random_suffix()
        );
        Worker {
            store,
            sinks,
            settings,
            id,
            clock: Clock::default(),
            #[cfg(feature = "testing")]
            faults: None,
        }
    }

    #[cfg(feature = "testing")]
    fn killed(&self, point: KillPoint, entry: &OutboxEntry) -> bool {
        self.faults.as_ref().is_some_and(|f| f(point, entry))
    }

    /// Claims and delivers one entry.
    pub async fn step(&self) -> Result<StepOutcome, StoreError> {
        let now = self.clock.now();
        let Some(entry) = self
            .store
            .outbox()
            .claim(&self.id, now, self.settings.lease_secs as i64)
            .await?
        else {
            return Ok(StepOutcome::Idle);
        };

        #[cfg(feature = "testing")]
        if self.killed(KillPoint::Claimed, &entry) {
            return Ok(StepOutcome::Killed(entry.id));
        }

        let started = std::time::Instant::now();
        let result = self.sinks.deliver(&self.store, &entry).await;
        // an entry of a kind this version does not know dead-letters, counted under no sink
        let sink = entry.effect_kind().map_or("unknown", |k| k.sink().as_str());

        let outcome = match &result {
            Ok(_) => "ok",
            Err(e) if e.retryable => "retry",
            Err(_) => "failed",
        };

        metrics::histogram!("sheriff_delivery_seconds", "sink" => sink, "outcome" => outcome)
            .record(started.elapsed().as_secs_f64());

        metrics::counter!("sheriff_deliveries_total", "sink" => sink, "outcome" => outcome)
            .increment(1);

        match result {
            Ok(done) => {
                #[cfg(feature = "testing")]
                if self.killed(KillPoint::Accepted, &entry) {
                    return Ok(StepOutcome::Killed(entry.id));
                }
                let then = match &done {
                    DeliveryResult::JiraFiled { key } => {
                        crate::domain::incidents::plan::after_filing(key, crate::words::line)
                    }
                    _ => Vec::new(),
                };
                if !self
                    .store
                    .outbox()
                    .complete(&entry, &self.id, self.clock.now(), &done, &then)
                    .await?
                {
                    tracing::warn!(entry = entry.id, key = %entry.idempotency_key, "delivered after the lease ran out");
                }
                tracing::info!(entry = entry.id, kind = %entry.kind, key = %entry.idempotency_key, "delivered");
                Ok(StepOutcome::Delivered(entry.id))
            }
            Err(e) => {
                let last = entry.attempts >= i64::from(self.settings.max_attempts);
                if !e.retryable || last {
                    tracing::error!(entry = entry.id, kind = %entry.kind, attempts = entry.attempts, "dead letter: {e}");
                    self.store
                        .outbox()
                        .fail(&entry, &self.id, &e.message, None)
                        .await?;
                    return Ok(StepOutcome::Dead(entry.id));
                }
                let delay = self.backoff(&entry, e.retry_after);
                tracing::warn!(entry = entry.id, kind = %entry.kind, attempts = entry.attempts, retry_in = delay, "{e}");
                self.store
                    .outbox()
                    .fail(&entry, &self.id, &e.message, Some(self.clock.now() + delay))
                    .await?;
                Ok(StepOutcome::Retrying(entry.id))
            }
        }
    }

    /// Seconds before the next attempt: `Retry-After` when given, else exponential with jitter
    /// (between half and all of `base × 2^(attempts-1)`, capped).
    fn backoff(&self, entry: &OutboxEntry, retry_after: Option<Duration>) -> i64 {
        if let Some(d) = retry_after {
            return d.as_secs().max(1) as i64;
        }
        let exp = (entry.attempts - 1).clamp(0, 20) as u32;
        let ceiling = self
            .settings
            .backoff_base_secs
            .saturating_mul(1 << exp)
            .min(self.settings.backoff_max_secs)
            .max(1);
        (ceiling / 2 + fastrand::u64(..=ceiling / 2)) as i64
    }

    /// Delivers what is due until nothing is, or until `deadline`.
    pub async fn drain(&self, deadline: tokio::time::Instant) -> Result<DrainReport, StoreError> {
        let mut report = DrainReport::default();
        while tokio::time::Instant::now() < deadline {
            match tokio::time::timeout_at(deadline, self.step()).await {
                Err(_) => break,
                Ok(step) => match step? {
                    StepOutcome::Delivered(_) => report.delivered += 1,
                    StepOutcome::Retrying(_) => report.retrying += 1,
                    StepOutcome::Dead(_) => report.dead += 1,
                    #[cfg(feature = "testing")]
                    StepOutcome::Killed(_) => break,
                    StepOutcome::Idle => break,
                },
            }
        }
        Ok(report)
    }

    /// Delivers until `shutdown` resolves: a delivery under way finishes, the rest waits in the
    /// outbox.
    pub async fn run(&self, shutdown: tokio::sync::watch::Receiver<bool>) {
        let mut shutdown = shutdown;
        loop {
            if *shutdown.borrow() {
                return;
            }
            let Some(stepped) =
                crate::support::shutdown::finish_or_abandon(self.step(), &mut shutdown).await
            else {
                tracing::warn!(
                    "stopping with a delivery in flight; it is retried once its lease lapses"
                );
                return;
            };
            let wait = match stepped {
                Ok(StepOutcome::Idle) => match self.store.outbox().next_due().await {
                    Ok(Some(due)) => (due - self.clock.now()).clamp(1, 5),
                    Ok(None) => 5,
                    Err(_) => 5,
                },
                Ok(_) => continue,
                Err(e) => {
                    tracing::error!("outbox worker: {e:#}");
                    5
                }
            };
            tokio::select! {
                biased;
                () = crate::support::shutdown::stopping(&mut shutdown) => return,
                _ = tokio::time::sleep(Duration::from_secs(wait as u64)) => {}
            }
        }
    }
}

/// Delivers what the outbox holds for up to `settings.outbox.evaluate_timeout_secs`: after a
/// cycle run by hand (`sheriff evaluate`, the demo) and for `sheriff outbox deliver`, where no
/// worker runs.
pub async fn deliver_for_a_while(
    store: Arc<Store>,
    settings: &crate::config::Settings,
) -> Result<DrainReport, OutboxError> {
    let sinks = Arc::new(Sinks::from_settings(settings)?);
    let worker = Worker::new(store, sinks, settings.outbox.clone());
    let deadline = tokio::time::Instant::now()
        + std::time::Duration::from_secs(settings.outbox.evaluate_timeout_secs);
    Ok(worker.drain(deadline).await?)
}

/// Why the outbox could not be delivered by hand: a sink could not be set up from the
/// settings, or the store failed (an entry's own failure is no error: it is retried or kept
/// as a dead letter).
#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The store's error is this one's source, so the application finds it in the chain
    /// ([`crate::store::is_storage_error`]).
    #[error("delivering the outbox")]
    Store(#[from] StoreError),
}

#[cfg(test)]
mod tests {
    use super::OutboxError;
    use crate::store::StoreError;

    #[test]
    fn a_lost_database_is_found_in_a_delivery_by_hand_s_error() {
        let e = anyhow::Error::from(OutboxError::from(StoreError::Connection(
            sqlx::Error::PoolTimedOut,
        )));
        assert!(crate::store::is_storage_error(&e), "{e:#}");
        assert_eq!(
            format!("{e:#}"),
            "delivering the outbox: no database connection: pool timed out while waiting for an open connection"
        );
    }
}
