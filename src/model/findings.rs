//! Data-quality findings: what a cycle saw in the data that is not a regression, said once so
//! that a person knows why some signal was not used. Pure.

use serde::Serialize;

use super::Scope;

/// A probe broken on some jobs: down beyond its allowance in most of their runs, so it says
/// nothing about any one of them and is not used to leave their runs out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrokenProbe {
    /// The probe's family, e.g. `gcp-network-liveness`.
    pub probe: String,
    /// Release, platform and architecture of the jobs.
    pub scope: Scope,
    pub jobs: Vec<String>,
    /// Their runs in the window that reported the probe, and of those the ones it was down in.
    pub runs: u64,
    pub down: u64,
    /// The probe's median seconds over those runs.
    pub median_seconds: f64,
}

/// A job with runs in the window but none in the reference: its level is its own, not a change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewJob {
    pub job: String,
    pub scope: Scope,
    /// Its runs in the window.
    pub runs: u64,
    /// When its first stored run started (RFC 3339).
    pub first_run: String,
}

/// Everything a cycle says about the data itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DataQuality {
    pub broken_probes: Vec<BrokenProbe>,
    pub new_jobs: Vec<NewJob>,
}

impl DataQuality {
    pub fn is_empty(&self) -> bool {
        self.broken_probes.is_empty() && self.new_jobs.is_empty()
    }
}
