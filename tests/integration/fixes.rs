//! Did the fix work: generated histories replayed every 6 hours against the fake Slack, the
//! fake Jira (statuses with their changelog, remote links, `key in (…)` searches) and the fake
//! release controller, on both engines. A fix shipped in payload F and claimed in Jira is
//! "fixed" once, within a cycle of having 10 runs after F and never before; an ineffective fix
//! is a "failed fix" once and the incident stays open; a fix claimed before any run is
//! "inconclusive", naming the runs still needed, until a later cycle judges it; a regression
//! that goes away with no fix claimed is "recovered", never "fixed"; an accepted level keeps an
//! incident quiet, re-alerts once above it and reminds once before it lapses.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use sheriff::application::cycle::{CycleOptions, CycleReport, run_cycle};
use sheriff::config::{Secret, Settings};
use sheriff::domain::incidents::Incident;
use sheriff::domain::incidents::Told;
use sheriff::model::{FixVerdict, Percentile};
use sheriff::store::Store;
use sheriff::synth::{self, JobSpec, Planted, Scenario};

use crate::common::faults::Faults;
use crate::common::jira::FakeJira;
use crate::common::release_controller::FakeReleaseController;
use crate::common::slack::FakeSlack;

const DAYS: u32 = 40;

fn end() -> DateTime<Utc> {
    synth::day(2026, 11, 1)
}

/// Metal 4.14 on both networks and upgrade types (8 runs a day), aws beside it; payloads
/// every 4 hours.
fn world(seed: u64, planted: Vec<Planted>) -> Scenario {
    let p = "periodic-ci-openshift-release-master";
    let mut s = Scenario::month(seed, end());
    s.days = DAYS;
    s.start = end() - Duration::days(i64::from(DAYS));
    s.jobs = vec![
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
    ];
    s.backends = ["image-registry", "ingress-to-console", "kube-api"]
        .iter()
        .flat_map(|f| {
            [
                format!("{f}-new-connections"),
                format!("{f}-reused-connections"),
            ]
        })
        .collect();
    s.planted = planted;
    s.noise_intervals = 0;
    s.payload_every_hours = 4;
    s
}

fn day(d: u32) -> DateTime<Utc> {
    end() - Duration::days(i64::from(DAYS)) + Duration::days(i64::from(d))
}

/// The metal regression from day 12, at `seconds`, until `until` (payload-wise).
fn regression(from: u32, until: Option<u32>, seconds: (i64, i64)) -> Planted {
    Planted {
        until_day: until,
        seconds,
        share: 1.0,
        ..synth::metal_registry_regression(from)
    }
}

struct World {
    db: crate::common::TestDb,
    store: Arc<Store>,
    slack: FakeSlack,
    jira: FakeJira,
    settings: Settings,
    scenario: Scenario,
}

impl World {
    async fn start(
        db: crate::common::TestDb,
        name: &str,
        scenario: Scenario,
        rc: Option<&FakeReleaseController>,
    ) -> World {
        let engine = format!("{name}-{:?}", db.store.engine());
        let slack = FakeSlack::start(&engine, Faults::none()).await;
        let jira = FakeJira::start(&engine, Faults::none()).await;
        let mut s = Settings::default();
        s.slack.api_url = slack.api_url();
        s.slack.bot_token = Some(Secret::new(crate::common::slack::TOKEN));
        s.slack.channel = "C0DISRUPT".into();
        s.slack.min_post_interval_ms = 0;
        s.slack.timeout_secs = 1.0;
        s.jira.url = jira.url.clone();
        s.jira.project = "OCPBUGS".into();
        s.jira.token = Some(Secret::new(crate::common::jira::TOKEN));
        s.jira.timeout_secs = 1.0;
        s.outbox.evaluate_timeout_secs = 30;
        if let Some(rc) = rc {
            s.release_controller
                .urls
                .insert("amd64".into(), rc.url.clone());
            s.release_controller.timeout_secs = 1;
        }
        for chunk in synth::run_records(&scenario).chunks(1_000) {
            db.store.runs().write_runs(chunk, false).await.unwrap();
        }
        let store = Arc::new(Store::open(&db.settings).await.unwrap());
        World {
            db,
            store,
            slack,
            jira,
            settings: s,
            scenario,
        }
    }

