//! Matching a cycle's regressions to incidents: what to record and what to tell.
//!
//! [`plan`] is pure: it takes the incidents and silences as stored and the cycle's regressions,
//! and returns [`Step`]s. The store applies them, with their outbox entries, in the transaction
//! that records the cycle, so a change and the notifications it causes are never separated.
//! What people do to incidents is planned the same way (`manual`): only a plan
//! produces effects.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use super::silence::{Silence, Target};
use super::told::{Told, Wording};
use super::{Change, Incident, Snapshot, State, material_changes};
use crate::model::{Allowance, Dimension, Episode, FixVerdict, RegressionReport};
use crate::model::{DAY, glob_match};

/// Where and how notifications go; from [`crate::config::Settings`].
#[derive(Debug, Clone)]
pub struct Policy {
    /// Channel of an incident: the first matching route, else the default channel.
    pub routes: Vec<crate::config::SlackRoute>,
    pub default_channel: String,
    pub jira: bool,
    /// Jira issues created per cycle, at most.
    pub jira_cap: usize,
    /// A Jira comment on a material change at most this often per issue (resolve and reopen
    /// always comment).
    pub jira_comment_interval_secs: i64,
    /// A resolved incident whose scope a new regression overlaps within this many seconds is
    /// reopened rather than a new one opened.
    pub reopen_window_secs: i64,
    /// Jira transition after a failed fix; empty: comment only.
    pub failed_fix_transition: String,
    /// An accepted level mutes an incident while its level is within it plus this.
    pub min_effect_seconds: f64,
    /// The text of what the plan tells ([`Told`]): the words layer's, handed over by the
    /// application.
    pub wording: Wording,
}

impl Policy {
    pub fn from_settings(s: &crate::config::Settings, wording: Wording) -> Policy {
        Policy {
            routes: s.slack.routes.clone(),
            default_channel: s.slack.channel.clone(),
            jira: s.jira.enabled(),
            jira_cap: s.jira.max_created_per_cycle,
            jira_comment_interval_secs: DAY,
            reopen_window_secs: i64::from(s.jira.reopen_window_days) * DAY,
            failed_fix_transition: s.jira.failed_fix_transition.clone(),
            min_effect_seconds: s.evaluate.min_effect_seconds,
            wording,
        }
    }

    pub(crate) fn channel_for(&self, s: &Snapshot) -> String {
        let platform = s.scope.single(Dimension::Platform);
        self.routes
            .iter()
            .find(|r| {
                r.component
                    .as_deref()
                    .is_none_or(|g| glob_match(g, &s.component))
                    && r.platform
                        .as_deref()
                        .is_none_or(|g| platform.is_some_and(|p| glob_match(g, p)))
                    && r.backend.as_deref().is_none_or(|g| {
                        glob_match(g, &s.family) || s.backends.iter().any(|b| glob_match(g, b))
                    })
            })
            .map_or_else(|| self.default_channel.clone(), |r| r.channel.clone())
    }
}

/// One side effect to put in the outbox. Its JSON (tagged by `kind`) is the outbox entry's
/// payload, read back by the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Effect {
    /// The incident's parent message.
    SlackPost {
        channel: String,
    },
    /// Edit the parent in place to show the incident as it now is.
    SlackUpdate,
    /// The first thread reply, once per incident: the evidence, percentiles, groups and sample
    /// runs the concise parent leaves out.
    SlackDetails,
    /// A reply in the incident's thread.
    SlackReply {
        text: String,
    },
    /// A cycle's summary in one channel.
    SlackSummary {
        channel: String,
        lines: Vec<SummaryLine>,
    },
    JiraCreate,
    JiraComment {
        text: String,
    },
    JiraResolve {
        text: String,
    },
    /// Recurrence: reopen within the window, else file a new linked issue; never reopen an issue
    /// closed as Won't Fix.
    JiraReopen {
        text: String,
    },
    /// Move the issue by the named transition (after a failed fix), unless it is not offered.
    JiraTransition {
        name: String,
    },
}

impl Effect {
    pub fn kind(&self) -> EffectKind {
        match self {
            Effect::SlackPost { .. } => EffectKind::SlackPost,
            Effect::SlackUpdate => EffectKind::SlackUpdate,
            Effect::SlackDetails => EffectKind::SlackDetails,
            Effect::SlackReply { .. } => EffectKind::SlackReply,
            Effect::SlackSummary { .. } => EffectKind::SlackSummary,
            Effect::JiraCreate => EffectKind::JiraCreate,
            Effect::JiraComment { .. } => EffectKind::JiraComment,
            Effect::JiraResolve { .. } => EffectKind::JiraResolve,
            Effect::JiraReopen { .. } => EffectKind::JiraReopen,
            Effect::JiraTransition { .. } => EffectKind::JiraTransition,
        }
    }

