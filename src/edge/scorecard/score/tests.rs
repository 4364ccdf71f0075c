//! The scoring rules on hand-made reports over a real generated world.

use chrono::Duration;

use super::*;
use crate::model::{Dimension, Onset, SampleJob, SampleKind, Status};
use crate::synth::example_report;
use crate::synth::world::{WorldSpec, build};

fn world(classes: &[Class]) -> World {
    build(&WorldSpec::new(
        3,
        crate::synth::day(2026, 11, 29),
        classes.to_vec(),
    ))
    .unwrap()
}

fn scope(pairs: &[(Dimension, &[&str])]) -> Scope {
    let mut s = Scope::new();
    for (d, v) in pairs {
        s.set(*d, v.iter().copied());
    }
    s
}

fn metal_415() -> Scope {
    scope(&[
        (Dimension::Release, &["4.15"]),
        (Dimension::Platform, &["metal"]),
    ])
}

/// A report of `family` on `scope`, listing `samples` as its sample runs.
fn report(family: &str, scope: Scope, samples: &[&RunTruth]) -> RegressionReport {
    let mut r = example_report(scope, 30.0, 2.0);
    r.family = family.into();
    r.fingerprint = format!("{family}:{}", r.scope.describe());
    r.sample_jobs = samples
        .iter()
        .map(|t| SampleJob {
            url: String::new(),
            job: t.job.clone(),
            build_id: t.build_id.clone(),
            seconds: 30,
            kind: SampleKind::Worst,
            ci_infrastructure_trouble: false,
            variant: String::new(),
        })
        .collect();
    r
}

/// Cycles every 6 hours from `from` to the world's end, each reporting `reports` (or nothing
/// after `until`).
fn cycles(
    w: &World,
    from: DateTime<Utc>,
    until: DateTime<Utc>,
    reports: &[RegressionReport],
) -> Observed {
    let mut at = w.spec.start() + Duration::days(14);
    let mut out = Observed::default();
    while at < w.spec.end {
        let now = if at >= from && at < until {
            reports.to_vec()
        } else {
            Vec::new()
        };
        out.cycles.push((at, now));
        at += Duration::hours(6);
    }
    out
}

fn hit_runs(w: &World, plant: usize) -> Vec<&RunTruth> {
    w.truth
        .iter()
        .filter(|t| t.plant == Some(plant) && t.ci_trouble.is_none())
        .take(3)
        .collect()
}

#[test]
fn the_seed_case_reported_on_metal_is_detected_with_exact_scope_and_pure_samples() {
    let w = world(&[Class::SeedCase]);
    let p = &w.plants[0];
    let onset = p.parts[0].onset_at.unwrap();
    let r = report("image-registry", metal_415(), &hit_runs(&w, p.id));
    let observed = cycles(&w, onset + Duration::hours(20), w.spec.end, &[r]);
    let s = score_plant(&w, p, &observed);
    assert!(s.detected && s.exact_scope, "{s:?}");
    let d = s.detection_days.unwrap();
    assert!((0.8..1.1).contains(&d), "{d}");
    assert_eq!((s.samples, s.pure_samples), (3, 3));
    let ws = score_world(&w, &observed);
    assert_eq!(
        (ws.reported, ws.matched, ws.false_regressions.len()),
        (1, 1, 0)
    );
}

#[test]
fn the_lag_to_the_first_disrupted_run_is_measured_from_the_first_bad_run() {
    let mut w = world(&[Class::Growing]);
    let p = w.plants[0].clone();
    let onset = p.parts[0].onset_at.unwrap();
    // the plant's hit runs by start; the first one is given CI trouble: it is no longer clean
    let mut hits: Vec<usize> = (0..w.truth.len())
        .filter(|&i| w.truth[i].plant == Some(p.id) && w.truth[i].ci_trouble.is_none())
        .collect();
    hits.sort_by_key(|&i| w.truth[i].started);
    assert!(hits.len() > 2, "{}", hits.len());
    w.truth[hits[0]].ci_trouble = Some("CI network lost (one run)".into());
    let first_clean_hit = w.truth[hits[1]].started;
    assert!(
        first_clean_hit > onset,
        "a second hit comes after the first bad run"
    );

    let metal_414 = scope(&[
        (Dimension::Release, &["4.14"]),
        (Dimension::Platform, &["metal"]),
    ]);
    let observed = cycles(
        &w,
        first_clean_hit + Duration::hours(12),
        w.spec.end,
        &[report("image-registry", metal_414, &[])],
    );
    let s = score_plant(&w, &p, &observed);
    let lag = s.first_disrupted_days.unwrap();
    assert!(
        (lag - days(first_clean_hit - onset)).abs() < 1e-9 && lag > 0.0,
        "{s:?}"
    );
    let after = s.detection_days.unwrap() - lag;
    assert!((0.5..0.75).contains(&after), "{after}");

    let mut row = crate::edge::scorecard::ClassSummary::default();
    crate::edge::scorecard::summarize(&mut row, std::iter::once(&s));
    assert_eq!(row.detection_after_disrupted_median_days, Some(after));
    assert_eq!(row.detection_after_disrupted_worst_days, Some(after));
}

