//! Data quality: CI-infrastructure trouble and a couple of wild runs never raise a regression.
//! A generated month with the metal image-registry regression planted, about 1% of runs hit by
//! CI trouble at random, a day of CI trouble on gcp, and a sparse arm64 job with two troubled
//! runs: the planted regression is all that is found, and none of its samples is a troubled run.
//! Troubled runs are classified when stored, and again when the rules change.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use sheriff::application::cycle::{CycleOptions, CycleReport, run_cycle};
use sheriff::config::Settings;
use sheriff::model::{Dimension, Dimensions, TroubleRules};
use sheriff::store::Store;
use sheriff::synth::{self, JobSpec, Scenario, TroubleSpell};

const ARM64_JOB: &str =
    "periodic-ci-openshift-release-master-nightly-4.14-e2e-aws-ovn-upgrade-arm64";

fn end() -> DateTime<Utc> {
    synth::day(2026, 11, 29)
}

/// The demo month (metal 4.14 image-registry regressed in its last week) with CI trouble.
fn world(seed: u64) -> Scenario {
    let mut s = Scenario::demo(end());
    s.seed = seed;
    s.noise_intervals = 0;
    s.ci_trouble_share = 0.01;
    // a sparse arm64 variant: about 30 runs over 28 days, two of them in a spell of CI trouble
    s.jobs.push(JobSpec::new(ARM64_JOB, 1.1));
    s.trouble_spells = vec![
        TroubleSpell {
            from: end() - Duration::days(3) + Duration::hours(2),
            hours: 18,
            matches: vec![(Dimension::Platform, "gcp".into())],
        },
        TroubleSpell {
            from: end() - Duration::days(5),
            hours: 44,
            matches: vec![(Dimension::Architecture, "arm64".into())],
        },
    ];
    s
}

/// Each run's class under the default rules, and its dimensions.
async fn load(store: &Store, s: &Scenario) -> HashMap<String, (bool, Dimensions)> {
    let records = synth::run_records(s);
    for chunk in records.chunks(1_000) {
        store.runs().write_runs(chunk, false).await.unwrap();
    }
    synth::truth_of(s)
        .into_iter()
        .map(|r| (r.build_id.clone(), (classified(&r), r.dimensions)))
        .collect()
}

/// Whether the default rules call a generated run troubled: every run the generator hit, and
/// the rare one whose liveness probe had a long blip of its own.
fn classified(r: &synth::TruthRun) -> bool {
    TroubleRules::default()
        .classify(r.seconds.iter().map(|(b, s)| (b.as_str(), *s)))
        .is_some()
}

async fn cycle(store: &Store) -> CycleReport {
    run_cycle(
        store,
        &sheriff::application::warm::Warm::new(),
        &Settings::default(),
        CycleOptions {
            at: end(),
            dry_run: true,
        },
    )
    .await
    .unwrap()
}

fn found(report: &CycleReport) -> Vec<String> {
    report
        .regressions
        .iter()
        .filter(|r| r.status.is_active())
        .map(|r| format!("{} {} {} {}", r.family, r.release, r.scope, r.percentile))
        .collect()
}

/// Only the planted regression, with none of its samples troubled; the counts of what was left out.
fn only_the_planted(report: &CycleReport, runs: &HashMap<String, (bool, Dimensions)>) {
    let active: Vec<_> = report
        .regressions
        .iter()
        .filter(|r| r.status.is_active())
        .collect();
    assert_eq!(active.len(), 1, "{:#?}", found(report));
    let r = active[0];
    assert_eq!(
        (r.family.as_str(), r.scope.single(Dimension::Platform)),
        ("image-registry", Some("metal"))
    );
    for j in &r.sample_jobs {
        let (troubled, dims) = &runs[&j.build_id];
        assert!(!troubled, "sample {} had CI trouble", j.build_id);
        assert!(
            r.scope.contains(dims),
            "sample {} is outside the scope {}: the numbers and samples are one set of runs",
            j.build_id,
            r.scope
        );
        assert!(!j.ci_infrastructure_trouble, "{j:?}");
    }
}

