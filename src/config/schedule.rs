//! `[schedule]`: when evaluation cycles and scheduled ingests run.

use serde::{Deserialize, Serialize};

/// When scheduled work runs. Cron expressions are standard 5-field Unix cron
/// (`minute hour day-of-month month day-of-week`, Sunday = 0 or 7, names allowed), read in
/// `timezone`; a 6-field expression takes seconds first.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScheduleSettings {
    /// Evaluation cycles. Default: every 6 hours, on the hour.
    pub evaluate: String,
    /// IANA time zone the expressions are read in (daylight saving handled).
    pub timezone: String,
    /// Sources `sheriff serve` ingests on their own schedules, taking only new runs.
    pub ingest: Vec<IngestSchedule>,
}

/// One source polled by `sheriff serve`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestSchedule {
    /// A local folder or `gs://bucket/prefix`, as for `sheriff ingest`.
    pub source: String,
    /// Cron expression (read in `schedule.timezone`).
    pub cron: String,
    /// Only runs that started within this many days (default 14), so a poll stays cheap.
    #[serde(default = "default_ingest_days")]
    pub since_days: u32,
}

fn default_ingest_days() -> u32 {
    14
}

impl Default for ScheduleSettings {
    fn default() -> Self {
        Self {
            evaluate: "0 */6 * * *".into(),
            timezone: "UTC".into(),
            ingest: Vec::new(),
        }
    }
}