    /// Whether it tells an incident's thread or issue something (what a silence holds and
    /// owes); posting, filing and editing the parent are not.
    pub fn tells(&self) -> bool {
        matches!(
            self,
            Effect::SlackReply { .. }
                | Effect::JiraComment { .. }
                | Effect::JiraResolve { .. }
                | Effect::JiraReopen { .. }
                | Effect::JiraTransition { .. }
        )
    }

    /// Where it is delivered.
    pub fn sink(&self) -> Sink {
        self.kind().sink()
    }

    /// The payload stored with the entry.
    pub fn payload(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// The effect of a stored entry. Payloads written before they carried their `kind` read
    /// by the entry's own `kind` column.
    pub(crate) fn from_entry(kind: &str, payload: &str) -> Result<Effect, EntryError> {
        let mut value: serde_json::Value =
            serde_json::from_str(payload).map_err(EntryError::Unreadable)?;
        match value.as_object_mut() {
            Some(fields) => {
                fields.insert("kind".into(), kind.into());
            }
            None => return Err(EntryError::NotAnObject),
        }
        serde_json::from_value(value).map_err(|error| EntryError::NotOfKind {
            kind: kind.to_string(),
            error,
        })
    }
}

/// Why a stored outbox entry is no effect sheriff can deliver; asking again will not change it.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("unreadable payload: {0}")]
    Unreadable(serde_json::Error),
    #[error("the payload is not an object")]
    NotAnObject,
    /// The payload does not hold what its `kind` column says.
    #[error("not a {kind} payload: {error}")]
    NotOfKind {
        kind: String,
        error: serde_json::Error,
    },
}

/// What an incident's thread hears once its Jira issue is filed as `key` (by a cycle, a person,
/// or a recurrence filed anew): the parent, edited to show the key, and a line saying so. Queued
/// by the delivery that filed it, so the parent never says "not filed" about an issue that
/// exists.
pub(crate) fn after_filing(key: &str, wording: Wording) -> Vec<Effect> {
    vec![
        Effect::SlackUpdate,
        Effect::SlackReply {
            text: wording(&Told::FiledInJira { key }),
        },
    ]
}

/// What an effect is, without what it says: an outbox entry's `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EffectKind {
    SlackPost,
    SlackUpdate,
    SlackDetails,
    SlackReply,
    SlackSummary,
    JiraCreate,
    JiraComment,
    JiraResolve,
    JiraReopen,
    JiraTransition,
}

impl EffectKind {
    pub const ALL: [EffectKind; 10] = [
        EffectKind::SlackPost,
        EffectKind::SlackUpdate,
        EffectKind::SlackDetails,
        EffectKind::SlackReply,
        EffectKind::SlackSummary,
        EffectKind::JiraCreate,
        EffectKind::JiraComment,
        EffectKind::JiraResolve,
        EffectKind::JiraReopen,
        EffectKind::JiraTransition,
    ];

    /// Its name in the outbox (the effect's serde tag).
    pub fn as_str(self) -> &'static str {
        match self {
            EffectKind::SlackPost => "slack_post",
            EffectKind::SlackUpdate => "slack_update",
            EffectKind::SlackDetails => "slack_details",
            EffectKind::SlackReply => "slack_reply",
            EffectKind::SlackSummary => "slack_summary",
            EffectKind::JiraCreate => "jira_create",
            EffectKind::JiraComment => "jira_comment",
            EffectKind::JiraResolve => "jira_resolve",
            EffectKind::JiraReopen => "jira_reopen",
            EffectKind::JiraTransition => "jira_transition",
        }
    }

    /// None: a kind this version does not know (an entry it cannot deliver).
    pub fn parse(s: &str) -> Option<EffectKind> {
        EffectKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Where an effect of this kind is delivered.
    pub fn sink(self) -> Sink {
        match self {
            EffectKind::SlackPost
            | EffectKind::SlackUpdate
            | EffectKind::SlackDetails
            | EffectKind::SlackReply
            | EffectKind::SlackSummary => Sink::Slack,
            EffectKind::JiraCreate
            | EffectKind::JiraComment
            | EffectKind::JiraResolve
            | EffectKind::JiraReopen
            | EffectKind::JiraTransition => Sink::Jira,
        }
    }
}

impl std::fmt::Display for EffectKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The systems effects go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    Slack,
    Jira,
}

impl Sink {
    pub fn as_str(self) -> &'static str {
        match self {
            Sink::Slack => "slack",
            Sink::Jira => "jira",
        }
    }
}

