//! The mechanism behind a regression's outages, read from the sample runs' own timelines. Pure.
//!
//! Each outage of the regressed backend is lined up with what happened around it: which of
//! the backend's pods were ready and where they ran, which node was drained or down, whether a
//! node took the VIP, whether etcd elected a new leader, whether the CI's own network probe was
//! down. Each candidate mechanism is a test of one outage; a run is explained by a candidate
//! when the outages it explains hold at least half of the run's outage seconds. The winner is
//! the candidate that explains the most sample runs, if it explains at least half of them and
//! clearly more often than in the healthy runs of the same jobs (its lift); otherwise the
//! mechanism is `unknown`, saying whether the pod intervals were missing or the lift weak.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};

use crate::model::{
    IntervalRef, Mechanism, MechanismClaim, MechanismKind, SpanKind, TimelineSpan, UnknownBecause,
};

/// How far apart two happenings may be and still be the same moment (collection and probe
/// intervals are a few seconds apart; a drain's eviction takes a few more).
const SLACK: i64 = 30;
/// The least share of sample runs a mechanism must explain.
const MIN_EXPLAINED: f64 = 0.5;
/// The least lift over the healthy runs (explained share less the healthy runs' share).
const MIN_LIFT: f64 = 0.3;
/// Claims kept: the runs shown with their intervals.
const MAX_CLAIMS: usize = 12;

/// The namespace whose pods serve a backend, by the backend's family.
pub fn namespace_of(backend: &str) -> Option<&'static str> {
    const TABLE: [(&str, &str); 9] = [
        ("image-registry", "openshift-image-registry"),
        ("console", "openshift-console"),
        ("ingress", "openshift-ingress"),
        ("kube-api", "openshift-kube-apiserver"),
        ("openshift-api", "openshift-apiserver"),
        ("cache-openshift-api", "openshift-apiserver"),
        ("oauth-api", "openshift-oauth-apiserver"),
        ("cache-oauth-api", "openshift-oauth-apiserver"),
        ("cache-kube-api", "openshift-kube-apiserver"),
    ];
    TABLE
        .iter()
        .filter(|(prefix, _)| backend.starts_with(prefix))
        .max_by_key(|(p, _)| p.len())
        .map(|(_, ns)| *ns)
}

/// One sample run's timeline.
#[derive(Debug, Clone)]
pub struct RunTimeline {
    /// `job/build id`.
    pub run: String,
    pub spans: Vec<TimelineSpan>,
}

/// What a mechanism is judged on: the regressed backends (one family), the disrupted sample
/// runs and healthy runs of the same jobs.
pub struct Case<'a> {
    pub family: &'a str,
    pub backends: &'a [String],
    /// Backends that are the CI's own network probes (their outages are not the product's).
    pub probes: &'a [String],
    pub regressed: &'a [RunTimeline],
    pub healthy: &'a [RunTimeline],
}

/// An outage of the family: new and reused connections down together count once.
#[derive(Debug, Clone)]
struct Window {
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    refs: Vec<IntervalRef>,
}

impl Window {
    fn seconds(&self) -> i64 {
        (self.to - self.from).num_seconds().max(1)
    }
}

/// One clause of what a run shows, as typed values (`words::mechanism` says it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clause {
    /// The pods lost as the outage began were the family's only ready replicas, on `node`.
    Replicas {
        pods: Vec<String>,
        family: String,
        node: String,
    },
    /// The node was drained (or down) from `from` to `to`.
    NodeOut {
        node: String,
        drained: bool,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    },
    /// The family was unreachable from `from` to `to`.
    Outage {
        family: String,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    },
    /// A replacement pod became ready as the outage ended (`node` empty when unnamed).
    Replacement {
        pod: String,
        node: String,
        at: DateTime<Utc>,
    },
    /// A node took the VIP as the outage began.
    VipTaken {
        node: String,
        vip: String,
        at: DateTime<Utc>,
    },
    /// etcd elected a new leader as the outage began.
    EtcdLeader { node: String, at: DateTime<Utc> },
    /// The CI's own network probe was down with the outage.
    ProbeDown {
        probe: String,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    },
}

/// How mechanisms are said: the application hands over `words::mechanism::WORDING`, so the
/// domain finds the mechanism and never words it.
#[derive(Debug, Clone, Copy)]
pub struct Wording {
    /// One clause of a claim.
    pub clause: fn(&Clause) -> String,
    /// The mechanism in one sentence, given its family.
    pub summary: fn(&Mechanism, &str) -> String,
}

/// What one candidate says about one outage: its clauses, each with its intervals.
type Clauses = Vec<(Clause, Vec<IntervalRef>)>;

