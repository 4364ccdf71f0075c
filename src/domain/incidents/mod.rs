//! Incidents: one record per attributed regression, kept across cycles.
//!
//! A cycle's regressions are matched to the incidents already known ([`plan`]), which yields the
//! changes to record and the side effects (Slack, Jira) to put in the outbox, in the same
//! transaction. This module holds the pure parts: identity, lifecycle, material change and
//! silences. Nothing here touches the database or the network.
//!
//! **Identity.** An incident is born with the fingerprint of its first regression (see
//! [`crate::model::fingerprint`]: backend family, release and scope). In later cycles a
//! regression belongs to it when it has the same fingerprint or, failing that, the same family
//! and release and a scope that overlaps the incident's: a scope that grows from "metal, ovn" to
//! "metal" is the same problem, and that growth is a material change.
//!
//! **Lifecycle.** `new` → `ongoing` → `resolved` (→ `reopened` → `ongoing` …). An open incident
//! that no regression of the cycle matches, resolved or not, is `stale`: its groups had no
//! verdict (too few runs, no runs at all), and a data gap is not a fix.

pub(crate) mod manual;
pub mod plan;
pub mod silence;
mod told;

pub use manual::{Accept, Refusal};
pub use told::{Told, Wording};

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::{Percentile, RegressionReport, Scope};

/// Where an incident is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum State {
    New,
    Ongoing,
    Stale,
    Resolved,
    Reopened,
}

impl State {
    pub const ALL: [State; 5] = [
        State::New,
        State::Ongoing,
        State::Stale,
        State::Resolved,
        State::Reopened,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::New => "new",
            State::Ongoing => "ongoing",
            State::Stale => "stale",
            State::Resolved => "resolved",
            State::Reopened => "reopened",
        }
    }

    pub fn parse(s: &str) -> Option<State> {
        State::ALL.into_iter().find(|x| x.as_str() == s)
    }

    pub fn is_open(self) -> bool {
        self != State::Resolved
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an incident was resolved last, as it keeps it ([`plan::Resolution`] without its
/// details).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum ResolvedAs {
    /// No longer observed, no fix verified.
    Recovered,
    /// A claimed fix verified.
    Fixed,
    ByHand,
    NotARegression,
    Merged,
}

impl ResolvedAs {
    pub const ALL: [ResolvedAs; 5] = [
        ResolvedAs::Recovered,
        ResolvedAs::Fixed,
        ResolvedAs::ByHand,
        ResolvedAs::NotARegression,
        ResolvedAs::Merged,
    ];

    /// Its name in the store and the JSON API.
    pub fn as_str(self) -> &'static str {
        match self {
            ResolvedAs::Recovered => "recovered",
            ResolvedAs::Fixed => "fixed",
            ResolvedAs::ByHand => "by_hand",
            ResolvedAs::NotARegression => "not_a_regression",
            ResolvedAs::Merged => "merged",
        }
    }

    pub fn parse(s: &str) -> Option<ResolvedAs> {
        ResolvedAs::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// What an incident remembers of its latest regression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub family: String,
    pub release: String,
    pub backends: Vec<String>,
    pub component: String,
    #[serde(with = "crate::model::scope::lists")]
    pub scope: Scope,
    pub percentile: Percentile,
    pub observed_seconds: f64,
    pub threshold_seconds: f64,
    /// See [`tier`].
    pub tier: String,
    /// The strongest correlated condition, `operator Condition=Status`, or empty.
    pub evidence: String,
    pub summary: String,
    /// The whole regression report, for rendering messages and `explain`.
    pub report: RegressionReport,
}

impl Snapshot {
    /// Its judged percentile now (the observed value when the report has none) and in the
    /// reference.
    pub(crate) fn now_and_reference(&self) -> (f64, Option<f64>) {
        let pair = self.report.percentiles.get(&self.percentile);
        (
            pair.and_then(|p| p.now).unwrap_or(self.observed_seconds),
            pair.and_then(|p| p.baseline),
        )
    }

    pub fn from_report(r: &RegressionReport) -> Snapshot {
        Snapshot {
            family: r.family.clone(),
            release: r.release.clone(),
            backends: r.backends.clone(),
            component: r.component.clone(),
            scope: r.scope.clone(),
            percentile: r.percentile,
            observed_seconds: r.observed_seconds,
            threshold_seconds: r.threshold_seconds,
            tier: tier(r.percentile, r.observed_seconds, r.threshold_seconds),
            evidence: r.top_condition(),
            summary: r.attribution.summary.clone(),
            report: r.clone(),
        }
    }
}

/// The severity tier: the percentile and how far over its threshold it is, in bands of
/// `<2x`, `2-5x`, `5-10x` and `>=10x`. A move between tiers is a material change; wandering
/// within one is not.
pub fn tier(percentile: Percentile, observed: f64, threshold: f64) -> String {
    let ratio = if threshold > 0.0 {
        observed / threshold
    } else if observed > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    let [under_2, under_5, under_10, over] = crate::model::regression::SEVERITY_BANDS;
    let band = if ratio < 2.0 {
        under_2
    } else if ratio < 5.0 {
        under_5
    } else if ratio < 10.0 {
        under_10
    } else {
        over
    };
    format!("{percentile} {band}")
}

/// A change worth telling people about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// The scope now covers more (a dimension dropped or values added).
    ScopeGrew {
        from: String,
        to: String,
    },
    ScopeShrank {
        from: String,
        to: String,
    },
    /// Neither a superset nor a subset.
    ScopeMoved {
        from: String,
        to: String,
    },
    TierChanged {
        from: String,
        to: String,
    },
    EvidenceChanged {
        from: String,
        to: String,
    },
    Resolved,
    Reopened,
    /// No verdict this cycle: no or too few runs.
    Stale,
    /// Data again after a gap, still regressed.
    Returned,
    /// The scope's runs go on but no longer report its backends.
    NoData {
        since: String,
    },
    /// A verdict on the claimed fix (told once per claim and verdict).
    Verdict {
        verdict: crate::model::FixVerdict,
        text: String,
    },
}