#[test]
fn a_growing_regressions_first_part_runs_less_often_than_its_whole_scope() {
    let w = world(&[Class::SeedCase, Class::Growing]);
    let observed = cycles(&w, w.spec.end, w.spec.end, &[]);
    let per_day = |p: &Plant, part: &Part| {
        let n = w
            .truth
            .iter()
            .filter(|t| t.dims.release == p.release && part.scope.contains(&t.dims))
            .count();
        n as f64 / f64::from(w.spec.days)
    };
    for p in &w.plants {
        let s = score_plant(&w, p, &observed);
        assert!(
            (s.first_part_runs_per_day - per_day(p, &p.parts[0])).abs() < 1e-9,
            "{s:?}"
        );
        if p.class == Class::Growing {
            // one network of metal: well under the whole scope, which holds both
            let both = per_day(p, &p.parts[0]) + per_day(p, &p.parts[1]);
            assert!((s.runs_per_day - both).abs() < 1e-9, "{s:?}");
            assert!(
                s.first_part_runs_per_day > 0.0 && s.first_part_runs_per_day < 0.8 * s.runs_per_day,
                "{s:?}"
            );
        } else {
            assert_eq!(s.first_part_runs_per_day, s.runs_per_day, "{s:?}");
        }
    }
    assert_eq!(w.plants.len(), 2);
}

#[test]
fn a_scope_naming_every_network_is_the_same_scope_and_a_narrower_one_is_not_exact() {
    let w = world(&[Class::SeedCase]);
    let p = &w.plants[0];
    let onset = p.parts[0].onset_at.unwrap();
    let mut both = metal_415();
    both.set(Dimension::Network, ["ovn", "sdn"]);
    let exact = score_plant(
        &w,
        p,
        &cycles(
            &w,
            onset,
            w.spec.end,
            &[report("image-registry", both, &[])],
        ),
    );
    assert!(exact.exact_scope, "{exact:?}");
    let mut ovn = metal_415();
    ovn.set(Dimension::Network, ["ovn"]);
    let narrow = score_plant(
        &w,
        p,
        &cycles(&w, onset, w.spec.end, &[report("image-registry", ovn, &[])]),
    );
    assert!(narrow.detected && !narrow.exact_scope);
    let wide = scope(&[(Dimension::Release, &["4.15"])]);
    let too_wide = score_plant(
        &w,
        p,
        &cycles(
            &w,
            onset,
            w.spec.end,
            &[report("image-registry", wide, &[])],
        ),
    );
    assert!(too_wide.detected && !too_wide.exact_scope);
}

#[test]
fn another_family_or_platform_is_not_a_match_and_counts_as_a_false_regression() {
    let w = world(&[Class::SeedCase, Class::NewJob]);
    let p = &w.plants[0];
    let variants = family_variants(&w, "image-registry");
    let console = report("ingress-to-console", metal_415(), &[]);
    assert!(!matches(
        &console,
        p,
        &family_variants(&w, "ingress-to-console")
    ));
    let aws = report(
        "image-registry",
        scope(&[
            (Dimension::Release, &["4.15"]),
            (Dimension::Platform, &["aws"]),
        ]),
        &[],
    );
    assert!(!matches(&aws, p, &variants));
    let arm = report(
        "kube-api",
        scope(&[
            (Dimension::Release, &["4.15"]),
            (Dimension::Architecture, &["arm64"]),
        ]),
        &[],
    );
    let observed = cycles(&w, w.spec.end - Duration::days(1), w.spec.end, &[aws, arm]);
    let ws = score_world(&w, &observed);
    assert_eq!(ws.matched, 0);
    let classes: Vec<Option<Class>> = ws.false_regressions.iter().map(|f| f.class).collect();
    assert_eq!(
        classes,
        vec![None, Some(Class::NewJob)],
        "{:?}",
        ws.false_regressions
    );
}

#[test]
fn samples_that_were_not_hit_or_had_ci_trouble_are_impure() {
    let w = world(&[Class::SeedCase, Class::CiInfra]);
    let p = &w.plants[0];
    let clean_miss = w
        .truth
        .iter()
        .find(|t| t.dims.platform == "metal" && t.plant.is_none())
        .unwrap();
    assert!(!pure_sample(Some(clean_miss), p));
    assert!(!pure_sample(None, p));
    let hit = hit_runs(&w, p.id)[0];
    assert!(pure_sample(Some(hit), p));
    let mut troubled = hit.clone();
    troubled.ci_trouble = Some("CI network lost".into());
    assert!(!pure_sample(Some(&troubled), p));
}

#[test]
fn a_fixed_regression_recovers_when_its_reports_stop_after_the_fix() {
    let w = world(&[Class::OnsetFix]);
    let p = &w.plants[0];
    let (onset, fix) = (p.parts[0].onset_at.unwrap(), p.fix_first_run.unwrap());
    let r = report("image-registry", metal_415(), &[]);
    let s = score_plant(&w, p, &cycles(&w, onset, fix + Duration::hours(30), &[r]));
    assert!(s.fixed && s.detected);
    let d = s.recovery_days.unwrap();
    assert!((1.25..1.6).contains(&d), "{d}");
}

