//! CI-infrastructure trouble: a run whose disruption was the CI's, not the product's. Pure.
//!
//! The CI's own tooling watches the network between the CI cluster and the cluster under test
//! with `ci-cluster-network-liveness-*` backends, to tell the product's disruption apart from
//! the CI cluster's; origin does not fail a job's disruption tests over it. sheriff reads it the
//! same way: a run where such a backend was down beyond a small allowance is CI-troubled, and
//! evaluation leaves it out of every percentile, test and reference of product backends.
//!
//! A probe is evidence only against its own normal. Some probes cannot reach their target from
//! some clusters at all: origin's own table has metal rows where `gcp-network-liveness-*` is
//! down for thousands of seconds at the median. A probe down in most of a job's runs says
//! nothing about any one of them; it is **broken for that job** ([`ProbeHealth`]), reported
//! once as a data-quality finding, and never used to leave that job's runs out.
//!
//! A second rule, off by default, also calls a run troubled when nearly every backend family
//! was disrupted in it. It is off because a real product regression of the cluster network
//! disrupts every backend too; only the liveness probe tells the two apart.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{backend_family, glob_match};

/// How runs are classified; `[evaluate.ci_trouble]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TroubleRules {
    /// Globs of the backends that watch the CI's own network.
    pub liveness: Vec<String>,
    /// Seconds a liveness backend may be down in a run before the run is CI-troubled: the
    /// probe blips for a few seconds in ordinary runs.
    pub liveness_allowance_seconds: i64,
    /// Also troubled when at least this share of the run's backend families (liveness ones
    /// aside) were disrupted; 0 turns the rule off.
    pub all_backends_share: f64,
    /// … and the run has at least this many families.
    pub all_backends_min_families: usize,
    /// A probe down beyond the allowance in more than this share of a job's recent runs is
    /// broken for that job: its normal is "down", and it says nothing about any one run.
    pub broken_share: f64,
    /// … judged on at least this many of the job's runs …
    pub broken_min_runs: u64,
    /// … down on at least this many distinct days (a day or two of CI trouble hitting a sparse
    /// job is trouble, not a broken probe) …
    pub broken_min_days: u64,
    /// … over the days up to this many before the job's newest run.
    pub broken_horizon_days: i64,
}

impl Default for TroubleRules {
    fn default() -> Self {
        TroubleRules {
            liveness: vec![
                "ci-cluster-network-liveness-*".into(),
                "*-network-liveness-*".into(),
            ],
            liveness_allowance_seconds: 10,
            all_backends_share: 0.0,
            all_backends_min_families: 6,
            broken_share: 0.5,
            broken_min_runs: 5,
            broken_min_days: 3,
            broken_horizon_days: 28,
        }
    }
}

/// How a liveness probe behaved over a job's recent runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProbeHealth {
    /// Runs that reported the probe.
    pub runs: u64,
    /// … of which it was down beyond the allowance.
    pub down: u64,
    /// Distinct days with such a run.
    pub down_days: u64,
}

impl TroubleRules {
    /// Why a run with these `(backend, seconds)` samples is CI-troubled, or `None` when it is
    /// not: the rule that applied and the numbers that made it apply.
    pub fn classify<'a>(
        &self,
        samples: impl IntoIterator<Item = (&'a str, i64)>,
    ) -> Option<String> {
        self.classify_with(samples, |_| false)
    }

    /// [`TroubleRules::classify`] for a job whose probes named by `broken` are broken: those
    /// say nothing about its runs.
    pub fn classify_with<'a>(
        &self,
        samples: impl IntoIterator<Item = (&'a str, i64)>,
        broken: impl Fn(&str) -> bool,
    ) -> Option<String> {
        let mut worst_liveness: Option<(&str, i64)> = None;
        let mut families: BTreeMap<&str, bool> = BTreeMap::new();
        for (backend, seconds) in samples {
            if self.is_liveness(backend) {
                if broken(backend) {
                    continue;
                }
                if worst_liveness.is_none_or(|(_, s)| seconds > s) {
                    worst_liveness = Some((backend, seconds));
                }
            } else {
                *families.entry(backend_family(backend)).or_default() |= seconds > 0;
            }
        }
        if let Some((backend, seconds)) = worst_liveness
            && seconds > self.liveness_allowance_seconds
        {
            return Some(format!("CI network liveness lost: {backend} {seconds}s"));
        }
        let disrupted = families.values().filter(|d| **d).count();
        let share = disrupted as f64 / families.len().max(1) as f64;
        (self.all_backends_share > 0.0
            && families.len() >= self.all_backends_min_families
            && share >= self.all_backends_share)
            .then(|| {
                format!(
                    "nearly every backend disrupted: {disrupted} of {} families",
                    families.len()
                )
            })
    }

