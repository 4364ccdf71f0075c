//! Matching a cycle's regressions to incidents: what to record and what to tell.
//!
//! [`plan`] is pure: it takes the incidents and silences as stored and the cycle's regressions,
//! and returns [`Step`]s. The store applies them, with their outbox entries, in the transaction
//! that records the cycle, so a change and the notifications it causes are never separated.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;
use serde_json::json;

use super::silence::Silence;
use super::{Change, Incident, Snapshot, State, material_changes};
use crate::model::glob_match;
use crate::model::{Dimension, RegressionReport};

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
}

impl Policy {
    pub fn from_settings(s: &crate::config::Settings) -> Policy {
        Policy {
            routes: s.slack.routes.clone(),
            default_channel: s.slack.channel.clone(),
            jira: s.jira.enabled(),
            jira_cap: s.jira.max_created_per_cycle,
            jira_comment_interval_secs: 86_400,
            reopen_window_secs: i64::from(s.jira.reopen_window_days) * 86_400,
        }
    }

    pub fn channel_for(&self, s: &Snapshot) -> String {
        let platform = s.scope.single(Dimension::Platform);
        self.routes
            .iter()
            .find(|r| {
                r.component.as_deref().is_none_or(|g| glob_match(g, &s.component))
                    && r.platform.as_deref().is_none_or(|g| platform.is_some_and(|p| glob_match(g, p)))
                    && r.backend.as_deref().is_none_or(|g| {
                        glob_match(g, &s.family) || s.backends.iter().any(|b| glob_match(g, b))
                    })
            })
            .map_or_else(|| self.default_channel.clone(), |r| r.channel.clone())
    }
}

/// One side effect to put in the outbox.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Effect {
    /// The incident's parent message.
    SlackPost {
        channel: String,
    },
    /// Edit the parent in place to show the incident as it now is.
    SlackUpdate,
    /// A reply in the incident's thread.
    SlackReply {
        text: String,
    },
    /// A cycle's summary in one channel.
    SlackSummary {
        channel: String,
        lines: Vec<String>,
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
}

impl Effect {
    pub fn kind(&self) -> &'static str {
        match self {
            Effect::SlackPost { .. } => "slack_post",
            Effect::SlackUpdate => "slack_update",
            Effect::SlackReply { .. } => "slack_reply",
            Effect::SlackSummary { .. } => "slack_summary",
            Effect::JiraCreate => "jira_create",
            Effect::JiraComment { .. } => "jira_comment",
            Effect::JiraResolve { .. } => "jira_resolve",
            Effect::JiraReopen { .. } => "jira_reopen",
        }
    }

    pub fn is_jira(&self) -> bool {
        self.kind().starts_with("jira")
    }
}

/// What happens to one incident.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Open {
        fingerprint: String,
        snapshot: Snapshot,
    },
    /// Seen again: a new snapshot, a state, and the material changes (empty: record only).
    Update {
        id: i64,
        state: State,
        snapshot: Snapshot,
        changes: Vec<Change>,
    },
    Resolve {
        id: i64,
        snapshot: Option<Snapshot>,
    },
    Stale {
        id: i64,
    },
    /// Unchanged, but a notification it is owed (a silence ended, or the Jira cap deferred it).
    Catch {
        id: i64,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub action: Action,
    pub effects: Vec<Effect>,
    /// The silence holding this incident's notifications, if any (effects are then empty).
    pub silenced_by: Option<i64>,
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
}

/// Matches the cycle's regressions to `incidents` at `now`.
pub fn plan(
    now: i64,
    regressions: &[RegressionReport],
    incidents: &[Incident],
    silences: &[Silence],
    delivered: &Delivered,
    policy: &Policy,
) -> Plan {
    let mut used: HashSet<i64> = HashSet::new();
    let mut steps: Vec<Step> = Vec::new();
    let active: Vec<&RegressionReport> = regressions.iter().filter(|r| r.status.is_active()).collect();
    let resolved: Vec<&RegressionReport> = regressions.iter().filter(|r| !r.status.is_active()).collect();

    // Exact fingerprints first, so an overlap never steals an incident from its own regression.
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
        let snapshot = Snapshot::from_report(r);
        let candidate = |open: bool| {
            incidents
                .iter()
                .filter(|i| !used.contains(&i.id) && i.state.is_open() == open)
                .filter(|i| i.snapshot.family == r.family && i.snapshot.release == r.release)
                .filter(|i| i.snapshot.scope.overlaps(&snapshot.scope))
                .filter(|i| open || i.resolved_at.is_some_and(|t| now - t <= policy.reopen_window_secs))
                .max_by_key(|i| i.updated_at)
        };
        *slot = candidate(true).or_else(|| candidate(false));
        if let Some(i) = slot {
            used.insert(i.id);
        }
    }

    for (r, slot) in active.iter().zip(matched) {
        let snapshot = Snapshot::from_report(r);
        let action = match slot {
            None => Action::Open { fingerprint: r.fingerprint.clone(), snapshot },
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
                Action::Update { id: i.id, state, snapshot, changes }
            }
        };
        steps.push(Step { action, effects: Vec::new(), silenced_by: None });
    }

    for r in resolved {
        let snapshot = Snapshot::from_report(r);
        let hit = incidents
            .iter()
            .filter(|i| i.state.is_open() && !used.contains(&i.id))
            .find(|i| i.fingerprint == r.fingerprint)
            .or_else(|| {
                incidents
                    .iter()
                    .filter(|i| i.state.is_open() && !used.contains(&i.id))
                    .filter(|i| i.snapshot.family == r.family && i.snapshot.release == r.release)
                    .find(|i| i.snapshot.scope.overlaps(&snapshot.scope))
            });
        if let Some(i) = hit {
            used.insert(i.id);
            steps.push(Step {
                action: Action::Resolve { id: i.id, snapshot: Some(snapshot) },
                effects: Vec::new(),
                silenced_by: None,
            });
        }
    }

    for i in incidents.iter().filter(|i| !used.contains(&i.id) && i.state.is_open()) {
        let action =
            if i.state == State::Stale { Action::Catch { id: i.id } } else { Action::Stale { id: i.id } };
        steps.push(Step { action, effects: Vec::new(), silenced_by: None });
    }

    with_effects(now, steps, incidents, silences, delivered, policy)
}

