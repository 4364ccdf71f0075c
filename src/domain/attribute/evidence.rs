//! Interval evidence: which ClusterOperator conditions were bad while a backend was down, in
//! the regressed sample runs, and how that compares with healthy runs of the same cells. Pure.
//!
//! For each (operator, condition, status) the share of outage seconds that its spans cover and
//! the runs where it overlapped an outage are counted over the regressed runs; the share of
//! healthy runs that show the same condition at all discounts it, so an operator that is
//! Progressing during every upgrade does not win. Score = covered share × (1 − healthy share).

use std::collections::BTreeMap;

pub use crate::model::ConditionEvidence;
use crate::model::{ConditionSpan, Outage};

/// The intervals of one sample run that matter: the outages of the regression's backends and
/// every bad condition span.
#[derive(Debug, Clone, Default)]
pub struct RunIntervals {
    pub outages: Vec<Outage>,
    pub conditions: Vec<ConditionSpan>,
}

type Key = (String, String, String);

fn key(c: &ConditionSpan) -> Key {
    (c.operator.clone(), c.condition.clone(), c.status.clone())
}

/// Seconds of `[from, to)` covered by the union of `spans` (sorted, merged first).
fn covered(from: i64, to: i64, spans: &[(i64, i64)]) -> i64 {
    spans
        .iter()
        .map(|&(a, b)| (b.min(to) - a.max(from)).max(0))
        .sum()
}

fn merge_spans(mut spans: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    spans.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(spans.len());
    for (a, b) in spans {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Ranks the conditions of `regressed` runs against `healthy` runs, best first.
pub fn correlate(regressed: &[RunIntervals], healthy: &[RunIntervals]) -> Vec<ConditionEvidence> {
    let total_outage: i64 = regressed
        .iter()
        .flat_map(|r| &r.outages)
        .map(|o| (o.to - o.from).num_seconds().max(0))
        .sum();

    let tallies = tally_regressed(regressed);

    let mut out: Vec<ConditionEvidence> = tallies
        .into_iter()
        .filter(|(_, t)| t.runs_with > 0)
        .map(|(k, t)| evidence_of(k, t, total_outage, regressed.len(), healthy))
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.runs_with.cmp(&a.runs_with))
            .then(a.operator.cmp(&b.operator))
    });
    out
}

/// What the regressed runs say about one (operator, condition, status).
#[derive(Default)]
struct Tally {
    covered: i64,
    runs_with: usize,
    reasons: BTreeMap<(String, String), usize>,
}

/// Counts, per condition, the outage seconds its spans cover in the regressed runs, the runs
/// where it overlapped an outage, and the reasons it gave there.
fn tally_regressed(regressed: &[RunIntervals]) -> BTreeMap<Key, Tally> {
    let mut tallies: BTreeMap<Key, Tally> = BTreeMap::new();
    for run in regressed {
        let mut by_key: BTreeMap<Key, Vec<&ConditionSpan>> = BTreeMap::new();
        for c in &run.conditions {
            by_key.entry(key(c)).or_default().push(c);
        }
        for (k, spans) in by_key {
            let merged = merge_spans(
                spans
                    .iter()
                    .map(|s| (s.from.timestamp(), s.to.timestamp()))
                    .collect(),
            );
            let mut run_covered = 0;
            let mut overlapped = false;
            for o in &run.outages {
                let (from, to) = (o.from.timestamp(), o.to.timestamp());
                run_covered += covered(from, to, &merged);
                overlapped |= merged.iter().any(|&(a, b)| a <= to && b >= from);
            }
            let tally = tallies.entry(k).or_default();
            tally.covered += run_covered;
            if overlapped {
                tally.runs_with += 1;
                for s in spans
                    .iter()
                    .filter(|s| run.outages.iter().any(|o| s.from <= o.to && s.to >= o.from))
                {
                    *tally
                        .reasons
                        .entry((s.reason.clone(), s.message.clone()))
                        .or_default() += 1;
                }
            }
        }
    }
    tallies
}

