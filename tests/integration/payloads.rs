//! Which payload broke it: generated months whose runs test nightly payloads built every 4
//! hours (each taken up 0–8 hours late), with the metal image-registry regression shipped in
//! one payload P. The reported window holds P, its last good payload is older than P, and it
//! spans at most 3 payloads.

use chrono::{DateTime, Duration, Utc};
use sheriff::application::cycle::{CycleOptions, run_cycle};
use sheriff::config::Settings;
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
        store.runs().write_runs(chunk, false).await.unwrap();
    }
}

async fn onset_of(store: &Store) -> Onset {
    let report = run_cycle(
        store,
        &sheriff::application::warm::Warm::new(),
        &Settings::default(),
        CycleOptions {
            at: end(),
            dry_run: true,
        },
    )
    .await
    .unwrap();
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
    let good = onset
        .last_good_payload
        .as_deref()
        .ok_or("no last good payload")?;
    if built(good) >= built(p) {
        return Err(format!("last good {good} is not before {p}"));
    }
    if !onset.payloads.iter().any(|x| x == p) {
        return Err(format!("{p} not in {:?}", onset.payloads));
    }
    // the candidates: the tested payloads after the last good, up to the first bad (the last
    // good is known good; the scorecard counts a window's width the same way)
    let tested: Vec<&String> = onset
        .payloads
        .iter()
        .filter(|x| {
            !onset.untested_payloads.contains(x) && onset.last_good_payload.as_ref() != Some(*x)
        })
        .collect();
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
    eprintln!(
        "payload windows wrong in {} of 10 seeds: {wrong:#?}",
        wrong.len()
    );
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
        db.store.runs().write_runs(chunk, false).await.unwrap();
    }
    let onset = onset_of(&db.store).await;
    assert_eq!(
        (onset.last_good_payload, onset.first_bad_payload),
        (None, None)
    );
    assert!(onset.payloads.is_empty());
}

fn with_release_controller(url: &str) -> Settings {
    let mut settings = Settings::default();
    settings
        .release_controller
        .urls
        .insert("amd64".into(), url.to_string());
    settings.release_controller.timeout_secs = 1;
    settings
}

