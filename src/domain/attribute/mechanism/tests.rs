use chrono::TimeZone;

use super::*;
use crate::words::mechanism::WORDING;

fn t(s: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 10, 0, 0).unwrap() + Duration::seconds(s)
}

/// Builds a run's timeline; each span's item is its place in the list.
struct Run(Vec<TimelineSpan>);

impl Run {
    fn new() -> Run {
        Run(Vec::new())
    }

    fn span(mut self, kind: SpanKind, subject: &str, node: &str, from: i64, to: i64) -> Run {
        let at = IntervalRef {
            file: "e2e-events.json".into(),
            item: self.0.len() as u32,
        };
        self.0.push(TimelineSpan {
            kind,
            subject: subject.into(),
            node: node.into(),
            from: t(from),
            to: t(to),
            at,
        });
        self
    }

    fn pod(self, name: &str, node: &str, from: i64, to: i64) -> Run {
        self.span(
            SpanKind::PodReady,
            &format!("openshift-image-registry/{name}"),
            node,
            from,
            to,
        )
    }

    fn drain(self, node: &str, from: i64, to: i64) -> Run {
        self.span(SpanKind::NodeDrain, node, node, from, to)
    }

    fn outage(self, from: i64, to: i64) -> Run {
        self.span(
            SpanKind::Outage,
            "image-registry-new-connections",
            "",
            from,
            to,
        )
        .span(
            SpanKind::Outage,
            "image-registry-reused-connections",
            "",
            from,
            to - 2,
        )
    }

    /// etcd leader changes and VIP moves nowhere near the outages.
    fn decoys(self) -> Run {
        self.span(SpanKind::EtcdLeaderChange, "master-0", "master-1", 300, 300)
            .span(SpanKind::VipMoved, "192.168.111.5", "master-2", 2500, 2500)
            .span(SpanKind::NodeDown, "master-1", "master-1", 200, 400)
    }

    fn done(self, i: usize) -> RunTimeline {
        RunTimeline {
            run: format!("job/{i}"),
            spans: self.0,
        }
    }
}

/// The seed's shape: one registry replica, evicted when its worker is drained; the outage ends
/// when the replacement is ready on another worker.
fn single_replica(i: usize, with_pods: bool) -> RunTimeline {
    let mut r = Run::new()
        .drain("worker-1", 998, 1060)
        .outage(1002, 1030)
        .decoys();
    if with_pods {
        r = r.pod("image-registry-a", "worker-1", 0, 1000).pod(
            "image-registry-b",
            "worker-2",
            1030,
            4000,
        );
    }
    r.done(i)
}

/// Two replicas on different workers: a drain evicts one, the other serves.
fn two_replicas(i: usize) -> RunTimeline {
    Run::new()
        .pod("image-registry-a", "worker-1", 0, 1000)
        .pod("image-registry-c", "worker-2", 0, 4000)
        .drain("worker-1", 998, 1060)
        .pod("image-registry-b", "worker-0", 1025, 4000)
        .decoys()
        .done(i)
}

const BACKENDS: [&str; 2] = [
    "image-registry-new-connections",
    "image-registry-reused-connections",
];

fn case<'a>(
    backends: &'a [String],
    regressed: &'a [RunTimeline],
    healthy: &'a [RunTimeline],
) -> Case<'a> {
    Case {
        family: "image-registry",
        backends,
        probes: &[],
        regressed,
        healthy,
    }
}

#[test]
fn a_lone_replica_evicted_by_a_drain_is_the_mechanism_and_every_clause_names_its_intervals() {
    let backends: Vec<String> = BACKENDS.map(String::from).to_vec();
    let regressed: Vec<RunTimeline> = (0..10).map(|i| single_replica(i, true)).collect();
    let healthy: Vec<RunTimeline> = (0..10).map(two_replicas).collect();
    let m = explain(&case(&backends, &regressed, &healthy), WORDING);
    assert_eq!(m.kind, MechanismKind::SingleReplicaDrained, "{m:#?}");
    assert_eq!(
        (m.runs_explained, m.runs_examined, m.healthy_explained),
        (10, 10, 0)
    );
    assert_eq!(
        (m.replicas_regressed, m.replicas_healthy),
        (Some(1.0), Some(2.0))
    );
    assert!(
        m.summary.contains("one ready replica") && m.summary.contains("drained"),
        "{}",
        m.summary
    );
    let run = &regressed[0];
    let claims: Vec<&MechanismClaim> = m.claims.iter().filter(|c| c.run == run.run).collect();
    assert_eq!(claims.len(), 4, "{claims:#?}");
    for c in &claims {
        assert!(!c.intervals.is_empty(), "{c:?}");
        for r in &c.intervals {
            let span = &run.spans[r.item as usize];
            // the clause speaks of what its interval holds
            let named = span.subject.rsplit('/').next().unwrap();
            assert!(
                c.text.contains(named)
                    || (span.kind == SpanKind::Outage && c.text.contains("image-registry")),
                "{} does not speak of {span:?}",
                c.text
            );
        }
    }
}

#[test]
fn without_pod_intervals_the_mechanism_is_unknown_and_says_why() {
    let backends: Vec<String> = BACKENDS.map(String::from).to_vec();
    let regressed: Vec<RunTimeline> = (0..10).map(|i| single_replica(i, false)).collect();
    let healthy: Vec<RunTimeline> = (0..10).map(two_replicas).collect();
    let m = explain(&case(&backends, &regressed, &healthy), WORDING);
    assert_eq!(
        (m.kind, m.unknown_because),
        (MechanismKind::Unknown, Some(UnknownBecause::NoPodIntervals))
    );
    assert!(m.claims.is_empty());
    assert!(
        m.summary
            .contains("no pod intervals of openshift-image-registry"),
        "{}",
        m.summary
    );
}