    async fn cycle(&self, at: DateTime<Utc>) -> CycleReport {
        let report = run_cycle(
            &self.store,
            &sheriff::application::warm::Warm::new(),
            &self.settings,
            CycleOptions { at, dry_run: false },
        )
        .await
        .unwrap();
        let drained =
            sheriff::application::outbox::deliver_for_a_while(self.store.clone(), &self.settings)
                .await
                .unwrap();
        assert_eq!(drained.dead, 0, "nothing dead-lettered");
        report
    }

    /// The one metal image-registry incident.
    async fn incident(&self) -> Incident {
        let all: Vec<Incident> = self
            .store
            .incidents()
            .all()
            .await
            .unwrap()
            .into_iter()
            .filter(|i| i.snapshot.family == "image-registry")
            .collect();
        assert_eq!(
            all.len(),
            1,
            "one incident: {:#?}",
            all.iter().map(|i| (&i.id, &i.state)).collect::<Vec<_>>()
        );
        all.into_iter().next().unwrap()
    }

    fn thread_replies(&self) -> Vec<String> {
        self.slack
            .messages()
            .into_iter()
            .filter(|m| m.thread_ts.is_some())
            .map(|m| m.text)
            .collect()
    }

    /// Every comment body on the issue, as text.
    fn comments(&self, key: &str) -> Vec<String> {
        let issue = self
            .jira
            .issues()
            .into_iter()
            .find(|i| i.key == key)
            .unwrap();
        issue
            .comments
            .iter()
            .map(|c| c["body"].to_string())
            .collect()
    }

    /// Everything sheriff said anywhere: thread replies and parents, Jira comments, history.
    async fn everything_said(&self, i: &Incident) -> Vec<String> {
        let mut all: Vec<String> = self
            .slack
            .messages()
            .into_iter()
            .map(|m| format!("{} {}", m.text, m.blocks))
            .collect();
        if let Some(k) = &i.jira_key {
            all.extend(self.comments(k));
        }
        all.extend(
            self.store
                .incidents()
                .events(i.id)
                .await
                .unwrap()
                .into_iter()
                .map(|e| format!("{} {}", e.kind, e.detail)),
        );
        all
    }

    /// Runs of the regression's scope (metal) that tested a payload built at or after `since`,
    /// finished by `by`.
    fn metal_runs_after(&self, since: DateTime<Utc>, by: DateTime<Utc>) -> usize {
        synth::run_records(&self.scenario)
            .iter()
            .filter(|r| r.run.job_name.contains("-metal-"))
            .filter(|r| sheriff::model::payload_time(&r.run.payload).is_some_and(|t| t >= since))
            .filter(|r| r.run.finished_at.is_some_and(|f| f <= by))
            .count()
    }
}

/// The cycles every 6 hours from day `from` to the end.
fn cycles(from: u32) -> impl Iterator<Item = DateTime<Utc>> {
    let start = day(from);
    (0..)
        .map(move |n| start + Duration::hours(6 * n))
        .take_while(|t| *t < end())
}

fn count(texts: &[String], needle: &str) -> usize {
    texts.iter().filter(|t| t.contains(needle)).count()
}

/// The first payload built at or after `t`.
fn payload_at_or_after(s: &Scenario, t: DateTime<Utc>) -> (String, DateTime<Utc>) {
    synth::payload_tags(s, "4.14")
        .into_iter()
        .find(|(_, built)| *built >= t)
        .unwrap()
}