/// How an incident came to be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Its groups are back within their reference (a cycle saw it), and no claimed fix was
    /// verified: no longer observed, which is not "fixed".
    Recovered,
    /// A claimed fix verified on the runs after it (the verdict's line).
    Fixed { text: String },
    /// A person (`by`, as recorded: `cli:alice`, a Slack user id) resolved it, for a reason.
    ByHand { reason: String, by: String },
    /// A person said it is not a regression.
    NotARegression { reason: String },
    /// The same problem as an older incident, which carries on.
    Merged { into: i64 },
}

impl Resolution {
    /// What the incident keeps of it.
    pub fn kind(&self) -> super::ResolvedAs {
        use super::ResolvedAs;
        match self {
            Resolution::Recovered => ResolvedAs::Recovered,
            Resolution::Fixed { .. } => ResolvedAs::Fixed,
            Resolution::ByHand { .. } => ResolvedAs::ByHand,
            Resolution::NotARegression { .. } => ResolvedAs::NotARegression,
            Resolution::Merged { .. } => ResolvedAs::Merged,
        }
    }
}

/// What happens to one incident.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Open {
        fingerprint: String,
        snapshot: Snapshot,
        episodes: Vec<Episode>,
    },
    /// Seen again: a new snapshot, a state, and the material changes (empty: record only).
    Update {
        id: i64,
        state: State,
        snapshot: Snapshot,
        changes: Vec<Change>,
        episodes: Vec<Episode>,
    },
    Resolve {
        id: i64,
        snapshot: Option<Snapshot>,
        how: Resolution,
        /// The episodes with the last one's recovery, when a cycle saw it.
        episodes: Option<Vec<Episode>>,
    },
    Stale {
        id: i64,
    },
    /// Unchanged, but a notification it is owed (a silence ended, or the Jira cap deferred it).
    CatchUp {
        id: i64,
    },
    /// A person acknowledged it; the parent message says who.
    Acknowledge {
        id: i64,
        by: String,
    },
    /// A person asked for its Jira issue now, whatever the cap.
    FileJira {
        id: i64,
    },
    /// Only a line in its history (a person's reason, say).
    Note {
        id: i64,
        kind: String,
        detail: String,
    },
}

impl Action {
    /// The incident it acts on; None for one not stored yet.
    pub fn incident(&self) -> Option<i64> {
        match self {
            Action::Open { .. } => None,
            Action::Update { id, .. }
            | Action::Resolve { id, .. }
            | Action::Stale { id }
            | Action::CatchUp { id }
            | Action::Acknowledge { id, .. }
            | Action::FileJira { id }
            | Action::Note { id, .. } => Some(*id),
        }
    }
}

/// A silence to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSilence {
    /// An incident's fingerprint, or a matcher.
    pub target: Target,
    pub expires_at: i64,
    pub reason: String,
    /// The incident whose history records it, when it targets one.
    pub incident: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub action: Action,
    pub effects: Vec<Effect>,
    /// The silence holding this incident's notifications, if any (effects are then empty).
    pub silenced_by: Option<i64>,
    /// What the incident's thread and issue are owed, as it is to be stored: what a silence
    /// held (this step's telling added), or nothing once it is told. None: unchanged.
    pub held: Option<Vec<Effect>>,
}

/// What a plan needs to know of the outbox.
#[derive(Debug, Clone, Default)]
pub struct Delivered {
    /// Incidents with a parent Slack message posted or queued.
    pub slack_posted: HashSet<i64>,
    /// Incidents with a Jira issue created or queued.
    pub jira_filed: HashSet<i64>,
}

#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// One per channel with something to say.
    pub summaries: Vec<Effect>,
    /// Incidents that should have had a Jira issue this cycle but were over the cap.
    pub not_filed: Vec<String>,
    /// Silences to create, and silences (by number) to end.
    pub silences: Vec<NewSilence>,
    pub unsilence: Vec<i64>,
    /// Accepted levels to set, change or end, by incident.
    pub allowances: Vec<AllowanceChange>,
    /// Incidents whose notifications an accepted level held this cycle.
    pub accepted: Vec<i64>,
}

/// An incident's accepted level as it is to be stored (None: ended), with the line its history
/// records (its kind and text), if any.
#[derive(Debug, Clone, PartialEq)]
pub struct AllowanceChange {
    pub incident: i64,
    pub allowance: Option<crate::model::Allowance>,
    pub event: Option<(String, String)>,
}

/// What a plan is made from: the incidents, active silences and queued effects, as stored at
/// the start of the transaction that applies it.
#[derive(Debug, Clone, Default)]
pub struct Known {
    pub incidents: Vec<Incident>,
    pub silences: Vec<Silence>,
    pub delivered: Delivered,
}

