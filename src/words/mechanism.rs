//! A mechanism in words: each clause of a sample run's claim, and the mechanism in one
//! sentence. The domain finds the mechanism and its clauses as typed values
//! ([`Clause`]); the application hands it [`WORDING`] to say them.

use chrono::{DateTime, Utc};

use crate::domain::attribute::mechanism::{Clause, Wording, namespace_of};
use crate::model::{Mechanism, MechanismKind, UnknownBecause};

/// How the domain's mechanisms are said.
pub const WORDING: Wording = Wording { clause, summary };

/// One clause of a claim, with its times in UTC.
pub fn clause(c: &Clause) -> String {
    match c {
        Clause::Replicas { pods, family, node } => match pods.as_slice() {
            [one] => format!("{one} was the only ready replica of {family}, on {node}"),
            _ => format!(
                "all {} ready replicas of {family} ({}) ran on {node}",
                pods.len(),
                pods.join(" and ")
            ),
        },
        Clause::NodeOut {
            node,
            drained,
            from,
            to,
        } => format!(
            "{node} was {} from {} to {}",
            if *drained { "drained" } else { "down" },
            hms(*from),
            hms(*to)
        ),
        Clause::Outage { family, from, to } => format!(
            "{family} was unreachable from {} to {} ({} s)",
            hms(*from),
            hms(*to),
            (*to - *from).num_seconds().max(1)
        ),
        Clause::Replacement { pod, node, at } => format!(
            "the replacement {pod} became ready on {} at {}, as the outage ended",
            or_unnamed(node),
            hms(*at)
        ),
        Clause::VipTaken { node, vip, at } => {
            format!("{} took the VIP {vip} at {}", or_unnamed(node), hms(*at))
        }
        Clause::EtcdLeader { node, at } => {
            format!(
                "etcd elected {} its leader at {}",
                or_unnamed(node),
                hms(*at)
            )
        }
        Clause::ProbeDown { probe, from, to } => format!(
            "the CI's probe {probe} was down from {} to {}",
            hms(*from),
            hms(*to)
        ),
    }
}

fn hms(t: DateTime<Utc>) -> String {
    t.format("%H:%M:%S").to_string()
}

fn or_unnamed(node: &str) -> &str {
    if node.is_empty() { "a node" } else { node }
}

/// The mechanism in one sentence.
pub fn summary(m: &Mechanism, family: &str) -> String {
    let (e, n) = (m.runs_explained, m.runs_examined);
    let healthy_replicas = m.replicas_healthy.map_or(String::new(), |h| {
        format!(
            " (healthy runs of the same jobs: {})",
            if h.fract() == 0.0 {
                format!("{h:.0}")
            } else {
                format!("{h:.1}")
            }
        )
    });
    match m.kind {
        MechanismKind::SingleReplicaDrained => format!(
            "In {e} of {n} sample runs {family} had one ready replica{healthy_replicas}; each time the upgrade drained \
             the node it ran on, the drain evicted it and {family} was unreachable until the replacement became ready."
        ),
        MechanismKind::ReplicasOnOneNode => format!(
            "In {e} of {n} sample runs every ready replica of {family} ran on one node; when the upgrade drained that \
             node, {family} was unreachable until a replacement became ready elsewhere."
        ),
        MechanismKind::VipMoved => {
            format!(
                "In {e} of {n} sample runs the outage of {family} began as a node took the VIP."
            )
        }
        MechanismKind::EtcdLeaderChange => {
            format!(
                "In {e} of {n} sample runs the outage of {family} began as etcd elected a new leader."
            )
        }
        MechanismKind::CiNetwork => format!(
            "In {e} of {n} sample runs the CI's own network probe was down with {family}: the test cluster was \
             unreachable from CI, not necessarily broken."
        ),
        MechanismKind::Unknown => unknown(m, family),
    }
}

/// Why no mechanism is known, and the best candidate there was.
fn unknown(m: &Mechanism, family: &str) -> String {
    let n = m.runs_examined;
    let best = m.others.first().map_or(String::new(), |(k, runs)| {
        format!(
            " The best candidate, {}, explains {runs} of {n} sample runs.",
            k.as_str()
        )
    });
    match m.unknown_because {
        Some(UnknownBecause::NoPodIntervals) => format!(
            "No mechanism is known: the sample runs hold no pod intervals of {}, so the replicas of {family} \
             could not be followed.{best}",
            namespace_of(family).unwrap_or("its namespace")
        ),
        Some(UnknownBecause::NoTimelines) => {
            "No mechanism is known: no sample run had a timeline of its outages.".to_string()
        }
        _ => format!(
            "No mechanism is known: nothing in the timelines lines up with enough of the outages, or \
             healthy runs show it as often.{best}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 20, h, m, s).unwrap()
    }

    #[test]
    fn each_clause_names_what_its_interval_holds() {
        let lone = Clause::Replicas {
            pods: vec!["image-registry-a".into()],
            family: "image-registry".into(),
            node: "worker-1".into(),
        };
        assert_eq!(
            clause(&lone),
            "image-registry-a was the only ready replica of image-registry, on worker-1"
        );
        let two = Clause::Replicas {
            pods: vec!["image-registry-a".into(), "image-registry-b".into()],
            family: "image-registry".into(),
            node: "worker-1".into(),
        };
        assert_eq!(
            clause(&two),
            "all 2 ready replicas of image-registry (image-registry-a and image-registry-b) ran on worker-1"
        );
        let out = Clause::NodeOut {
            node: "worker-1".into(),
            drained: true,
            from: at(10, 16, 38),
            to: at(10, 17, 40),
        };
        assert_eq!(
            clause(&out),
            "worker-1 was drained from 10:16:38 to 10:17:40"
        );
        let outage = Clause::Outage {
            family: "image-registry".into(),
            from: at(10, 16, 42),
            to: at(10, 17, 10),
        };
        assert_eq!(
            clause(&outage),
            "image-registry was unreachable from 10:16:42 to 10:17:10 (28 s)"
        );
        let vip = Clause::VipTaken {
            node: String::new(),
            vip: "192.168.111.5".into(),
            at: at(10, 0, 0),
        };
        assert_eq!(
            clause(&vip),
            "a node took the VIP 192.168.111.5 at 10:00:00"
        );
    }

    fn mechanism(kind: MechanismKind, because: Option<UnknownBecause>) -> Mechanism {
        Mechanism {
            unknown_because: because,
            ..crate::synth::example_mechanism(kind)
        }
    }

    #[test]
    fn the_summary_says_the_mechanism_and_why_none_is_known() {
        let lone = summary(
            &mechanism(MechanismKind::SingleReplicaDrained, None),
            "image-registry",
        );
        assert!(
            lone.starts_with(
                "In 9 of 10 sample runs image-registry had one ready replica (healthy runs of the same jobs: 2)"
            ) && lone.contains("drained"),
            "{lone}"
        );
        let unknown = summary(
            &mechanism(MechanismKind::Unknown, Some(UnknownBecause::NoPodIntervals)),
            "image-registry",
        );
        assert!(
            unknown.contains("no pod intervals of openshift-image-registry"),
            "{unknown}"
        );
    }
}
