//! A job run, its disruption samples, and the intervals kept as evidence.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::Dimensions;

/// One execution of a CI job, identified by its job name and Prow build id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRun {
    pub job_name: String,
    pub build_id: String,
    /// GCS bucket the artifacts live in (`test-platform-results`, …).
    pub bucket: String,
    /// Path of the run folder inside the bucket, e.g. `logs/<job>/<build-id>`.
    pub path: String,
    /// The human link: `https://prow.ci.openshift.org/view/gs/<bucket>/<path>`.
    pub url: String,
    /// `periodic`, `presubmit`, `postsubmit` or `batch`.
    pub job_type: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// `success`, `failure`, `aborted`, `error`, …
    pub state: String,
    pub dimensions: Dimensions,
    /// The release payload tested, or upgraded to (`4.14.0-0.nightly-2023-09-01-123456`);
    /// empty when the run does not say.
    #[serde(default)]
    pub payload: String,
    /// The payload an upgrade started from, when known.
    #[serde(default)]
    pub from_payload: String,
}

/// When a payload was built, from its tag: nightly and CI tags end in their creation time
/// (`4.14.0-0.nightly-2023-09-01-123456` was built 2023-09-01 12:34:56 UTC). Other tags (a
/// z-stream `4.14.3`) carry none.
pub fn payload_time(tag: &str) -> Option<DateTime<Utc>> {
    let tail = tag.get(tag.len().checked_sub(17)?..)?;
    let naive = chrono::NaiveDateTime::parse_from_str(tail, "%Y-%m-%d-%H%M%S").ok()?;
    tag[..tag.len() - 17]
        .ends_with('-')
        .then(|| naive.and_utc())
}

impl JobRun {
    pub fn prow_url(bucket: &str, path: &str) -> String {
        format!("https://prow.ci.openshift.org/view/gs/{bucket}/{path}")
    }
}

/// One (run, backend) pair: the run's total disruption of that backend in whole seconds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Sample {
    /// The full backend name, e.g. `image-registry-new-connections`.
    pub backend: String,
    /// `new`, `reused`, or empty when the writer did not say.
    pub connection: String,
    pub seconds: i64,
}

/// One disruption outage of a backend, from an interval file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outage {
    pub backend: String,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// A ClusterOperator condition that was bad for a while (a zero-length span is an instant).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConditionSpan {
    pub operator: String,
    /// `Available`, `Degraded` or `Progressing`.
    pub condition: String,
    /// `True` or `False`.
    pub status: String,
    pub reason: String,
    pub message: String,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// Everything stored for one run, as ingest produces it and the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    pub run: JobRun,
    pub samples: Vec<Sample>,
    pub outages: Vec<Outage>,
    pub conditions: Vec<ConditionSpan>,
    /// Interval files not read yet (on-demand evidence): while any is listed, `outages` and
    /// `conditions` are not known; attribution fetches them when it uses the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interval_files: Vec<IntervalFile>,
    /// What happened around the outages: node drains and reboots, the watched namespaces' pods
    /// while ready, VIP moves, etcd leader changes, and the outages themselves, each with the
    /// interval it came from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelineSpan>,
}

/// Which kind of happening a [`TimelineSpan`] records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// A backend's outage; `subject` is the backend.
    Outage,
    /// A node being drained (`subject` the node).
    NodeDrain,
    /// A node updating its OS, rebooting or not ready (`subject` the node).
    NodeDown,
    /// A pod of a watched namespace while ready: `subject` is `namespace/pod`, `node` where it ran.
    PodReady,
    /// A node's load balancer taking a VIP (`subject` the VIP, `node` the node taking it).
    VipMoved,
    /// etcd electing a new leader (`node` the new leader).
    EtcdLeaderChange,
}

impl SpanKind {
    pub const ALL: [SpanKind; 6] = [
        SpanKind::Outage,
        SpanKind::NodeDrain,
        SpanKind::NodeDown,
        SpanKind::PodReady,
        SpanKind::VipMoved,
        SpanKind::EtcdLeaderChange,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SpanKind::Outage => "outage",
            SpanKind::NodeDrain => "node_drain",
            SpanKind::NodeDown => "node_down",
            SpanKind::PodReady => "pod_ready",
            SpanKind::VipMoved => "vip_moved",
            SpanKind::EtcdLeaderChange => "etcd_leader_change",
        }
    }

    pub fn parse(s: &str) -> Option<SpanKind> {
        SpanKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Where an interval is: the file it was read from and its index in the file's `items`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct IntervalRef {
    pub file: String,
    pub item: u32,
}

/// One happening of a run's timeline (an instant when `from == to`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineSpan {
    pub kind: SpanKind,
    pub subject: String,
    /// The node it happened on, where that is known (a pod's node, the node taking a VIP).
    #[serde(default)]
    pub node: String,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub at: IntervalRef,
}

/// An interval file left where it is at ingest: `gs://bucket/object` or a local path, and its
/// size in bytes as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntervalFile {
    pub location: String,
    pub size: u64,
}

/// One run of one cell, as a series point and a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellRun {
    pub backend: Arc<str>,
    pub variant_id: i64,
    pub started: i64,
    pub seconds: i64,
    pub job: Arc<str>,
    pub build_id: Arc<str>,
    pub url: Arc<str>,
    /// The payload it tested (empty when unknown), and when that payload was built.
    pub payload: Arc<str>,
    pub payload_at: Option<i64>,
}