on_both_engines! {
    async fn ci_trouble_and_two_wild_runs_raise_nothing_and_the_planted_regression_stands(db) {
        let s = world(7);
        let troubled = load(&db.store, &s).await;
        let truth = synth::truth_of(&s);
        let in_window = |r: &&synth::TruthRun| r.started_at >= end() - Duration::days(7);
        let gcp_day = truth.iter().filter(in_window).filter(|r| r.ci_troubled && r.dimensions.platform == "gcp").count();
        let arm = truth.iter().filter(|r| r.job == ARM64_JOB).count();
        let arm_troubled = truth.iter().filter(|r| r.job == ARM64_JOB && r.ci_troubled).count();
        assert!((4..=7).contains(&gcp_day), "{gcp_day} troubled gcp runs in the window");
        assert!((25..=40).contains(&arm) && arm_troubled >= 2, "{arm} arm64 runs, {arm_troubled} troubled");

        let report = cycle(&db.store).await;
        only_the_planted(&report, &troubled);
        // what was left out is said: by the regression, and per variant where it is unusual
        let r = report.regressions.iter().find(|r| r.status.is_active()).unwrap();
        assert!(truth.iter().all(|t| !t.ci_troubled || classified(t)), "every generated trouble is found");
        let left = truth.iter().filter(in_window).filter(|t| classified(t) && r.scope.contains(&t.dimensions)).count();
        assert_eq!(r.ci_troubled_runs, left as u64);
        if left > 0 {
            assert!(r.attribution.evidence.iter().any(|e| e.contains("runs left out: CI network trouble")), "{:#?}", r.attribution.evidence);
        }
        assert!(
            report.ci_trouble.iter().any(|t| t.scope.single(Dimension::Platform) == Some("gcp")),
            "the gcp day is said as CI trouble: {:#?}", report.ci_trouble
        );
        let text = sheriff::edge::text::cycle_report(&report);
        assert!(text.contains("CI-infrastructure trouble (left out of evaluation, not a regression)"), "{text}");

        // The same world with the rule off: reclassifying moves the troubled runs back into the
        // histograms, so the regression's scope counts them among its runs again.
        let off = TroubleRules { liveness: vec!["nothing-matches".into()], ..TroubleRules::default() };
        let moved = db.store.trouble().apply(&off).await.unwrap();
        assert_eq!(moved as usize, troubled.values().filter(|t| t.0).count());
        let unguarded = cycle(&db.store).await;
        assert!(unguarded.ci_trouble.is_empty(), "{:#?}", unguarded.ci_trouble);
        let same = unguarded.regressions.iter().find(|u| u.fingerprint == r.fingerprint).expect("still found");
        assert_eq!((same.ci_troubled_runs, same.job_runs), (0, r.job_runs + r.ci_troubled_runs));
        // and back: the same answer as before, nothing lost
        db.store.trouble().apply(&TroubleRules::default()).await.unwrap();
        assert_eq!(db.store.trouble().apply(&TroubleRules::default()).await.unwrap(), 0, "already applied");
        assert_eq!(found(&cycle(&db.store).await), found(&report));
    }
}

on_both_engines! {
    async fn replicas_changing_the_rules_together_move_each_run_once(db) {
        // Two processes open one database with new rules at the same moment (replicas
        // restarted with a new configuration): each run changes class once, the histograms
        // move once, and neither start fails on the stored fingerprint.
        let s = world(9);
        let troubled = load(&db.store, &s).await;
        let before = cycle(&db.store).await;
        let r = before.regressions.iter().find(|r| r.status.is_active()).expect("the planted regression");
        let off = TroubleRules { liveness: vec!["nothing-matches".into()], ..TroubleRules::default() };
        let (a, b) = (Store::open(&db.settings).await.unwrap(), Store::open(&db.settings).await.unwrap());
        let (moved_a, moved_b) = tokio::join!(a.trouble().apply(&off), b.trouble().apply(&off));
        let moved = moved_a.unwrap() + moved_b.unwrap();
        assert_eq!(moved as usize, troubled.values().filter(|t| t.0).count(), "each troubled run moved once");
        let after = cycle(&a).await;
        let same = after.regressions.iter().find(|u| u.fingerprint == r.fingerprint).expect("still found");
        assert_eq!(same.job_runs, r.job_runs + r.ci_troubled_runs, "the histograms counted each run once");
        assert_eq!(b.trouble().apply(&off).await.unwrap(), 0, "both see the rules applied");
    }
}

/// Ten seeds of the same world: the planted regression every time, and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_seeds_of_a_troubled_month_raise_no_false_regression() {
    let mut false_regressions = Vec::new();
    for seed in 100..110 {
        let db = crate::common::TestDb::sqlite().await;
        let s = world(seed);
        let troubled = load(&db.store, &s).await;
        let report = cycle(&db.store).await;
        let active: Vec<String> = found(&report);
        let planted = active
            .iter()
            .filter(|f| f.starts_with("image-registry 4.14 platform=metal"))
            .count();
        assert_eq!(planted, 1, "seed {seed}: {active:#?}");
        false_regressions.extend(
            active
                .iter()
                .filter(|f| !f.starts_with("image-registry 4.14 platform=metal"))
                .map(|f| format!("seed {seed}: {f}")),
        );
        only_the_planted(&report, &troubled);
    }
    assert!(false_regressions.is_empty(), "{false_regressions:#?}");
}
