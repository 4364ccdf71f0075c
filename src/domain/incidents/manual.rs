//! What people do to incidents (acknowledge, silence, resolve, "not a regression", file now),
//! planned like a cycle's changes: from the incidents as stored, a [`Plan`] the store applies
//! in one transaction, or a [`Refusal`] saying why not. Pure.
//!
//! Asking twice for what is already so changes nothing (Slack may deliver a request again):
//! an incident acknowledged by the same person, a silence just like one made in the last
//! minutes, a "not a regression" on an incident already resolved and silenced that way.

use super::plan::{
    Action, Effect, Known, NewSilence, Plan, Policy, Resolution, Step, with_effects,
};
use super::silence::{Silence, Target};
use super::told::{Told, Wording};
use super::{Incident, State};
use crate::model::DAY;

/// Why a request was not carried out, as typed values: `words` says each to the person who
/// made it (its `Display`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No incident has this number or fingerprint (as the person wrote it).
    NoIncident { reference: String },
    /// No active silence matches this silence id, incident or fingerprint.
    NoActiveSilence { reference: String },
    /// "File Jira now" while Jira is not configured.
    JiraOff,
    /// The incident has its Jira issue already.
    JiraFiled { id: i64, key: String },
    /// The incident's Jira issue is in the outbox, being filed.
    JiraBeingFiled { id: i64 },
    /// Resolving an incident that is resolved.
    AlreadyResolved { id: i64 },
    /// Accepting a level on an incident that is resolved.
    NothingToAccept { id: i64 },
    /// "Not a regression" without a reason.
    NotARegressionWithoutReason,
    /// An accepted level without a reason.
    AcceptedWithoutReason,
    /// An accepted level that cannot be read (`P50<=10s`).
    BadLevel(crate::model::LevelError),
    /// An accepted level's end that is neither a date, a time nor a span: as typed, trimmed
    /// and cut at 40 characters.
    BadUntil { text: String },
    /// An accepted level's end that is not in the future.
    UntilNotInFuture,
    /// An accepted level longer than 180 days (`MAX_ALLOWANCE_SECS`).
    AcceptedTooLong,
    /// A silence of no duration.
    NoSilenceDuration,
    /// A silence longer than 90 days (`MAX_SILENCE_SECS`).
    SilenceTooLong,
    /// A duration that overflows the clock.
    DurationTooLong,
}

impl Refusal {
    /// No incident has `reference` (a number or fingerprint, as the person wrote it).
    pub fn no_incident(reference: &(impl ToString + ?Sized)) -> Refusal {
        Refusal::NoIncident {
            reference: reference.to_string(),
        }
    }
}

/// A silence made again this soon, by the same person and the same way, is the same silence.
pub(crate) const SAME_SILENCE_WITHIN_SECS: i64 = 600;
/// How long "Not a regression" keeps an incident quiet.
pub(crate) const NOT_A_REGRESSION_SECS: i64 = 30 * DAY;
/// The longest silence, from Slack or the command line.
pub(crate) const MAX_SILENCE_SECS: i64 = 90 * DAY;

/// The incident a person named: its number (`12`, `#12`) or fingerprint.
pub fn find<'a>(incidents: &'a [Incident], reference: &str) -> Result<&'a Incident, Refusal> {
    let r = reference.trim().trim_start_matches('#');
    incidents
        .iter()
        .find(|i| i.fingerprint == r || r.parse::<i64>().is_ok_and(|n| n == i.id))
        .ok_or_else(|| Refusal::no_incident(reference))
}

fn single(action: Action, effects: Vec<Effect>) -> Plan {
    Plan {
        steps: vec![Step {
            action,
            effects,
            silenced_by: None,
            held: None,
        }],
        ..Plan::default()
    }
}