/// Matches the cycle's regressions to `incidents` at `now`.
pub fn plan(
    now: i64,
    regressions: &[RegressionReport],
    merges: &[(i64, i64)],
    known: &Known,
    policy: &Policy,
) -> Plan {
    let incidents = &known.incidents;
    let mut used: HashSet<i64> = HashSet::new();
    let mut steps = merge_steps(merges, incidents, &mut used);

    let active: Vec<&RegressionReport> = regressions
        .iter()
        .filter(|r| r.status.is_active())
        .collect();
    let resolved: Vec<&RegressionReport> = regressions
        .iter()
        .filter(|r| !r.status.is_active())
        .collect();
    let matched = match_active(now, &active, incidents, policy, &mut used);
    steps.extend(
        active
            .iter()
            .zip(matched)
            .map(|(r, slot)| seen_again(r, slot, policy.wording)),
    );
    for r in resolved {
        if let Some(i) = match_resolved(r, incidents, &used) {
            used.insert(i.id);
            steps.push(Step::undecided(resolution_of(r, i, policy.wording)));
        }
    }

    for i in incidents
        .iter()
        .filter(|i| !used.contains(&i.id) && i.state.is_open())
    {
        let action = if i.state == State::Stale {
            Action::CatchUp { id: i.id }
        } else {
            Action::Stale { id: i.id }
        };
        steps.push(Step::undecided(action));
    }
    // what a silence held of a resolved incident is told once the silence ends
    for i in incidents
        .iter()
        .filter(|i| !used.contains(&i.id) && !i.state.is_open() && !i.held.is_empty())
    {
        steps.push(Step::undecided(Action::CatchUp { id: i.id }));
    }

    with_effects(
        now,
        steps,
        incidents,
        &known.silences,
        &known.delivered,
        policy,
    )
}

impl Step {
    /// A step doing `action`, its side effects not decided yet (`with_effects` decides them).
    fn undecided(action: Action) -> Step {
        Step {
            action,
            effects: Vec::new(),
            silenced_by: None,
            held: None,
        }
    }
}

/// The steps resolving the open incidents that `merges` merge into another, each marked used.
fn merge_steps(
    merges: &[(i64, i64)],
    incidents: &[Incident],
    used: &mut HashSet<i64>,
) -> Vec<Step> {
    let mut steps = Vec::new();
    for &(id, into) in merges {
        if incidents.iter().any(|i| i.id == id && i.state.is_open())
            && incidents.iter().any(|i| i.id == into)
        {
            used.insert(id);
            steps.push(Step::undecided(Action::Resolve {
                id,
                snapshot: None,
                how: Resolution::Merged { into },
                episodes: None,
            }));
        }
    }
    steps
}

/// Incident `i` resolved by its recovered regression `r`: fixed when `r` verified its fix.
fn resolution_of(r: &RegressionReport, i: &Incident, wording: Wording) -> Action {
    let how = match &r.verification {
        Some(v) if v.verdict == FixVerdict::Fixed => Resolution::Fixed {
            text: wording(&Told::Verdict(v)),
        },
        _ => Resolution::Recovered,
    };
    Action::Resolve {
        id: i.id,
        snapshot: Some(Snapshot::from_report(r)),
        how,
        episodes: Some(episodes_after(Some(i), r, false)),
    }
}

/// The incident each active regression belongs to: its fingerprint's first, so an overlap never
/// steals an incident from its own regression; then an open incident of the same family and
/// release whose scope overlaps; then one resolved within the reopen window.
fn match_active<'a>(
    now: i64,
    active: &[&RegressionReport],
    incidents: &'a [Incident],
    policy: &Policy,
    used: &mut HashSet<i64>,
) -> Vec<Option<&'a Incident>> {
    let mut matched: Vec<Option<&Incident>> = active
        .iter()
        .map(|r| {
            let hit = incidents.iter().find(|i| i.fingerprint == r.fingerprint);
            if let Some(i) = hit {
                used.insert(i.id);
            }
            hit
        })
        .collect();

    for (r, slot) in active.iter().zip(matched.iter_mut()) {
        if slot.is_some() {
            continue;
        }
        let candidate = |open: bool| {
            incidents
                .iter()
                .filter(|i| !used.contains(&i.id) && i.state.is_open() == open)
                .filter(|i| i.snapshot.family == r.family && i.snapshot.release == r.release)
                .filter(|i| i.snapshot.scope.same_problem(&r.scope))
                .filter(|i| {
                    open || i
                        .resolved_at
                        .is_some_and(|t| now - t <= policy.reopen_window_secs)
                })
                .max_by_key(|i| i.updated_at)
        };
        *slot = candidate(true).or_else(|| candidate(false));
        if let Some(i) = slot {
            used.insert(i.id);
        }
    }

    matched
}

