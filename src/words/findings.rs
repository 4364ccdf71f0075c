//! What a cycle saw in the data that is not a regression, in one sentence each: a probe broken
//! on some jobs, a job too new to have a reference.

use crate::model::secs;
use crate::model::{BrokenProbe, NewJob};

/// "gcp-network-liveness is down for whole runs on 4.15 metal amd64 (26 of 34 runs, median
/// 4210s, 3 jobs); not used to judge those runs".
pub fn broken_probe(p: &BrokenProbe) -> String {
    let whole = if p.median_seconds >= 600.0 {
        "down for whole runs"
    } else {
        "down in most runs"
    };
    let jobs = if p.jobs.len() == 1 {
        "1 job".to_string()
    } else {
        format!("{} jobs", p.jobs.len())
    };
    format!(
        "{} is {whole} on {} ({} of {} runs, median {}, {jobs}); not used to judge those runs",
        p.probe,
        p.scope.values_in_words(),
        p.down,
        p.runs,
        secs(p.median_seconds),
    )
}

/// "new job …: 5 runs, no reference yet".
pub fn new_job(j: &NewJob) -> String {
    format!(
        "new job {} ({}): {} run{} since {}, no reference yet; judged once it has one",
        j.job,
        j.scope.values_in_words(),
        j.runs,
        if j.runs == 1 { "" } else { "s" },
        j.first_run.get(..10).unwrap_or(&j.first_run),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Dimension, Scope};

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
            broken_probe(&p),
            "gcp-network-liveness is down for whole runs on 4.15 metal amd64 (26 of 34 runs, median 4210s, 3 jobs); not used to judge those runs"
        );
    }
}