#[test]
fn the_payload_window_holds_the_truth_and_counts_only_tested_payloads() {
    let mut r = example_report(metal_415(), 30.0, 2.0);
    let mut onset = Onset::from_secs(0, 0, 0).unwrap();
    onset.last_good_payload = Some("p1".into());
    onset.first_bad_payload = Some("p4".into());
    onset.payloads = ["p1", "p2", "p3", "p4"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    r.onset = Some(onset);
    // p2b was built between p2 and p3 and no run tested it: no store can list it
    let order = ["p0", "p1", "p2", "p2b", "p3", "p4", "p5"];
    let tested: BTreeSet<&str> = ["p1", "p2", "p4", "p5"].into();
    assert_eq!(payload_window(&r, "p3", &order, &tested), Some((true, 2)));
    assert_eq!(
        payload_window(&r, "p2b", &order, &tested),
        Some((true, 2)),
        "inside, though not listed"
    );
    assert_eq!(
        payload_window(&r, "p1", &order, &tested),
        Some((false, 2)),
        "the last good is outside"
    );
    assert_eq!(payload_window(&r, "p0", &order, &tested), Some((false, 2)));
    assert_eq!(payload_window(&r, "p5", &order, &tested), Some((false, 2)));
    assert_eq!(
        payload_window(&r, "p3", &[], &tested),
        Some((true, 2)),
        "no order: the listed payloads"
    );
    assert_eq!(payload_window(&r, "p2b", &[], &tested), Some((false, 2)));
    r.onset = None;
    assert_eq!(payload_window(&r, "p3", &order, &tested), None);
}

#[test]
fn a_growing_regression_is_exact_only_when_both_parts_are_covered_and_counts_its_incidents() {
    let w = world(&[Class::Growing]);
    let p = &w.plants[0];
    let variants = family_variants(&w, "image-registry");
    let first = p.parts[0].onset_at.unwrap();
    let before_sdn = p.parts[1].onset_at.unwrap() - Duration::hours(1);
    assert_eq!(
        affected(p, &variants, before_sdn).len(),
        covered(&p.parts[0].scope, "4.14", &variants).len()
    );
    let metal_414 = scope(&[
        (Dimension::Release, &["4.14"]),
        (Dimension::Platform, &["metal"]),
    ]);
    let s = score_plant(
        &w,
        p,
        &cycles(
            &w,
            first,
            w.spec.end,
            &[report("image-registry", metal_414.clone(), &[])],
        ),
    );
    assert!(s.exact_scope, "{s:?}");
    let story = |scope: Scope| Story {
        fingerprint: scope.describe(),
        family: "image-registry".into(),
        backends: Vec::new(),
        release: "4.14".into(),
        scope,
        opened_at: first,
        resolved_at: None,
        onset: None,
        states: Vec::new(),
        notifications: Default::default(),
    };
    let mut observed = cycles(
        &w,
        first,
        w.spec.end,
        &[report("image-registry", metal_414.clone(), &[])],
    );
    observed.incidents = vec![story(metal_414.clone())];
    assert_eq!(score_plant(&w, p, &observed).incidents, 1);
    let mut sdn = metal_414;
    sdn.set(Dimension::Network, ["sdn"]);
    observed.incidents.push(story(sdn));
    assert_eq!(score_plant(&w, p, &observed).incidents, 2);
}

#[test]
fn every_regression_of_a_quiet_world_is_false_and_resolved_reports_are_not_counted() {
    let w = world(&[Class::Quiet]);
    let active = report(
        "kube-api",
        scope(&[
            (Dimension::Release, &["4.14"]),
            (Dimension::Platform, &["gcp"]),
        ]),
        &[],
    );
    let mut resolved = report("openshift-api", metal_415(), &[]);
    resolved.status = Status::Resolved;
    let ws = score_world(
        &w,
        &cycles(
            &w,
            w.spec.end - Duration::days(2),
            w.spec.end,
            &[active, resolved],
        ),
    );
    assert_eq!(ws.reported, 1);
    assert_eq!(ws.false_regressions[0].class, Some(Class::Quiet));
}

#[test]
fn a_narrow_scope_named_in_other_dimensions_of_the_same_runs_is_exact() {
    let w = world(&[Class::NarrowScope]);
    let p = &w.plants[0];
    let reported = scope(&[
        (Dimension::Release, &["4.15"]),
        (Dimension::FromRelease, &["4.14"]),
        (Dimension::UpgradeType, &["minor"]),
        (Dimension::Platform, &["azure"]),
        (Dimension::NetworkStack, &["ipv4"]),
    ]);
    let onset = p.parts[0].onset_at.unwrap();
    let s = score_plant(
        &w,
        p,
        &cycles(&w, onset, w.spec.end, &[report("kube-api", reported, &[])]),
    );
    let variants = family_variants(&w, "kube-api");
    let want = affected(p, &variants, w.spec.end);
    eprintln!("{want:#?}");
    assert!(s.exact_scope, "{s:?}");
}
