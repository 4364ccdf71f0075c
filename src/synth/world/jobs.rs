//! The world's CI jobs: real job-name shapes over releases 4.13–4.15 (the job-name rules derive
//! their dimensions), each running as often as the table's JobRuns say, scaled.

use super::table::Table;
use super::{Class, WorldSpec};
use crate::model::Dimensions;
use crate::model::job_name::{dimensions_from_job_name, parse_release};

/// A job of the world and how often it runs.
#[derive(Debug, Clone)]
pub struct WorldJob {
    pub name: String,
    /// What ingest makes of its runs (MasterNodesUpdated from cluster-data, from 4.14 on).
    pub dims: Dimensions,
    pub per_day: f64,
    /// The first day (0-based) it runs, and the first it no longer does.
    pub from_day: u32,
    pub until_day: Option<u32>,
    pub max_runs: Option<usize>,
}

/// The arm64 job the `new_job` decoy adds: a cell no other job has, joining the coarser group
/// of 4.15 arm64 ovn upgrades.
pub const NEW_ARM64_JOB: &str = "periodic-ci-openshift-release-master-nightly-4.15-upgrade-from-stable-4.14-e2e-gcp-ovn-upgrade-arm64";

const P: &str = "periodic-ci-openshift-release-master";

/// The job names of a release (prev is the release before it).
fn names(release: &str, prev: &str) -> Vec<String> {
    let ci = |t: &str| format!("{P}-ci-{release}-{t}");
    let nightly = |t: &str| format!("{P}-nightly-{release}-{t}");
    let minor =
        |kind: &str, t: &str| format!("{P}-{kind}-{release}-upgrade-from-stable-{prev}-{t}");
    let mut out = vec![
        ci("e2e-aws-ovn-upgrade"),
        ci("e2e-gcp-ovn-upgrade"),
        ci("e2e-azure-sdn-upgrade"),
        minor("ci", "e2e-azure-ovn-upgrade"),
        nightly("e2e-vsphere-ovn-upgrade"),
        nightly("e2e-metal-ipi-ovn-upgrade"),
        nightly("e2e-metal-ipi-sdn-upgrade"),
        minor("nightly", "e2e-metal-ipi-ovn-upgrade"),
        minor("nightly", "e2e-metal-ipi-sdn-bm-upgrade"),
    ];
    if release == "4.13" {
        out.push(minor("ci", "e2e-aws-sdn-upgrade"));
        return out;
    }
    out.extend([
        minor("ci", "e2e-aws-ovn-upgrade"),
        minor("ci", "e2e-gcp-ovn-upgrade"),
        nightly("e2e-aws-ovn-upgrade-single-node"),
        nightly("e2e-metal-ipi-upgrade-ovn-ipv6"),
        minor("nightly", "e2e-aws-sdn-upgrade-arm64"),
    ]);
    if release == "4.15" {
        out.extend([
            ci("e2e-azure-ovn-upgrade"),
            minor("ci", "e2e-azure-sdn-upgrade"),
            minor("ci", "e2e-aws-sdn-upgrade"),
            nightly("e2e-metal-ipi-upgrade-ovn-dualstack"),
            nightly("e2e-aws-ovn-upgrade-arm64"),
            nightly("e2e-gcp-ovn-upgrade-arm64"),
        ]);
    }
    out
}

/// What ingest stores for a job's runs: the job-name dimensions, and MasterNodesUpdated as the
/// cluster-data files of 4.14+ runs say it (4.13 runs have none).
pub fn stored_dimensions(job: &str) -> Dimensions {
    let mut d = dimensions_from_job_name(job);
    let has_cluster_data = parse_release(&d.release).is_some_and(|r| r >= (4, 14));
    d.master_nodes_updated = if has_cluster_data && d.upgrade_type != "none" {
        "Y".into()
    } else {
        String::new()
    };
    d
}

/// Runs a day of a cell in real CI: its `kube-api-new-connections` row's JobRuns over a month.
fn table_rate(table: &Table, dims: &Dimensions) -> f64 {
    table
        .nearest("kube-api-new-connections", dims)
        .and_then(|r| r.job_runs)
        .unwrap_or(4) as f64
        / 30.0
}

