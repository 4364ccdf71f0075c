//! Incidents over months: generated histories in the real formats, replayed cycle by cycle
//! every 6 hours on both engines. A regression never fixed stays one open incident; a fixed one
//! resolves soon after its fix and never before; a growing scope stays one incident; new- and
//! reused-connection backends crossing apart are one problem; samples come from after the
//! onset; a new release is compared with the previous one; quiet months raise nothing. And
//! `sheriff backtest` over the same history tells the same story without touching the live
//! tables.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use sheriff::application::backtest::{Backtest, Cadence, backtest};
use sheriff::application::cycle::{CycleOptions, run_cycle};
use sheriff::config::Settings;
use sheriff::domain::incidents::{Event, Incident};
use sheriff::model::Dimension;
use sheriff::store::Store;
use sheriff::synth::{self, JobSpec, Planted, Scenario};

use sheriff::model::DAY;

fn end() -> DateTime<Utc> {
    synth::day(2026, 10, 1)
}

/// The jobs of a small world: metal 4.14 on both networks, micro and minor (8 runs a day in
/// all), and aws and gcp beside it.
fn jobs() -> Vec<JobSpec> {
    let p = "periodic-ci-openshift-release-master";
    vec![
        JobSpec::new(&format!("{p}-nightly-4.14-e2e-metal-ipi-ovn-upgrade"), 2.0),
        JobSpec::new(&format!("{p}-nightly-4.14-e2e-metal-ipi-sdn-upgrade"), 2.0),
        JobSpec::new(
            &format!("{p}-nightly-4.14-upgrade-from-stable-4.13-e2e-metal-ipi-ovn-upgrade"),
            2.0,
        ),
        JobSpec::new(
            &format!("{p}-nightly-4.14-upgrade-from-stable-4.13-e2e-metal-ipi-sdn-bm-upgrade"),
            2.0,
        ),
        JobSpec::new(&format!("{p}-ci-4.14-e2e-aws-ovn-upgrade"), 6.0),
        JobSpec::new(&format!("{p}-ci-4.14-e2e-gcp-ovn-upgrade"), 4.0),
    ]
}

fn backends() -> Vec<String> {
    [
        "image-registry",
        "ingress-to-console",
        "kube-api",
        "ci-cluster-network-liveness",
    ]
    .iter()
    .flat_map(|f| {
        [
            format!("{f}-new-connections"),
            format!("{f}-reused-connections"),
        ]
    })
    .collect()
}

fn world(seed: u64, days: u32, planted: Vec<Planted>) -> Scenario {
    let mut s = Scenario::month(seed, end());
    s.days = days;
    s.start = end() - Duration::days(i64::from(days));
    s.jobs = jobs();
    s.backends = backends();
    s.planted = planted;
    s.noise_intervals = 0;
    s
}

fn day_of(s: &Scenario, d: u32) -> DateTime<Utc> {
    s.start + Duration::days(i64::from(d))
}

fn metal(from_day: u32, until_day: Option<u32>) -> Planted {
    Planted {
        until_day,
        ..synth::metal_registry_regression(from_day)
    }
}

async fn load(store: &Store, s: &Scenario) {
    for chunk in synth::run_records(s).chunks(1_000) {
        store.runs().write_runs(chunk, false).await.unwrap();
    }
}

/// What a history told: its incidents with their events and outbox, and the cycles' samples.
struct Told {
    incidents: Vec<(Incident, Vec<Event>)>,
    /// Each sample run of an incident's reports, with the incident's onset at that cycle.
    samples_before_onset: Vec<String>,
    /// Texts of the Slack thread replies queued.
    replies: Vec<String>,
}

fn settings() -> Settings {
    let mut s = Settings::default();
    s.slack.channel = "#disruption".into();
    s
}

