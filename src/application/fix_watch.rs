//! Watching the fixes people claim: each live cycle reads the Jira issue of every open
//! incident (one JQL search per 50 keys), and records a [`FixClaim`] for those in a status
//! that claims a fix (`[jira] fix_statuses`, or a done status with a resolution of
//! `fix_resolutions`): when it was claimed, the linked pull requests (remote links and the
//! pull-request field) and, with the release controller, the first payload holding them all.
//! The cycle then judges the runs after that fix point ([`crate::application::cycle`]); this module only
//! gathers what Jira and the release controller say.
//!
//! An issue that leaves the claiming statuses withdraws its claim. A claim's verdicts are kept
//! while the claim is the same one (same time, same pull requests, same fix payload); a new
//! claim is judged afresh.

use crate::application::releases::{FixPayload, fix_payload};
use crate::clients::jira::{JiraClient, WatchedIssue};
use crate::clients::{CallError, SetupError};
use crate::config::Settings;
use crate::domain::incidents::Incident;
use crate::model::{Dimension, FixClaim};
use crate::store::{Store, StoreError};
use crate::support::error::with_sources;

/// The result of the fix watch's functions.
pub type Result<T, E = FixWatchError> = std::result::Result<T, E>;

/// Why a watch stopped: its text is what the cycle logs. A client's error is said as its own
/// text, with its sources; the store's is handed on as the source of words of its own, so that
/// [`crate::store::is_storage_error`] finds it: the chain (`{:#}`) tells the words, then why.
/// The release controller or GitHub failing stops no watch: the claim stays pending, and is
/// logged.
#[derive(Debug, thiserror::Error)]
pub enum FixWatchError {
    /// The Jira client could not be built from its settings.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// Jira did not answer the search for the open incidents' issues (its message).
    #[error(transparent)]
    Jira(#[from] CallError),
    /// The store failed: reading the incidents, or recording a claim. The store's error is
    /// this one's source ([`crate::store::is_storage_error`] finds it).
    #[error("watching the claimed fixes")]
    Store(#[from] StoreError),
}

/// What one watch found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Watched {
    /// Issues read.
    pub issues: usize,
    /// Claims recorded or changed, and claims withdrawn.
    pub claimed: usize,
    pub withdrawn: usize,
}

/// Whether an issue's status claims a fix.
pub fn claims_fix(settings: &crate::config::JiraSettings, issue: &WatchedIssue) -> bool {
    let named = |list: &[String], s: &str| list.iter().any(|x| x.eq_ignore_ascii_case(s));
    if issue.done {
        return issue
            .resolution
            .as_deref()
            .is_some_and(|r| named(&settings.fix_resolutions, r));
    }
    named(&settings.fix_statuses, &issue.status)
}

/// Reads the Jira issues of the open incidents and records what changed in their claims.
/// Jira or the release controller failing is logged and changes nothing: the next cycle asks
/// again.
pub async fn watch(store: &Store, settings: &Settings, now: i64) -> Result<Watched> {
    let open: Vec<Incident> = store
        .incidents()
        .all()
        .await?
        .into_iter()
        .filter(|i| i.state.is_open() && i.merged_into.is_none() && i.jira_key.is_some())
        .collect();

    if open.is_empty() || !settings.jira.enabled() {
        return Ok(Watched::default());
    }

    let client = JiraClient::new(&settings.jira)?;
    let keys: Vec<String> = open.iter().filter_map(|i| i.jira_key.clone()).collect();
    let issues = client.watch(&keys).await?;
    let mut watched = Watched {
        issues: issues.len(),
        ..Watched::default()
    };

    for i in &open {
        let Some(issue) = issues.iter().find(|x| Some(&x.key) == i.jira_key.as_ref()) else {
            continue;
        };
        let claim = if claims_fix(&settings.jira, issue) {
            Some(claim_of(store, settings, &client, i, issue, now).await?)
        } else {
            None
        };
        let changed = match (&i.fix, &claim) {
            (None, None) => false,
            (Some(old), Some(new)) => !old.same_claim(new) || old.status != new.status,
            _ => true,
        };
        if !changed {
            continue;
        }
        let claim = claim.map(|mut c| {
            if let Some(old) = i.fix.as_ref().filter(|old| old.same_claim(&c)) {
                c.verdicts = old.verdicts.clone();
            }
            c
        });
        let event = match &claim {
            Some(c) => {
                watched.claimed += 1;
                ("fix_claimed", crate::words::fix::claim(c))
            }
            None => {
                watched.withdrawn += 1;
                (
                    "fix_withdrawn",
                    crate::words::fix::withdrawn(&issue.key, &issue.status),
                )
            }
        };
        store
            .incidents()
            .record_fix(i.id, claim.as_ref(), now, event)
            .await?;
    }

    Ok(watched)
}

/// When the claim's changes outside the payload merged: kept once known while the linked
/// changes stay the same, else asked of GitHub; not merged yet, or GitHub silent, leaves the
/// claim pending (a later cycle asks again).
async fn merge_point(settings: &Settings, i: &Incident, outside: &[String], claim: &mut FixClaim) {
    if let Some(old) = i
        .fix
        .as_ref()
        .filter(|o| o.pull_requests == claim.pull_requests && o.merged_at.is_some())
    {
        claim.merged_at = old.merged_at;
        return;
    }
    match crate::application::releases::outside::merged_at(&settings.github, outside).await {
        Ok(Some(t)) => claim.merged_at = Some(t),
        Ok(None) => claim.pending = Some(crate::words::fix::NOT_MERGED_YET.into()),
        Err(e) => {
            tracing::warn!(key = %claim.key, "when the fix merged is not known yet: {}", with_sources(&e));
            claim.pending = Some(crate::words::fix::GITHUB_SILENT.into());
        }
    }
}

/// The claim an issue makes now: the claim time kept while it stays claimed, the pull requests
/// linked to it, the fix payload when the release controller can place them.
async fn claim_of(
    store: &Store,
    settings: &Settings,
    client: &JiraClient,
    i: &Incident,
    issue: &WatchedIssue,
    now: i64,
) -> Result<FixClaim> {
    let mut pulls = issue.pull_requests.clone();
    match client.linked_pull_requests(&issue.key).await {
        Ok(linked) => pulls.extend(linked),
        Err(e) => tracing::warn!(key = %issue.key, "remote links not read: {}", e.message),
    }

    pulls.sort();
    pulls.dedup();
    let claimed_at = i.fix.as_ref().map_or_else(
        || issue.status_since.unwrap_or(now).min(now),
        |c| c.claimed_at,
    );

    let mut claim = FixClaim {
        key: issue.key.clone(),
        status: issue.status.clone(),
        resolution: issue.resolution.clone(),
        claimed_at,
        pull_requests: pulls,
        payload: None,
        payload_at: None,
        merged_at: None,
        pending: None,
        verdicts: Vec::new(),
    };

    let (outside, inside): (Vec<String>, Vec<String>) = claim
        .pull_requests
        .iter()
        .cloned()
        .partition(|u| crate::application::releases::outside::is_outside(&settings.github, u));

    if !outside.is_empty() {
        merge_point(settings, i, &outside, &mut claim).await;
        if inside.is_empty() {
            return Ok(claim); // verified by time alone
        }
    }

    if settings.release_controller.urls.is_empty() {
        return Ok(claim);
    }
    // A payload found once stays the fix payload while the pull requests stay the same.
    if let Some(old) = i
        .fix
        .as_ref()
        .filter(|o| o.pull_requests == claim.pull_requests && o.payload.is_some())
    {
        claim.payload.clone_from(&old.payload);
        claim.payload_at = old.payload_at;
        return Ok(claim);
    }

    let s = &i.snapshot;
    let arch = s.scope.single(Dimension::Architecture).unwrap_or("amd64");
    let rc = &settings.release_controller;
    match fix_payload(store, rc, &s.release, arch, &inside, claimed_at, now).await {
        Ok(FixPayload::In { payload, built }) => {
            claim.payload = Some(payload);
            claim.payload_at = Some(built);
        }
        Ok(FixPayload::NotYet(why)) => claim.pending = claim.pending.take().or(Some(why)),
        Err(e) => {
            tracing::warn!(key = %issue.key, "fix payload not known yet: {}", with_sources(&e));
            claim.pending = Some(crate::words::fix::RELEASE_CONTROLLER_SILENT.into());
        }
    }

    Ok(claim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jira_not_answering_says_jira_s_message_alone() {
        let e = FixWatchError::from(CallError::retryable("Jira search: 503 Service Unavailable"));
        assert_eq!(
            format!("{:#}", anyhow::Error::from(e)),
            "Jira search: 503 Service Unavailable"
        );
    }

    #[test]
    fn a_lost_database_is_a_storage_failure_in_the_chain() {
        let e = anyhow::Error::from(FixWatchError::from(StoreError::Connection(
            sqlx::Error::PoolTimedOut,
        )));
        assert!(crate::store::is_storage_error(&e), "{e:#}");
        assert_eq!(
            format!("{e:#}"),
            "watching the claimed fixes: no database connection: pool timed out while waiting for an open connection"
        );
    }
}