/// A regression seen: a new incident, or its incident updated (reopened after a resolution,
/// back after a data gap) with the material changes.
fn seen_again(r: &RegressionReport, incident: Option<&Incident>, wording: Wording) -> Step {
    let snapshot = Snapshot::from_report(r);
    let action = match incident {
        None => Action::Open {
            fingerprint: r.fingerprint.clone(),
            snapshot,
            episodes: episodes_after(None, r, false),
        },
        Some(i) => {
            let mut changes = Vec::new();
            let state = match i.state {
                State::Resolved => {
                    changes.push(Change::Reopened);
                    State::Reopened
                }
                State::Stale => {
                    changes.push(Change::Returned);
                    State::Ongoing
                }
                _ => State::Ongoing,
            };
            changes.extend(material_changes(&i.snapshot, &snapshot));
            changes.extend(verdict_change(i, r, wording));
            let episodes = episodes_after(Some(i), r, state == State::Reopened);
            Action::Update {
                id: i.id,
                state,
                snapshot,
                changes,
                episodes,
            }
        }
    };
    Step::undecided(action)
}

/// A verdict on the incident's claimed fix not told yet for this claim (fixed resolves, and is
/// told by the resolution).
fn verdict_change(i: &Incident, r: &RegressionReport, wording: Wording) -> Option<Change> {
    let v = r.verification.as_ref()?;
    let claim = i.fix.as_ref().filter(|c| c.key == v.key)?;
    (v.verdict != FixVerdict::Fixed && !claim.told(v.verdict)).then(|| Change::Verdict {
        verdict: v.verdict,
        text: wording(&Told::Verdict(v)),
    })
}

/// An incident's episodes once a report is taken in: a new episode for a new or reopened
/// incident, the current one's onset refined otherwise, and its recovery when the report has one.
fn episodes_after(
    incident: Option<&Incident>,
    r: &RegressionReport,
    reopened: bool,
) -> Vec<Episode> {
    let mut episodes = incident.map(|i| i.episodes.clone()).unwrap_or_default();
    if let Some(onset) = r.onset.clone() {
        match episodes.last_mut() {
            Some(last) if !reopened && last.recovered_at.is_none() => last.onset = onset,
            _ => episodes.push(Episode {
                onset,
                recovered_at: None,
            }),
        }
    }
    if let (Some(at), Some(last)) = (r.recovered_at, episodes.last_mut()) {
        last.recovered_at = Some(at);
    }
    episodes
}

/// The open incident a recovered regression resolves.
fn match_resolved<'a>(
    r: &RegressionReport,
    incidents: &'a [Incident],
    used: &HashSet<i64>,
) -> Option<&'a Incident> {
    let open = || {
        incidents
            .iter()
            .filter(|i| i.state.is_open() && !used.contains(&i.id))
    };
    open().find(|i| i.fingerprint == r.fingerprint).or_else(|| {
        open()
            .filter(|i| i.snapshot.family == r.family && i.snapshot.release == r.release)
            .find(|i| i.snapshot.scope.same_problem(&r.scope))
    })
}

/// What happened to an incident, as a cycle's summary lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Happened {
    New,
    Changed,
    Reopened,
    Resolved,
    /// Incidents over the Jira cap, filed in a later cycle.
    NotFiled,
}

/// One line of a cycle's summary. Lines stored before they were structured read as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SummaryLine {
    Line {
        what: Happened,
        text: String,
        /// The incident's fingerprint, for a link to its thread; empty for lines about none.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        fingerprint: String,
    },
    Text(String),
}

impl SummaryLine {
    fn new(what: Happened, text: String, fingerprint: &str) -> SummaryLine {
        SummaryLine::Line {
            what,
            text,
            fingerprint: fingerprint.to_string(),
        }
    }

    /// Whether it is about one incident (not the Jira cap's note).
    fn is_incident(&self) -> bool {
        matches!(self, SummaryLine::Line { what, .. } if *what != Happened::NotFiled)
    }
}

/// The incident a step is about, as stored (None for a new one), and the snapshot it will have.
fn subject<'a>(
    step: &Step,
    by_id: &BTreeMap<i64, &'a Incident>,
) -> Option<(Option<&'a Incident>, Snapshot)> {
    match &step.action {
        Action::Open { snapshot, .. } => Some((None, snapshot.clone())),
        Action::Update { id, snapshot, .. }
        | Action::Resolve {
            id,
            snapshot: Some(snapshot),
            ..
        } => Some((by_id.get(id).copied(), snapshot.clone())),
        other => {
            let i = by_id.get(&other.incident()?)?;
            Some((Some(*i), i.snapshot.clone()))
        }
    }
}

/// What one incident's cycle step tells Slack and Jira, given what was delivered before.
struct Telling<'a> {
    now: i64,
    policy: &'a Policy,
    existing: Option<&'a Incident>,
    posted: bool,
    /// A Jira issue exists or is queued.
    filed: bool,
    /// This step files the issue.
    filing: bool,
}