#[test]
fn decoys_that_never_line_up_explain_nothing() {
    let backends: Vec<String> = BACKENDS.map(String::from).to_vec();
    // two replicas on different workers, and an outage at a time nothing else happens
    let regressed: Vec<RunTimeline> = (0..10)
        .map(|i| {
            Run::new()
                .pod("image-registry-a", "worker-1", 0, 4000)
                .pod("image-registry-c", "worker-2", 0, 4000)
                .outage(1800, 1830)
                .decoys()
                .done(i)
        })
        .collect();
    let m = explain(&case(&backends, &regressed, &[]), WORDING);
    assert_eq!(
        (m.kind, m.unknown_because),
        (MechanismKind::Unknown, Some(UnknownBecause::WeakLift)),
        "{m:#?}"
    );
}

#[test]
fn an_outage_that_begins_as_the_vip_moves_is_put_down_to_the_vip() {
    let backends: Vec<String> = BACKENDS.map(String::from).to_vec();
    let regressed: Vec<RunTimeline> = (0..10)
        .map(|i| {
            let r = Run::new()
                .pod("image-registry-a", "worker-1", 0, 4000)
                .pod("image-registry-c", "worker-2", 0, 4000)
                .decoys()
                .span(SpanKind::VipMoved, "192.168.111.5", "master-0", 1499, 1499)
                .outage(1500, 1520);
            // one run in ten has an outage nothing explains
            if i == 9 { r.outage(3000, 3060) } else { r }.done(i)
        })
        .collect();
    let healthy: Vec<RunTimeline> = (0..10).map(two_replicas).collect();
    let m = explain(&case(&backends, &regressed, &healthy), WORDING);
    assert_eq!(
        (m.kind, m.runs_explained, m.runs_examined),
        (MechanismKind::VipMoved, 9, 10),
        "{m:#?}"
    );
}

#[test]
fn a_mechanism_healthy_runs_show_as_often_has_no_lift() {
    let backends: Vec<String> = BACKENDS.map(String::from).to_vec();
    let regressed: Vec<RunTimeline> = (0..10).map(|i| single_replica(i, true)).collect();
    // the healthy runs had the same lone replica and the same outages: it is not what changed
    let healthy: Vec<RunTimeline> = (0..10).map(|i| single_replica(i, true)).collect();
    let m = explain(&case(&backends, &regressed, &healthy), WORDING);
    assert_eq!(
        (m.kind, m.unknown_because),
        (MechanismKind::Unknown, Some(UnknownBecause::WeakLift)),
        "{m:#?}"
    );
    assert_eq!(
        m.others.first(),
        Some(&(MechanismKind::SingleReplicaDrained, 10))
    );
}

#[test]
fn namespaces_follow_the_longest_prefix() {
    assert_eq!(
        namespace_of("image-registry-new-connections"),
        Some("openshift-image-registry")
    );
    assert_eq!(
        namespace_of("cache-kube-api-new-connections"),
        Some("openshift-kube-apiserver")
    );
    assert_eq!(
        namespace_of("kube-api-reused-connections"),
        Some("openshift-kube-apiserver")
    );
    assert_eq!(namespace_of("gcp-network-liveness-new-connections"), None);
}

/// A CI probe that is down for whole runs, healthy or not, cannot reach its target from these
/// clusters: that it was down with an outage says nothing.
#[test]
fn a_probe_down_in_every_run_explains_nothing() {
    let backends: Vec<String> = BACKENDS.map(String::from).to_vec();
    let probe = "gcp-network-liveness-new-connections";
    let broken = |r: Run| r.span(SpanKind::Outage, probe, "", 0, 7000);
    let regressed: Vec<RunTimeline> = (0..10)
        .map(|i| {
            broken(
                Run::new()
                    .drain("worker-1", 998, 1060)
                    .outage(1002, 1030)
                    .decoys(),
            )
            .done(i)
        })
        .collect();
    let healthy: Vec<RunTimeline> = (0..10)
        .map(|i| broken(Run::new().drain("worker-1", 998, 1060).decoys()).done(i))
        .collect();
    let probes = vec![probe.to_string()];
    let case = Case {
        family: "image-registry",
        backends: &backends,
        probes: &probes,
        regressed: &regressed,
        healthy: &healthy,
    };
    let m = explain(&case, WORDING);
    assert_eq!(
        (m.kind, m.unknown_because),
        (MechanismKind::Unknown, Some(UnknownBecause::NoPodIntervals)),
        "{m:#?}"
    );
    // a probe that works in healthy runs and is down with every outage is the CI's network
    let healthy: Vec<RunTimeline> = (0..10)
        .map(|i| Run::new().drain("worker-1", 998, 1060).decoys().done(i))
        .collect();
    let regressed: Vec<RunTimeline> = (0..10)
        .map(|i| {
            Run::new()
                .outage(1002, 1030)
                .span(SpanKind::Outage, probe, "", 995, 1040)
                .decoys()
                .done(i)
        })
        .collect();
    let case = Case {
        healthy: &healthy,
        regressed: &regressed,
        ..case
    };
    assert_eq!(explain(&case, WORDING).kind, MechanismKind::CiNetwork);
}