/// One run read for a case.
struct Reading<'r> {
    run: &'r RunTimeline,
    windows: Vec<Window>,
    /// The backend's pods while ready: (pod, node, from, to, ref).
    pods: Vec<&'r TimelineSpan>,
}

impl<'r> Reading<'r> {
    fn new(run: &'r RunTimeline, case: &Case<'_>) -> Reading<'r> {
        let ns = namespace_of(case.family).map(|n| format!("{n}/"));
        let mut pods: Vec<&TimelineSpan> = run
            .spans
            .iter()
            .filter(|s| {
                s.kind == SpanKind::PodReady
                    && ns.as_deref().is_some_and(|n| s.subject.starts_with(n))
            })
            .collect();
        // a pod's containers each say when they were ready: one span per pod and stretch
        pods.sort_by(|a, b| (&a.subject, a.from).cmp(&(&b.subject, b.from)));
        pods.dedup_by(|b, a| a.subject == b.subject && b.from <= a.to && b.to <= a.to);
        let mut outages: Vec<&TimelineSpan> = run
            .spans
            .iter()
            .filter(|s| s.kind == SpanKind::Outage && case.backends.contains(&s.subject))
            .collect();
        outages.sort_by_key(|s| (s.from, s.to));
        let mut windows: Vec<Window> = Vec::new();
        for o in outages {
            match windows.last_mut() {
                Some(w) if o.from <= w.to + Duration::seconds(2) => {
                    w.to = w.to.max(o.to);
                    w.refs.push(o.at.clone());
                }
                _ => windows.push(Window {
                    from: o.from,
                    to: o.to,
                    refs: vec![o.at.clone()],
                }),
            }
        }
        Reading { run, windows, pods }
    }

    fn spans(&self, kind: SpanKind) -> impl Iterator<Item = &'r TimelineSpan> + '_ {
        self.run.spans.iter().filter(move |s| s.kind == kind)
    }

    /// The node's drain or time down around `at`.
    fn node_out(&self, node: &str, at: DateTime<Utc>) -> Option<&'r TimelineSpan> {
        let near = Duration::seconds(SLACK);
        self.spans(SpanKind::NodeDrain)
            .chain(self.spans(SpanKind::NodeDown))
            .filter(|s| {
                s.subject == node && s.from - Duration::seconds(5) <= at && at <= s.to + near
            })
            .min_by_key(|s| (s.kind != SpanKind::NodeDrain, s.from))
    }

    /// The pods that stopped being ready as the outage began, and whether any other pod stayed
    /// ready through its start.
    fn lost_at(&self, w: &Window) -> (Vec<&'r TimelineSpan>, bool) {
        let near = Duration::seconds(SLACK);
        let lost: Vec<&TimelineSpan> = self
            .pods
            .iter()
            .copied()
            .filter(|p| p.from < w.from - near && (p.to - w.from).num_seconds().abs() <= SLACK)
            .collect();
        let others = self.pods.iter().any(|p| {
            !lost
                .iter()
                .any(|l| l.subject == p.subject && l.from == p.from)
                && p.from <= w.from
                && p.to > w.from + Duration::seconds(5)
        });
        (lost, others)
    }

    /// A pod that became ready as the outage ended.
    fn replacement(&self, w: &Window, lost: &[&TimelineSpan]) -> Option<&'r TimelineSpan> {
        self.pods
            .iter()
            .copied()
            .filter(|p| !lost.iter().any(|l| l.subject == p.subject))
            .filter(|p| (p.from - w.to).num_seconds().abs() <= SLACK)
            .min_by_key(|p| (p.from - w.to).num_seconds().abs())
    }

    /// The backend's ready replicas when a node hosting one of them was first drained.
    fn replicas_at_drain(&self) -> Option<usize> {
        let mut drains: Vec<&TimelineSpan> = self.spans(SpanKind::NodeDrain).collect();
        drains.sort_by_key(|d| d.from);
        drains.into_iter().find_map(|d| {
            let ready: Vec<&&TimelineSpan> = self
                .pods
                .iter()
                .filter(|p| p.from <= d.from && p.to > d.from)
                .collect();
            ready
                .iter()
                .any(|p| p.node == d.subject)
                .then_some(ready.len())
        })
    }

    fn explains(&self, kind: MechanismKind, w: &Window, case: &Case<'_>) -> Option<Clauses> {
        match kind {
            MechanismKind::SingleReplicaDrained | MechanismKind::ReplicasOnOneNode => {
                self.replicas_explain(kind, w, case.family)
            }
            MechanismKind::VipMoved => {
                let vip = self
                    .spans(SpanKind::VipMoved)
                    .find(|v| began_with(v.from, w))?;
                let clause = Clause::VipTaken {
                    node: vip.node.clone(),
                    vip: vip.subject.clone(),
                    at: vip.from,
                };
                Some(vec![
                    outage_clause(case.family, w),
                    (clause, vec![vip.at.clone()]),
                ])
            }
            MechanismKind::EtcdLeaderChange => {
                let change = self
                    .spans(SpanKind::EtcdLeaderChange)
                    .find(|e| began_with(e.from, w))?;
                let clause = Clause::EtcdLeader {
                    node: change.node.clone(),
                    at: change.from,
                };
                Some(vec![
                    outage_clause(case.family, w),
                    (clause, vec![change.at.clone()]),
                ])
            }
            MechanismKind::CiNetwork => {
                let near = Duration::seconds(10);
                let probe = self.spans(SpanKind::Outage).find(|o| {
                    case.probes.contains(&o.subject)
                        && o.from <= w.to + near
                        && o.to + near >= w.from
                })?;
                let clause = Clause::ProbeDown {
                    probe: probe.subject.clone(),
                    from: probe.from,
                    to: probe.to,
                };
                Some(vec![
                    outage_clause(case.family, w),
                    (clause, vec![probe.at.clone()]),
                ])
            }
            MechanismKind::Unknown => None,
        }
    }

    fn replicas_explain(&self, kind: MechanismKind, w: &Window, family: &str) -> Option<Clauses> {
        let (lost, others_ready) = self.lost_at(w);
        let node = &lost.first()?.node;
        let fits = match kind {
            MechanismKind::SingleReplicaDrained => lost.len() == 1,
            _ => lost.len() >= 2 && lost.iter().all(|p| p.node == *node),
        };

        if !fits || others_ready || node.is_empty() {
            return None;
        }

        let out = self.node_out(node, lost[0].to)?;
        let replacement = self.replacement(w, &lost)?;
        Some(vec![
            (
                Clause::Replicas {
                    pods: lost
                        .iter()
                        .map(|p| pod_name(&p.subject).to_string())
                        .collect(),
                    family: family.to_string(),
                    node: node.clone(),
                },
                lost.iter().map(|p| p.at.clone()).collect(),
            ),
            (
                Clause::NodeOut {
                    node: node.clone(),
                    drained: out.kind == SpanKind::NodeDrain,
                    from: out.from,
                    to: out.to,
                },
                vec![out.at.clone()],
            ),
            outage_clause(family, w),
            (
                Clause::Replacement {
                    pod: pod_name(&replacement.subject).to_string(),
                    node: replacement.node.clone(),
                    at: replacement.from,
                },
                vec![replacement.at.clone()],
            ),
        ])
    }

    /// Whether `kind` explains at least half of the run's outage seconds, with the clauses of
    /// the longest outage it explains.
    fn explained_by(&self, kind: MechanismKind, case: &Case<'_>) -> Option<Clauses> {
        let total: i64 = self.windows.iter().map(Window::seconds).sum();
        let mut covered = 0;
        let mut best: Option<(i64, Clauses)> = None;
        for w in &self.windows {
            if let Some(clauses) = self.explains(kind, w, case) {
                covered += w.seconds();
                if best.as_ref().is_none_or(|(s, _)| w.seconds() > *s) {
                    best = Some((w.seconds(), clauses));
                }
            }
        }
        (total > 0 && covered * 2 >= total).then_some(best?.1)
    }
}

