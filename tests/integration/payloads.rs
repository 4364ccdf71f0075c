//! Which payload broke it: generated months whose runs test nightly payloads built every 4
//! hours (each taken up 0–8 hours late), with the metal image-registry regression shipped in
//! one payload P. The reported window holds P, its last good payload is older than P, and it
//! spans at most 3 payloads.

use chrono::{DateTime, Duration, Utc};
use sheriff::config::Settings;
use sheriff::cycle::{CycleOptions, run_cycle};
use sheriff::model::{Onset, payload_time};
use sheriff::store::Store;
use sheriff::synth::{self, Scenario};

use crate::common::release_controller::Mode;

fn end() -> DateTime<Utc> {
    synth::day(2026, 11, 29)
}

/// The demo month with metal's four jobs running 3 times a day each: a window can be no
/// narrower than the payloads between two runs of the regression's own scope.
pub fn world(seed: u64) -> Scenario {
    let mut s = Scenario::demo(end());
    s.seed = seed;
    s.noise_intervals = 0;
    s.payload_every_hours = 4;
    for j in s.jobs.iter_mut().filter(|j| j.name.contains("-metal-")) {
        j.runs_per_day = 3.0;
    }
    s
}

/// The payload that shipped the regression: the first built on its first day.
pub fn culprit(s: &Scenario) -> String {
    let day = s.start + Duration::days(i64::from(s.planted[0].from_day));
    format!("4.14.0-0.nightly-{}", day.format("%Y-%m-%d-%H%M%S"))
}

async fn load(store: &Store, s: &Scenario) {
    for chunk in synth::run_records(s).chunks(1_000) {
        store.write_runs(chunk, false).await.unwrap();
    }
}

async fn onset_of(store: &Store) -> Onset {
    let report =
        run_cycle(store, &Settings::default(), CycleOptions { at: end(), dry_run: true }).await.unwrap();
    let r = report
        .regressions
        .iter()
        .find(|r| r.status.is_active() && r.family == "image-registry")
        .expect("found");
    r.onset.clone().expect("an onset")
}

/// Whether a window is right: it holds P, its last good is older than P, and the scope tested
/// at most 3 of its payloads (those it never ran are listed too, marked so).
fn right(onset: &Onset, p: &str) -> Result<(), String> {
    let built = |t: &str| payload_time(t).map(|d| d.timestamp());
    let good = onset.last_good_payload.as_deref().ok_or("no last good payload")?;
    if built(good) >= built(p) {
        return Err(format!("last good {good} is not before {p}"));
    }
    if !onset.payloads.iter().any(|x| x == p) {
        return Err(format!("{p} not in {:?}", onset.payloads));
    }
    let tested: Vec<&String> =
        onset.payloads.iter().filter(|x| !onset.untested_payloads.contains(x)).collect();
    if tested.len() > 3 {
        return Err(format!("{} tested payloads: {tested:?}", tested.len()));
    }
    Ok(())
}

on_both_engines! {
    async fn the_payload_window_holds_the_payload_that_shipped_it(db) {
        let s = world(11);
        load(&db.store, &s).await;
        let onset = onset_of(&db.store).await;
        right(&onset, &culprit(&s)).unwrap();
        assert_eq!(onset.payloads.first(), onset.last_good_payload.as_ref());
        assert_eq!(onset.payloads.last(), onset.first_bad_payload.as_ref());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_nine_of_ten_seeds_the_window_is_right_and_spans_at_most_three_tested_payloads() {
    let mut wrong = Vec::new();
    for seed in 200..210 {
        let db = crate::common::TestDb::sqlite().await;
        let s = world(seed);
        load(&db.store, &s).await;
        let onset = onset_of(&db.store).await;
        if let Err(e) = right(&onset, &culprit(&s)) {
            wrong.push(format!("seed {seed}: {e}"));
        }
    }
    eprintln!("payload windows wrong in {} of 10 seeds: {wrong:#?}", wrong.len());
    assert!(wrong.len() <= 1, "{wrong:#?}");
}

/// Runs that name no payload: the same regression, an onset in time, and no payload window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_without_payloads_evaluate_as_before() {
    let db = crate::common::TestDb::sqlite().await;
    let s = world(11);
    let mut records = synth::run_records(&s);
    for r in &mut records {
        r.run.payload.clear();
    }
    for chunk in records.chunks(1_000) {
        db.store.write_runs(chunk, false).await.unwrap();
    }
    let onset = onset_of(&db.store).await;
    assert_eq!((onset.last_good_payload, onset.first_bad_payload), (None, None));
    assert!(onset.payloads.is_empty());
}

fn with_release_controller(url: &str) -> Settings {
    let mut settings = Settings::default();
    settings.release_controller.urls.insert("amd64".into(), url.to_string());
    settings.release_controller.timeout_secs = 1;
    settings
}

async fn registry_report(
    store: &Store,
    settings: &Settings,
    dry_run: bool,
) -> sheriff::cycle::RegressionReport {
    let report = run_cycle(store, settings, CycleOptions { at: end(), dry_run }).await.unwrap();
    report
        .regressions
        .into_iter()
        .find(|r| r.status.is_active() && r.family == "image-registry")
        .expect("found")
}

on_both_engines! {
    async fn the_culprit_pull_request_ranks_first_and_a_silent_release_controller_is_tried_again(db) {
        let s = world(11);
        load(&db.store, &s).await;
        let rc = crate::common::release_controller::FakeReleaseController::start(&s).await;
        let settings = with_release_controller(&rc.url);
        for mode in [Mode::NotFound, Mode::Failing, Mode::Hanging] {
            rc.set_mode(mode);
            let r = registry_report(&db.store, &settings, false).await;
            assert!(r.changes_pending && r.suspect_changes.is_empty(), "{mode:?}");
            right(r.onset.as_ref().unwrap(), &culprit(&s)).unwrap(); // the window still shows
        }
        rc.set_mode(Mode::Normal);
        let r = registry_report(&db.store, &settings, false).await;
        assert!(!r.changes_pending);
        let first = &r.suspect_changes[0];
        assert_eq!((first.repository.as_str(), first.number), ("openshift/cluster-image-registry-operator", synth::CULPRIT_PR));
        assert!(first.component_match);
        assert!(r.suspect_changes.len() > 1, "unrelated changes in the window too");
        assert!(r.suspect_changes[1..].iter().all(|c| !c.component_match), "{:#?}", r.suspect_changes);
        // kept: the next cycle reads no changelog again
        let asked = rc.requests();
        let again = registry_report(&db.store, &settings, false).await;
        assert_eq!(again.suspect_changes, r.suspect_changes);
        assert_eq!(rc.requests(), asked);
    }
}
