use super::*;
use crate::model::{Dimension, Scope, Status};

fn report(scope: &[(&str, &str)], observed: f64, status: &'static str) -> RegressionReport {
    let mut s = Scope::from([(Dimension::Release, "4.14")]);
    for (d, v) in scope {
        s.set(Dimension::parse(d).unwrap(), v.split(','));
    }
    let mut r = crate::synth::example_report(s, observed, 4.0);
    r.backends = vec!["image-registry-new-connections".into()];
    r.attribution.summary = "image-registry regressed on metal 4.14".into();
    r.status = match status {
        "new" => Status::New,
        "ongoing" => Status::Ongoing,
        _ => Status::Resolved,
    };
    r
}

/// The planner over incidents, silences and deliveries as the store would hand them over.
fn plan_with(
    now: i64,
    regressions: &[RegressionReport],
    incidents: &[Incident],
    silences: &[Silence],
    delivered: &Delivered,
    policy: &Policy,
) -> Plan {
    let known = Known {
        incidents: incidents.to_vec(),
        silences: silences.to_vec(),
        delivered: delivered.clone(),
    };
    plan(now, regressions, &[], &known, policy)
}

fn policy() -> Policy {
    Policy {
        routes: vec![crate::config::SlackRoute {
            channel: "#metal".into(),
            component: None,
            platform: Some("metal".into()),
            backend: None,
        }],
        default_channel: "#disruption".into(),
        jira: true,
        jira_cap: 3,
        jira_comment_interval_secs: 86_400,
        reopen_window_secs: 14 * 86_400,
        failed_fix_transition: String::new(),
        min_effect_seconds: 5.0,
        wording: crate::words::line,
    }
}

/// The text of a line, as the application renders it.
fn describe(t: Told<'_>) -> String {
    crate::words::line(&t)
}

/// Applies a plan the way the store does, enough to feed the next cycle.
fn apply(now: i64, plan: &Plan, incidents: &mut Vec<Incident>, delivered: &mut Delivered) {
    for step in &plan.steps {
        let id = match &step.action {
            Action::Open {
                fingerprint,
                snapshot,
                ..
            } => {
                let id = incidents.len() as i64 + 1;
                let mut i = Incident::new(id, fingerprint, snapshot.clone());
                i.opened_at = now;
                incidents.push(i);
                id
            }
            Action::Update {
                id,
                state,
                snapshot,
                ..
            } => {
                let i = incidents.iter_mut().find(|i| i.id == *id).unwrap();
                i.state = *state;
                i.snapshot = snapshot.clone();
                *id
            }
            Action::Resolve { id, .. } => {
                let i = incidents.iter_mut().find(|i| i.id == *id).unwrap();
                i.state = State::Resolved;
                i.resolved_at = Some(now);
                *id
            }
            Action::Stale { id } => {
                incidents.iter_mut().find(|i| i.id == *id).unwrap().state = State::Stale;
                *id
            }
            Action::CatchUp { id } => *id,
            other => other.incident().unwrap(),
        };
        for e in &step.effects {
            match e {
                Effect::SlackPost { .. } => {
                    delivered.slack_posted.insert(id);
                }
                Effect::JiraCreate => {
                    delivered.jira_filed.insert(id);
                }
                _ => {}
            }
        }
    }
}

fn kinds(plan: &Plan) -> Vec<&'static str> {
    plan.steps
        .iter()
        .flat_map(|s| s.effects.iter().map(|e| e.kind().as_str()))
        .collect()
}