/// Cycles every 6 hours from day `from` of the scenario to its end.
async fn replay(store: &Store, s: &Scenario, from: u32) -> Told {
    let settings = settings();
    let mut t = day_of(s, from);
    let mut samples_before_onset = Vec::new();
    let starts: std::collections::HashMap<String, DateTime<Utc>> = synth::run_records(s)
        .into_iter()
        .map(|r| (r.run.build_id, r.run.started_at))
        .collect();
    while t < end() {
        let report = run_cycle(
            store,
            &sheriff::application::warm::Warm::new(),
            &settings,
            CycleOptions {
                at: t,
                dry_run: false,
            },
        )
        .await
        .unwrap();
        for r in report.regressions.iter().filter(|r| r.status.is_active()) {
            let Some(onset) = &r.onset else { continue };
            for j in &r.sample_jobs {
                let started = starts[&j.build_id];
                if started < onset.at {
                    samples_before_onset.push(format!(
                        "{} at {t}: {} started {started} < onset {}",
                        r.fingerprint, j.build_id, onset.at
                    ));
                }
            }
        }
        t += Duration::hours(6);
    }
    let mut incidents = Vec::new();
    for i in store.incidents().all().await.unwrap() {
        let events = store.incidents().events(i.id).await.unwrap();
        incidents.push((i, events));
    }
    let mut replies = Vec::new();
    for e in store
        .outbox()
        .entries(sheriff::store::EntryState::Pending, i64::MAX)
        .await
        .unwrap()
    {
        if e.kind == "slack_reply" {
            let v: serde_json::Value = serde_json::from_str(&e.payload).unwrap();
            replies.push(v["text"].as_str().unwrap_or_default().to_string());
        }
    }
    Told {
        incidents,
        samples_before_onset,
        replies,
    }
}

fn kinds(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}

/// The live tables, counted: a backtest must leave them as they are.
async fn live_counts(store: &Store) -> (usize, usize, i64, i64) {
    let incidents = store.incidents().all().await.unwrap();
    let mut events = 0;
    for i in &incidents {
        events += store.incidents().events(i.id).await.unwrap().len();
    }
    let outbox = store.outbox().counts(0).await.unwrap();
    (
        incidents.len(),
        events,
        outbox.pending + outbox.done + outbox.dead,
        store.evaluations().count_cycles().await.unwrap(),
    )
}

/// The backtest of the same span, and that it changed nothing live.
async fn backtest_of(db: &crate::common::TestDb, s: &Scenario, from: u32) -> Backtest {
    let store = Arc::new(Store::open(&db.settings).await.unwrap());
    let before = live_counts(&store).await;
    let b = backtest(
        store.clone(),
        &settings(),
        day_of(s, from),
        end(),
        &Cadence::Every(6 * 3_600),
    )
    .await
    .unwrap();
    assert_eq!(
        live_counts(&store).await,
        before,
        "the backtest touched the live tables"
    );
    b
}

/// The live story and the backtest's agree: the same incidents, opened and resolved at the same
/// cycles, with the same onsets.
fn same_story(told: &Told, b: &Backtest) {
    assert_eq!(
        b.incidents.len(),
        told.incidents.len(),
        "{:#?}",
        b.incidents
    );
    for (i, _) in &told.incidents {
        let story = b
            .incidents
            .iter()
            .find(|s| s.fingerprint == i.fingerprint)
            .unwrap_or_else(|| panic!("{} missing from the backtest", i.fingerprint));
        assert_eq!(
            story.opened_at.timestamp(),
            i.opened_at,
            "{}",
            i.fingerprint
        );
        let resolved = if i.state.is_open() {
            None
        } else {
            i.resolved_at
        };
        assert_eq!(
            story.resolved_at.map(|t| t.timestamp()),
            resolved,
            "{}",
            i.fingerprint
        );
        assert_eq!(
            story.onset,
            i.episodes.first().map(|e| e.onset.clone()),
            "{}",
            i.fingerprint
        );
    }
}

