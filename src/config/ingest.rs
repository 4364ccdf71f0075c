//! `[ingest]`: how runs are read: interval files, size limits, parallelism, the push API.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Secret;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IngestSettings {
    /// When interval files are read: `auto` (on demand for `gs://` sources, at ingest for
    /// local trees), `eager` (at ingest) or `on_demand` (only where a file is, at ingest; its
    /// content when attribution uses the run). `bigquery`: runs from a `bq://` source read
    /// their intervals on demand from the dataset's intervals table (`bigquery.intervals_table`);
    /// bucket sources as `auto`. Pushed runs are always read at ingest.
    pub intervals: IntervalsMode,
    /// Interval files (e2e-events, e2e-timelines) larger than this are skipped with a logged reason.
    pub max_interval_file_bytes: u64,
    /// Any other artifact larger than this is rejected as malformed.
    pub max_file_bytes: u64,
    /// Runs read in parallel.
    pub concurrency: usize,
    /// Bearer token that `POST /api/v1/runs` requires. Environment or file only; without one
    /// the push API is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_token_file: Option<PathBuf>,
    /// A push's storing (the run and its ingest log) is given up after this many seconds: the
    /// pusher gets 503 "storage unavailable, retry later" at once rather than a 408 when the
    /// database hangs.
    pub push_store_timeout_secs: u64,
    /// Pushes read and stored at once, at most: each holds its body (up to
    /// `server.max_body_bytes`) and the files decoded from it, so memory is bounded by this many
    /// bodies rather than by how many CI systems push together; one more is answered 503 with
    /// `Retry-After`.
    pub push_concurrency: usize,
}

/// When a run's interval files are read: see [`IngestSettings::intervals`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalsMode {
    #[default]
    Auto,
    Eager,
    OnDemand,
    /// From the BigQuery intervals table, on demand, for runs read from BigQuery.
    Bigquery,
}

impl IntervalsMode {
    /// Whether a source's interval files are left to be fetched on demand.
    pub fn on_demand(self, gcs_source: bool) -> bool {
        match self {
            IntervalsMode::Auto | IntervalsMode::Bigquery => gcs_source,
            IntervalsMode::Eager => false,
            IntervalsMode::OnDemand => true,
        }
    }
}

impl Default for IngestSettings {
    fn default() -> Self {
        Self {
            intervals: IntervalsMode::Auto,
            max_interval_file_bytes: 64 * 1024 * 1024,
            max_file_bytes: 8 * 1024 * 1024,
            concurrency: 8,
            push_token: None,
            push_token_file: None,
            push_store_timeout_secs: 10,
            push_concurrency: 4,
        }
    }
}