/// The world's jobs. Rates come from the table times `spec.scale`; the metal jobs of a release
/// with a planted metal regression together run `spec.density` times a day (the density knob);
/// one vsphere job starts late (no history) and one 4.13 job stops early; `new_job` adds its
/// arm64 job for the last two days.
pub fn jobs(spec: &WorldSpec, table: &Table, dense_metal: &[&str]) -> Vec<WorldJob> {
    let days = spec.days;
    let mut out = Vec::new();
    for (release, prev) in [("4.13", "4.12"), ("4.14", "4.13"), ("4.15", "4.14")] {
        for name in names(release, prev) {
            let dims = stored_dimensions(&name);
            let per_day = table_rate(table, &dims) * spec.scale;
            let from_day = if name.contains("4.14-e2e-vsphere") {
                days.saturating_sub(9)
            } else {
                0
            };
            let until_day = name
                .contains("4.13-upgrade-from-stable-4.12-e2e-aws-sdn")
                .then(|| days.saturating_sub(10));
            out.push(WorldJob {
                name,
                dims,
                per_day,
                from_day,
                until_day,
                max_runs: None,
            });
        }
    }

    for release in dense_metal {
        densify_metal(&mut out, release, spec.density);
    }

    if spec.classes.contains(&Class::NewJob) {
        out.push(WorldJob {
            name: NEW_ARM64_JOB.into(),
            dims: stored_dimensions(NEW_ARM64_JOB),
            per_day: 3.0,
            from_day: days.saturating_sub(2),
            until_day: None,
            max_runs: Some(5),
        });
    }

    out
}

/// Scales the metal jobs of `release` so that together they run `per_day` times a day, keeping
/// their proportions (the IPv6 and dual-stack jobs stay the sparse ones).
fn densify_metal(jobs: &mut [WorldJob], release: &str, per_day: f64) {
    let of_scope = |j: &WorldJob| j.dims.platform == "metal" && j.dims.release == release;
    let weight = |j: &WorldJob| {
        if j.dims.network_stack == "ipv4" {
            j.per_day
        } else {
            j.per_day * 0.5
        }
    };
    let total: f64 = jobs.iter().filter(|j| of_scope(j)).map(weight).sum();
    if total <= 0.0 {
        return;
    }
    for j in jobs.iter_mut().filter(|j| of_scope(j)) {
        j.per_day = weight(j) / total * per_day;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names_derive_the_intended_dimensions() {
        let spec = WorldSpec::new(1, crate::synth::day(2026, 11, 29), vec![Class::NewJob]);
        let table = Table::embedded().unwrap();
        let jobs = jobs(&spec, &table, &["4.15"]);
        assert!((40..=50).contains(&jobs.len()), "{}", jobs.len());
        let has = |f: &dyn Fn(&Dimensions) -> bool| jobs.iter().any(|j| f(&j.dims));
        assert!(has(&|d| d.platform == "metal" && d.network_stack == "ipv6"));
        assert!(has(&|d| d.platform == "metal" && d.network_stack == "dual"));
        assert!(has(
            &|d| d.architecture == "arm64" && d.upgrade_type == "minor"
        ));
        assert!(has(&|d| d.topology == "single"));
        assert!(has(
            &|d| d.release == "4.13" && d.master_nodes_updated.is_empty()
        ));
        assert!(
            jobs.iter()
                .all(|j| ["micro", "minor"].contains(&j.dims.upgrade_type.as_str()))
        );
        let metal: f64 = jobs
            .iter()
            .filter(|j| j.dims.platform == "metal" && j.dims.release == "4.15")
            .map(|j| j.per_day)
            .sum();
        assert!((metal - spec.density).abs() < 1e-9);
        let new = jobs.iter().find(|j| j.name == NEW_ARM64_JOB).unwrap();
        assert_eq!(
            (new.dims.release.as_str(), new.dims.architecture.as_str()),
            ("4.15", "arm64")
        );
    }
}
