//! `[evaluate]`: how evaluation decides what regressed, and the configured limits.

use serde::{Deserialize, Serialize};

use super::{ConfigError, DAY};

/// How evaluation decides what regressed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvaluateSettings {
    /// Days in the current window, ending at the evaluation time.
    pub window_days: u32,
    /// Days in the baseline window just before the current one.
    pub baseline_days: u32,
    /// Fewer runs than this in a group: "insufficient data", never healthy or regressed.
    pub min_job_runs: u64,
    /// Besides the window, each group is also judged on its runs of the last so many days
    /// (each a span ending at the evaluation time) against the same reference: a regression
    /// that began inside the window is seen once its own runs carry it, not once it fills the
    /// window. Empty: the window alone.
    pub recent_days: Vec<u32>,
    /// A recent span is judged from this many runs (its test, adjusted with every other of the
    /// cycle, decides; fewer runs need an overwhelming effect).
    pub min_recent_runs: u64,
    /// Percentiles checked against thresholds (all four are computed and shown).
    pub percentiles: Vec<crate::model::Percentile>,
    /// A regression must exceed its threshold by at least this many seconds …
    pub min_effect_seconds: f64,
    /// … and by at least this factor: allowed = max(T + seconds, T × ratio).
    pub min_effect_ratio: f64,
    /// Benjamini–Hochberg false discovery rate across the tests of one cycle that could be
    /// discoveries with the runs they have.
    pub false_discovery_rate: f64,
    /// A regressed group is resolved after this many evaluations in a row at or below its threshold.
    pub clear_after: u32,
    /// Historical-table rows with fewer job runs are ignored.
    pub historical_min_runs: u64,
    /// A release whose first run is younger than this is judged against the previous
    /// release's same group, when its first run came a day or more after that release's: its
    /// own few days of history may already hold a regression.
    pub min_history_days: u32,
    /// Runs after a candidate fix point that must be back at the reference before an incident
    /// resolves early (before its window has emptied of regressed runs).
    pub recovery_min_runs: usize,
    /// Runs in an incident's scope after its claimed fix that a verdict (fixed, failed fix)
    /// needs; fewer is "inconclusive", naming how many more.
    pub fix_min_runs: u64,
    /// How far back an incident's reference may reach: the days before its onset are its
    /// reference however long it lasts, up to this many days before the cycle.
    pub reference_lookback_days: u32,
    /// Backends whose name contains any of these are not evaluated (the CI aggregator's list).
    pub exclude: Vec<String>,
    /// Worst and typical sample runs listed per regression.
    pub sample_worst: usize,
    pub sample_typical: usize,
    /// Configured limits, the most specific source of thresholds.
    pub limits: Vec<LimitRule>,
    /// A percentile regresses only with at least this many runs above the allowed level (and
    /// as many as its rank implies): 2 wild runs never carry a P95.
    pub min_support_runs: u64,
    /// Which runs had CI-infrastructure trouble (left out of evaluation).
    pub ci_trouble: crate::model::TroubleRules,
}

impl EvaluateSettings {
    /// The recent spans: each at least a day, shorter than the window, judged from one run on.
    pub(super) fn validate_recent(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: &str| Err(ConfigError::Invalid(format!("`{key}`: {why}")));
        if self
            .recent_days
            .iter()
            .any(|d| *d == 0 || *d >= self.window_days)
        {
            return invalid(
                "evaluate.recent_days",
                "each recent span is at least one day and shorter than the window",
            );
        }
        if self.min_recent_runs == 0 {
            return invalid("evaluate.min_recent_runs", "must be at least 1");
        }
        Ok(())
    }