/// Acknowledges an incident; its parent message (when posted) is edited to say who. The bool
/// says whether it was new.
pub(crate) fn acknowledge(
    known: &Known,
    reference: &str,
    actor: &str,
) -> Result<(Plan, bool), Refusal> {
    let i = find(&known.incidents, reference)?;
    if i.acked_by.as_deref() == Some(actor) {
        return Ok((Plan::default(), false));
    }
    let effects = if known.delivered.slack_posted.contains(&i.id) {
        vec![Effect::SlackUpdate]
    } else {
        Vec::new()
    };
    Ok((
        single(
            Action::Acknowledge {
                id: i.id,
                by: actor.to_string(),
            },
            effects,
        ),
        true,
    ))
}

/// Files an incident's Jira issue now, ignoring the per-cycle cap.
pub(crate) fn file_now(
    known: &Known,
    reference: &str,
    jira_enabled: bool,
) -> Result<Plan, Refusal> {
    if !jira_enabled {
        return Err(Refusal::JiraOff);
    }
    let i = find(&known.incidents, reference)?;
    if let Some(key) = &i.jira_key {
        return Err(Refusal::JiraFiled {
            id: i.id,
            key: key.clone(),
        });
    }
    if known.delivered.jira_filed.contains(&i.id) {
        return Err(Refusal::JiraBeingFiled { id: i.id });
    }
    Ok(single(
        Action::FileJira { id: i.id },
        vec![Effect::JiraCreate],
    ))
}

/// Resolves an open incident by hand (or as not a regression); Slack and Jira hear of it like
/// any resolution.
pub fn resolve(
    known: &Known,
    reference: &str,
    how: Resolution,
    policy: &Policy,
    now: i64,
) -> Result<Plan, Refusal> {
    let i = find(&known.incidents, reference)?;
    if !i.state.is_open() {
        return Err(Refusal::AlreadyResolved { id: i.id });
    }
    let step = Step {
        action: Action::Resolve {
            id: i.id,
            snapshot: None,
            how,
            episodes: None,
        },
        effects: Vec::new(),
        silenced_by: None,
        held: None,
    };
    Ok(with_effects(
        now,
        vec![step],
        &known.incidents,
        &known.silences,
        &known.delivered,
        policy,
    ))
}

/// "Not a regression": the reason in the history, the incident resolved if open, and a
/// 30-day silence of its fingerprint. Nothing when all of that is already so.
pub fn not_a_regression(
    known: &Known,
    reference: &str,
    reason: &str,
    policy: &Policy,
    now: i64,
) -> Result<Plan, Refusal> {
    if reason.trim().is_empty() {
        return Err(Refusal::NotARegressionWithoutReason);
    }

    let i = find(&known.incidents, reference)?;
    let reason = reason.trim();
    // the silence's reason is the history's line; the resolution keeps the reason as given
    let resolution_reason = reason.to_string();
    let reason = (policy.wording)(&Told::NotARegression { reason });
    let silenced = known
        .silences
        .iter()
        .any(|s| s.fingerprint.as_deref() == Some(&i.fingerprint) && s.reason == reason);

    if i.state == State::Resolved && silenced {
        return Ok(Plan::default());
    }

    let mut plan = if i.state.is_open() {
        let how = Resolution::NotARegression {
            reason: resolution_reason,
        };
        resolve(known, reference, how, policy, now)?
    } else {
        Plan::default()
    };

    plan.steps.insert(
        0,
        Step {
            action: Action::Note {
                id: i.id,
                kind: "not_a_regression".into(),
                detail: reason.clone(),
            },
            effects: Vec::new(),
            silenced_by: None,
            held: None,
        },
    );

    if !silenced {
        plan.silences.push(NewSilence {
            target: Target {
                fingerprint: Some(i.fingerprint.clone()),
                ..Target::default()
            },
            expires_at: now + NOT_A_REGRESSION_SECS,
            reason,
            incident: Some(i.id),
        });
    }

    Ok(plan)
}

/// The longest an accepted level lasts.
pub(crate) const MAX_ALLOWANCE_SECS: i64 = 180 * DAY;

