//! Did the fix work: the runs of an incident's scope after its fix point, judged against its
//! frozen pre-onset reference.
//!
//! The fix point is the first payload holding the linked pull requests (a run counts when it
//! tested that payload or a later one), else the time the fix was claimed. With fewer than
//! `fix_min_runs` runs after it the verdict is *inconclusive* and says how many more it needs.
//! With enough:
//! - **fixed**: the percentile is within what the reference allows, the runs are not
//!   significantly worse than the reference, and they are significantly better than the
//!   regression's own runs (from the onset to the fix point);
//! - **failed fix**: above what the reference allows, and significantly worse than it;
//! - **partially fixed**: split by one dimension of the scope (platform, network, …), at least
//!   one part with enough runs is fixed and another failed;
//! - otherwise inconclusive: neither clearly back nor clearly regressed yet.

use std::collections::BTreeMap;

use super::attribution::Context;
use super::scoped::ScopeStats;
use super::source::{CellRun, RunSource};
use crate::domain::evaluate::stats;
use crate::model::{Dimension, FixClaim, FixVerdict, Histogram, Onset, PartVerdict, Verification};

/// Dimensions a scope is split by to find a partial fix, in order.
const PART_DIMENSIONS: [Dimension; 5] = [
    Dimension::Platform,
    Dimension::Network,
    Dimension::UpgradeType,
    Dimension::Topology,
    Dimension::Architecture,
];

/// Whether a run is the fix's: it tested the fix payload or a later one (a run that names no
/// payload counts by its start) and, for a fix merged outside the payload (the CI harness),
/// it started after the merge: such a fix reaches the runs set up after it, whatever payload
/// they test.
fn after_fix(r: &CellRun, claim: &FixClaim, point: i64) -> bool {
    let by_payload = match (claim.payload_at, r.payload_at) {
        (Some(built), Some(tested)) => tested >= built,
        (Some(built), None) => r.started >= built,
        (None, _) => claim.merged_at.is_some() || r.started >= point,
    };
    by_payload && claim.merged_at.is_none_or(|merged| r.started >= merged)
}

fn histogram<'r>(runs: impl IntoIterator<Item = &'r CellRun>) -> Histogram {
    let mut h = Histogram::new();
    for r in runs {
        h.add(r.seconds, 1);
    }
    h
}

/// What one set of post-fix runs says, with enough of them: fixed, failed, or None (unclear).
struct Judge<'a> {
    stats: &'a ScopeStats,
    regressed: &'a Histogram,
    fdr: f64,
}

impl Judge<'_> {
    fn verdict(&self, post: &Histogram) -> Option<FixVerdict> {
        let p = self.stats.check.percentile;
        let observed = post.percentile(p.fraction())?;
        let allowed = self.stats.check.allowed;
        let worse = |than: &Histogram| stats::two_part_greater(post, than).p <= self.fdr;
        let reference = self.stats.reference_histogram.as_ref();
        if observed <= allowed {
            let not_worse = reference.is_none_or(|r| !worse(r));
            let better = self.regressed.is_empty()
                || stats::two_part_greater(self.regressed, post).p <= self.fdr;
            (not_worse && better).then_some(FixVerdict::Fixed)
        } else {
            reference.is_none_or(worse).then_some(FixVerdict::FailedFix)
        }
    }
}