impl Change {
    /// Its name in the incident's history (`scope_grew`, `resolved`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Change::ScopeGrew { .. } => "scope_grew",
            Change::ScopeShrank { .. } => "scope_shrank",
            Change::ScopeMoved { .. } => "scope_moved",
            Change::TierChanged { .. } => "tier_changed",
            Change::EvidenceChanged { .. } => "evidence_changed",
            Change::Resolved => "resolved",
            Change::Reopened => "reopened",
            Change::Stale => "stale",
            Change::Returned => "returned",
            Change::NoData { .. } => "no_data",
            Change::Verdict { verdict, .. } => match verdict {
                crate::model::FixVerdict::Fixed => "verdict_fixed",
                crate::model::FixVerdict::FailedFix => "verdict_failed_fix",
                crate::model::FixVerdict::PartiallyFixed => "verdict_partially_fixed",
                crate::model::FixVerdict::Inconclusive => "verdict_inconclusive",
            },
        }
    }

    /// Whether a Jira issue hears of it (scope, tier, resolution, recurrence; not evidence
    /// wandering or data gaps).
    pub(crate) fn for_jira(&self) -> bool {
        matches!(
            self,
            Change::ScopeGrew { .. }
                | Change::ScopeShrank { .. }
                | Change::ScopeMoved { .. }
                | Change::TierChanged { .. }
                | Change::Resolved
                | Change::Reopened
                | Change::NoData { .. }
                | Change::Verdict { .. }
        )
    }
}

