//! The world's calibration and truth, checked.

use super::*;
use crate::model::Dimension;

fn end() -> DateTime<Utc> {
    crate::synth::day(2026, 11, 29)
}

fn world(classes: &[Class], density: f64) -> World {
    let mut spec = WorldSpec::new(11, end(), classes.to_vec());
    spec.density = density;
    build(&spec).unwrap()
}

#[test]
fn the_same_seed_gives_the_same_world() {
    let a = world(&[Class::SeedCase, Class::CiInfra], 12.0);
    let b = world(&[Class::SeedCase, Class::CiInfra], 12.0);
    assert_eq!(a.records, b.records);
    assert_eq!(a.truth, b.truth);
}

#[test]
fn a_world_is_a_few_thousand_runs_of_about_45_jobs_over_28_days() {
    let w = world(&Class::ALL, 12.0);
    assert!(
        (2_000..6_000).contains(&w.records.len()),
        "{} runs",
        w.records.len()
    );
    assert!((40..=50).contains(&w.jobs.len()), "{} jobs", w.jobs.len());
    let backends: BTreeSet<&str> = w
        .records
        .iter()
        .flat_map(|r| r.samples.iter().map(|s| s.backend.as_str()))
        .collect();
    assert_eq!(backends.len(), 24);
    assert!(
        w.records
            .iter()
            .all(|r| r.run.started_at >= w.spec.start() && r.run.started_at < w.spec.end)
    );
    let failed = w.truth.iter().filter(|t| t.install_failure).count() as f64 / w.truth.len() as f64;
    assert!((0.015..0.05).contains(&failed), "{failed}");
    assert!(
        w.records
            .iter()
            .zip(&w.truth)
            .all(|(r, t)| r.samples.is_empty() == t.install_failure)
    );
}

#[test]
fn metal_gcp_network_liveness_is_down_in_most_metal_runs_and_up_elsewhere() {
    let w = world(&[Class::Quiet], 12.0);
    let probe = |r: &RunRecord| {
        r.samples
            .iter()
            .find(|s| s.backend == "gcp-network-liveness-new-connections")
            .map(|s| s.seconds)
    };
    let measured: Vec<(&RunRecord, i64)> = w
        .records
        .iter()
        .filter_map(|r| Some((r, probe(r)?)))
        .collect();
    let metal: Vec<i64> = measured
        .iter()
        .filter(|(r, _)| r.run.dimensions.platform == "metal")
        .map(|(_, s)| *s)
        .collect();
    assert!(metal.len() > 50);
    assert!(metal.iter().filter(|s| **s > 1000).count() as f64 > 0.9 * metal.len() as f64);
    let aws_down = measured
        .iter()
        .filter(|(r, s)| r.run.dimensions.platform == "aws" && *s > 300)
        .count();
    assert_eq!(aws_down, 0);
}

#[test]
fn a_quiet_world_has_no_planted_truth() {
    let w = world(&[Class::Quiet], 12.0);
    assert!(w.plants.is_empty() && w.decoys.is_empty());
    assert!(
        w.truth
            .iter()
            .all(|t| t.plant.is_none() && t.decoy.is_none())
    );
    // the quirks are there: a CI spell for everyone, install failures
    assert_eq!(w.spells.len(), 1);
    assert!(w.truth.iter().any(|t| t.ci_trouble.is_some()));
}

