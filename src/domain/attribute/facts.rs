//! What the attribution found about a regression, as the facts its words are made of
//! (`words::regression` says them), and how confident it is. Pure.

use crate::model::{ConditionEvidence, Confidence, ControlEvidence, FileAgainst, Percentile};

/// Whom it belongs to.
#[derive(Debug, Clone)]
pub struct Owners {
    /// The component it is filed against.
    pub component: String,
    /// The backend's own component.
    pub backend_component: String,
    /// The platform's component, for a regression specific to one platform.
    pub platform_component: Option<String>,
    pub file_against: FileAgainst,
}

/// Everything the words are made of.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub family: &'a str,
    /// "metal 4.14", "4.14, every platform, network=ovn".
    pub scope_words: &'a str,
    /// Still regressed (or back).
    pub regressed: bool,
    pub percentile: Percentile,
    pub observed: f64,
    pub threshold: f64,
    pub allowed: f64,
    /// Where the threshold came from, in words.
    pub source: &'a str,
    pub p_value: f64,
    pub q_value: f64,
    pub runs: u64,
    /// The runs judged are those of the last so many days (a regression that began inside the
    /// window), not the whole window's.
    pub span_days: Option<u32>,
    /// The percentile in the reference, and the reference's runs.
    pub reference: Option<(f64, u64)>,
    pub independence: &'a [String],
    /// Values with too few runs of their own.
    pub thin: usize,
    /// The scope separates the regressed cells from every healthy one.
    pub separates: bool,
    pub backends: &'a [String],
    pub control: Option<&'a ControlEvidence>,
    pub conditions: &'a [ConditionEvidence],
    /// Runs whose interval evidence is not fetched yet, of those the conditions were read from.
    pub evidence_pending: PendingRuns,
    /// Runs of the scope left out for CI-infrastructure trouble (not among `runs`).
    pub left_out: u64,
    pub owners: &'a Owners,
}

/// Of the runs whose interval files were read for a regression, how many could not be fetched
/// yet: they are left out of the evidence (rather than counted as having none) until a later
/// cycle fetches them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PendingRuns {
    /// Runs whose interval files could not be fetched yet.
    pub unfetched: usize,
    /// Runs read, the unfetched among them.
    pub read: usize,
}

/// High when the test is decisive, the scope separates, no value is thin, and either the
/// outages have an operator condition behind them or the control stayed healthy.
pub fn confidence(f: &Facts<'_>) -> Confidence {
    confidence_of(
        f.p_value,
        f.separates,
        f.thin,
        explained(f.conditions, f.control),
    )
}

/// Whether something explains the outages: an operator condition covering most of them, or a
/// healthy control.
fn explained(conditions: &[ConditionEvidence], control: Option<&ControlEvidence>) -> bool {
    conditions.first().is_some_and(|c| c.covered_share >= 0.5) || control.is_some_and(|c| c.healthy)
}

fn confidence_of(p_value: f64, separates: bool, thin: usize, explained: bool) -> Confidence {
    if p_value < 1e-6 && separates && thin == 0 && explained {
        Confidence::High
    } else if p_value < 1e-3 && separates {
        Confidence::Medium
    } else {
        Confidence::Low
    }
}

/// The confidence of an attribution made while some of its interval evidence was pending, once
/// the `conditions` are read: High when they now make the case, otherwise `current` (never
/// lowered: the rest of the case is as it was).
pub fn with_conditions(
    current: Confidence,
    p_value: f64,
    separates: bool,
    thin: usize,
    conditions: &[ConditionEvidence],
    control: Option<&ControlEvidence>,
) -> Confidence {
    match confidence_of(p_value, separates, thin, explained(conditions, control)) {
        Confidence::High => Confidence::High,
        _ => current,
    }
}
