//! What the attribution found about a regression beyond its report's typed parts: whom it
//! belongs to, the interval evidence still pending, and how confident it is. Pure;
//! `words::regression` says the report.

use crate::model::{Attribution, ConditionEvidence, Confidence, ControlEvidence, FileAgainst};

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

/// High when the test (`p_value`) is decisive, the scope separates, no value is thin, and
/// either the outages have an operator condition behind them or the control stayed healthy.
pub fn confidence(a: &Attribution, p_value: f64) -> Confidence {
    let explained = explained(&a.conditions, a.control.as_ref());
    if p_value < 1e-6 && a.separates() && a.thin_evidence.is_empty() && explained {
        Confidence::High
    } else if p_value < 1e-3 && a.separates() {
        Confidence::Medium
    } else {
        Confidence::Low
    }
}

/// Whether something explains the outages: an operator condition covering most of them, or a
/// healthy control.
fn explained(conditions: &[ConditionEvidence], control: Option<&ControlEvidence>) -> bool {
    conditions.first().is_some_and(|c| c.covered_share >= 0.5) || control.is_some_and(|c| c.healthy)
}

/// The confidence of an attribution made while some of its interval evidence was pending, once
/// its conditions are read: High when they now make the case, otherwise its confidence as it
/// was (never lowered: the rest of the case is as it was).
pub fn with_conditions(a: &Attribution, p_value: f64) -> Confidence {
    match confidence(a, p_value) {
        Confidence::High => Confidence::High,
        _ => a.confidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attribution() -> Attribution {
        Attribution {
            component: "Image Registry".into(),
            platform: Some("metal".into()),
            platform_component: None,
            owners: vec!["Image Registry".into()],
            file_against: FileAgainst::Backend,
            scope: "metal 4.14".into(),
            summary: String::new(),
            independence: Vec::new(),
            thin_evidence: Vec::new(),
            control: None,
            conditions: Vec::new(),
            confidence: Confidence::Low,
            separates: Some(true),
            evidence: Vec::new(),
            evidence_pending: 0,
            evidence_read: 0,
            mechanism: None,
            harness: None,
            contrast: Vec::new(),
        }
    }

    #[test]
    fn confidence_needs_a_decisive_test_a_separating_scope_and_an_explanation() {
        let mut a = attribution();
        assert_eq!(
            confidence(&a, 1e-9),
            Confidence::Medium,
            "nothing explains it"
        );
        a.control = Some(crate::synth::example_control());
        assert_eq!(
            confidence(&a, 1e-9),
            Confidence::High,
            "a healthy control explains it"
        );
        assert_eq!(confidence(&a, 1e-4), Confidence::Medium);
        a.separates = Some(false);
        assert_eq!(
            confidence(&a, 1e-9),
            Confidence::Low,
            "a scope that separates nothing"
        );
        a.separates = Some(true);
        a.thin_evidence = vec!["upgrade_type=minor".into()];
        assert_eq!(confidence(&a, 1e-9), Confidence::Medium, "a thin value");
    }

    #[test]
    fn conditions_read_later_raise_the_confidence_but_never_lower_it() {
        let mut a = attribution();
        a.confidence = Confidence::Medium;
        assert_eq!(with_conditions(&a, 1e-9), Confidence::Medium);
        a.conditions = vec![crate::synth::example_condition()];
        assert_eq!(with_conditions(&a, 1e-9), Confidence::High);
        a.confidence = Confidence::High;
        a.conditions.clear();
        assert_eq!(with_conditions(&a, 1e-9), Confidence::High, "never lowered");
    }
}
