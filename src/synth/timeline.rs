//! A run's cluster timeline, as origin's monitors record it: the machine-config rollout of an
//! upgrade (each node drained, updated and rebooted in turn), the image registry's pods while
//! ready, etcd leader changes and VIP moves at the masters' reboots (decoys that never line up
//! with the regressed backend's outages), and, in a regressed run, what causes its outages.
//!
//! The registry runs two replicas on different workers, so a drain never takes both; a run hit
//! by `single_replica_drained` runs one, and each drain of its node leaves the route without an
//! endpoint until the replacement is ready (`replicas_on_one_node`: two, on one worker). The
//! other planted mechanisms put the outage where a VIP moves, etcd elects a leader, or the CI's
//! own network probe is down.

use chrono::{DateTime, Duration, Utc};

use super::Rng;
use super::artifacts::Interval;
use crate::model::MechanismKind;

const MASTERS: [&str; 3] = ["master-0", "master-1", "master-2"];
const WORKERS: [&str; 3] = ["worker-0", "worker-1", "worker-2"];
const REGISTRY: &str = "openshift-image-registry";
/// Decoys keep this far from the regressed backend's outages.
const APART: i64 = 120;

/// What the timeline decided: its intervals, and when the regressed family's outages are and
/// how long each lasts (empty: the outage goes anywhere, as in a run nothing explains).
pub(super) struct Timeline {
    pub items: Vec<Interval>,
    pub outages: Vec<(DateTime<Utc>, i64)>,
}

/// One node's turn in the rollout.
struct Turn {
    node: &'static str,
    drain: (DateTime<Utc>, DateTime<Utc>),
    down: (DateTime<Utc>, DateTime<Utc>),
}

/// What a run's timeline needs to know.
pub(super) struct Setting<'a> {
    pub started: DateTime<Utc>,
    pub upgrade_start: DateTime<Utc>,
    pub upgrading: bool,
    pub on_prem: bool,
    pub pods: bool,
    /// The regressed family's mechanism and seconds, in a regressed run.
    pub mechanism: Option<MechanismKind>,
    pub family_seconds: i64,
    /// A backend of the CI's own network probe, for `ci_network`.
    pub probe: &'a str,
}

pub(super) fn timeline(s: &Setting<'_>, rng: &mut Rng) -> Timeline {
    let turns = if s.upgrading {
        rollout(s.upgrade_start, rng)
    } else {
        Vec::new()
    };

    let mut items: Vec<Interval> = turns.iter().flat_map(node_items).collect();
    let secs = s.family_seconds;
    let mechanism = s.mechanism.filter(|_| secs > 0);
    let replicas = match mechanism {
        Some(MechanismKind::SingleReplicaDrained) if s.upgrading => vec![1],
        Some(MechanismKind::ReplicasOnOneNode) if s.upgrading => vec![1, 1],
        _ => vec![1, 2],
    };

    let start_worker = rng.below(WORKERS.len() as u64) as usize;
    let placed: Vec<usize> = replicas
        .iter()
        .map(|r| (start_worker + r) % WORKERS.len())
        .collect();

    let (pod_items, mut outages) = registry(s, &turns, &placed, secs, rng);
    if s.pods {
        items.extend(pod_items);
    }

    let window = |rng: &mut Rng| s.upgrade_start + Duration::seconds(600 + rng.between(0, 1800));
    match mechanism {
        Some(MechanismKind::VipMoved) => {
            let at = window(rng);
            items.push(vip(at - Duration::seconds(1), "master-0"));
            outages = vec![(at, secs)];
        }
        Some(MechanismKind::EtcdLeaderChange) => {
            let at = window(rng);
            items.push(leader(at - Duration::seconds(1), "master-1", "master-0"));
            outages = vec![(at, secs)];
        }
        Some(MechanismKind::CiNetwork) => {
            let at = window(rng);
            items.push(probe_outage(
                s.probe,
                at - Duration::seconds(5),
                at + Duration::seconds(secs + 5),
            ));
            outages = vec![(at, secs)];
        }
        _ => {}
    }

    // decoys: the masters' reboots move etcd's leadership and (on-prem) the VIP
    for (i, t) in turns
        .iter()
        .filter(|t| t.node.starts_with("master"))
        .enumerate()
    {
        let at = t.down.0 + Duration::seconds(rng.between(1, 20));
        let near = outages.iter().any(|(o, len)| {
            at > *o - Duration::seconds(APART) && at < *o + Duration::seconds(len + APART)
        });
        if near {
            continue;
        }
        let next = MASTERS[(i + 1) % MASTERS.len()];
        items.push(leader(at, next, t.node));
        if s.on_prem {
            items.push(vip(at + Duration::seconds(rng.between(2, 10)), next));
        }
    }

    Timeline { items, outages }
}

