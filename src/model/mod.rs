//! The domain: plain types with no I/O. Everything else in sheriff speaks in these.

pub mod dimensions;
pub mod evaluation;
pub mod histogram;
pub mod run;

pub use dimensions::{Dimension, Dimensions};
pub use evaluation::{GroupKey, Percentile, Threshold, ThresholdSource, backend_family, fingerprint};
pub use histogram::Histogram;
pub use run::{ConditionSpan, JobRun, Outage, RunRecord, Sample};