fn began_with(t: DateTime<Utc>, w: &Window) -> bool {
    t >= w.from - Duration::seconds(SLACK) && t <= w.from + Duration::seconds(5)
}

fn outage_clause(family: &str, w: &Window) -> (Clause, Vec<IntervalRef>) {
    (
        Clause::Outage {
            family: family.to_string(),
            from: w.from,
            to: w.to,
        },
        w.refs.clone(),
    )
}

fn pod_name(subject: &str) -> &str {
    subject.rsplit_once('/').map_or(subject, |(_, p)| p)
}

fn median(mut xs: Vec<usize>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_unstable();
    let n = xs.len();
    Some(if n % 2 == 1 {
        xs[n / 2] as f64
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) as f64 / 2.0
    })
}

/// The mechanism of `case`, or None when no sample run was read at all.
pub fn explain(case: &Case<'_>, wording: Wording) -> Mechanism {
    let working = working_probes(case);
    let case = &Case {
        probes: &working,
        ..*case
    };
    let regressed: Vec<Reading<'_>> = case
        .regressed
        .iter()
        .map(|r| Reading::new(r, case))
        .filter(|r| !r.windows.is_empty())
        .collect();
    let healthy: Vec<Reading<'_>> = case
        .healthy
        .iter()
        .filter(|r| !r.spans.is_empty())
        .map(|r| Reading::new(r, case))
        .collect();
    let examined = regressed.len();

    let mut scored = score_candidates(&regressed, &healthy, case, wording);
    let lift = |explained: usize, healthy_explained: usize| {
        explained as f64 / examined.max(1) as f64
            - healthy_explained as f64 / healthy.len().max(1) as f64
    };
    scored.sort_by(|a, b| {
        b.explained.cmp(&a.explained).then(
            lift(b.explained, b.healthy_explained)
                .total_cmp(&lift(a.explained, a.healthy_explained)),
        )
    });
    let others = scored
        .iter()
        .skip(1)
        .filter(|s| s.explained > 0)
        .map(|s| (s.kind, s.explained))
        .collect();

    let best = scored.swap_remove(0);
    let accepted = examined > 0
        && best.explained as f64 >= MIN_EXPLAINED * examined as f64
        && lift(best.explained, best.healthy_explained) >= MIN_LIFT;
    let mut m = Mechanism {
        kind: best.kind,
        summary: String::new(),
        unknown_because: None,
        runs_explained: best.explained,
        runs_examined: examined,
        healthy_explained: best.healthy_explained,
        healthy_examined: healthy.len(),
        replicas_regressed: median_replicas_at_drain(&regressed),
        replicas_healthy: median_replicas_at_drain(&healthy),
        claims: best.claims.into_iter().take(MAX_CLAIMS * 4).collect(),
        others,
    };
    if !accepted {
        unknown(&mut m, why_unknown(&regressed));
    }
    m.summary = (wording.summary)(&m, case.family);
    m
}