#[test]
fn the_seed_case_hits_85_percent_of_metal_runs_of_its_last_week_and_leaves_the_console_alone() {
    let w = world(&[Class::SeedCase], 12.0);
    let p = &w.plants[0];
    let onset = p.parts[0].onset_at.unwrap();
    assert!(
        onset >= w.spec.end - Duration::days(7) && onset < w.spec.end - Duration::days(6),
        "{onset}"
    );
    let bad: Vec<&RunTruth> = w
        .truth
        .iter()
        .filter(|t| t.dims.platform == "metal" && t.dims.release == "4.15" && !t.install_failure)
        .filter(|t| t.payload_index >= p.parts[0].first_bad.index)
        .collect();
    let hit = bad.iter().filter(|t| t.plant == Some(p.id)).count() as f64 / bad.len() as f64;
    assert!((0.75..0.95).contains(&hit), "{hit} of {}", bad.len());
    let per_day = w
        .truth
        .iter()
        .filter(|t| t.dims.platform == "metal" && t.dims.release == "4.15")
        .count() as f64
        / 28.0;
    assert!((10.0..14.0).contains(&per_day), "{per_day}");
    for (r, t) in w
        .records
        .iter()
        .zip(&w.truth)
        .filter(|(_, t)| t.plant == Some(p.id))
    {
        let s = |b: &str| r.samples.iter().find(|s| s.backend == b).unwrap().seconds;
        assert!((12..=45).contains(&s("image-registry-new-connections")) || t.ci_trouble.is_some());
    }
    let networks: BTreeSet<&str> = bad
        .iter()
        .filter(|t| t.plant.is_some())
        .map(|t| t.dims.network.as_str())
        .collect();
    let upgrades: BTreeSet<&str> = bad
        .iter()
        .filter(|t| t.plant.is_some())
        .map(|t| t.dims.upgrade_type.as_str())
        .collect();
    assert_eq!((networks.len(), upgrades.len()), (2, 2));
}

#[test]
fn a_growing_regression_reaches_sdn_three_days_after_ovn_and_a_fix_ends_onset_fix() {
    let w = world(&[Class::Growing, Class::OnsetFix], 6.0);
    let growing = w.plants.iter().find(|p| p.class == Class::Growing).unwrap();
    let (ovn, sdn) = (&growing.parts[0], &growing.parts[1]);
    assert_eq!(ovn.scope.single(Dimension::Network), Some("ovn"));
    assert!(sdn.first_bad.built >= ovn.first_bad.built + Duration::days(3));
    assert!(sdn.onset_at.unwrap() > ovn.onset_at.unwrap());
    let fixed = w
        .plants
        .iter()
        .find(|p| p.class == Class::OnsetFix)
        .unwrap();
    let fix = fixed.fix.as_ref().unwrap();
    assert!(fixed.fix_first_run.is_some());
    assert!(
        w.truth
            .iter()
            .filter(|t| t.plant == Some(fixed.id))
            .all(|t| t.payload_index < fix.index)
    );
}

#[test]
fn the_untested_onset_payload_is_never_tested_by_its_scope() {
    let w = world(&[Class::UntestedOnset], 12.0);
    let p = &w.plants[0];
    let onset = &p.parts[0].first_bad;
    let scope_runs = w
        .truth
        .iter()
        .filter(|t| p.parts[0].scope.contains(&t.dims));
    assert!(scope_runs.clone().count() > 100);
    assert!(scope_runs.clone().all(|t| t.payload != onset.tag));
    // other scopes of the release do test it
    assert!(w.truth.iter().any(|t| t.payload == onset.tag));
}

#[test]
fn ci_trouble_disrupts_the_liveness_probe_and_most_backends_together() {
    let w = world(&[Class::CiInfra], 12.0);
    let troubled: Vec<(&RunRecord, &RunTruth)> = w
        .records
        .iter()
        .zip(&w.truth)
        .filter(|(_, t)| t.ci_trouble.is_some())
        .collect();
    assert!(troubled.len() >= 10, "{}", troubled.len());
    for (r, _) in troubled {
        let live = r
            .samples
            .iter()
            .find(|s| s.backend == "ci-cluster-network-liveness-new-connections")
            .unwrap();
        assert!(live.seconds >= 20);
        let disrupted = r.samples.iter().filter(|s| s.seconds >= 20).count();
        assert!(
            disrupted * 2 > r.samples.len(),
            "{disrupted} of {}",
            r.samples.len()
        );
    }
}

#[test]
fn the_new_arm64_job_is_sparse_recent_and_high() {
    let w = world(&[Class::NewJob], 12.0);
    let runs: Vec<&RunTruth> = w
        .truth
        .iter()
        .filter(|t| t.job == jobs::NEW_ARM64_JOB)
        .collect();
    assert!((3..=5).contains(&runs.len()), "{}", runs.len());
    assert!(
        runs.iter()
            .all(|t| t.started >= w.spec.end - Duration::days(2))
    );
    assert!(
        runs.iter()
            .filter(|t| !t.install_failure)
            .all(|t| t.decoy == Some(Class::NewJob))
    );
}