on_both_engines! {
    async fn a_regression_left_alone_for_sixty_days_stays_one_open_incident(db) {
        let s = world(31, 90, vec![metal(30, None)]);
        load(&db.store, &s).await;
        let told = replay(&db.store, &s, 21).await;
        assert_eq!(told.incidents.len(), 1, "{:#?}", told.incidents.iter().map(|(i, e)| (&i.fingerprint, kinds(e))).collect::<Vec<_>>());
        let (i, events) = &told.incidents[0];
        assert!(i.state.is_open(), "{:?}", kinds(events));
        let onset_day = day_of(&s, 30).timestamp();
        assert!(i.opened_at <= onset_day + 2 * DAY, "opened {} days after the onset", (i.opened_at - onset_day) as f64 / DAY as f64);
        assert!(i.opened_at >= onset_day, "opened before the regression began");
        for kind in kinds(events) {
            assert!(!["resolved", "stale", "returned", "reopened"].contains(&kind), "{:?}", kinds(events));
        }
        let onset = i.episodes[0].onset.clone();
        assert!(onset.earliest.timestamp() <= onset_day && onset_day <= onset.latest.timestamp(), "{onset:?}");
        let shown = sheriff::edge::cli::incident_json(i);
        assert_eq!(shown["onset"]["at"], serde_json::to_value(onset.at).unwrap(), "{shown}");
        assert!(told.samples_before_onset.is_empty(), "{:#?}", told.samples_before_onset);
        // the reference stayed before the onset: still regressed against 0s at the end
        assert!(i.snapshot.report.threshold_seconds < 5.0, "{}", i.snapshot.report.threshold_source);
        same_story(&told, &backtest_of(&db, &s, 21).await);
    }

    async fn a_fixed_regression_resolves_soon_after_its_fix_and_not_before(db) {
        let s = world(32, 60, vec![metal(25, Some(45))]);
        load(&db.store, &s).await;
        let told = replay(&db.store, &s, 21).await;
        assert_eq!(told.incidents.len(), 1, "{:#?}", told.incidents.iter().map(|(i, e)| (&i.fingerprint, kinds(e))).collect::<Vec<_>>());
        let (i, events) = &told.incidents[0];
        let (onset_day, fix_day) = (day_of(&s, 25).timestamp(), day_of(&s, 45).timestamp());
        assert!(i.opened_at <= onset_day + 2 * DAY && i.opened_at >= onset_day, "opened at {}", i.opened_at);
        let resolved = i.resolved_at.expect("resolved");
        assert!(!i.state.is_open(), "{:?}", kinds(events));
        assert!(resolved >= fix_day, "resolved {} days before the fix", (fix_day - resolved) as f64 / DAY as f64);
        assert!(resolved <= fix_day + 3 * DAY, "resolved {} days after the fix", (resolved - fix_day) as f64 / DAY as f64);
        assert_eq!(kinds(events).iter().filter(|k| **k == "resolved").count(), 1, "{:?}", kinds(events));
        assert!(!kinds(events).contains(&"stale"), "{:?}", kinds(events));
        let onset = i.episodes[0].onset.clone();
        assert!(onset.earliest.timestamp() <= onset_day && onset_day <= onset.latest.timestamp(), "{onset:?}");
        // the recovery is dated within hours of the fix: a run the regression happened to spare
        // just before it is, to any method, already back
        let recovered = i.episodes[0].recovered_at.expect("a recovery time").timestamp();
        assert!(
            recovered >= fix_day - DAY / 4 && recovered <= fix_day + 2 * DAY,
            "recovered {:.1} h from the fix",
            (recovered - fix_day) as f64 / 3600.0
        );
        assert!(told.samples_before_onset.is_empty(), "{:#?}", told.samples_before_onset);
        same_story(&told, &backtest_of(&db, &s, 21).await);
    }

    async fn a_scope_that_grows_is_one_incident_with_one_scope_grew_reply(db) {
        let mut ovn = metal(30, None);
        ovn.matches.push((Dimension::Network, "ovn".into()));
        let mut sdn = metal(35, None);
        sdn.matches.push((Dimension::Network, "sdn".into()));
        let s = world(33, 50, vec![ovn, sdn]);
        load(&db.store, &s).await;
        let told = replay(&db.store, &s, 21).await;
        assert_eq!(told.incidents.len(), 1, "{:#?}", told.incidents.iter().map(|(i, e)| (&i.snapshot.scope, kinds(e))).collect::<Vec<_>>());
        let (i, events) = &told.incidents[0];
        assert!(i.state.is_open());
        assert!(i.snapshot.scope.get(Dimension::Network).is_none_or(|v| v.len() == 2), "all of metal now: {}", i.snapshot.scope);
        let grew = told.replies.iter().filter(|r| r.contains("scope grew")).count();
        assert_eq!(grew, 1, "{:#?}", told.replies);
        assert!(!kinds(events).contains(&"scope_shrank"), "{:?}", kinds(events));
        assert!(!events[0].detail.contains(":  "), "a list left empty: {}", events[0].detail);
        assert!(!kinds(events).contains(&"stale") && !kinds(events).contains(&"resolved"), "{:?}", kinds(events));
        assert!(told.samples_before_onset.is_empty(), "{:#?}", told.samples_before_onset);
        same_story(&told, &backtest_of(&db, &s, 21).await);
    }

    async fn new_and_reused_connections_crossing_a_day_apart_are_one_incident(db) {
        let new = Planted { backend_prefix: "image-registry-new".into(), ..metal(30, None) };
        let reused = Planted { backend_prefix: "image-registry-reused".into(), ..metal(31, None) };
        let s = world(34, 45, vec![new, reused]);
        load(&db.store, &s).await;
        let told = replay(&db.store, &s, 21).await;
        assert_eq!(told.incidents.len(), 1, "{:#?}", told.incidents.iter().map(|(i, e)| (&i.snapshot.backends, kinds(e))).collect::<Vec<_>>());
        let (i, events) = &told.incidents[0];
        assert!(i.state.is_open(), "{:?}", kinds(events));
        assert_eq!(i.snapshot.backends.len(), 2, "both backends: {:?}", i.snapshot.backends);
        assert!(told.samples_before_onset.is_empty(), "{:#?}", told.samples_before_onset);
    }

    async fn a_new_release_regressed_from_its_first_run_is_found_against_the_previous_one(db) {
        let p = "periodic-ci-openshift-release-master";
        let mut s = world(35, 50, Vec::new());
        s.jobs.push(JobSpec::new(&format!("{p}-ci-4.15-e2e-aws-ovn-upgrade"), 6.0));
        s.jobs.push(JobSpec { from_day: 40, ..JobSpec::new(&format!("{p}-ci-4.16-e2e-aws-ovn-upgrade"), 8.0) });
        s.planted.push(Planted {
            backend_prefix: "image-registry-".into(),
            matches: vec![(Dimension::Release, "4.16".into())],
            from_day: 40,
            until_day: None,
            share: 0.9,
            seconds: (8, 20),
            condition: None,
        });
        load(&db.store, &s).await;
        let told = replay(&db.store, &s, 38).await;
        let found: Vec<_> = told.incidents.iter().filter(|(i, _)| i.snapshot.release == "4.16").collect();
        assert_eq!(found.len(), 1, "{:#?}", told.incidents.iter().map(|(i, e)| (&i.snapshot.release, &i.snapshot.scope, kinds(e))).collect::<Vec<_>>());
        let (i, events) = found[0];
        let first_run = day_of(&s, 40).timestamp();
        assert!(i.opened_at <= first_run + 2 * DAY, "opened {} days after the release's first run", (i.opened_at - first_run) as f64 / DAY as f64);
        assert!(i.state.is_open(), "{:?}", kinds(events));
        let opening = &i.snapshot.report;
        assert!(opening.threshold_source.contains("previous release 4.15"), "{}", opening.threshold_source);
        assert!(opening.job_runs >= 10, "{}", opening.job_runs);
        assert_eq!(told.incidents.len(), 1, "nothing else");
    }

    async fn ninety_quiet_days_raise_nothing(db) {
        let s = world(36, 90, Vec::new());
        load(&db.store, &s).await;
        let told = replay(&db.store, &s, 21).await;
        assert!(told.incidents.is_empty(), "{:#?}", told.incidents.iter().map(|(i, e)| (&i.snapshot.summary, kinds(e))).collect::<Vec<_>>());
        same_story(&told, &backtest_of(&db, &s, 21).await);
    }
}