impl Telling<'_> {
    fn changed(&self, changes: &[Change], effects: &mut Vec<Effect>) -> (Happened, String) {
        let text = (self.policy.wording)(&Told::Changes(changes));
        if self.posted {
            effects.push(Effect::SlackUpdate);
            effects.push(Effect::SlackReply { text: text.clone() });
        }
        let reopened = changes.contains(&Change::Reopened);
        let verdict = changes.iter().find_map(|c| match c {
            Change::Verdict { verdict, .. } => Some(*verdict),
            _ => None,
        });
        let commented_recently = verdict.is_none()
            && self
                .existing
                .and_then(|i| i.jira_commented_at)
                .is_some_and(|t| self.now - t < self.policy.jira_comment_interval_secs);
        if self.policy.jira && self.filed && !self.filing {
            if reopened {
                effects.push(Effect::JiraReopen { text: text.clone() });
            } else if changes.iter().any(Change::for_jira) && !commented_recently {
                effects.push(Effect::JiraComment { text: text.clone() });
            }
            if verdict == Some(FixVerdict::FailedFix)
                && !self.policy.failed_fix_transition.is_empty()
            {
                effects.push(Effect::JiraTransition {
                    name: self.policy.failed_fix_transition.clone(),
                });
            }
        }
        (
            if reopened {
                Happened::Reopened
            } else {
                Happened::Changed
            },
            text,
        )
    }

    fn resolved(&self, how: &Resolution, effects: &mut Vec<Effect>) {
        let text = (self.policy.wording)(&Told::Resolved(how));
        if self.posted {
            effects.push(Effect::SlackUpdate);
            effects.push(Effect::SlackReply { text: text.clone() });
        }
        if self.policy.jira && (self.filed || self.filing) {
            effects.push(Effect::JiraResolve { text });
        }
    }
}

/// A step's effects and its summary line, if it has one; the Jira cap is counted in `created`.
struct Effects<'a> {
    now: i64,
    by_id: BTreeMap<i64, &'a Incident>,
    silences: &'a [Silence],
    delivered: &'a Delivered,
    policy: &'a Policy,
    created: usize,
    not_filed: Vec<String>,
    allowances: Vec<AllowanceChange>,
    accepted: Vec<i64>,
}

/// Adds `text` to a step's thread reply (one reply per step), posting one when there is none,
/// with the parent edited.
fn add_reply(effects: &mut Vec<Effect>, text: &str) {
    for e in effects.iter_mut() {
        if let Effect::SlackReply { text: t } = e {
            t.push_str("; ");
            t.push_str(text);
            return;
        }
    }
    if !effects.contains(&Effect::SlackUpdate) {
        effects.push(Effect::SlackUpdate);
    }
    effects.push(Effect::SlackReply {
        text: text.to_string(),
    });
}

/// Adds `text` to a step's Jira comment (one per step), commenting when there is none.
fn add_comment(effects: &mut Vec<Effect>, text: &str) {
    for e in effects.iter_mut() {
        if let Effect::JiraComment { text: t } = e {
            t.push_str("; ");
            t.push_str(text);
            return;
        }
    }
    effects.push(Effect::JiraComment {
        text: text.to_string(),
    });
}