    /// The CI-trouble rules and the configured limits within range: they are bound into SQL
    /// arithmetic (a day count subtracted from a day) and compared with seconds, so a value out
    /// of range would fail every ingest on PostgreSQL ("bigint out of range", counted as bad
    /// runs) or quietly leave every run out of evaluation.
    pub(super) fn validate_trouble_and_limits(&self) -> Result<(), ConfigError> {
        let t = &self.ci_trouble;
        let whole: [(&str, i128, i128, i128); 5] = [
            (
                "evaluate.ci_trouble.liveness_allowance_seconds",
                t.liveness_allowance_seconds.into(),
                0,
                DAY.into(),
            ),
            (
                "evaluate.ci_trouble.all_backends_min_families",
                t.all_backends_min_families as i128,
                0,
                10_000,
            ),
            (
                "evaluate.ci_trouble.broken_min_runs",
                t.broken_min_runs.into(),
                0,
                1_000_000,
            ),
            (
                "evaluate.ci_trouble.broken_min_days",
                t.broken_min_days.into(),
                0,
                3_660,
            ),
            (
                "evaluate.ci_trouble.broken_horizon_days",
                t.broken_horizon_days.into(),
                1,
                3_660,
            ),
        ];

        for (key, value, min, max) in whole {
            if !(min..=max).contains(&value) {
                return Err(ConfigError::Invalid(format!(
                    "`{key}`: must be between {min} and {max}"
                )));
            }
        }

        let shares = [
            (
                "evaluate.ci_trouble.all_backends_share",
                t.all_backends_share,
            ),
            ("evaluate.ci_trouble.broken_share", t.broken_share),
        ];

        // NaN is in no range
        if let Some((key, _)) = shares.iter().find(|(_, v)| !(0.0..=1.0).contains(v)) {
            return Err(ConfigError::Invalid(format!(
                "`{key}`: must be between 0 and 1"
            )));
        }

        if let Some(l) = self
            .limits
            .iter()
            .find(|l| !(0.0..=DAY as f64).contains(&l.seconds))
        {
            return Err(ConfigError::Invalid(format!(
                "`evaluate.limits.seconds`: {}: must be between 0 and {DAY}",
                l.backend
            )));
        }

        Ok(())
    }
}

impl Default for EvaluateSettings {
    fn default() -> Self {
        Self {
            window_days: 7,
            baseline_days: 21,
            min_job_runs: 10,
            recent_days: vec![1, 2, 3],
            min_recent_runs: 4,
            percentiles: vec![crate::model::Percentile::P50, crate::model::Percentile::P95],
            min_effect_seconds: 5.0,
            min_effect_ratio: 1.5,
            false_discovery_rate: 0.05,
            clear_after: 2,
            historical_min_runs: 30,
            min_history_days: 14,
            recovery_min_runs: 6,
            fix_min_runs: 10,
            reference_lookback_days: 180,
            exclude: [
                "-network-liveness",
                "host-to-service",
                "host-to-host",
                "host-to-pod",
                "pod-to-host",
                "pod-to-pod",
                "pod-to-service",
                "-localhost-",
                "-internal-lb-",
                "kube-api-http1-external-lb",
                "kube-api-http2-external-lb",
                "openshift-api-http2-external-lb",
            ]
            .iter()
            .map(|s| (*s).to_string())
            .collect(),
            sample_worst: 3,
            sample_typical: 2,
            limits: Vec::new(),
            min_support_runs: 3,
            ci_trouble: crate::model::TroubleRules::default(),
        }
    }
}

/// One configured limit: `backend` (a glob) and any dimension values, one percentile, seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitRule {
    pub backend: String,
    pub percentile: crate::model::Percentile,
    pub seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_release: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_stack: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
}

impl LimitRule {
    /// The dimension values the rule requires.
    pub fn dimensions(&self) -> Vec<(crate::model::Dimension, String)> {
        use crate::model::Dimension as D;
        [
            (D::Release, &self.release),
            (D::FromRelease, &self.from_release),
            (D::UpgradeType, &self.upgrade_type),
            (D::Platform, &self.platform),
            (D::Architecture, &self.architecture),
            (D::Network, &self.network),
            (D::NetworkStack, &self.network_stack),
            (D::Topology, &self.topology),
        ]
        .into_iter()
        .filter_map(|(d, v)| v.clone().map(|v| (d, v)))
        .collect()
    }

    pub fn set(&mut self, d: crate::model::Dimension, value: &str) {
        use crate::model::Dimension as D;
        let slot = match d {
            D::Release => &mut self.release,
            D::FromRelease => &mut self.from_release,
            D::UpgradeType => &mut self.upgrade_type,
            D::Platform => &mut self.platform,
            D::Architecture => &mut self.architecture,
            D::Network => &mut self.network,
            D::NetworkStack => &mut self.network_stack,
            D::Topology => &mut self.topology,
            D::MasterNodesUpdated => return,
        };
        *slot = Some(value.to_string());
    }

    /// `image-registry-* platform=metal P50 ≤ 5s`
    pub fn describe(&self) -> String {
        let mut s = self.backend.clone();
        for (d, v) in self.dimensions() {
            s.push_str(&format!(" {d}={v}"));
        }
        format!("{s} {} ≤ {}s", self.percentile, self.seconds)
    }
}