/// The probes of `case` that work for its jobs.
///
/// A probe down in most healthy runs of these jobs is broken for them (it cannot reach its
/// target from these clusters): being down with an outage says nothing.
fn working_probes(case: &Case<'_>) -> Vec<String> {
    case.probes
        .iter()
        .filter(|p| {
            let down = case
                .healthy
                .iter()
                .filter(|h| {
                    h.spans
                        .iter()
                        .any(|s| s.kind == SpanKind::Outage && &s.subject == *p)
                })
                .count();
            case.healthy.is_empty() || down * 2 < case.healthy.len()
        })
        .cloned()
        .collect()
}

/// One candidate mechanism and how many runs it explains.
struct Candidate {
    kind: MechanismKind,
    /// Regressed runs it explains.
    explained: usize,
    /// Healthy runs it would explain too.
    healthy_explained: usize,
    claims: Vec<MechanismClaim>,
}

/// Every candidate mechanism tried on the regressed and the healthy readings, in
/// `MechanismKind::CANDIDATES` order.
fn score_candidates(
    regressed: &[Reading<'_>],
    healthy: &[Reading<'_>],
    case: &Case<'_>,
    wording: Wording,
) -> Vec<Candidate> {
    MechanismKind::CANDIDATES
        .into_iter()
        .map(|kind| {
            let claims: Vec<MechanismClaim> = regressed
                .iter()
                .filter_map(|r| {
                    let clauses = r.explained_by(kind, case)?;
                    Some(
                        clauses
                            .into_iter()
                            .map(|(clause, intervals)| MechanismClaim {
                                run: r.run.run.clone(),
                                text: (wording.clause)(&clause),
                                intervals,
                            }),
                    )
                })
                .flatten()
                .collect();
            let explained = claims.iter().map(|c| &c.run).collect::<BTreeSet<_>>().len();
            let healthy_explained = healthy
                .iter()
                .filter(|h| h.explained_by(kind, case).is_some())
                .count();
            Candidate {
                kind,
                explained,
                healthy_explained,
                claims,
            }
        })
        .collect()
}

fn median_replicas_at_drain(readings: &[Reading<'_>]) -> Option<f64> {
    median(
        readings
            .iter()
            .filter_map(Reading::replicas_at_drain)
            .collect(),
    )
}

/// Why no candidate was accepted for the `regressed` readings.
fn why_unknown(regressed: &[Reading<'_>]) -> UnknownBecause {
    let examined = regressed.len();
    let with_pods = regressed.iter().filter(|r| !r.pods.is_empty()).count();
    if examined == 0 {
        UnknownBecause::NoTimelines
    } else if with_pods * 2 < examined {
        UnknownBecause::NoPodIntervals
    } else {
        UnknownBecause::WeakLift
    }
}

/// `m` turned `unknown`: its best candidate kept among the others, its claims dropped.
fn unknown(m: &mut Mechanism, because: UnknownBecause) {
    m.unknown_because = Some(because);
    m.others.insert(0, (m.kind, m.runs_explained));
    m.others.retain(|(_, n)| *n > 0);
    m.kind = MechanismKind::Unknown;
    m.runs_explained = 0;
    m.healthy_explained = 0;
    m.claims.clear();
}

#[cfg(test)]
mod tests;