/// When an accepted level ends: a date (`2026-12-15`, the day's start in UTC), a time
/// (RFC 3339) or a span from now (`14d`).
pub(crate) fn parse_until(text: &str, now: i64) -> Result<i64, Refusal> {
    let t = text.trim();
    if let Some(span) = crate::model::parse_span(t) {
        return now.checked_add(span).ok_or(Refusal::DurationTooLong);
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(d
            .and_hms_opt(0, 0, 0)
            .map_or(0, |d| d.and_utc().timestamp()));
    }
    chrono::DateTime::parse_from_rfc3339(t)
        .map(|d| d.timestamp())
        .map_err(|_| Refusal::BadUntil {
            text: t.chars().take(40).collect(),
        })
}

/// What a person accepts: a level, until when, why, and the Jira issue that says so.
#[derive(Debug, Clone, PartialEq)]
pub struct Accept {
    pub level: String,
    pub until: Option<i64>,
    pub reason: String,
    pub jira_key: Option<String>,
}

/// Accepts a level for an open incident: it stays quiet while its level is within it plus the
/// minimum effect (the reference is not raised). The thread and the Jira issue hear of it. The
/// same level, reason and end asked again by the same person changes nothing.
pub fn accept(
    known: &Known,
    reference: &str,
    a: &Accept,
    actor: &str,
    now: i64,
    wording: Wording,
) -> Result<Plan, Refusal> {
    use crate::model::Allowance;
    let (percentile, seconds) = accepted_level(a, now)?;
    let i = find(&known.incidents, reference)?;
    if !i.state.is_open() {
        return Err(Refusal::NothingToAccept { id: i.id });
    }

    let allowance = Allowance {
        percentile,
        seconds,
        until: a.until,
        reason: a.reason.trim().chars().take(500).collect(),
        by: actor.to_string(),
        jira_key: a.jira_key.clone().filter(|k| !k.trim().is_empty()),
        created_at: now,
        reminded: false,
        above: false,
    };
    let same = i.allowance.as_ref().is_some_and(|old| {
        (old.percentile, old.seconds, old.until, &old.reason, &old.by)
            == (
                percentile,
                seconds,
                a.until,
                &allowance.reason,
                &allowance.by,
            )
    });
    if same {
        return Ok(Plan::default());
    }

    let text = wording(&Told::Accepted {
        allowance: &allowance,
    });
    let mut effects = Vec::new();
    if known.delivered.slack_posted.contains(&i.id) {
        effects.push(Effect::SlackUpdate);
        effects.push(Effect::SlackReply { text: text.clone() });
    }
    if known.delivered.jira_filed.contains(&i.id) {
        effects.push(Effect::JiraComment { text: text.clone() });
    }
    let mut plan = single(
        Action::Note {
            id: i.id,
            kind: "accepted".into(),
            detail: text,
        },
        effects,
    );
    plan.allowances.push(super::plan::AllowanceChange {
        incident: i.id,
        allowance: Some(allowance),
        event: None,
    });
    Ok(plan)
}

/// The level `a` accepts, once its reason and end are found sound at `now`.
fn accepted_level(a: &Accept, now: i64) -> Result<(crate::model::Percentile, f64), Refusal> {
    if a.reason.trim().is_empty() {
        return Err(Refusal::AcceptedWithoutReason);
    }
    let level = crate::model::Allowance::parse_level(&a.level).map_err(Refusal::BadLevel)?;
    if let Some(until) = a.until {
        if until <= now {
            return Err(Refusal::UntilNotInFuture);
        }
        if until - now > MAX_ALLOWANCE_SECS {
            return Err(Refusal::AcceptedTooLong);
        }
    }
    Ok(level)
}