impl<S: RunSource> Context<'_, S> {
    /// The verdict on `claim` from `runs` (the judged backend's runs of the incident's scope).
    pub(super) fn verify(
        &self,
        claim: &FixClaim,
        runs: &[CellRun],
        stats: &ScopeStats,
        onset: Option<&Onset>,
    ) -> Verification {
        let needed = self.settings.fix_min_runs.max(1);
        let mut v = Verification {
            verdict: FixVerdict::Inconclusive,
            key: claim.key.clone(),
            since: claim.fix_point(),
            payload: claim.payload.clone(),
            by_merge: claim.merged_at.is_some(),
            runs: 0,
            needed,
            percentile: stats.check.percentile,
            observed: None,
            allowed: stats.check.allowed,
            reference: stats.reference[stats.check.percentile.index()],
            parts: Vec::new(),
            reason: String::new(),
        };

        let Some(point) = claim.fix_point() else {
            v.reason = claim
                .pending
                .clone()
                .unwrap_or_else(|| crate::words::fix::IN_NO_PAYLOAD_YET.into());
            return v;
        };

        let post: Vec<&CellRun> = runs.iter().filter(|r| after_fix(r, claim, point)).collect();
        let onset_at = onset.map_or(i64::MIN, |o| o.at.timestamp());
        let regressed = histogram(
            runs.iter()
                .filter(|r| r.started >= onset_at && !after_fix(r, claim, point)),
        );

        let whole = histogram(post.iter().copied());
        v.runs = whole.count();
        v.observed = whole
            .percentile(v.percentile.fraction())
            .map(|x| (x * 100.0).round() / 100.0);

        if v.runs < needed {
            v.needed = needed - v.runs;
            v.reason = crate::words::fix::runs_needed(v.runs, needed);
            return v;
        }

        v.needed = 0;
        let judge = Judge {
            stats,
            regressed: &regressed,
            fdr: self.settings.false_discovery_rate,
        };

        if let Some(parts) = self.partial(&post, &judge, needed) {
            v.verdict = FixVerdict::PartiallyFixed;
            v.parts = parts;
            return v;
        }

        match judge.verdict(&whole) {
            Some(verdict) => v.verdict = verdict,
            None => v.reason = crate::words::fix::unclear(v.runs),
        }

        v
    }

    /// The parts of the first dimension that splits the runs into a fixed part and a failed
    /// one, each with at least half the runs a verdict needs (5 at least).
    fn partial(
        &self,
        post: &[&CellRun],
        judge: &Judge<'_>,
        needed: u64,
    ) -> Option<Vec<PartVerdict>> {
        let enough = (needed / 2).max(5);
        let dims_of: BTreeMap<i64, &crate::model::Dimensions> = self
            .index
            .data
            .variant_ids
            .iter()
            .copied()
            .zip(&self.index.data.variants)
            .collect();

        for d in PART_DIMENSIONS {
            let mut split: BTreeMap<String, Vec<&CellRun>> = BTreeMap::new();
            for r in post {
                let value = dims_of.get(&r.variant_id).map_or("", |dims| dims.get(d));
                split.entry(value.to_string()).or_default().push(r);
            }
            if split.len() < 2 {
                continue;
            }
            let parts: Vec<PartVerdict> = split
                .into_iter()
                .filter(|(_, runs)| runs.len() as u64 >= enough)
                .map(|(value, runs)| {
                    let h = histogram(runs.iter().copied());
                    PartVerdict {
                        part: format!("{d}={value}"),
                        verdict: judge.verdict(&h).unwrap_or(FixVerdict::Inconclusive),
                        runs: h.count(),
                        observed: h.percentile(judge.stats.check.percentile.fraction()),
                    }
                })
                .collect();
            let has = |x: FixVerdict| parts.iter().any(|p| p.verdict == x);
            if has(FixVerdict::Fixed) && has(FixVerdict::FailedFix) {
                return Some(parts);
            }
        }

        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(started: i64, payload_at: Option<i64>) -> CellRun {
        CellRun {
            backend: "image-registry-new-connections".into(),
            variant_id: 1,
            started,
            seconds: 0,
            job: "j".into(),
            build_id: "1".into(),
            url: "u".into(),
            payload: "".into(),
            payload_at,
        }
    }

    #[test]
    fn a_fix_outside_the_payload_counts_the_runs_started_after_its_merge_whatever_they_tested() {
        let mut claim = FixClaim {
            key: "OCPBUGS-1".into(),
            status: "ON_QA".into(),
            resolution: None,
            claimed_at: 500,
            pull_requests: vec!["https://github.com/openshift-metal3/dev-scripts/pull/1590".into()],
            payload: None,
            payload_at: None,
            merged_at: Some(300),
            pending: None,
            verdicts: vec![],
        };
        let point = claim.fix_point().unwrap();
        assert!(
            after_fix(&run(301, Some(100)), &claim, point),
            "an old payload, set up after the merge"
        );
        assert!(
            !after_fix(&run(299, Some(400)), &claim, point),
            "started before the merge"
        );
        // with a payload too: both
        claim.payload_at = Some(350);
        let point = claim.fix_point().unwrap();
        assert!(after_fix(&run(360, Some(350)), &claim, point));
        assert!(
            !after_fix(&run(360, Some(340)), &claim, point),
            "an older payload than the fix's"
        );
        assert!(
            !after_fix(&run(290, Some(350)), &claim, point),
            "started before the merge"
        );
    }
}