/// Each node drained, updated and rebooted in turn: the masters, then the workers.
fn rollout(upgrade_start: DateTime<Utc>, rng: &mut Rng) -> Vec<Turn> {
    let mut t = upgrade_start + Duration::seconds(900 + rng.between(0, 300));
    MASTERS
        .iter()
        .chain(WORKERS.iter())
        .map(|node| {
            let drain = (t, t + Duration::seconds(rng.between(30, 90)));
            let down = (drain.1, drain.1 + Duration::seconds(rng.between(180, 330)));
            t = down.1 + Duration::seconds(rng.between(10, 60));
            Turn { node, drain, down }
        })
        .collect()
}

/// One drain's evictions: the pods it evicted, the workers their replacements went to, and
/// whether it left no replica ready.
struct Eviction {
    at: DateTime<Utc>,
    pods: Vec<usize>,
    to: Vec<usize>,
    lone: bool,
}

/// Where the registry's pods go as the workers are drained in turn (pod `i` starts on
/// `placed[i]`): a replacement goes to a worker already drained, else one without a replica.
fn evictions(turns: &[Turn], placed: &[usize]) -> Vec<Eviction> {
    let mut on: Vec<usize> = placed.to_vec();
    let mut drained: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    for turn in turns.iter().filter(|t| t.node.starts_with("worker")) {
        let w = WORKERS.iter().position(|n| *n == turn.node).unwrap_or(0);
        drained.push(w);
        let hit: Vec<usize> = (0..on.len()).filter(|i| on[*i] == w).collect();
        if hit.is_empty() {
            continue;
        }
        let lone = hit.len() == on.len();
        let mut to = Vec::new();
        for &i in &hit {
            let dest = (0..WORKERS.len())
                .filter(|n| *n != w)
                .min_by_key(|n| (!drained.contains(n), on.iter().any(|p| p == n), *n))
                .unwrap_or(0);
            on[i] = dest;
            to.push(dest);
        }
        out.push(Eviction {
            at: turn.drain.0 + Duration::seconds(2),
            pods: hit,
            to,
            lone,
        });
    }
    out
}

/// The registry's pods over the rollout, from the workers `placed` (one pod each); the family's
/// outages (`secs` spread over them) when a drain leaves no replica ready.
fn registry(
    s: &Setting<'_>,
    turns: &[Turn],
    placed: &[usize],
    secs: i64,
    rng: &mut Rng,
) -> (Vec<Interval>, Vec<(DateTime<Utc>, i64)>) {
    let moves = evictions(turns, placed);
    let lone = moves.iter().filter(|m| m.lone).count() as i64;
    let mut outages = Vec::new();
    // (pod, worker, ready since)
    let mut pods: Vec<(String, usize, DateTime<Utc>)> = placed
        .iter()
        .map(|w| {
            (
                pod_name(rng),
                *w,
                s.started + Duration::seconds(rng.between(60, 600)),
            )
        })
        .collect();

    let mut items = Vec::new();
    for m in &moves {
        let len = if m.lone {
            let share = secs / lone.max(1)
                + if outages.is_empty() {
                    secs % lone.max(1)
                } else {
                    0
                };
            outages.push((m.at, share.max(1)));
            share.max(1)
        } else {
            0
        };
        for (&i, &to) in m.pods.iter().zip(&m.to) {
            let (name, node, since) = pods[i].clone();
            items.push(ready(&name, WORKERS[node], since, m.at));
            let gap = if m.lone { len } else { rng.between(15, 40) };
            pods[i] = (pod_name(rng), to, m.at + Duration::seconds(gap));
        }
    }

    let end = s.upgrade_start + Duration::seconds(7200);
    for (name, node, since) in &pods {
        items.push(ready(name, WORKERS[*node], *since, end));
    }

    (items, outages)
}