/// A new silence of an incident or a matcher, for `seconds` (at most 90 days). The silence's
/// id comes from the store; an equal one made by the same person in the last minutes is
/// returned instead of a second (the `Ok(Some(id))` case).
pub fn silence(
    known: &Known,
    target: &Target,
    seconds: i64,
    reason: &str,
    actor: &str,
    now: i64,
) -> Result<(Plan, Option<i64>), Refusal> {
    if seconds <= 0 {
        return Err(Refusal::NoSilenceDuration);
    }

    if seconds > MAX_SILENCE_SECS {
        return Err(Refusal::SilenceTooLong);
    }

    let mut target = target.clone();
    let mut incident = None;
    if let Some(reference) = &target.fingerprint {
        let i = find(&known.incidents, reference)?;
        target.fingerprint = Some(i.fingerprint.clone());
        incident = Some(i.id);
    }

    let expires_at = now.checked_add(seconds).ok_or(Refusal::DurationTooLong)?;
    let same = |s: &&Silence| {
        s.target() == target
            && s.reason == reason
            && s.created_by == actor
            && now - s.created_at <= SAME_SILENCE_WITHIN_SECS
            && (s.expires_at - expires_at).abs() <= SAME_SILENCE_WITHIN_SECS
    };

    if let Some(s) = known.silences.iter().find(same) {
        return Ok((Plan::default(), Some(s.id)));
    }

    let plan = Plan {
        silences: vec![NewSilence {
            target,
            expires_at,
            reason: reason.to_string(),
            incident,
        }],
        ..Plan::default()
    };

    Ok((plan, None))
}

/// The open incidents a silence of `target` would hold now, by number: a person is told when a
/// new silence holds none.
pub(crate) fn open_incidents_held(known: &Known, target: &Target) -> Vec<i64> {
    let mut target = target.clone();
    if let Some(reference) = &target.fingerprint
        && let Ok(i) = find(&known.incidents, reference)
    {
        target.fingerprint = Some(i.fingerprint.clone());
    }
    known
        .incidents
        .iter()
        .filter(|i| i.state.is_open() && target.names(&i.fingerprint, &i.snapshot))
        .map(|i| i.id)
        .collect()
}

