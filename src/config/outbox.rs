//! `[outbox]`: how side effects on Slack and Jira are delivered and retried.

use serde::{Deserialize, Serialize};

/// Delivery of side effects (Slack, Jira).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutboxSettings {
    /// Attempts before an entry is dead-lettered (`sheriff status` shows it; `sheriff outbox
    /// retry` revives it).
    pub max_attempts: u32,
    /// Exponential backoff between attempts, with full jitter, capped; a `Retry-After` wins.
    pub backoff_base_secs: u64,
    pub backoff_max_secs: u64,
    /// How long a worker holds an entry it is delivering; a worker that dies releases it when
    /// this runs out.
    pub lease_secs: u64,
    /// `sheriff evaluate` delivers for at most this long before it exits; the rest waits for the
    /// next run or for `sheriff serve`.
    pub evaluate_timeout_secs: u64,
}

impl Default for OutboxSettings {
    fn default() -> Self {
        Self {
            max_attempts: 8,
            backoff_base_secs: 5,
            backoff_max_secs: 900,
            lease_secs: 120,
            evaluate_timeout_secs: 60,
        }
    }
}