impl Effects<'_> {
    /// An accepted level's part in a step: it holds the step's notifications while the level
    /// is within it plus the minimum effect; once above, people hear so once, naming it; 2 days
    /// before it lapses a reminder goes to the thread; lapsed or on resolution, it ends. True
    /// when it held the step.
    fn accepted_level(
        &mut self,
        step: &mut Step,
        i: &Incident,
        a: &Allowance,
        snapshot: &Snapshot,
    ) -> bool {
        let resolving = matches!(step.action, Action::Resolve { .. });
        if !a.active(self.now) || resolving {
            let ended = Told::AcceptedEnded {
                allowance: a,
                with_resolution: resolving,
            };
            self.allowances.push(AllowanceChange {
                incident: i.id,
                allowance: None,
                event: Some(("allowance_ended".into(), (self.policy.wording)(&ended))),
            });
            return false;
        }

        let level = match step.action {
            Action::Update { .. } => snapshot
                .report
                .percentiles
                .get(&a.percentile)
                .and_then(|p| p.now),
            _ => None,
        };

        let above = level.filter(|v| *v > a.seconds + self.policy.min_effect_seconds);
        let mut next = a.clone();
        // Once, when it first goes above.
        let told = above.filter(|_| !a.above).map(|v| {
            (self.policy.wording)(&Told::AboveAccepted {
                allowance: a,
                level: v,
            })
        });
        next.above = above.is_some() || (a.above && level.is_none());
        let reminder_due = a
            .until
            .is_some_and(|u| self.now >= u - crate::model::fix::ALLOWANCE_REMINDER_SECS);
        let remind = reminder_due && !a.reminded;
        let held = above.is_none();
        if held {
            step.effects.clear();
            self.accepted.push(i.id);
        }
        let posted = self.delivered.slack_posted.contains(&i.id);
        let filed = self.delivered.jira_filed.contains(&i.id);
        if let Some(text) = &told {
            if posted {
                add_reply(&mut step.effects, text);
            }
            if self.policy.jira && filed {
                add_comment(&mut step.effects, text);
            }
        }

        next.reminded |= remind;
        if remind && posted {
            let lapsing = Told::AcceptedLapsing {
                allowance: a,
                incident: i.id,
            };
            add_reply(&mut step.effects, &(self.policy.wording)(&lapsing));
        }

        if next != *a {
            let event = told.map(|t| ("above_accepted".to_string(), t));
            self.allowances.push(AllowanceChange {
                incident: i.id,
                allowance: Some(next),
                event,
            });
        }

        held
    }

    /// Sets a cycle step's effects (or the silence holding them); its channel and summary line.
    // Long: one incident's telling in order: silence, first post and filing, the change, the
    // accepted level, and what a silence held.
    fn decide(&mut self, step: &mut Step) -> Option<(String, SummaryLine)> {
        if matches!(
            step.action,
            Action::Acknowledge { .. } | Action::FileJira { .. } | Action::Note { .. }
        ) {
            return None; // people's steps carry their effects
        }

        let (existing, snapshot) = subject(step, &self.by_id)?;
        let fingerprint = match (&step.action, existing) {
            (Action::Open { fingerprint, .. }, _) => fingerprint.as_str(),
            (_, Some(i)) => i.fingerprint.as_str(),
            (_, None) => "",
        }
        .to_string();
        let holder = self
            .silences
            .iter()
            .find(|s| s.holds(&fingerprint, &snapshot, self.now))
            .map(|s| s.id);

        // what a person did is told whatever a silence holds: the others need to know
        let silence = holder.filter(|_| !by_a_person(&step.action));
        let id = existing.map(|i| i.id);
        let mut t = Telling {
            now: self.now,
            policy: self.policy,
            existing,
            posted: id.is_some_and(|id| self.delivered.slack_posted.contains(&id)),
            filed: id.is_some_and(|id| self.delivered.jira_filed.contains(&id)),
            filing: false,
        };

        let channel = existing
            .and_then(|i| i.slack_channel.clone())
            .unwrap_or_else(|| self.policy.channel_for(&snapshot));

        let wording = self.policy.wording;
        let label = wording(&Told::Label {
            snapshot: &snapshot,
        });

        // open once this step is applied
        let open = match step.action {
            Action::Resolve { .. } => false,
            Action::CatchUp { .. } => existing.is_none_or(|i| i.state.is_open()),
            _ => true,
        };

        let mut effects = Vec::new();
        if !t.posted && open && silence.is_none() {
            effects.push(Effect::SlackPost {
                channel: channel.clone(),
            });
            effects.push(Effect::SlackDetails);
        }

        if self.policy.jira && !t.filed && open && silence.is_none() {
            if self.created < self.policy.jira_cap {
                self.created += 1;
                t.filing = true;
                effects.push(Effect::JiraCreate);
            } else {
                self.not_filed.push(label.clone());
            }
        }

        let mut line = match &step.action {
            Action::Open { .. } => Some((
                Happened::New,
                wording(&Told::Headline {
                    snapshot: &snapshot,
                    news: &snapshot.summary,
                }),
            )),
            Action::Update { changes, .. } if !changes.is_empty() => {
                let (what, text) = t.changed(changes, &mut effects);
                Some((
                    what,
                    wording(&Told::Headline {
                        snapshot: &snapshot,
                        news: &text,
                    }),
                ))
            }
            Action::Resolve { how, .. } => {
                t.resolved(how, &mut effects);
                Some((Happened::Resolved, label))
            }
            Action::Stale { .. } if t.posted => {
                effects.push(Effect::SlackUpdate);
                None
            }
            _ => None,
        };

        if let Some(silence) = silence {
            // held, and owed: told once the silence ends
            step.silenced_by = Some(silence);
            let told: Vec<Effect> = effects.into_iter().filter(Effect::tells).collect();
            if let Some(i) = existing.filter(|_| !told.is_empty()) {
                step.held = Some(i.held.iter().cloned().chain(told).collect());
            }
            return None;
        }

        step.effects = effects;
        if let Some((i, a)) = existing.and_then(|i| Some((i, i.allowance.as_ref()?)))
            && self.accepted_level(step, i, a, &snapshot)
        {
            line = None;
        } else if let Some(i) = existing.filter(|i| !i.held.is_empty() && holder.is_none()) {
            let to = (t.posted, t.filed && self.policy.jira);
            add_owed(&mut step.effects, &i.held, to, open, wording);
            step.held = Some(Vec::new());
        }

        line.map(|(what, text)| (channel, SummaryLine::new(what, text, &fingerprint)))
    }
}