#[test]
fn the_same_regression_five_times_is_one_incident_with_one_set_of_effects() {
    let (mut incidents, mut delivered) = (Vec::new(), Delivered::default());
    let r = report(&[("platform", "metal")], 31.0, "new");
    let first = plan_with(
        1000,
        std::slice::from_ref(&r),
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    assert_eq!(
        kinds(&first),
        ["slack_post", "slack_details", "jira_create"]
    );
    assert!(
        matches!(&first.steps[0].effects[0], Effect::SlackPost { channel } if channel == "#metal")
    );
    assert!(
        first.summaries.is_empty(),
        "one new incident: its parent is the one top-level post"
    );
    apply(1000, &first, &mut incidents, &mut delivered);
    let ongoing = report(&[("platform", "metal")], 33.0, "ongoing");
    for cycle in 1..5 {
        let p = plan_with(
            1000 + cycle * 3600,
            std::slice::from_ref(&ongoing),
            &incidents,
            &[],
            &delivered,
            &policy(),
        );
        assert!(kinds(&p).is_empty(), "cycle {cycle}: {:?}", kinds(&p));
        assert!(p.summaries.is_empty());
        apply(1000 + cycle * 3600, &p, &mut incidents, &mut delivered);
    }
    assert_eq!(incidents.len(), 1);
    assert_eq!(incidents[0].state, State::Ongoing);
}

#[test]
fn a_grown_scope_is_the_same_incident_and_a_material_change() {
    let (mut incidents, mut delivered) = (Vec::new(), Delivered::default());
    let p = plan_with(
        0,
        &[report(
            &[("platform", "metal"), ("network", "ovn")],
            31.0,
            "new",
        )],
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    apply(0, &p, &mut incidents, &mut delivered);
    let grown = report(&[("platform", "metal")], 31.0, "new");
    assert_ne!(grown.fingerprint, incidents[0].fingerprint);
    let p = plan_with(3600, &[grown], &incidents, &[], &delivered, &policy());
    assert!(
        matches!(&p.steps[0].action, Action::Update { id: 1, changes, .. } if matches!(changes[0], Change::ScopeGrew { .. }))
    );
    assert_eq!(kinds(&p), ["slack_update", "slack_reply", "jira_comment"]);
    apply(3600, &p, &mut incidents, &mut delivered);
    assert_eq!(incidents.len(), 1);
    // another unrelated scope is another incident
    let aws = report(&[("platform", "aws")], 31.0, "new");
    let p = plan_with(
        7200,
        &[report(&[("platform", "metal")], 31.0, "ongoing"), aws],
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    assert!(matches!(p.steps[1].action, Action::Open { .. }));
}

#[test]
fn a_data_gap_is_stale_not_resolved_and_a_resolution_resolves_once() {
    let (mut incidents, mut delivered) = (Vec::new(), Delivered::default());
    let p = plan_with(
        0,
        &[report(&[("platform", "metal")], 31.0, "new")],
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    apply(0, &p, &mut incidents, &mut delivered);
    let gap = plan_with(3600, &[], &incidents, &[], &delivered, &policy());
    assert!(matches!(gap.steps[0].action, Action::Stale { id: 1 }));
    assert_eq!(kinds(&gap), ["slack_update"]);
    apply(3600, &gap, &mut incidents, &mut delivered);
    assert_eq!(incidents[0].state, State::Stale);
    let still = plan_with(7200, &[], &incidents, &[], &delivered, &policy());
    assert!(
        kinds(&still).is_empty(),
        "a second empty cycle says nothing more"
    );
    let back = plan_with(
        9000,
        &[report(&[("platform", "metal")], 31.0, "ongoing")],
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    assert!(
        matches!(&back.steps[0].action, Action::Update { state: State::Ongoing, changes, .. } if changes == &[Change::Returned])
    );
    apply(9000, &back, &mut incidents, &mut delivered);
    let cleared = report(&[("platform", "metal")], 1.0, "resolved");
    let done = plan_with(
        10_000,
        std::slice::from_ref(&cleared),
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    assert_eq!(
        kinds(&done),
        ["slack_update", "slack_reply", "jira_resolve"]
    );
    apply(10_000, &done, &mut incidents, &mut delivered);
    assert_eq!(incidents[0].state, State::Resolved);
    let again = plan_with(11_000, &[cleared], &incidents, &[], &delivered, &policy());
    assert!(again.steps.is_empty(), "a resolved incident resolves once");
    // recurrence within the window reopens it
    let back = plan_with(
        12_000,
        &[report(&[("platform", "metal")], 31.0, "new")],
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    assert!(matches!(
        &back.steps[0].action,
        Action::Update {
            id: 1,
            state: State::Reopened,
            ..
        }
    ));
    assert_eq!(kinds(&back), ["slack_update", "slack_reply", "jira_reopen"]);
}

#[test]
fn silences_hold_notifications_until_they_end() {
    let (mut incidents, mut delivered) = (Vec::new(), Delivered::default());
    let silence = Silence {
        id: 9,
        fingerprint: None,
        backend: Some("image-registry*".into()),
        dimensions: [(Dimension::Platform, "metal".to_string())].into(),
        reason: "known metal outage".into(),
        created_by: "U1".into(),
        created_at: 0,
        expires_at: 5000,
        removed_at: None,
    };
    let r = report(&[("platform", "metal")], 31.0, "new");
    let p = plan_with(
        0,
        std::slice::from_ref(&r),
        &incidents,
        std::slice::from_ref(&silence),
        &delivered,
        &policy(),
    );
    assert_eq!(p.steps[0].silenced_by, Some(9));
    assert!(kinds(&p).is_empty() && p.summaries.is_empty());
    apply(0, &p, &mut incidents, &mut delivered);
    let after = plan_with(
        6000,
        &[report(&[("platform", "metal")], 31.0, "ongoing")],
        &incidents,
        &[silence],
        &delivered,
        &policy(),
    );
    assert_eq!(
        kinds(&after),
        ["slack_post", "slack_details", "jira_create"],
        "owed notifications follow the silence's end"
    );
}

#[test]
fn the_jira_cap_defers_the_rest_and_says_so() {
    let (incidents, delivered) = (Vec::new(), Delivered::default());
    let platforms = ["aws", "gcp", "azure", "metal", "vsphere"];
    let reports: Vec<_> = platforms
        .iter()
        .map(|p| report(&[("platform", p)], 31.0, "new"))
        .collect();
    let p = plan_with(0, &reports, &incidents, &[], &delivered, &policy());
    assert_eq!(kinds(&p).iter().filter(|k| **k == "jira_create").count(), 3);
    assert_eq!(p.not_filed.len(), 2);
    let default = p.summaries.iter().find_map(|s| match s {
        Effect::SlackSummary { channel, lines } if channel == "#disruption" => Some(lines.clone()),
        _ => None,
    });
    assert!(matches!(
        default.unwrap().last().unwrap(),
        SummaryLine::Line { what: Happened::NotFiled, text, .. } if text.contains("not filed in Jira")
    ));
}

#[test]
fn two_open_incidents_that_are_one_problem_merge_into_the_older_with_one_reply() {
    let (mut incidents, mut delivered) = (Vec::new(), Delivered::default());
    let narrow = report(&[("platform", "metal"), ("network", "sdn")], 31.0, "new");
    let other = report(&[("platform", "metal"), ("network", "ovn")], 31.0, "new");
    let p = plan_with(0, &[narrow, other], &incidents, &[], &delivered, &policy());
    apply(0, &p, &mut incidents, &mut delivered);
    assert_eq!(incidents.len(), 2);
    // the cycle found them one problem: #2 merges into #1, which carries the whole of metal
    let whole = report(&[("platform", "metal")], 31.0, "ongoing");
    let known = Known {
        incidents: incidents.clone(),
        silences: Vec::new(),
        delivered: delivered.clone(),
    };
    let p = plan(3600, &[whole], &[(2, 1)], &known, &policy());
    let merged: Vec<&Step> = p
        .steps
        .iter()
        .filter(|s| s.action.incident() == Some(2))
        .collect();
    assert_eq!(merged.len(), 1, "{:?}", p.steps);
    assert!(matches!(
        merged[0].action,
        Action::Resolve {
            how: Resolution::Merged { into: 1 },
            ..
        }
    ));
    let replies: Vec<&str> = merged[0]
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::SlackReply { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        replies,
        ["merged into #1: the same problem, followed there"]
    );
    assert!(
        merged[0]
            .effects
            .iter()
            .any(|e| matches!(e, Effect::JiraResolve { .. }))
    );
    let survivor: Vec<&Step> = p
        .steps
        .iter()
        .filter(|s| s.action.incident() == Some(1))
        .collect();
    assert!(
        matches!(survivor[0].action, Action::Update { .. }),
        "the older one follows the whole scope"
    );
    // a repeat of the merge changes nothing more
    apply(3600, &p, &mut incidents, &mut delivered);
    let known = Known {
        incidents: incidents.clone(),
        silences: Vec::new(),
        delivered,
    };
    let again = plan(
        7200,
        &[report(&[("platform", "metal")], 31.0, "ongoing")],
        &[(2, 1)],
        &known,
        &policy(),
    );
    assert!(
        again.steps.iter().all(|s| s.action.incident() != Some(2)),
        "{:?}",
        again.steps
    );
}

/// An open, posted and filed incident of `report`'s scope, with a fix claim.
fn followed(r: &RegressionReport) -> (Vec<Incident>, Delivered) {
    let mut i = Incident::new(1, &r.fingerprint, Snapshot::from_report(r));
    i.state = State::Ongoing;
    i.fix = Some(crate::model::FixClaim {
        key: "OCPBUGS-7".into(),
        status: "ON_QA".into(),
        resolution: None,
        claimed_at: 500,
        pull_requests: vec![],
        payload: None,
        payload_at: None,
        merged_at: None,
        pending: None,
        verdicts: vec![],
    });
    let mut d = Delivered::default();
    d.slack_posted.insert(1);
    d.jira_filed.insert(1);
    (vec![i], d)
}

fn verification(verdict: crate::model::FixVerdict) -> crate::model::Verification {
    crate::model::Verification {
        verdict,
        key: "OCPBUGS-7".into(),
        since: Some(500),
        payload: None,
        by_merge: false,
        runs: 4,
        needed: 6,
        percentile: crate::model::Percentile::P50,
        observed: Some(20.0),
        allowed: 9.0,
        reference: Some(2.0),
        parts: vec![],
        reason: "4 of the 10 runs a verdict needs since the fix; 6 more needed".into(),
    }
}

#[test]
fn a_verdict_is_told_once_per_claim_in_the_thread_and_jira_and_fixed_resolves() {
    use crate::model::FixVerdict;
    let mut r = report(&[("platform", "metal")], 20.0, "ongoing");
    let (mut incidents, delivered) = followed(&r);
    r.verification = Some(verification(FixVerdict::Inconclusive));
    let p = plan_with(
        1000,
        std::slice::from_ref(&r),
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    assert_eq!(
        kinds(&p),
        ["slack_update", "slack_reply", "jira_comment"],
        "told, whatever the comment rate"
    );
    let Action::Update { changes, .. } = &p.steps[0].action else {
        panic!()
    };
    assert!(matches!(
        changes.as_slice(),
        [Change::Verdict {
            verdict: FixVerdict::Inconclusive,
            ..
        }]
    ));
    // told: the store keeps it with the claim, and the next cycle says nothing
    let told = crate::model::ToldVerdict {
        verdict: FixVerdict::Inconclusive,
        at: 1000,
        text: String::new(),
    };
    incidents[0].fix.as_mut().unwrap().verdicts.push(told);
    incidents[0].jira_commented_at = Some(1000);
    let again = plan_with(
        2000,
        std::slice::from_ref(&r),
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    assert!(kinds(&again).is_empty(), "{:?}", kinds(&again));
    // a failed fix is told, and moves the issue when a transition is configured
    r.verification = Some(verification(FixVerdict::FailedFix));
    let mut moving = policy();
    moving.failed_fix_transition = "ASSIGNED".into();
    let failed = plan_with(
        3000,
        std::slice::from_ref(&r),
        &incidents,
        &[],
        &delivered,
        &moving,
    );
    assert_eq!(
        kinds(&failed),
        [
            "slack_update",
            "slack_reply",
            "jira_comment",
            "jira_transition"
        ]
    );
    // fixed resolves as fixed, in the resolution's own words
    let mut back = report(&[("platform", "metal")], 1.0, "resolved");
    back.verification = Some(verification(FixVerdict::Fixed));
    let fixed = plan_with(
        4000,
        std::slice::from_ref(&back),
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    let Action::Resolve { how, .. } = &fixed.steps[0].action else {
        panic!("{:?}", fixed.steps)
    };
    assert_eq!(how.kind(), crate::domain::incidents::ResolvedAs::Fixed);
    assert!(describe(Told::Resolved(how)).starts_with("fix verified for OCPBUGS-7: fixed"));
    // recovered with no claim is not "fixed"
    incidents[0].fix = None;
    back.verification = None;
    let recovered = plan_with(
        4000,
        std::slice::from_ref(&back),
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    let Action::Resolve { how, .. } = &recovered.steps[0].action else {
        panic!()
    };
    assert_eq!(how.kind(), crate::domain::incidents::ResolvedAs::Recovered);
    assert!(
        !describe(Told::Resolved(how)).contains("fixed")
            && describe(Told::Resolved(how)).contains("no fix was verified")
    );
}

#[test]
fn an_accepted_level_holds_within_re_alerts_once_above_reminds_once_and_lapses() {
    use crate::model::{Allowance, DAY, Percentile};
    let at = |seconds: f64| {
        let mut r = report(&[("platform", "metal")], seconds, "ongoing");
        r.percentiles.get_mut(&Percentile::P50).unwrap().now = Some(seconds);
        r.percentiles.get_mut(&Percentile::P95).unwrap().now = Some(seconds * 1.5);
        r
    };
    let (mut incidents, delivered) = followed(&at(20.0));
    incidents[0].fix = None;
    incidents[0].allowance = Some(Allowance {
        percentile: Percentile::P50,
        seconds: 25.0,
        until: Some(10 * DAY),
        reason: "known".into(),
        by: "cli:me".into(),
        jira_key: None,
        created_at: 0,
        reminded: false,
        above: false,
    });
    // within the level plus the minimum effect, even at a higher tier: held
    for seconds in [20.0, 29.0, 45.0 / 1.5] {
        let p = plan_with(DAY, &[at(seconds)], &incidents, &[], &delivered, &policy());
        assert!(
            kinds(&p).is_empty() && p.summaries.is_empty(),
            "{seconds}: {:?}",
            kinds(&p)
        );
        assert_eq!(p.accepted, vec![1]);
    }
    // above: one reply and one comment naming the level, then the usual
    let above = plan_with(2 * DAY, &[at(40.0)], &incidents, &[], &delivered, &policy());
    let replies: Vec<&Effect> = above.steps[0]
        .effects
        .iter()
        .filter(|e| matches!(e, Effect::SlackReply { .. }))
        .collect();
    assert_eq!(replies.len(), 1);
    assert!(
        matches!(replies[0], Effect::SlackReply { text } if text.contains("above the accepted level P50 ≤ 25s"))
    );
    assert!(
        above.steps[0]
            .effects
            .iter()
            .any(|e| matches!(e, Effect::JiraComment { text } if text.contains("accepted level")))
    );
    let next = above.allowances[0].allowance.clone().unwrap();
    assert!(next.above);
    incidents[0].allowance = Some(next);
    let still = plan_with(
        2 * DAY + 3600,
        &[at(41.0)],
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    assert!(
        still.allowances.is_empty() && still.accepted.is_empty(),
        "told once, then as usual"
    );
    // back within: quiet again; 2 days before the end, one reminder
    let within = plan_with(3 * DAY, &[at(20.0)], &incidents, &[], &delivered, &policy());
    incidents[0].allowance = within.allowances[0].allowance.clone();
    assert!(!incidents[0].allowance.as_ref().unwrap().above);
    let remind = plan_with(
        8 * DAY + 60,
        &[at(20.0)],
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    assert_eq!(kinds(&remind), ["slack_update", "slack_reply"]);
    incidents[0].allowance = remind.allowances[0].allowance.clone();
    let after = plan_with(9 * DAY, &[at(20.0)], &incidents, &[], &delivered, &policy());
    assert!(kinds(&after).is_empty(), "reminded once");
    // lapsed: it ends, and the incident speaks for itself again
    let lapsed = plan_with(
        10 * DAY,
        &[at(20.0)],
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    assert_eq!(lapsed.allowances[0].allowance, None);
    assert!(lapsed.accepted.is_empty());
}

#[test]
fn a_persons_resolution_is_told_during_a_silence_and_what_it_held_once_it_ends() {
    let r = report(&[("platform", "metal")], 31.0, "ongoing");
    let mut i = Incident::new(1, &r.fingerprint, Snapshot::from_report(&r));
    i.state = State::Ongoing;
    let mut delivered = Delivered::default();
    delivered.slack_posted.insert(1);
    delivered.jira_filed.insert(1);
    let silence = Silence {
        id: 9,
        fingerprint: Some(r.fingerprint.clone()),
        backend: None,
        dimensions: Default::default(),
        reason: "known".into(),
        created_by: "cli:ops".into(),
        created_at: 0,
        expires_at: 50_000,
        removed_at: None,
    };
    let mut known = Known {
        incidents: vec![i],
        silences: vec![silence],
        delivered,
    };
    // a cycle's change is held, and kept as owed
    let tier = Change::TierChanged {
        from: "P50 <2x".into(),
        to: "P50 >=10x".into(),
    };
    let update = Step {
        action: Action::Update {
            id: 1,
            state: State::Ongoing,
            snapshot: known.incidents[0].snapshot.clone(),
            changes: vec![tier.clone()],
            episodes: vec![],
        },
        effects: vec![],
        silenced_by: None,
        held: None,
    };
    let p = with_effects(
        100,
        vec![update],
        &known.incidents,
        &known.silences,
        &known.delivered,
        &policy(),
    );
    assert_eq!((kinds(&p), p.steps[0].silenced_by), (vec![], Some(9)));
    let held = p.steps[0].held.clone().expect("the change is owed");
    assert_eq!(
        held.iter().map(|e| e.kind().as_str()).collect::<Vec<_>>(),
        ["slack_reply", "jira_comment"]
    );
    known.incidents[0].held = held;
    // a person's resolution is told at once, the silence notwithstanding; what it held waits
    let how = Resolution::ByHand {
        reason: "the lab was rewired".into(),
        by: "cli:ops".into(),
    };
    let p = super::super::manual::resolve(&known, "1", how, &policy(), 200).unwrap();
    assert_eq!(kinds(&p), ["slack_update", "slack_reply", "jira_resolve"]);
    let said = "resolved by hand by ops (command line): the lab was rewired".to_string();
    assert!(
        p.steps[0]
            .effects
            .contains(&Effect::SlackReply { text: said.clone() }),
        "{p:?}"
    );
    assert!(
        p.steps[0]
            .effects
            .contains(&Effect::JiraResolve { text: said }),
        "{p:?}"
    );
    assert!(
        p.steps[0].silenced_by.is_none() && p.steps[0].held.is_none(),
        "{p:?}"
    );
    known.incidents[0].state = State::Resolved;
    // a cycle while the silence holds: nothing; once it has lapsed: what it held, once
    let quiet = plan(300, &[], &[], &known, &policy());
    assert!(kinds(&quiet).is_empty(), "{:?}", kinds(&quiet));
    let lapsed = plan(60_000, &[], &[], &known, &policy());
    assert_eq!(
        kinds(&lapsed),
        ["slack_update", "slack_reply", "jira_comment"]
    );
    assert_eq!(
        lapsed.steps[0].held,
        Some(vec![]),
        "told, so no longer owed"
    );
    let told = format!("while silenced: {}", describe(Told::Change(&tier)));
    assert!(
        lapsed.steps[0]
            .effects
            .contains(&Effect::SlackReply { text: told.clone() }),
        "{lapsed:?}"
    );
    // ended by hand: the same, at once
    let ended = super::super::manual::unsilence(&known, "#9", &policy(), 400).unwrap();
    assert_eq!(
        (ended.unsilence.clone(), kinds(&ended)),
        (vec![9], vec!["slack_update", "slack_reply", "jira_comment"])
    );
    assert!(
        ended.steps[0]
            .effects
            .contains(&Effect::JiraComment { text: told }),
        "{ended:?}"
    );
}

#[test]
fn a_channel_summary_gathers_two_or_more_incidents_and_names_each_for_its_thread() {
    let (incidents, delivered) = (Vec::new(), Delivered::default());
    let metal = report(&[("platform", "metal")], 31.0, "new");
    let mut network = report(&[("platform", "metal"), ("network", "ovn")], 31.0, "new");
    network.family = "kube-api".into();
    network.fingerprint = "sheriff-kube-api".into();
    let one = plan_with(
        0,
        std::slice::from_ref(&metal),
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    assert!(one.summaries.is_empty());
    let two = plan_with(
        0,
        &[metal.clone(), network],
        &incidents,
        &[],
        &delivered,
        &policy(),
    );
    let [Effect::SlackSummary { channel, lines }] = two.summaries.as_slice() else {
        panic!("{:?}", two.summaries)
    };
    assert_eq!(channel, "#metal");
    let named: Vec<&str> = lines
        .iter()
        .map(|l| match l {
            SummaryLine::Line { fingerprint, .. } => fingerprint.as_str(),
            SummaryLine::Text(_) => "",
        })
        .collect();
    assert_eq!(named, [metal.fingerprint.as_str(), "sheriff-kube-api"]);
}
