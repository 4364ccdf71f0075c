//! The regression report: what one cycle says about one regression, the unit every later stage
//! reads. Incidents keep the latest one (`Snapshot.report`), Slack, Jira, the pages and
//! `incidents show` render it, and `evaluate --format json` prints it (the contract the README documents).
//!
//! Stored reports stay readable: field names and the spelling of every value are part of the
//! format, and fields added later carry `#[serde(default)]`.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Percentile, Scope};

/// The severity bands of a regression: how far over its threshold it is (see
/// `incidents::tier`). Jira priorities are configured by these names.
pub const SEVERITY_BANDS: [&str; 4] = ["<2x", "2-5x", "5-10x", ">=10x"];

/// Where a regression is in this cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Regressed this cycle and not before.
    New,
    Ongoing,
    /// Back within its reference: the incident resolves.
    Resolved,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::Ongoing => "ongoing",
            Status::Resolved => "resolved",
        }
    }

    pub fn is_active(self) -> bool {
        self != Status::Resolved
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How sure the attribution is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    High,
    Medium,
    Low,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Medium => "medium",
            Confidence::Low => "low",
        }
    }
}

impl fmt::Display for Confidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a sample run is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SampleKind {
    /// Among the most disrupted runs of the regression.
    Worst,
    /// A run from the middle of the regression's distribution.
    Typical,
}

impl SampleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SampleKind::Worst => "worst",
            SampleKind::Typical => "typical",
        }
    }
}

impl fmt::Display for SampleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which of a platform-specific regression's two owners it is filed against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileAgainst {
    /// The backend's component (Image Registry), naming the platform's as a second owner.
    #[default]
    Backend,
    /// The platform's component (Bare Metal Hardware Provisioning).
    Platform,
    /// The CI harness that sets up the test clusters (the mechanism shows the cause is how the
    /// cluster is set up: one replica, storage that cannot be shared); the product component
    /// is named to consult, not to blame. Chosen by attribution, never by configuration.
    #[serde(rename = "test_environment")]
    TestEnvironment,
}

/// How a regression's outages come about, as the runs' own timelines show.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum MechanismKind {
    /// The only ready replica was evicted by its node's drain; the outage ended when the
    /// replacement became ready.
    SingleReplicaDrained,
    /// Every ready replica sat on one node, and that node was drained or went down.
    ReplicasOnOneNode,
    /// The outage began as a node's load balancer took the VIP.
    VipMoved,
    /// The outage began as etcd elected a new leader.
    EtcdLeaderChange,
    /// The CI's own network probe was down at the same time.
    CiNetwork,
    /// Nothing in the timelines explains the outages well enough.
    #[default]
    Unknown,
}

impl MechanismKind {
    pub const CANDIDATES: [MechanismKind; 5] = [
        MechanismKind::SingleReplicaDrained,
        MechanismKind::ReplicasOnOneNode,
        MechanismKind::VipMoved,
        MechanismKind::EtcdLeaderChange,
        MechanismKind::CiNetwork,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MechanismKind::SingleReplicaDrained => "single_replica_drained",
            MechanismKind::ReplicasOnOneNode => "replicas_on_one_node",
            MechanismKind::VipMoved => "vip_moved",
            MechanismKind::EtcdLeaderChange => "etcd_leader_change",
            MechanismKind::CiNetwork => "ci_network",
            MechanismKind::Unknown => "unknown",
        }
    }

    /// Whether the cause is how the CI cluster is set up rather than the product.
    pub fn is_test_environment(self) -> bool {
        matches!(
            self,
            MechanismKind::SingleReplicaDrained | MechanismKind::ReplicasOnOneNode
        )
    }
}

/// Why a mechanism is `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownBecause {
    /// The sample runs hold no pod intervals of the backend's namespace: the replica-based
    /// mechanisms could not be judged.
    NoPodIntervals,
    /// No candidate explained enough of the outages, or healthy runs showed it as often.
    WeakLift,
    /// No sample run had a timeline to read.
    NoTimelines,
}

/// One statement of a mechanism about one run, and the intervals that show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MechanismClaim {
    /// The run (`job/build id`).
    pub run: String,
    pub text: String,
    pub intervals: Vec<super::IntervalRef>,
}

/// The mechanism behind a regression's outages (`attribution.mechanism`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mechanism {
    pub kind: MechanismKind,
    /// One sentence.
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown_because: Option<UnknownBecause>,
    /// Sample runs whose outages it explains, of those examined.
    pub runs_explained: usize,
    pub runs_examined: usize,
    /// Healthy runs of the same jobs it would explain, of those examined.
    pub healthy_explained: usize,
    pub healthy_examined: usize,
    /// The backend's ready replicas when its nodes were drained (the median over runs), in the
    /// regressed and in the healthy runs; None without pod intervals.
    pub replicas_regressed: Option<f64>,
    pub replicas_healthy: Option<f64>,
    /// What each explained run shows, with the intervals (file and item) behind each clause.
    pub claims: Vec<MechanismClaim>,
    /// The other candidates' runs explained, best first: (kind, runs).
    #[serde(default)]
    pub others: Vec<(MechanismKind, usize)>,
}