fn pod_name(rng: &mut Rng) -> String {
    const LETTERS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let tail: String = (0..5)
        .map(|_| LETTERS[rng.below(LETTERS.len() as u64) as usize] as char)
        .collect();
    format!("image-registry-7d9c6b8f4-{tail}")
}

fn node_items(t: &Turn) -> Vec<Interval> {
    let role = if t.node.starts_with("master") {
        "master"
    } else {
        "worker"
    };
    let phase = |phase: &'static str, (from, to): (DateTime<Utc>, DateTime<Utc>)| Interval {
        level: "Info",
        source: "NodeState",
        locator_type: "Node",
        keys: vec![("node", t.node.to_string())],
        reason: "NodeUpdate".into(),
        message: format!("{phase} of the machine-config rollout"),
        annotations: vec![
            ("constructed", "node-lifecycle-constructor".into()),
            ("phase", phase.into()),
            ("reason", "NodeUpdate".into()),
            ("roles", role.into()),
        ],
        from,
        to: Some(to),
    };
    let mid = t.down.0 + (t.down.1 - t.down.0) / 3;
    vec![
        phase("Drain", t.drain),
        phase("OperatingSystemUpdate", (t.down.0, mid)),
        phase("Reboot", (mid, t.down.1)),
    ]
}

fn ready(pod: &str, node: &str, from: DateTime<Utc>, to: DateTime<Utc>) -> Interval {
    Interval {
        level: "Info",
        source: "PodState",
        locator_type: "Pod",
        keys: vec![
            ("namespace", REGISTRY.into()),
            ("pod", pod.into()),
            ("uid", format!("uid-{pod}")),
        ],
        reason: "PodReady".into(),
        message: format!("pod ready on {node}"),
        annotations: vec![
            ("constructed", "pod-lifecycle-constructor".into()),
            ("node", node.into()),
            ("reason", "PodReady".into()),
        ],
        from,
        to: Some(to.max(from)),
    }
}

fn leader(at: DateTime<Utc>, leader: &str, previous: &str) -> Interval {
    Interval {
        level: "Info",
        source: "EtcdLeadership",
        locator_type: "EtcdServer",
        keys: vec![("etcd-member", leader.into())],
        reason: "LeaderElected".into(),
        message: "a new etcd leader was elected".into(),
        annotations: vec![
            ("leader", leader.into()),
            ("prev-leader", previous.into()),
            ("term", "7".into()),
        ],
        from: at,
        to: Some(at),
    }
}

fn vip(at: DateTime<Utc>, node: &str) -> Interval {
    Interval {
        level: "Info",
        source: "OnPremKeepalivedMonitor",
        locator_type: "Node",
        keys: vec![("node", node.into()), ("onprem-keepalived", "api".into())],
        reason: "OnPremLBTookVIP".into(),
        message: "keepalived took the API VIP".into(),
        annotations: vec![
            ("reason", "OnPremLBTookVIP".into()),
            ("vip", "192.168.111.5".into()),
        ],
        from: at,
        to: Some(at),
    }
}

fn probe_outage(backend: &str, from: DateTime<Utc>, to: DateTime<Utc>) -> Interval {
    Interval {
        level: "Error",
        source: "Disruption",
        locator_type: "Disruption",
        keys: vec![
            ("backend-disruption-name", backend.into()),
            ("connection", "new".into()),
        ],
        reason: "DisruptionBegan".into(),
        message: format!("{backend} stopped responding to GET requests over new connections"),
        annotations: vec![("reason", "DisruptionBegan".into())],
        from,
        to: Some(to),
    }
}