async fn registry_report(
    store: &Store,
    settings: &Settings,
    dry_run: bool,
) -> sheriff::application::cycle::RegressionReport {
    let report = run_cycle(
        store,
        &sheriff::application::warm::Warm::new(),
        settings,
        CycleOptions { at: end(), dry_run },
    )
    .await
    .unwrap();
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

/// The fake GitHub for the world: the commit planted in metal's harness at the onset, decoys
/// in the same repository before and after the onset window, step-registry commits in the
/// window (and one under another path of openshift/release), one monitor-test commit.
async fn github_for(onset: &Onset) -> crate::common::github::FakeGitHub {
    let gh = crate::common::github::FakeGitHub::start(2).await;
    let dev = "openshift-metal3/dev-scripts";
    let planted = (onset.at - Duration::minutes(30)).max(onset.earliest);
    gh.add_commit(
        dev,
        "d5e1a5d0cafe",
        "Run the image registry with one replica on emptyDir",
        planted,
        &["02_configure_host.sh"],
    );
    gh.add_commit(
        dev,
        "0ldbefore000",
        "Bump the ironic image",
        onset.earliest - Duration::days(1),
        &["common.sh"],
    );
    gh.add_commit(
        dev,
        "1aterafter00",
        "Document the proxy settings",
        onset.latest + Duration::days(1),
        &["README.md"],
    );
    for n in 0..5 {
        let at = onset.earliest + (onset.latest - onset.earliest) * n / 5;
        let file = format!("ci-operator/step-registry/ipi/conf/aws/step-{n}.yaml");
        gh.add_commit(
            "openshift/release",
            &format!("5te9{n}00000"),
            &format!("Step registry change {n}"),
            at,
            &[file.as_str()],
        );
    }
    gh.add_commit(
        "openshift/release",
        "c0nf1900000",
        "A job's config",
        onset.at,
        &["ci-operator/config/x/y.yaml"],
    );
    gh.add_commit(
        "openshift/origin",
        "m0n1t0r0000",
        "Relax a monitor test",
        onset.at,
        &["pkg/monitortests/a/b.go"],
    );
    gh
}

fn with_github(mut settings: Settings, url: &str) -> Settings {
    settings.github.enabled = true;
    settings.github.api_url = url.to_string();
    settings.github.token = Some(sheriff::config::Secret::new("ghp_test"));
    settings.github.timeout_secs = 1;
    settings.github.max_wait_secs = 2;
    settings
}

on_both_engines! {
    async fn a_harness_commit_in_the_onset_window_ranks_first_and_a_silent_github_is_asked_again(db) {
        use crate::common::github::Mode as GitHubMode;
        let s = world(11);
        load(&db.store, &s).await;
        let onset = onset_of(&db.store).await;
        let rc = crate::common::release_controller::FakeReleaseController::start(&s).await;
        let gh = github_for(&onset).await;
        let settings = with_github(with_release_controller(&rc.url), &gh.url);
        // GitHub rate limited for an hour, or down: the payload's changes show, the rest is pending
        for mode in [GitHubMode::RateLimited, GitHubMode::Down] {
            gh.set_mode(mode);
            let before = gh.requests().len();
            let r = registry_report(&db.store, &settings, false).await;
            assert!(r.outside_pending && !r.changes_pending, "{mode:?}");
            if mode == GitHubMode::RateLimited {
                assert_eq!(gh.requests().len(), before + 1, "nothing more asked over the rate limit");
            }
            assert!(r.suspect_changes.iter().all(|c| c.commit.is_none()), "{mode:?}");
            assert_eq!(r.suspect_changes[0].number, synth::CULPRIT_PR);
        }
        // a secondary rate limit with a short Retry-After is sat out, then asked once more
        gh.set_mode(GitHubMode::TooMany(1));
        let asked = gh.requests().len();
        let r = registry_report(&db.store, &settings, false).await;
        assert!(!r.outside_pending, "filled in once GitHub answers");
        let top: Vec<String> = r.suspect_changes.iter().take(3).map(|c| c.reference()).collect();
        assert!(top.contains(&"openshift-metal3/dev-scripts@d5e1a5d".to_string()), "{top:?}");
        let first = &r.suspect_changes[0];
        assert_eq!(first.commit.as_deref(), Some("d5e1a5d0cafe"), "{:#?}", r.suspect_changes);
        assert!(first.why.contains("only metal regressed"), "{}", first.why);
        assert_eq!(r.suspect_changes[1].number, synth::CULPRIT_PR, "then the component's pull request");
        let shas: Vec<&str> = r.suspect_changes.iter().filter_map(|c| c.commit.as_deref()).collect();
        assert!(!shas.contains(&"0ldbefore000") && !shas.contains(&"1aterafter00"), "outside the window: {shas:?}");
        assert!(!shas.contains(&"c0nf1900000"), "not under the step registry: {shas:?}");
        assert_eq!(shas.iter().filter(|s| s.starts_with("5te9")).count(), 5, "every page read: {shas:?}");
        assert!(shas.contains(&"m0n1t0r0000"));
        // what went over the wire: the window, the path, the token, the pages
        let requests = gh.requests();
        let release: Vec<_> = requests[asked..].iter().filter(|q| q.path == "/repos/openshift/release/commits").collect();
        assert_eq!(release.len(), 3, "5 commits, 2 a page: {release:#?}");
        assert_eq!(release[0].query.get("path").map(String::as_str), Some("ci-operator/step-registry"));
        assert!(release[0].query.contains_key("since") && release[0].query.contains_key("until"));
        assert_eq!(release[2].query.get("page").map(String::as_str), Some("3"));
        assert!(requests.iter().all(|q| q.authorization.as_deref() == Some("Bearer ghp_test")));
        assert_eq!(requests[asked].path, requests[asked + 1].path, "the 429 was asked again");
        // kept: the next cycle asks GitHub nothing
        let before = gh.requests().len();
        let again = registry_report(&db.store, &settings, false).await;
        assert_eq!(again.suspect_changes, r.suspect_changes);
        assert_eq!(gh.requests().len(), before);
    }
}
