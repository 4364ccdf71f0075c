//! The domain: plain types with no I/O, and the pure readers of the job names and the
//! historical table that both ingest and the synthetic data need. Everything else in sheriff
//! speaks in these.

pub(crate) mod actor;
pub(crate) mod dimensions;
pub(crate) mod evaluation;
pub(crate) mod findings;
pub(crate) mod fix;
pub(crate) mod glob;
pub(crate) mod histogram;
pub(crate) mod historical;
pub mod job_name;
pub(crate) mod query;
pub mod query_results;
pub(crate) mod regression;
pub(crate) mod run;
pub(crate) mod scope;
pub(crate) mod span;
pub(crate) mod time;
pub(crate) mod trouble;

pub use dimensions::{Dimension, Dimensions};
pub use evaluation::{Fixed, GroupKey, Percentile, Span, Threshold, ThresholdSource, fingerprint};
pub(crate) use evaluation::{backend_family, percentiles_of};
pub use findings::{BrokenProbe, DataQuality, NewJob};
pub use fix::{
    Allowance, FixClaim, FixVerdict, LevelError, PartVerdict, ToldVerdict, Verification,
};
pub(crate) use glob::glob_match;
pub use histogram::Histogram;
pub use historical::HistoricalRow;
pub use query::Query;
pub use regression::{
    Attribution, ConditionEvidence, Confidence, ControlEvidence, Episode, FileAgainst, Mechanism,
    MechanismClaim, MechanismKind, Onset, PercentilePair, PlatformContrast, RegressionReport,
    SampleJob, SampleKind, Status, SuspectChange, UnknownBecause,
};
pub use run::{
    CellRun, ConditionSpan, IntervalFile, IntervalRef, JobRun, Outage, RunRecord, Sample, SpanKind,
    TimelineSpan, payload_time,
};
pub use scope::Scope;
pub(crate) use span::parse_span;
pub use time::{DAY, HOUR};
pub use trouble::{ProbeHealth, TroubleRules};

/// `29s`, or `36.2s` when not whole: how sheriff writes a number of seconds everywhere.
pub fn secs(x: f64) -> String {
    if (x - x.round()).abs() < 0.05 {
        format!("{}s", x.round())
    } else {
        format!("{x:.1}s")
    }
}

/// `2026-11-29 06:00 UTC` for Unix seconds (the number itself when out of range).
pub(crate) fn utc_minute(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0).map_or_else(
        || t.to_string(),
        |t| t.format("%Y-%m-%d %H:%M UTC").to_string(),
    )
}

/// [`secs`], or `-` when there is no value.
pub(crate) fn secs_or_dash(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), secs)
}
