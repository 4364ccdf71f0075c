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

pub mod plan;
pub mod silence;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::cycle::RegressionReport;

/// Dimension → the values affected; a dimension left out covers all its values.
pub type Scope = BTreeMap<String, Vec<String>>;

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
    pub const ALL: [State; 5] = [State::New, State::Ongoing, State::Stale, State::Resolved, State::Reopened];

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

/// What an incident remembers of its latest regression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub family: String,
    pub release: String,
    pub backends: Vec<String>,
    pub component: String,
    pub scope: Scope,
    pub percentile: String,
    pub observed_seconds: f64,
    pub threshold_seconds: f64,
    /// See [`tier`].
    pub tier: String,
    /// The strongest correlated condition, `operator Condition=Status`, or empty.
    pub evidence: String,
    pub summary: String,
    /// The whole regression report, for rendering messages and `explain`.
    pub report: serde_json::Value,
}

impl Snapshot {
    pub fn from_report(r: &RegressionReport) -> Snapshot {
        Snapshot {
            family: r.family.clone(),
            release: r.release.clone(),
            backends: r.backends.clone(),
            component: r.component.clone(),
            scope: scope_of(&r.scope),
            percentile: r.percentile.to_string(),
            observed_seconds: r.observed_seconds,
            threshold_seconds: r.threshold_seconds,
            tier: tier(&r.percentile.to_string(), r.observed_seconds, r.threshold_seconds),
            evidence: r
                .attribution
                .conditions
                .first()
                .map(|c| format!("{} {}={}", c.operator, c.condition, c.status))
                .unwrap_or_default(),
            summary: r.attribution.summary.clone(),
            report: serde_json::to_value(r).unwrap_or_default(),
        }
    }
}

/// A report's scope (`"metal"` or `["ovn","sdn"]` per dimension) as a [`Scope`].
pub fn scope_of(scope: &BTreeMap<String, serde_json::Value>) -> Scope {
    scope
        .iter()
        .filter_map(|(k, v)| {
            let values: Vec<String> = match v {
                serde_json::Value::String(s) => vec![s.clone()],
                serde_json::Value::Array(a) => {
                    a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect()
                }
                _ => return None,
            };
            let mut values = values;
            values.sort();
            values.dedup();
            Some((k.clone(), values))
        })
        .collect()
}

/// Two scopes overlap when, in every dimension both name, they share a value.
pub fn scopes_overlap(a: &Scope, b: &Scope) -> bool {
    a.iter().all(|(d, va)| b.get(d).is_none_or(|vb| va.iter().any(|x| vb.contains(x))))
}

/// `platform=metal network=ovn,sdn` (release left out: it is said separately).
pub fn describe_scope(scope: &Scope) -> String {
    let parts: Vec<String> = scope
        .iter()
        .filter(|(d, _)| d.as_str() != "release")
        .map(|(d, v)| format!("{d}={}", v.join(",")))
        .collect();
    if parts.is_empty() { "every variant".into() } else { parts.join(" ") }
}