/// The material differences between what an incident knew and the cycle's regression. An
/// observed value moving within its tier, or the same evidence again, is not one.
pub(crate) fn material_changes(old: &Snapshot, new: &Snapshot) -> Vec<Change> {
    let mut out = Vec::new();
    if old.scope != new.scope {
        let (from, to) = (old.scope.describe(), new.scope.describe());
        out.push(if new.scope.covers(&old.scope) {
            Change::ScopeGrew { from, to }
        } else if old.scope.covers(&new.scope) {
            Change::ScopeShrank { from, to }
        } else {
            Change::ScopeMoved { from, to }
        });
    }
    // A value back under its threshold is recovery under way (the groups' hysteresis): the
    // resolution will say so; a tier change is material only while it is still over.
    if old.tier != new.tier && new.observed_seconds > new.threshold_seconds {
        out.push(Change::TierChanged {
            from: old.tier.clone(),
            to: new.tier.clone(),
        });
    }
    if !new.evidence.is_empty() && old.evidence != new.evidence {
        out.push(Change::EvidenceChanged {
            from: old.evidence.clone(),
            to: new.evidence.clone(),
        });
    }
    if let (None, Some(since)) = (old.report.no_data_since, new.report.no_data_since) {
        out.push(Change::NoData {
            since: since.format("%b %-d %H:%M UTC").to_string(),
        });
    }
    out
}

/// An incident as stored.
#[derive(Debug, Clone, Serialize)]
pub struct Incident {
    pub id: i64,
    pub fingerprint: String,
    pub state: State,
    #[serde(flatten)]
    pub snapshot: Snapshot,
    pub revision: i64,
    pub opened_at: i64,
    pub updated_at: i64,
    pub last_seen_at: i64,
    pub resolved_at: Option<i64>,
    pub acked_by: Option<String>,
    pub acked_at: Option<i64>,
    pub slack_channel: Option<String>,
    pub slack_ts: Option<String>,
    pub jira_key: Option<String>,
    pub jira_commented_at: Option<i64>,
    /// Each spell of the regression, oldest first; the last is the current one.
    pub episodes: Vec<crate::model::Episode>,
    /// The incident this one was merged into (one problem seen twice).
    pub merged_into: Option<i64>,
    /// How it was resolved last.
    pub resolution: Option<ResolvedAs>,
    /// The fix claimed on its Jira issue, with the verdicts told.
    pub fix: Option<crate::model::FixClaim>,
    /// A level people accepted on purpose.
    pub allowance: Option<crate::model::Allowance>,
    /// What a silence held of its thread and issue, owed until it ends.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<plan::Effect>,
}

impl Incident {
    /// The current episode's onset, if known.
    pub fn onset(&self) -> Option<crate::model::Onset> {
        self.episodes.last().map(|e| e.onset.clone())
    }

    /// A new incident, as first recorded.
    pub fn new(id: i64, fingerprint: &str, snapshot: Snapshot) -> Incident {
        Incident {
            id,
            fingerprint: fingerprint.to_string(),
            state: State::New,
            snapshot,
            revision: 0,
            opened_at: 0,
            updated_at: 0,
            last_seen_at: 0,
            resolved_at: None,
            acked_by: None,
            acked_at: None,
            slack_channel: None,
            slack_ts: None,
            jira_key: None,
            jira_commented_at: None,
            episodes: Vec::new(),
            merged_into: None,
            resolution: None,
            fix: None,
            allowance: None,
            held: Vec::new(),
        }
    }
}