/// Decides each step's side effects: silences, the Jira cap and comment rate, catch-up posts.
pub fn with_effects(
    now: i64,
    mut steps: Vec<Step>,
    incidents: &[Incident],
    silences: &[Silence],
    delivered: &Delivered,
    policy: &Policy,
) -> Plan {
    let by_id: BTreeMap<i64, &Incident> = incidents.iter().map(|i| (i.id, i)).collect();
    let mut created = 0usize;
    let mut not_filed = Vec::new();
    let mut lines: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for step in &mut steps {
        let (existing, snapshot) = match &step.action {
            Action::Open { snapshot, .. } => (None, snapshot.clone()),
            Action::Update { id, snapshot, .. } | Action::Resolve { id, snapshot: Some(snapshot) } => {
                (by_id.get(id).copied(), snapshot.clone())
            }
            Action::Resolve { id, snapshot: None } | Action::Stale { id } | Action::Catch { id } => {
                match by_id.get(id) {
                    Some(i) => (Some(*i), i.snapshot.clone()),
                    None => continue,
                }
            }
        };
        let fingerprint = match (&step.action, existing) {
            (Action::Open { fingerprint, .. }, _) => fingerprint.as_str(),
            (_, Some(i)) => i.fingerprint.as_str(),
            (_, None) => "",
        };
        if let Some(s) = silences.iter().find(|s| s.holds(fingerprint, &snapshot, now)) {
            step.silenced_by = Some(s.id);
            continue;
        }
        let id = existing.map(|i| i.id);
        let posted = id.is_some_and(|id| delivered.slack_posted.contains(&id));
        let filed = id.is_some_and(|id| delivered.jira_filed.contains(&id));
        let channel =
            existing.and_then(|i| i.slack_channel.clone()).unwrap_or_else(|| policy.channel_for(&snapshot));
        let label = format!("{} {} ({})", snapshot.family, snapshot.release, snapshot.scope.describe());
        let open = !matches!(step.action, Action::Resolve { .. });
        let mut effects = Vec::new();
        if !posted && open {
            effects.push(Effect::SlackPost { channel: channel.clone() });
        }
        let mut file_now = false;
        if policy.jira && !filed && open {
            if created < policy.jira_cap {
                created += 1;
                file_now = true;
                effects.push(Effect::JiraCreate);
            } else {
                not_filed.push(label.clone());
            }
        }
        let jira_known = filed || file_now;
        match &step.action {
            Action::Open { .. } => {
                lines
                    .entry(channel)
                    .or_default()
                    .push(format!(":rotating_light: new: {label} — {}", snapshot.summary));
            }
            Action::Update { changes, .. } if !changes.is_empty() => {
                let text = changes.iter().map(Change::describe).collect::<Vec<_>>().join("; ");
                if posted {
                    effects.push(Effect::SlackUpdate);
                    effects.push(Effect::SlackReply { text: text.clone() });
                }
                let reopened = changes.contains(&Change::Reopened);
                let commented_recently = existing
                    .and_then(|i| i.jira_commented_at)
                    .is_some_and(|t| now - t < policy.jira_comment_interval_secs);
                if policy.jira && filed && !file_now {
                    if reopened {
                        effects.push(Effect::JiraReopen { text: text.clone() });
                    } else if changes.iter().any(Change::for_jira) && !commented_recently {
                        effects.push(Effect::JiraComment { text: text.clone() });
                    }
                }
                let emoji = if reopened { ":repeat:" } else { ":arrows_counterclockwise:" };
                lines.entry(channel).or_default().push(format!("{emoji} changed: {label} — {text}"));
            }
            Action::Resolve { .. } => {
                if posted {
                    effects.push(Effect::SlackUpdate);
                    effects.push(Effect::SlackReply { text: Change::Resolved.describe() });
                }
                if policy.jira && jira_known {
                    effects.push(Effect::JiraResolve { text: Change::Resolved.describe() });
                }
                lines.entry(channel).or_default().push(format!(":white_check_mark: resolved: {label}"));
            }
            Action::Stale { .. } if posted => effects.push(Effect::SlackUpdate),
            _ => {}
        }
        step.effects = effects;
    }
    let mut summaries: Vec<Effect> = Vec::new();
    for (channel, mut lines) in lines {
        if channel == policy.default_channel && !not_filed.is_empty() {
            lines.push(format!(
                ":no_entry: not filed in Jira this cycle (at most {} new issues a cycle): {}",
                policy.jira_cap,
                not_filed.join("; ")
            ));
        }
        summaries.push(Effect::SlackSummary { channel, lines });
    }
    Plan { steps, summaries, not_filed }
}

/// The outbox entry's JSON for an effect.
pub fn payload(effect: &Effect) -> serde_json::Value {
    match effect {
        Effect::SlackPost { channel } => json!({ "channel": channel }),
        Effect::SlackSummary { channel, lines } => json!({ "channel": channel, "lines": lines }),
        Effect::SlackReply { text }
        | Effect::JiraComment { text }
        | Effect::JiraResolve { text }
        | Effect::JiraReopen { text } => json!({ "text": text }),
        Effect::SlackUpdate | Effect::JiraCreate => json!({}),
    }
}

#[cfg(test)]
mod tests;