/// The severity tier: the percentile and how far over its threshold it is, in bands of
/// `<2x`, `2-5x`, `5-10x` and `>=10x`. A move between tiers is a material change; wandering
/// within one is not.
pub fn tier(percentile: &str, observed: f64, threshold: f64) -> String {
    let ratio = if threshold > 0.0 {
        observed / threshold
    } else if observed > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    let band = if ratio < 2.0 {
        "<2x"
    } else if ratio < 5.0 {
        "2-5x"
    } else if ratio < 10.0 {
        "5-10x"
    } else {
        ">=10x"
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
}

impl Change {
    /// One line for a thread reply or a comment.
    pub fn describe(&self) -> String {
        match self {
            Change::ScopeGrew { from, to } => format!("scope grew: {from} → {to}"),
            Change::ScopeShrank { from, to } => format!("scope shrank: {from} → {to}"),
            Change::ScopeMoved { from, to } => format!("scope changed: {from} → {to}"),
            Change::TierChanged { from, to } => format!("severity changed: {from} → {to}"),
            Change::EvidenceChanged { from, to } => {
                let from = if from.is_empty() { "none" } else { from };
                format!("strongest evidence changed: {from} → {to}")
            }
            Change::Resolved => "resolved: back within its threshold".into(),
            Change::Reopened => "regressed again after it was resolved".into(),
            Change::Stale => "stale: not enough runs this cycle to judge (a data gap is not a fix)".into(),
            Change::Returned => "runs again after a data gap; still regressed".into(),
        }
    }

    /// Whether a Jira issue hears of it (scope, tier, resolution, recurrence; not evidence
    /// wandering or data gaps).
    pub fn for_jira(&self) -> bool {
        matches!(
            self,
            Change::ScopeGrew { .. }
                | Change::ScopeShrank { .. }
                | Change::ScopeMoved { .. }
                | Change::TierChanged { .. }
                | Change::Resolved
                | Change::Reopened
        )
    }
}

/// `a` covers `b`: every value `b` affects, `a` affects too.
fn covers(a: &Scope, b: &Scope) -> bool {
    a.iter().all(|(d, va)| b.get(d).is_some_and(|vb| vb.iter().all(|x| va.contains(x))))
}

/// The material differences between what an incident knew and the cycle's regression. An
/// observed value moving within its tier, or the same evidence again, is not one.
pub fn material_changes(old: &Snapshot, new: &Snapshot) -> Vec<Change> {
    let mut out = Vec::new();
    if old.scope != new.scope {
        let (from, to) = (describe_scope(&old.scope), describe_scope(&new.scope));
        out.push(if covers(&new.scope, &old.scope) {
            Change::ScopeGrew { from, to }
        } else if covers(&old.scope, &new.scope) {
            Change::ScopeShrank { from, to }
        } else {
            Change::ScopeMoved { from, to }
        });
    }
    // A value back under its threshold is recovery under way (the groups' hysteresis): the
    // resolution will say so; a tier change is material only while it is still over.
    if old.tier != new.tier && new.observed_seconds > new.threshold_seconds {
        out.push(Change::TierChanged { from: old.tier.clone(), to: new.tier.clone() });
    }
    if !new.evidence.is_empty() && old.evidence != new.evidence {
        out.push(Change::EvidenceChanged { from: old.evidence.clone(), to: new.evidence.clone() });
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
}

impl Incident {
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

/// `90s`, `15m`, `24h`, `7d`, `2w` → seconds.
pub fn parse_span(text: &str) -> Option<i64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = text.split_at(split);
    let n: i64 = n.parse().ok()?;
    let unit = match unit {
        "s" => 1,
        "m" | "min" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return None,
    };
    (n > 0).then(|| n.checked_mul(unit)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(pairs: &[(&str, &[&str])]) -> Scope {
        pairs.iter().map(|(d, v)| (d.to_string(), v.iter().map(|s| s.to_string()).collect())).collect()
    }

    fn snap(scope: Scope, observed: f64, evidence: &str) -> Snapshot {
        Snapshot {
            family: "image-registry".into(),
            release: "4.14".into(),
            backends: vec!["image-registry-new-connections".into()],
            component: "Image Registry".into(),
            scope,
            percentile: "P50".into(),
            observed_seconds: observed,
            threshold_seconds: 4.0,
            tier: tier("P50", observed, 4.0),
            evidence: evidence.into(),
            summary: String::new(),
            report: serde_json::Value::Null,
        }
    }

    #[test]
    fn overlap_treats_a_missing_dimension_as_all_values() {
        let metal = scope(&[("release", &["4.14"]), ("platform", &["metal"])]);
        let metal_ovn = scope(&[("release", &["4.14"]), ("platform", &["metal"]), ("network", &["ovn"])]);
        let aws = scope(&[("release", &["4.14"]), ("platform", &["aws"])]);
        let metal_or_aws = scope(&[("platform", &["aws", "metal"])]);
        assert!(scopes_overlap(&metal, &metal_ovn));
        assert!(scopes_overlap(&metal_ovn, &metal));
        assert!(!scopes_overlap(&metal, &aws));
        assert!(scopes_overlap(&metal_or_aws, &aws));
        assert!(scopes_overlap(&Scope::new(), &aws));
    }

    #[test]
    fn tiers_band_the_ratio_to_the_threshold() {
        assert_eq!(tier("P50", 5.0, 4.0), "P50 <2x");
        assert_eq!(tier("P50", 8.0, 4.0), "P50 2-5x");
        assert_eq!(tier("P50", 31.0, 4.0), "P50 5-10x");
        assert_eq!(tier("P95", 45.0, 4.0), "P95 >=10x");
        assert_eq!(tier("P50", 3.0, 0.0), "P50 >=10x");
    }

    #[test]
    fn only_material_differences_count() {
        let metal = scope(&[("release", &["4.14"]), ("platform", &["metal"])]);
        let metal_ovn = scope(&[("release", &["4.14"]), ("platform", &["metal"]), ("network", &["ovn"])]);
        let a = snap(metal_ovn.clone(), 21.0, "image-registry Available=False");
        // the value moves within its tier, the evidence is the same: nothing to tell
        assert!(
            material_changes(&a, &snap(metal_ovn.clone(), 24.0, "image-registry Available=False")).is_empty()
        );
        // evidence missing this cycle is not a change either
        assert!(material_changes(&a, &snap(metal_ovn.clone(), 24.0, "")).is_empty());
        let grown = material_changes(&a, &snap(metal.clone(), 24.0, "image-registry Available=False"));
        assert!(matches!(grown.as_slice(), [Change::ScopeGrew { .. }]), "{grown:?}");
        let shrank = material_changes(&snap(metal, 24.0, ""), &snap(metal_ovn.clone(), 24.0, ""));
        assert!(matches!(shrank.as_slice(), [Change::ScopeShrank { .. }]), "{shrank:?}");
        let worse = material_changes(&a, &snap(metal_ovn.clone(), 45.0, "image-registry Available=False"));
        assert_eq!(worse, vec![Change::TierChanged { from: "P50 5-10x".into(), to: "P50 >=10x".into() }]);
        let recovering =
            material_changes(&a, &snap(metal_ovn.clone(), 1.0, "image-registry Available=False"));
        assert!(recovering.is_empty(), "back under the threshold, still within hysteresis: {recovering:?}");
        let evidence = material_changes(&a, &snap(metal_ovn, 21.0, "machine-config Degraded=True"));
        assert!(matches!(evidence.as_slice(), [Change::EvidenceChanged { .. }]));
        assert!(!evidence[0].for_jira());
    }

    #[test]
    fn spans() {
        assert_eq!(parse_span("24h"), Some(86_400));
        assert_eq!(parse_span("7d"), Some(604_800));
        assert_eq!(parse_span("90m"), Some(5_400));
        assert_eq!(parse_span("2w"), Some(1_209_600));
        assert_eq!(parse_span("0h"), None);
        assert_eq!(parse_span("h"), None);
        assert_eq!(parse_span("3y"), None);
    }
}