/// Whether a person asked for this step (a resolution by hand or "not a regression").
fn by_a_person(action: &Action) -> bool {
    matches!(
        action,
        Action::Resolve {
            how: Resolution::ByHand { .. } | Resolution::NotARegression { .. },
            ..
        }
    )
}

/// Adds what a silence held to a step's effects: one thread line saying what happened
/// meanwhile (with the parent edited), and the Jira issue told once: in the step's own Jira
/// message when it has one, else resolved when a resolution was held and the incident is
/// resolved now, reopened when a reopening was held and it is open, else a comment.
fn add_owed(
    effects: &mut Vec<Effect>,
    held: &[Effect],
    (posted, filed): (bool, bool),
    open: bool,
    wording: Wording,
) {
    let texts =
        |f: fn(&Effect) -> Option<&String>| held.iter().filter_map(f).cloned().collect::<Vec<_>>();

    let slack = texts(|e| match e {
        Effect::SlackReply { text } => Some(text),
        _ => None,
    });

    if posted && !slack.is_empty() {
        add_reply(effects, &wording(&Told::WhileSilenced { lines: &slack }));
    }

    let jira = texts(|e| match e {
        Effect::JiraComment { text }
        | Effect::JiraResolve { text }
        | Effect::JiraReopen { text } => Some(text),
        _ => None,
    });

    if !filed || jira.is_empty() {
        return;
    }

    let said = wording(&Told::WhileSilenced { lines: &jira });
    let own = effects.iter_mut().find_map(|e| match e {
        Effect::JiraComment { text }
        | Effect::JiraResolve { text }
        | Effect::JiraReopen { text } => Some(text),
        _ => None,
    });

    if let Some(text) = own {
        *text = format!("{said}; {text}");
    } else if !open && held.iter().any(|e| matches!(e, Effect::JiraResolve { .. })) {
        effects.push(Effect::JiraResolve { text: said });
    } else if open && held.iter().any(|e| matches!(e, Effect::JiraReopen { .. })) {
        effects.push(Effect::JiraReopen { text: said });
    } else {
        effects.push(Effect::JiraComment { text: said });
    }

    let transition = held
        .iter()
        .rev()
        .find(|e| matches!(e, Effect::JiraTransition { .. }));

    if let Some(t) = transition.filter(|_| {
        !effects
            .iter()
            .any(|e| matches!(e, Effect::JiraTransition { .. }))
    }) {
        effects.push(t.clone());
    }
}

/// Decides each cycle step's side effects: silences, the Jira cap and comment rate, catch-up
/// posts, and the per-channel summaries. People's steps (acknowledge, file, note) carry theirs.
pub fn with_effects(
    now: i64,
    mut steps: Vec<Step>,
    incidents: &[Incident],
    silences: &[Silence],
    delivered: &Delivered,
    policy: &Policy,
) -> Plan {
    let by_id = incidents.iter().map(|i| (i.id, i)).collect();
    let mut e = Effects {
        now,
        by_id,
        silences,
        delivered,
        policy,
        created: 0,
        not_filed: Vec::new(),
        allowances: Vec::new(),
        accepted: Vec::new(),
    };

    let mut lines: BTreeMap<String, Vec<SummaryLine>> = BTreeMap::new();
    for step in &mut steps {
        if let Some((channel, line)) = e.decide(step) {
            lines.entry(channel).or_default().push(line);
        }
    }

    let (not_filed, allowances, accepted) = (e.not_filed, e.allowances, e.accepted);
    let mut summaries: Vec<Effect> = Vec::new();
    for (channel, mut lines) in lines {
        if channel == policy.default_channel && !not_filed.is_empty() {
            let text = (policy.wording)(&Told::NotFiled {
                cap: policy.jira_cap,
                labels: &not_filed,
            });
            lines.push(SummaryLine::new(Happened::NotFiled, text, ""));
        }
        // one incident's change is its thread's news: a channel summary only gathers two or
        // more, or says what the Jira cap left unfiled
        if lines.iter().filter(|l| l.is_incident()).count() >= 2
            || lines.iter().any(|l| !l.is_incident())
        {
            summaries.push(Effect::SlackSummary { channel, lines });
        }
    }

    Plan {
        steps,
        summaries,
        not_filed,
        allowances,
        accepted,
        ..Plan::default()
    }
}

#[cfg(test)]
mod tests;
