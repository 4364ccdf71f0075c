//! Data-quality findings: what a cycle saw in the data that is not a regression, said once so
//! that a person knows why some signal was not used. Pure.

use serde::Serialize;

use super::{Scope, secs};

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

impl BrokenProbe {
    /// "gcp-network-liveness is down for whole runs on 4.15 metal amd64 (26 of 34 runs, median
    /// 4210s, 3 jobs); not used to judge those runs".
    pub fn summary(&self) -> String {
        let whole = if self.median_seconds >= 600.0 {
            "down for whole runs"
        } else {
            "down in most runs"
        };
        let jobs = if self.jobs.len() == 1 {
            "1 job".to_string()
        } else {
            format!("{} jobs", self.jobs.len())
        };
        format!(
            "{} is {whole} on {} ({} of {} runs, median {}, {jobs}); not used to judge those runs",
            self.probe,
            self.scope.values_in_words(),
            self.down,
            self.runs,
            secs(self.median_seconds),
        )
    }
}

impl NewJob {
    /// "new job …: 5 runs, no reference yet".
    pub fn summary(&self) -> String {
        format!(
            "new job {} ({}): {} run{} since {}, no reference yet; judged once it has one",
            self.job,
            self.scope.values_in_words(),
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            self.first_run.get(..10).unwrap_or(&self.first_run),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Dimension;

    #[test]
    fn a_broken_probe_is_said_in_one_sentence() {
        let mut scope = Scope::new();
        scope.set(Dimension::Release, ["4.15"]);
        scope.set(Dimension::Platform, ["metal"]);
        scope.set(Dimension::Architecture, ["amd64"]);
        let p = BrokenProbe {
            probe: "gcp-network-liveness".into(),
            scope,
            jobs: vec!["a".into(), "b".into(), "c".into()],
            runs: 34,
            down: 26,
            median_seconds: 4210.0,
        };
        assert_eq!(
            p.summary(),
            "gcp-network-liveness is down for whole runs on 4.15 metal amd64 (26 of 34 runs, median 4210s, 3 jobs); not used to judge those runs"
        );
    }
}