on_both_engines! {
    async fn a_fix_in_payload_f_is_fixed_once_within_a_cycle_of_ten_runs_and_never_before(db) {
        let scenario = world(31, vec![regression(12, Some(24), (18, 24))]);
        let rc = FakeReleaseController::start(&scenario).await;
        let w = World::start(db, "fixed", scenario, Some(&rc)).await;
        let (fix_payload, built) = payload_at_or_after(&w.scenario, day(24));
        let claim_at = day(24) + Duration::hours(8);
        let mut fixed_at = None;
        let mut first_with_ten: Option<DateTime<Utc>> = None;
        for t in cycles(14) {
            if t >= claim_at && w.incident().await.fix.is_none() {
                let key = w.incident().await.jira_key.expect("filed in Jira by now");
                w.jira.set_status(&key, "POST", None, claim_at - Duration::hours(6));
                w.jira.set_status(&key, "MODIFIED", None, claim_at - Duration::hours(1));
                w.jira.set_status(&key, "ON_QA", None, claim_at);
                w.jira.link_pull_request(&key, &format!("https://github.com/openshift/cluster-image-registry-operator/pull/{}", synth::FIX_PR));
            }
            let report = w.cycle(t).await;
            let v = report.regressions.iter().find_map(|r| r.verification.clone());
            if let Some(v) = &v {
                assert_eq!(v.payload.as_deref(), Some(fix_payload.as_str()), "the fix payload is the one holding the PR");
                if v.runs >= 10 && first_with_ten.is_none() {
                    first_with_ten = Some(t);
                }
                if v.verdict == FixVerdict::Fixed && fixed_at.is_none() {
                    fixed_at = Some(t);
                    assert!(w.metal_runs_after(built, t) >= 10, "fixed at {t} with fewer than 10 runs after {fix_payload}");
                }
            }
        }
        let i = w.incident().await;
        let (fixed_at, ten) = (fixed_at.expect("a fixed verdict"), first_with_ten.unwrap());
        assert!(fixed_at <= ten + Duration::hours(6), "fixed at {fixed_at}, 10 runs by {ten}");
        assert_eq!((i.state, i.resolution), (sheriff::domain::incidents::State::Resolved, Some(sheriff::domain::incidents::ResolvedAs::Fixed)));
        let claim = i.fix.clone().unwrap();
        assert_eq!(claim.claimed_at, claim_at.timestamp(), "the claim time is the changelog's MODIFIED");
        assert_eq!(claim.payload_at, Some(built.timestamp()));
        let replies = w.thread_replies();
        eprintln!("fixed at {fixed_at} (10 runs after {fix_payload} by {ten}); thread: {replies:#?}");
        assert_eq!(count(&replies, "fix verified"), 1, "{replies:#?}");
        assert_eq!(count(&w.comments(&claim.key), "fix verified"), 1);
        assert_eq!(count(&replies, "failed fix"), 0);
        let events = w.store.incidents().events(i.id).await.unwrap();
        let resolved: Vec<_> = events.iter().filter(|e| e.kind == "resolved").collect();
        assert_eq!(resolved.len(), 1, "{events:#?}");
        assert!(resolved[0].at == fixed_at.timestamp() && resolved[0].detail.contains("fixed"));
        // Jira was read with one search per cycle for all the open incidents' issues.
        assert!(w.jira.requests("search") >= 1);
        drop(w.db);
    }

    async fn an_ineffective_fix_is_a_failed_fix_once_and_the_incident_stays_open(db) {
        let scenario = world(32, vec![regression(12, None, (18, 24))]);
        let rc = FakeReleaseController::start(&scenario).await;
        let w = World::start(db, "failed", scenario, Some(&rc)).await;
        // A pull request that shipped in a payload after the claim, and changed nothing.
        let claim_at = day(22) + Duration::hours(8);
        let (after, _) = payload_at_or_after(&w.scenario, claim_at);
        let tags = synth::payload_tags(&w.scenario, "4.14");
        let k = tags.iter().position(|(t, _)| *t == after).unwrap();
        let body = synth::release_changelog(&w.scenario, &tags[k - 1].0, &tags[k].0).unwrap();
        let pull = body["updatedImages"][0]["commits"][0]["pullURL"].as_str().unwrap().to_string();
        let mut statuses = Vec::new();
        for t in cycles(14) {
            if t >= claim_at && w.incident().await.fix.is_none() {
                let key = w.incident().await.jira_key.expect("filed");
                w.jira.set_status(&key, "MODIFIED", None, claim_at);
                w.jira.set_field(&key, "customfield_12310220", Value::String(pull.clone()));
            }
            w.cycle(t).await;
            statuses.push(w.incident().await.state);
        }
        let i = w.incident().await;
        assert!(i.state.is_open(), "still open: {:?}", i.state);
        let claim = i.fix.clone().unwrap();
        assert_eq!(claim.pull_requests, vec![pull]);
        assert_eq!(claim.payload.as_deref(), Some(after.as_str()));
        let replies = w.thread_replies();
        assert_eq!(count(&replies, "failed fix"), 1, "{replies:#?}");
        assert_eq!(count(&w.comments(&claim.key), "failed fix"), 1);
        assert!(w.everything_said(&i).await.iter().all(|t| !t.contains("fixed")), "no fixed wording");
        assert_eq!(claim.verdicts.iter().filter(|v| v.verdict == FixVerdict::FailedFix).count(), 1);
        drop(w.db);
    }

    async fn a_fix_claimed_before_any_run_is_inconclusive_naming_the_runs_needed_then_judged(db) {
        let scenario = world(33, vec![regression(12, Some(24), (18, 24))]);
        let w = World::start(db, "inconclusive", scenario, None).await;
        let claim_at = day(24) + Duration::hours(12); // a cycle's time: no run after it yet
        let mut verdicts = Vec::new();
        for t in cycles(14) {
            if t == claim_at {
                let key = w.incident().await.jira_key.expect("filed");
                w.jira.set_status(&key, "ON_QA", None, claim_at);
            }
            let report = w.cycle(t).await;
            if let Some(v) = report.regressions.iter().find_map(|r| r.verification.clone()) {
                verdicts.push((t, v));
            }
        }
        let (t0, first) = &verdicts[0];
        assert_eq!(*t0, claim_at);
        assert_eq!((first.verdict, first.runs, first.needed), (FixVerdict::Inconclusive, 0, 10));
        assert!(sheriff::words::line(&Told::Verdict(first)).contains("10 more needed"), "{}", sheriff::words::line(&Told::Verdict(first)));
        let last = &verdicts.last().unwrap().1;
        assert_eq!(last.verdict, FixVerdict::Fixed, "{verdicts:#?}");
        let replies = w.thread_replies();
        assert_eq!(count(&replies, "inconclusive"), 1, "told once: {replies:#?}");
        assert_eq!(count(&replies, "fix verified"), 1);
        assert_eq!(w.incident().await.resolution, Some(sheriff::domain::incidents::ResolvedAs::Fixed));
        drop(w.db);
    }

    async fn a_regression_that_goes_away_unclaimed_is_recovered_never_fixed(db) {
        let scenario = world(34, vec![regression(12, Some(24), (18, 24))]);
        let w = World::start(db, "recovered", scenario, None).await;
        for t in cycles(14) {
            w.cycle(t).await;
        }
        let i = w.incident().await;
        assert_eq!((i.state, i.resolution), (sheriff::domain::incidents::State::Resolved, Some(sheriff::domain::incidents::ResolvedAs::Recovered)));
        let said = w.everything_said(&i).await;
        assert!(said.iter().all(|t| !t.to_lowercase().contains("fixed")), "no fixed wording: {said:#?}");
        assert_eq!(count(&w.thread_replies(), "no fix was verified"), 1);
        assert_eq!(count(&w.comments(i.jira_key.as_ref().unwrap()), "no fix was verified"), 1);
        drop(w.db);
    }

    async fn an_accepted_level_keeps_quiet_re_alerts_once_above_it_and_reminds_once(db) {
        // 20 s from day 12, 40 s from day 28 (payload-wise).
        let scenario = world(35, vec![regression(12, Some(28), (18, 22)), regression(28, None, (38, 42))]);
        let w = World::start(db, "accepted", scenario, None).await;
        let (accept_at, until) = (day(16), day(37));
        let mut quiet_from = None;
        let mut said_then = (0, 0);
        for t in cycles(14) {
            if t == accept_at {
                let i = w.incident().await;
                let a = sheriff::domain::incidents::Accept {
                    level: "P50<=25s".into(),
                    until: Some(until.timestamp()),
                    reason: "a known cost of draining the registry, agreed in OCPBUGS-1".into(),
                    jira_key: Some("OCPBUGS-1".into()),
                };
                let done = sheriff::application::actions::accept(&w.store, &i.id.to_string(), &a, &sheriff::application::actions::Operator::local_named("tester"), t.timestamp()).await.unwrap();
                assert_eq!(done.allowance.as_ref().unwrap().percentile, Percentile::P50);
            }
            w.cycle(t).await;
            if t == accept_at {
                quiet_from = Some(t);
                said_then = (w.slack.messages().iter().map(|m| 1 + m.edits).sum::<usize>(), w.comments("OCPBUGS-1").len());
            }
            if t == day(26) {
                let now = (w.slack.messages().iter().map(|m| 1 + m.edits).sum::<usize>(), w.comments("OCPBUGS-1").len());
                assert_eq!(now, said_then, "10 days of cycles since {:?} and nothing said", quiet_from);
            }
        }
        let replies = w.thread_replies();
        eprintln!("accepted-level thread: {replies:#?}");
        assert_eq!(count(&replies, "above the accepted level P50 ≤ 25s"), 1, "{replies:#?}");
        assert_eq!(count(&replies, "reminder: the accepted level"), 1, "{replies:#?}");
        let i = w.incident().await;
        assert!(i.state.is_open());
        assert_eq!(i.allowance, None, "lapsed");
        let events = w.store.incidents().events(i.id).await.unwrap();
        assert!(events.iter().any(|e| e.kind == "allowance_ended" && e.detail.contains("lapsed")), "{events:#?}");
        let above = events.iter().find(|e| e.kind == "above_accepted").expect("re-alerted");
        assert!(above.at >= day(28).timestamp());
        drop(w.db);
    }
}