    /// Whether a probe's seconds in one run are beyond the allowance.
    pub fn is_down(&self, seconds: i64) -> bool {
        seconds > self.liveness_allowance_seconds
    }

    /// Whether a probe with this record over a job's recent runs is broken for the job: down
    /// in most of them, on several days.
    pub fn is_broken(&self, h: ProbeHealth) -> bool {
        h.runs >= self.broken_min_runs
            && h.down as f64 > self.broken_share * h.runs as f64
            && h.down_days >= self.broken_min_days
    }

    /// Whether a backend is one of the CI's own network probes.
    pub fn is_liveness(&self, backend: &str) -> bool {
        self.liveness.iter().any(|g| glob_match(g, backend))
    }

    /// What the stored classification was computed with: a change reclassifies every run.
    pub fn fingerprint(&self) -> String {
        serde_json::to_string(self).expect("rules serialize")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(liveness: i64, others: &[(&'static str, i64)]) -> Vec<(&'static str, i64)> {
        let mut v = vec![("ci-cluster-network-liveness-new-connections", liveness)];
        v.extend_from_slice(others);
        v
    }

    #[test]
    fn liveness_beyond_the_allowance_is_ci_trouble_and_says_so() {
        let rules = TroubleRules::default();
        let why = rules
            .classify(run(45, &[("image-registry-new-connections", 30)]))
            .unwrap();
        assert_eq!(
            why,
            "CI network liveness lost: ci-cluster-network-liveness-new-connections 45s"
        );
        assert_eq!(
            rules.classify(run(10, &[("image-registry-new-connections", 30)])),
            None,
            "a blip"
        );
        assert_eq!(rules.classify(run(0, &[])), None);
        assert!(rules.is_liveness("build-farm-network-liveness-reused-connections"));
        assert!(!rules.is_liveness("image-registry-new-connections"));
    }

    #[test]
    fn a_broken_probe_says_nothing_and_a_working_one_still_does() {
        let rules = TroubleRules::default();
        let samples = [
            ("gcp-network-liveness-new-connections", 4_210),
            ("image-registry-new-connections", 30),
        ];
        assert!(
            rules.classify(samples).is_some(),
            "on its own, a probe down for the whole run is trouble"
        );
        let broken = |b: &str| b.starts_with("gcp-network-liveness");
        assert_eq!(
            rules.classify_with(samples, broken),
            None,
            "a probe that is always down says nothing"
        );
        let both = [
            samples[0],
            ("ci-cluster-network-liveness-new-connections", 45),
        ];
        assert_eq!(
            rules.classify_with(both, broken).unwrap(),
            "CI network liveness lost: ci-cluster-network-liveness-new-connections 45s",
            "another probe of the same run still counts"
        );
    }

    #[test]
    fn a_probe_is_broken_when_down_in_most_runs_on_several_days() {
        let rules = TroubleRules::default();
        let h = |runs, down, down_days| ProbeHealth {
            runs,
            down,
            down_days,
        };
        assert!(rules.is_broken(h(30, 26, 20)));
        assert!(!rules.is_broken(h(30, 3, 1)), "a CI-trouble day");
        assert!(
            !rules.is_broken(h(6, 5, 2)),
            "a sparse job hit by two days of trouble"
        );
        assert!(!rules.is_broken(h(4, 4, 4)), "too few runs to tell");
        assert!(!rules.is_broken(h(30, 15, 10)), "half is not most");
    }

    #[test]
    fn the_every_backend_rule_is_off_by_default_and_counts_families_when_on() {
        let all: Vec<(&str, i64)> = ["a", "b", "c", "d", "e", "f"]
            .iter()
            .flat_map(|f| {
                let name: &'static str = Box::leak(format!("{f}-new-connections").into_boxed_str());
                [(name, 20)]
            })
            .collect();
        assert_eq!(TroubleRules::default().classify(all.clone()), None);
        let on = TroubleRules {
            all_backends_share: 0.9,
            ..TroubleRules::default()
        };
        assert_eq!(
            on.classify(all.clone()).unwrap(),
            "nearly every backend disrupted: 6 of 6 families"
        );
        let mut five = all;
        five[0].1 = 0;
        assert_eq!(on.classify(five), None, "5 of 6 is below 0.9");
        assert_ne!(on.fingerprint(), TroubleRules::default().fingerprint());
    }
}
