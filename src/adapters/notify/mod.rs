//! The outbox's sinks: Slack and Jira side effects, through the sinks `slack` and `jira` (which
//! build the messages and call the clients of [`crate::clients`]), each exactly once at the
//! remote side. A delivery that may already have reached the remote side (a retry, or a worker
//! that died between the remote's answer and the local commit) looks before it acts: a Slack
//! post is found again by the idempotency key in its message metadata, a Jira issue by the
//! fingerprint label, a Jira comment by its comment property. The worker that drains the
//! outbox through them is [`crate::application::outbox`].

pub(crate) mod jira;
pub(crate) mod slack;

pub use self::jira::JiraSink;
use crate::clients::{CallError, SetupError};
use crate::domain::incidents::plan::{Effect, Sink};
use crate::store::outbox::{DeliveryResult, OutboxEntry};
use crate::store::{Store, StoreError};

/// Where side effects go.
pub struct Sinks {
    pub slack: slack::SlackSink,
    /// None when Jira is not configured.
    pub jira: Option<jira::JiraSink>,
}

impl Sinks {
    pub fn from_settings(settings: &crate::config::Settings) -> Result<Sinks, SetupError> {
        Ok(Sinks {
            slack: slack::SlackSink::from_settings(settings)?,
            jira: if settings.jira.enabled() {
                Some(
                    jira::JiraSink::new(&settings.jira)?
                        .with_public_url(&settings.server.public_url),
                )
            } else {
                None
            },
        })
    }

    /// Delivers one entry through its sink.
    pub(crate) async fn deliver(
        &self,
        store: &Store,
        entry: &OutboxEntry,
    ) -> Result<DeliveryResult, CallError> {
        let effect = Effect::from_entry(&entry.kind, &entry.payload)
            .map_err(|e| CallError::permanent(e.to_string()))?;
        let incident = match entry.incident_id {
            Some(id) => Some(
                store
                    .incidents()
                    .find(&id.to_string())
                    .await
                    .map_err(|e| store_failure("reading the incident", &e))?
                    .ok_or_else(|| CallError::permanent(format!("incident {id} is gone")))?,
            ),
            None => None,
        };
        if effect.sink() == Sink::Slack {
            return self
                .slack
                .deliver(store, entry, incident.as_ref(), &effect)
                .await;
        }
        let (Some(jira), Some(incident)) = (&self.jira, incident.as_ref()) else {
            return Err(CallError::permanent(
                "Jira is not configured; the entry cannot be delivered",
            ));
        };
        jira.deliver(entry, incident, &effect).await
    }
}

/// A delivery the store failed while `doing` something: a dead letter when asking again can
/// only fail the same way (a row that does not decode), else tried again like any failed call
/// (a lost connection, a busy database), up to `outbox.max_attempts`.
pub(crate) fn store_failure(doing: &str, e: &StoreError) -> CallError {
    let message = format!("{doing}: {e}");
    if e.fails_every_time() {
        CallError::permanent(message)
    } else {
        CallError::retryable(message)
    }
}

#[cfg(test)]
mod tests {
    use super::{CallError, store_failure};
    use crate::store::StoreError;

    #[test]
    fn a_store_failure_is_dead_lettered_only_when_it_fails_every_time() {
        let lost = store_failure(
            "reading the incident",
            &StoreError::Connection(sqlx::Error::PoolTimedOut),
        );
        assert!(lost.retryable, "{lost:?}");
        let corrupt = store_failure(
            "reading the incident",
            &StoreError::malformed("incidents", "snapshot: not JSON"),
        );
        assert!(!corrupt.retryable, "{corrupt:?}");
        assert_eq!(corrupt.message, "reading the incident: snapshot: not JSON");
        let undecodable = store_failure(
            "reading the incident",
            &StoreError::Storage(sqlx::Error::ColumnNotFound("state".into())),
        );
        assert!(!undecodable.retryable, "{undecodable:?}");
    }

    #[test]
    fn a_call_error_is_an_error_that_reads_as_its_message() {
        let e: Box<dyn std::error::Error> =
            Box::new(CallError::permanent("Slack chat.postMessage: {x}"));
        assert_eq!(e.to_string(), "Slack chat.postMessage: {x}");
        assert!(e.source().is_none());
    }
}