/// GitHub for a fix that lands in metal's harness: pull request 1590 of dev-scripts, merged at
/// `merged`. Only dev-scripts is read.
async fn harness_github(w: &mut World, merged: DateTime<Utc>) -> crate::common::github::FakeGitHub {
    let gh = crate::common::github::FakeGitHub::start(100).await;
    gh.add_pull("openshift-metal3/dev-scripts", 1590, Some(merged));
    gh.add_commit(
        "openshift-metal3/dev-scripts",
        "0000aaaa",
        "An old change",
        day(1),
        &["README.md"],
    );
    w.settings.github.enabled = true;
    w.settings.github.api_url = gh.url.clone();
    w.settings.github.timeout_secs = 1;
    w.settings.github.repositories.truncate(1);
    gh
}

const HARNESS_FIX: &str = "https://github.com/openshift-metal3/dev-scripts/pull/1590";

impl World {
    /// Metal runs that started after `since` and finished by `by`.
    fn metal_runs_started_after(&self, since: DateTime<Utc>, by: DateTime<Utc>) -> usize {
        synth::run_records(&self.scenario)
            .iter()
            .filter(|r| r.run.job_name.contains("-metal-") && r.run.started_at >= since)
            .filter(|r| r.run.finished_at.is_some_and(|f| f <= by))
            .count()
    }
}