/// When a regression began: the most likely time (the first run after the change) and an
/// interval that holds the change with high probability (from the last run before the earliest
/// candidate to the latest candidate). With payloads known, the same change read on the
/// payload order: the last payload whose runs were good, the first whose runs were bad, and
/// every payload of the release between them (empty when the payloads are unknown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Onset {
    pub at: DateTime<Utc>,
    pub earliest: DateTime<Utc>,
    pub latest: DateTime<Utc>,
    #[serde(default)]
    pub last_good_payload: Option<String>,
    #[serde(default)]
    pub first_bad_payload: Option<String>,
    /// Every payload of the release built from the last good to the first bad, in build order.
    #[serde(default)]
    pub payloads: Vec<String>,
    /// Those of `payloads` no run of the scope tested: the change may be in any of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untested_payloads: Vec<String>,
}

impl Onset {
    /// From Unix seconds; None when one is out of range.
    pub fn from_secs(at: i64, earliest: i64, latest: i64) -> Option<Onset> {
        Some(Onset {
            at: DateTime::from_timestamp(at, 0)?,
            earliest: DateTime::from_timestamp(earliest, 0)?,
            latest: DateTime::from_timestamp(latest, 0)?,
            last_good_payload: None,
            first_bad_payload: None,
            payloads: Vec::new(),
            untested_payloads: Vec::new(),
        })
    }
}

/// A change that may have caused a regression: a pull request that entered between its last
/// good and first bad payloads, or a commit outside the payload (the CI harness, the step
/// registry, origin's monitor tests) merged in its onset window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuspectChange {
    /// `openshift/cluster-image-registry-operator`.
    pub repository: String,
    /// The pull request's number; 0 for a commit outside the payload.
    pub number: u64,
    pub url: String,
    pub title: String,
    /// Its repository belongs to the attributed component (or the platform's): ranked first.
    pub component_match: bool,
    /// The SHA of a commit outside the payload; None for a payload's pull request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// When that commit merged (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_at: Option<i64>,
    /// Why it ranks where it does, in words (for a commit outside the payload).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

impl SuspectChange {
    /// `openshift/image-registry#912`, or `openshift-metal3/dev-scripts@1a2b3c4` for a commit.
    pub fn reference(&self) -> String {
        match &self.commit {
            Some(sha) => format!(
                "{}@{}",
                self.repository,
                sha.chars().take(7).collect::<String>()
            ),
            None => format!("{}#{}", self.repository, self.number),
        }
    }
}

/// One spell of an incident's regression: its onset and, once it is over, when it recovered
/// (the first run back at the reference).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Episode {
    pub onset: Onset,
    #[serde(default)]
    pub recovered_at: Option<DateTime<Utc>>,
}

/// One percentile now and in the reference.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PercentilePair {
    pub now: Option<f64>,
    pub baseline: Option<f64>,
}

/// The control backend's verdict on the same runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlEvidence {
    pub backend: String,
    pub percentile: Percentile,
    pub now: Option<f64>,
    pub baseline: Option<f64>,
    pub runs: u64,
    pub healthy: bool,
}

/// One ClusterOperator condition's case for being behind the outages, ranked by `score`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConditionEvidence {
    pub operator: String,
    pub condition: String,
    pub status: String,
    /// The most common reason and message while it overlapped outages.
    pub reason: String,
    pub message: String,
    /// Share of all outage seconds (of the regressed runs) its spans cover.
    pub covered_share: f64,
    /// Regressed runs where it overlapped an outage, of `runs`.
    pub runs_with: usize,
    pub runs: usize,
    /// Healthy runs where it appears at all, of `healthy_runs`.
    pub healthy_with: usize,
    pub healthy_runs: usize,
    pub score: f64,
}

impl ConditionEvidence {
    /// `image-registry Available=False`
    pub fn label(&self) -> String {
        format!("{} {}={}", self.operator, self.condition, self.status)
    }
}

/// Whom a regression belongs to, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// The component it is filed against.
    pub component: String,
    /// The platform, when the regression is specific to one.
    pub platform: Option<String>,
    /// The platform's own component, a second owner of a platform-specific regression.
    pub platform_component: Option<String>,
    /// Every owner: the backend's component, then the platform's.
    pub owners: Vec<String>,
    pub file_against: FileAgainst,
    /// The scope in words: "metal 4.14", "4.14, every platform, network=ovn".
    pub scope: String,
    /// A short plain-language account, said from the report
    /// (`words::regression::summary`).
    pub summary: String,
    /// What it does not depend on: "not specific to a network plugin: ovn and sdn both regressed".
    pub independence: Vec<String>,
    /// `dimension=value` whose own runs were too few to tell.
    pub thin_evidence: Vec<String>,
    /// The control backend on the same runs.
    pub control: Option<ControlEvidence>,
    /// Operator conditions that covered the outages, strongest first.
    pub conditions: Vec<ConditionEvidence>,
    pub confidence: Confidence,
    /// Whether the scope separates the regressed cells from every healthy one (else it is as
    /// narrow as the data allow). None in attributions stored before it was kept, whose
    /// evidence lines say it: read it with [`Attribution::separates`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separates: Option<bool>,
    /// The evidence lines, said from the report (`words::regression::evidence`).
    pub evidence: Vec<String>,
    /// Runs whose interval evidence could not be fetched yet (on-demand evidence): the
    /// conditions are filled in by a later cycle.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub evidence_pending: usize,
    /// Runs whose interval files were read for the conditions, the pending among them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub evidence_read: usize,
    /// How the outages come about, from the sample runs' timelines (None before any was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<Mechanism>,
    /// The repository of the CI harness to file against when the cause is the test environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    /// The other platforms of the release that stayed healthy over the same payloads (or the
    /// same days), for a platform-specific regression.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contrast: Vec<PlatformContrast>,
}

