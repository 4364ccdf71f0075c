//! `[retention]`: how long stored data is kept, and when it is pruned.

use serde::{Deserialize, Serialize};

use super::{ConfigError, EvaluateSettings};

/// How long stored data is kept; `[retention]`. `sheriff serve` prunes on `schedule`, and
/// `sheriff prune` does it by hand.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionSettings {
    /// Runs, their samples and the per-day histograms are kept this many whole UTC days.
    pub samples_days: u32,
    /// Interval evidence (outages, condition spans) is kept this many days.
    pub intervals_days: u32,
    /// When `serve` prunes (cron, read in `schedule.timezone`). Default: daily at 03:30.
    pub schedule: String,
    /// Runs per delete transaction: what a cycle or an ingest may wait for at most.
    pub batch_runs: usize,
}

impl Default for RetentionSettings {
    fn default() -> Self {
        Self {
            samples_days: 400,
            intervals_days: 60,
            schedule: "30 3 * * *".into(),
            batch_runs: 500,
        }
    }
}

impl RetentionSettings {
    /// Checks values that types alone cannot; the samples outlive the evaluation's windows.
    pub(super) fn validate(
        &self,
        evaluate: &EvaluateSettings,
        timezone: &str,
    ) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: &str| Err(ConfigError::Invalid(format!("`{key}`: {why}")));
        let r = self;
        let windows = evaluate.window_days.saturating_add(evaluate.baseline_days);
        if r.samples_days < windows.max(28) {
            return invalid(
                "retention.samples_days",
                "must cover the evaluation's window and baseline, and at least 28 days",
            );
        }
        if r.intervals_days == 0 || r.intervals_days > r.samples_days {
            return invalid(
                "retention.intervals_days",
                "must be between 1 and retention.samples_days",
            );
        }
        if !(1..=5_000).contains(&r.batch_runs) {
            return invalid("retention.batch_runs", "must be between 1 and 5000");
        }
        if let Err(why) = crate::config::cron::Schedule::parse(&r.schedule, timezone) {
            return invalid("retention.schedule", &why.to_string());
        }
        Ok(())
    }
}