/// Ends silences: by number, every active one of an incident, or the one a matcher describes.
/// What they held is told now, for each incident no other silence holds, resolved or not.
pub fn unsilence(
    known: &Known,
    reference: &str,
    policy: &Policy,
    now: i64,
) -> Result<Plan, Refusal> {
    let incident = find(&known.incidents, reference).ok();
    let wanted: Vec<i64> = known
        .silences
        .iter()
        .filter(|s| {
            s.id.to_string() == reference.trim().trim_start_matches('#')
                || incident
                    .is_some_and(|i| s.fingerprint.as_deref() == Some(i.fingerprint.as_str()))
                || s.target().describe() == reference.trim()
        })
        .map(|s| s.id)
        .collect();

    if wanted.is_empty() {
        return Err(Refusal::NoActiveSilence {
            reference: reference.to_string(),
        });
    }

    let left: Vec<Silence> = known
        .silences
        .iter()
        .filter(|s| !wanted.contains(&s.id))
        .cloned()
        .collect();

    let owed = known
        .incidents
        .iter()
        .filter(|i| !i.held.is_empty())
        .map(|i| Step {
            action: Action::CatchUp { id: i.id },
            effects: Vec::new(),
            silenced_by: None,
            held: None,
        });

    let mut plan = with_effects(
        now,
        owed.collect(),
        &known.incidents,
        &left,
        &known.delivered,
        policy,
    );

    plan.unsilence = wanted;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::incidents::Snapshot;
    use crate::model::{Dimension, Scope};

    fn known() -> Known {
        let r =
            crate::synth::example_report(Scope::from([(Dimension::Platform, "metal")]), 31.0, 4.0);
        let mut i = Incident::new(3, "sheriff-00000000000000aa", Snapshot::from_report(&r));
        i.state = State::Ongoing;
        let mut k = Known {
            incidents: vec![i],
            ..Known::default()
        };
        k.delivered.slack_posted.insert(3);
        k
    }

    fn policy() -> Policy {
        Policy {
            routes: vec![],
            default_channel: "C1".into(),
            jira: true,
            jira_cap: 3,
            jira_comment_interval_secs: 86_400,
            reopen_window_secs: 0,
            failed_fix_transition: String::new(),
            min_effect_seconds: 5.0,
            wording: crate::words::line,
        }
    }

    #[test]
    fn an_acknowledgement_edits_the_parent_once_per_person() {
        let mut k = known();
        let (plan, new) = acknowledge(&k, "#3", "slack:U1").unwrap();
        assert!(new);
        assert_eq!(plan.steps[0].effects, vec![Effect::SlackUpdate]);
        k.incidents[0].acked_by = Some("slack:U1".into());
        let (again, new) = acknowledge(&k, "3", "slack:U1").unwrap();
        assert!(!new && again.steps.is_empty());
        assert!(matches!(
            acknowledge(&k, "9", "x"),
            Err(Refusal::NoIncident { .. })
        ));
    }

    #[test]
    fn not_a_regression_resolves_notes_and_silences_once() {
        let mut k = known();
        let plan = not_a_regression(
            &k,
            "sheriff-00000000000000aa",
            "a test change",
            &policy(),
            100,
        )
        .unwrap();
        assert!(matches!(plan.steps[0].action, Action::Note { .. }));
        let Action::Resolve { how, .. } = &plan.steps[1].action else {
            panic!("{plan:?}")
        };
        assert_eq!(
            crate::words::line(&Told::Resolved(how)),
            "resolved as not a regression: a test change"
        );
        assert_eq!(plan.silences[0].expires_at, 100 + NOT_A_REGRESSION_SECS);
        // the same request again, once applied: nothing to do
        k.incidents[0].state = State::Resolved;
        k.silences.push(Silence {
            id: 1,
            fingerprint: Some("sheriff-00000000000000aa".into()),
            backend: None,
            dimensions: Default::default(),
            reason: "not a regression: a test change".into(),
            created_by: "slack:U1".into(),
            created_at: 100,
            expires_at: 100 + NOT_A_REGRESSION_SECS,
            removed_at: None,
        });
        let again = not_a_regression(&k, "3", "a test change", &policy(), 160).unwrap();
        assert!(again.steps.is_empty() && again.silences.is_empty());
        assert!(matches!(
            not_a_regression(&k, "3", "  ", &policy(), 160),
            Err(Refusal::NotARegressionWithoutReason)
        ));
    }

    #[test]
    fn silences_are_bounded_and_a_repeat_is_the_same_silence() {
        let mut k = known();
        let t = Target::parse(&["3"]).unwrap();
        let (plan, same) = silence(&k, &t, 86_400, "known", "U1", 1_000).unwrap();
        assert!(same.is_none());
        assert_eq!(
            plan.silences[0].target.fingerprint.as_deref(),
            Some("sheriff-00000000000000aa")
        );
        assert_eq!(plan.silences[0].incident, Some(3));
        k.silences.push(Silence {
            id: 4,
            fingerprint: Some("sheriff-00000000000000aa".into()),
            backend: None,
            dimensions: Default::default(),
            reason: "known".into(),
            created_by: "U1".into(),
            created_at: 1_000,
            expires_at: 87_400,
            removed_at: None,
        });
        let (again, same) = silence(&k, &t, 86_400, "known", "U1", 1_030).unwrap();
        assert_eq!((again.silences.len(), same), (0, Some(4)));
        assert!(matches!(
            silence(&k, &t, 91 * 86_400, "x", "U1", 0),
            Err(Refusal::SilenceTooLong)
        ));
        assert!(matches!(
            silence(&k, &t, i64::MAX, "x", "U1", 5),
            Err(Refusal::SilenceTooLong)
        ));
        assert_eq!(
            unsilence(&k, "#4", &policy(), 1_100).unwrap().unsilence,
            vec![4]
        );
        assert!(matches!(
            unsilence(&k, "77", &policy(), 1_100),
            Err(Refusal::NoActiveSilence { .. })
        ));
    }

    #[test]
    fn filing_needs_jira_and_no_issue_yet() {
        let mut k = known();
        assert!(matches!(file_now(&k, "3", false), Err(Refusal::JiraOff)));
        assert_eq!(
            file_now(&k, "3", true).unwrap().steps[0].effects,
            vec![Effect::JiraCreate]
        );
        k.incidents[0].jira_key = Some("OCPBUGS-1".into());
        assert!(matches!(
            file_now(&k, "3", true),
            Err(Refusal::JiraFiled { .. })
        ));
    }
}