on_both_engines! {
    async fn a_harness_fix_is_judged_on_the_runs_started_after_its_merge(db) {
        let scenario = world(36, vec![regression(12, Some(24), (18, 24))]);
        let mut w = World::start(db, "harness-fixed", scenario, None).await;
        let merged = day(24) + Duration::hours(8);
        let gh = harness_github(&mut w, merged).await;
        let claim_at = day(24) + Duration::hours(12);
        let mut verdicts = Vec::new();
        for t in cycles(14) {
            if t == claim_at {
                let key = w.incident().await.jira_key.expect("filed");
                w.jira.set_status(&key, "ON_QA", None, claim_at);
                w.jira.link_pull_request(&key, HARNESS_FIX);
                gh.set_mode(crate::common::github::Mode::Down);
            }
            if t == claim_at + Duration::hours(6) {
                gh.set_mode(crate::common::github::Mode::Normal);
            }
            let report = w.cycle(t).await;
            if let Some(v) = report.regressions.iter().find_map(|r| r.verification.clone()) {
                verdicts.push((t, v));
            }
        }
        // GitHub down when it was claimed: no fix point yet, and no verdict on the claim's time
        let (t0, first) = &verdicts[0];
        assert_eq!((*t0, first.verdict, first.since), (claim_at, FixVerdict::Inconclusive, None));
        assert!(first.reason.contains("GitHub did not answer"), "{}", first.reason);
        // then judged by time: the runs started after the merge, not a payload, not the claim
        for (_, v) in &verdicts[1..] {
            assert_eq!((v.since, v.payload.as_deref(), v.by_merge), (Some(merged.timestamp()), None, true), "{v:#?}");
        }
        let (fixed_at, fixed) = verdicts.iter().find(|(_, v)| v.verdict == FixVerdict::Fixed).expect("a fixed verdict");
        assert!(fixed.runs >= 10 && w.metal_runs_started_after(merged, *fixed_at) >= 10);
        assert!(sheriff::words::line(&Told::Verdict(fixed)).contains("started after the fix merged outside the payload"), "{}", sheriff::words::line(&Told::Verdict(fixed)));
        let i = w.incident().await;
        assert_eq!((i.state, i.resolution), (sheriff::domain::incidents::State::Resolved, Some(sheriff::domain::incidents::ResolvedAs::Fixed)));
        let claim = i.fix.unwrap();
        assert_eq!((claim.pull_requests, claim.merged_at), (vec![HARNESS_FIX.to_string()], Some(merged.timestamp())));
        assert_eq!(count(&w.thread_replies(), "fix verified"), 1);
        assert!(gh.requests().iter().any(|q| q.path == "/repos/openshift-metal3/dev-scripts/pulls/1590"));
        drop(w.db);
    }

    async fn a_harness_fix_after_which_the_runs_stay_bad_is_a_failed_fix(db) {
        let scenario = world(37, vec![regression(12, None, (18, 24))]);
        let mut w = World::start(db, "harness-failed", scenario, None).await;
        let merged = day(22) + Duration::hours(8);
        let gh = harness_github(&mut w, merged).await;
        // named as the fix by its commit this time
        let sha = "f1c0000000000000000000000000000000000042";
        gh.add_commit("openshift-metal3/dev-scripts", sha, "Two registry replicas on RWX storage", merged, &["02_configure_host.sh"]);
        let commit = format!("https://github.com/openshift-metal3/dev-scripts/commit/{sha}");
        let claim_at = day(22) + Duration::hours(12);
        for t in cycles(14) {
            if t == claim_at {
                let key = w.incident().await.jira_key.expect("filed");
                w.jira.set_status(&key, "ON_QA", None, claim_at);
                w.jira.link_pull_request(&key, &commit);
            }
            w.cycle(t).await;
        }
        let i = w.incident().await;
        assert!(i.state.is_open(), "still open: {:?}", i.state);
        let claim = i.fix.clone().unwrap();
        assert_eq!((claim.pull_requests, claim.merged_at), (vec![commit], Some(merged.timestamp())));
        let replies = w.thread_replies();
        assert_eq!(count(&replies, "failed fix"), 1, "{replies:#?}");
        assert!(w.everything_said(&i).await.iter().all(|t| !t.contains("fix verified")));
        drop(w.db);
    }
}