impl Attribution {
    /// Whether the scope separates the regressed cells from every healthy one. An attribution
    /// stored before the answer was kept said it only in an evidence line, in these words
    /// (frozen here: they are what older reports hold, whatever the words say now).
    pub fn separates(&self) -> bool {
        const STORED_NOT_SEPARATED: &str = "no description in dimension values separates";
        self.separates.unwrap_or_else(|| {
            !self
                .evidence
                .iter()
                .any(|l| l.starts_with(STORED_NOT_SEPARATED))
        })
    }
}

/// One platform that did not regress: its judged percentile over its runs of the same
/// payloads as the regressed runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlatformContrast {
    pub platform: String,
    pub seconds: f64,
    pub runs: usize,
    /// Whether the runs are of the regressed runs' payloads (else of the same days).
    pub same_payloads: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A run worth opening, with its link.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SampleJob {
    pub url: String,
    pub job: String,
    pub build_id: String,
    pub seconds: i64,
    pub kind: SampleKind,
    /// A CI-liveness backend was disrupted in this run too: the CI's trouble, not the product's.
    /// Runs judged CI-troubled are never samples now (their class is worked out once, when
    /// stored, against their job's own normal); reports kept from before still say so.
    #[serde(default)]
    pub ci_infrastructure_trouble: bool,
    /// Its variant as people tell runs apart (`ovn · micro`); empty in reports kept from before.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub variant: String,
}

/// One regression: the groups of one backend family with one scope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegressionReport {
    pub fingerprint: String,
    /// Set when the regression covers one backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    pub backends: Vec<String>,
    pub family: String,
    pub component: String,
    pub release: String,
    /// Dimension → value (or values); a dimension left out covers all its values.
    pub scope: Scope,
    /// Dimensions the regression does not depend on (merged over).
    pub not_specific_to: Vec<String>,
    pub percentile: Percentile,
    pub observed_seconds: f64,
    pub threshold_seconds: f64,
    pub threshold_source: String,
    /// The threshold plus the minimum effect: what had to be exceeded.
    pub allowed_seconds: f64,
    pub baseline_seconds: Option<f64>,
    pub job_runs: u64,
    /// The numbers are those of the runs of the last so many days (a regression that began
    /// inside the window); null: of the whole window.
    #[serde(default)]
    pub span_days: Option<u32>,
    /// Runs of the scope in the window left out for CI-infrastructure trouble.
    #[serde(default)]
    pub ci_troubled_runs: u64,
    pub baseline_runs: u64,
    pub p_value: f64,
    pub q_value: f64,
    pub percentiles: BTreeMap<Percentile, PercentilePair>,
    pub attribution: Attribution,
    pub sample_jobs: Vec<SampleJob>,
    pub status: Status,
    pub since: Option<DateTime<Utc>>,
    pub groups: Vec<String>,
    /// The regression's percentile week by week (the last eight weeks, oldest first), for
    /// the sparkline in messages.
    #[serde(default)]
    pub weekly: Vec<Option<f64>>,
    /// When it began (the change point of its scope's runs).
    #[serde(default)]
    pub onset: Option<Onset>,
    /// When it recovered, for a resolved regression (the first run back at the reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered_at: Option<DateTime<Utc>>,
    /// The last run of its scope that reported its backends, when the scope's runs since no
    /// longer do (origin skips a monitor it cannot judge): not a recovery, nor a data gap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_data_since: Option<DateTime<Utc>>,
    /// The runs of the scope since `no_data_since` that no longer report its backends.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub no_data_runs: usize,
    /// The pull requests between the last good and first bad payloads, the component's first.
    #[serde(default)]
    pub suspect_changes: Vec<SuspectChange>,
    /// The changes could not be read yet (release controller unreachable): a later cycle tries.
    #[serde(default)]
    pub changes_pending: bool,
    /// The commits outside the payload could not be read yet (GitHub unreachable or rate
    /// limited): a later cycle tries.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_pending: bool,
    /// What the runs after the incident's claimed fix say, when a fix was claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<super::Verification>,
}

impl RegressionReport {
    /// The strongest correlated condition, `operator Condition=Status`, or empty.
    pub fn top_condition(&self) -> String {
        self.attribution
            .conditions
            .first()
            .map(ConditionEvidence::label)
            .unwrap_or_default()
    }
}