/// Who did something to an incident and when.
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    pub at: i64,
    pub actor: String,
    pub kind: String,
    pub detail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(pairs: &[(&str, &[&str])]) -> Scope {
        let mut s = Scope::new();
        for (d, v) in pairs {
            s.set(
                crate::model::Dimension::parse(d).unwrap(),
                v.iter().copied(),
            );
        }
        s
    }

    fn snap(scope: Scope, observed: f64, evidence: &str) -> Snapshot {
        let mut s = Snapshot::from_report(&crate::synth::example_report(scope, observed, 4.0));
        s.evidence = evidence.into();
        s
    }

    #[test]
    fn tiers_band_the_ratio_to_the_threshold() {
        assert_eq!(tier(Percentile::P50, 5.0, 4.0), "P50 <2x");
        assert_eq!(tier(Percentile::P50, 8.0, 4.0), "P50 2-5x");
        assert_eq!(tier(Percentile::P50, 31.0, 4.0), "P50 5-10x");
        assert_eq!(tier(Percentile::P95, 45.0, 4.0), "P95 >=10x");
        assert_eq!(tier(Percentile::P50, 3.0, 0.0), "P50 >=10x");
    }

    #[test]
    fn only_material_differences_count() {
        let metal = scope(&[("release", &["4.14"]), ("platform", &["metal"])]);
        let metal_ovn = scope(&[
            ("release", &["4.14"]),
            ("platform", &["metal"]),
            ("network", &["ovn"]),
        ]);
        let a = snap(metal_ovn.clone(), 21.0, "image-registry Available=False");
        // the value moves within its tier, the evidence is the same: nothing to tell
        assert!(
            material_changes(
                &a,
                &snap(metal_ovn.clone(), 24.0, "image-registry Available=False")
            )
            .is_empty()
        );
        // evidence missing this cycle is not a change either
        assert!(material_changes(&a, &snap(metal_ovn.clone(), 24.0, "")).is_empty());
        let grown = material_changes(
            &a,
            &snap(metal.clone(), 24.0, "image-registry Available=False"),
        );
        assert!(
            matches!(grown.as_slice(), [Change::ScopeGrew { .. }]),
            "{grown:?}"
        );
        let shrank = material_changes(&snap(metal, 24.0, ""), &snap(metal_ovn.clone(), 24.0, ""));
        assert!(
            matches!(shrank.as_slice(), [Change::ScopeShrank { .. }]),
            "{shrank:?}"
        );
        let worse = material_changes(
            &a,
            &snap(metal_ovn.clone(), 45.0, "image-registry Available=False"),
        );
        assert_eq!(
            worse,
            vec![Change::TierChanged {
                from: "P50 5-10x".into(),
                to: "P50 >=10x".into()
            }]
        );
        let recovering = material_changes(
            &a,
            &snap(metal_ovn.clone(), 1.0, "image-registry Available=False"),
        );
        assert!(
            recovering.is_empty(),
            "back under the threshold, still within hysteresis: {recovering:?}"
        );
        let evidence = material_changes(&a, &snap(metal_ovn, 21.0, "machine-config Degraded=True"));
        assert!(matches!(
            evidence.as_slice(),
            [Change::EvidenceChanged { .. }]
        ));
        assert!(!evidence[0].for_jira());
    }

    #[test]
    fn a_snapshot_stored_before_the_report_was_typed_still_loads() {
        let path = crate::test_fixture("incident_snapshot_v1.json");
        let text = std::fs::read_to_string(path).unwrap();
        let s: Snapshot = serde_json::from_str(&text).unwrap();
        assert_eq!(s.percentile, Percentile::P50);
        assert_eq!(
            s.scope.single(crate::model::Dimension::Platform),
            Some("metal")
        );
        let r = &s.report;
        assert_eq!(r.status, crate::model::Status::New);
        assert_eq!(r.attribution.confidence, crate::model::Confidence::High);
        assert_eq!(r.attribution.conditions[0].reason, "NoReplicasAvailable");
        assert_eq!(r.sample_jobs[0].kind, crate::model::SampleKind::Worst);
        assert_eq!(r.scope, s.scope);
        // Written again, it says the same: every stored field survives, with the same values
        // (fields added since are there besides, with their defaults).
        fn within(old: &serde_json::Value, new: &serde_json::Value, path: &str) {
            match (old, new) {
                (serde_json::Value::Object(o), serde_json::Value::Object(n)) => {
                    for (k, v) in o {
                        within(
                            v,
                            n.get(k).unwrap_or_else(|| panic!("{path}.{k} was lost")),
                            &format!("{path}.{k}"),
                        );
                    }
                }
                _ => assert_eq!(old, new, "{path}"),
            }
        }
        let old: serde_json::Value = serde_json::from_str(&text).unwrap();
        within(&old, &serde_json::to_value(&s).unwrap(), "snapshot");
        assert_eq!(s.report.onset, None);
    }
}
