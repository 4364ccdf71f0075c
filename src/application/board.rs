//! The status board and an incident's explanation: what people ask of sheriff, shared by the
//! command line, the slash command and the pages, as typed answers (their text is
//! `edge::text`'s).

use crate::store::Result;
use serde::Serialize;

use crate::domain::incidents::silence::Silence;
use crate::domain::incidents::{Event, Incident};
use crate::store::Store;
use crate::store::outbox::{OutboxCounts, OutboxEntry};

/// `sheriff status`: open incidents (newest first), silences, the outbox.
#[derive(Debug, Serialize)]
pub struct Status {
    pub incidents: Vec<Incident>,
    pub silences: Vec<Silence>,
    /// Accepted levels of open incidents: (incident, level).
    pub allowances: Vec<(i64, crate::model::Allowance)>,
    pub outbox: OutboxCounts,
    pub dead: Vec<OutboxEntry>,
    /// Runs whose interval files (on-demand evidence) are not fetched yet, and of them those
    /// a fetch failed for.
    pub evidence_pending: (u64, u64),
}

pub async fn status(store: &Store, now: i64) -> Result<Status> {
    let mut incidents: Vec<Incident> = store
        .incidents()
        .all()
        .await?
        .into_iter()
        .filter(|i| i.state.is_open())
        .collect();
    incidents.sort_by_key(|i| std::cmp::Reverse(i.opened_at));
    let allowances = incidents
        .iter()
        .filter_map(|i| Some((i.id, i.allowance.clone()?)))
        .collect();
    Ok(Status {
        allowances,
        incidents,
        silences: store.incidents().silences(now).await?,
        outbox: store.outbox().counts(now).await?,
        dead: store
            .outbox()
            .entries(crate::store::outbox::EntryState::Dead, 20)
            .await?,
        evidence_pending: store.runs().pending_interval_runs().await?,
    })
}

/// An incident in the `sheriff incidents list --format json` contract (docs/commands.md documents them).
pub fn incident_json(i: &crate::domain::incidents::Incident) -> serde_json::Value {
    let s = &i.snapshot;
    let time = |t: i64| chrono::DateTime::from_timestamp(t, 0).map(|t| t.to_rfc3339());
    serde_json::json!({
        "id": i.id,
        "fingerprint": i.fingerprint,
        "state": i.state,
        "family": s.family,
        "backends": s.backends,
        "component": s.component,
        "release": s.release,
        "scope": s.scope,
        "percentile": s.percentile,
        "observed_seconds": s.observed_seconds,
        "threshold_seconds": s.threshold_seconds,
        "summary": s.summary,
        "opened_at": time(i.opened_at),
        "updated_at": time(i.updated_at),
        "resolved_at": i.resolved_at.and_then(time),
        "acked_by": i.acked_by,
        "slack_channel": i.slack_channel,
        "slack_ts": i.slack_ts,
        "jira_key": i.jira_key,
        "onset": i.onset().or_else(|| s.report.onset.clone()),
        "episodes": i.episodes,
        "merged_into": i.merged_into,
        "suspect_changes": s.report.suspect_changes,
        "changes_pending": s.report.changes_pending,
        "outside_pending": s.report.outside_pending,
        "resolution": i.resolution,
        "fix": i.fix,
        "verification": s.report.verification,
        "allowance": i.allowance,
    })
}

/// An incident with its history.
#[derive(Debug, Serialize)]
pub struct Explain {
    pub incident: Incident,
    pub events: Vec<Event>,
}

pub async fn explain(store: &Store, reference: &str) -> Result<Option<Explain>> {
    let Some(incident) = store.incidents().find(reference).await? else {
        return Ok(None);
    };
    let events = store.incidents().events(incident.id).await?;
    Ok(Some(Explain { incident, events }))
}