/// Scores one condition's tally against the healthy runs that show it too.
fn evidence_of(
    (operator, condition, status): Key,
    t: Tally,
    total_outage: i64,
    runs: usize,
    healthy: &[RunIntervals],
) -> ConditionEvidence {
    let healthy_with = healthy
        .iter()
        .filter(|h| {
            h.conditions
                .iter()
                .any(|c| c.operator == operator && c.condition == condition && c.status == status)
        })
        .count();

    let covered_share = if total_outage > 0 {
        t.covered as f64 / total_outage as f64
    } else {
        0.0
    };

    let healthy_share = if healthy.is_empty() {
        0.0
    } else {
        healthy_with as f64 / healthy.len() as f64
    };

    let ((reason, message), _) = t
        .reasons
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .unwrap_or_default();

    ConditionEvidence {
        operator,
        condition,
        status,
        reason,
        message,
        covered_share,
        runs_with: t.runs_with,
        runs,
        healthy_with,
        healthy_runs: healthy.len(),
        score: covered_share * (1.0 - healthy_share),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Duration, TimeZone, Utc};

    fn t(s: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 20, 10, 0, 0).unwrap() + Duration::seconds(s)
    }

    fn span(op: &str, cond: &str, status: &str, reason: &str, from: i64, to: i64) -> ConditionSpan {
        ConditionSpan {
            operator: op.into(),
            condition: cond.into(),
            status: status.into(),
            reason: reason.into(),
            message: format!("{op} says {reason}"),
            from: t(from),
            to: t(to),
        }
    }

    fn outage(from: i64, to: i64) -> Outage {
        Outage {
            backend: "image-registry-new-connections".into(),
            from: t(from),
            to: t(to),
        }
    }

    #[test]
    fn the_condition_that_covers_the_outages_wins_over_upgrade_noise() {
        // Every run, healthy or not, has the network operator progressing for a long while that
        // overlaps the outages; only regressed runs have the registry unavailable, exactly then.
        let regressed: Vec<RunIntervals> = (0..10)
            .map(|i| RunIntervals {
                outages: vec![outage(1000, 1030)],
                conditions: if i < 9 {
                    vec![
                        span(
                            "image-registry",
                            "Available",
                            "False",
                            "NoReplicasAvailable",
                            990,
                            1040,
                        ),
                        span("network", "Progressing", "True", "Upgrading", 0, 2000),
                    ]
                } else {
                    vec![span("network", "Progressing", "True", "Upgrading", 0, 2000)]
                },
            })
            .collect();
        let healthy: Vec<RunIntervals> = (0..10)
            .map(|_| RunIntervals {
                outages: vec![],
                conditions: vec![span("network", "Progressing", "True", "Upgrading", 0, 2000)],
            })
            .collect();
        let ranked = correlate(&regressed, &healthy);
        let top = &ranked[0];
        assert_eq!(
            (
                top.operator.as_str(),
                top.condition.as_str(),
                top.reason.as_str()
            ),
            ("image-registry", "Available", "NoReplicasAvailable")
        );
        assert!((top.covered_share - 0.9).abs() < 1e-9);
        assert_eq!(
            (top.runs_with, top.runs, top.healthy_with, top.healthy_runs),
            (9, 10, 0, 10)
        );
        assert_eq!(top.message, "image-registry says NoReplicasAvailable");
        let network = ranked.iter().find(|e| e.operator == "network").unwrap();
        assert_eq!(network.covered_share, 1.0, "it covers everything …");
        assert_eq!(
            network.score, 0.0,
            "… and healthy runs show it all the same"
        );
    }

    #[test]
    fn overlapping_spans_are_not_counted_twice_and_instants_count_as_presence() {
        let run = RunIntervals {
            outages: vec![outage(100, 200)],
            conditions: vec![
                span("a", "Degraded", "True", "X", 90, 150),
                span("a", "Degraded", "True", "X", 140, 160),
                span("b", "Available", "False", "Y", 150, 150),
            ],
        };
        let ranked = correlate(&[run], &[]);
        let a = ranked.iter().find(|e| e.operator == "a").unwrap();
        assert!((a.covered_share - 0.6).abs() < 1e-9, "{a:?}");
        let b = ranked.iter().find(|e| e.operator == "b").unwrap();
        assert_eq!((b.covered_share, b.runs_with), (0.0, 1));
    }
}
