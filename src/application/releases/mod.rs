//! Which change broke it: the pull requests that entered between a regression's last good and
//! first bad payloads, read from the release controller and ranked by the attributed component.
//!
//! The changelog comes from the release controller ([`crate::clients::release_controller`]).
//! A changelog never changes once both payloads exist, so each is read once and kept in
//! `changelogs`; one that could not be read leaves the report's `changes_pending` set, and a
//! later cycle tries again.

use crate::clients::release_controller::{self, ReleaseController};
use crate::config::ReleaseControllerSettings;
use crate::model::{DAY, Dimension, RegressionReport, SuspectChange};
use crate::store::Store;
use crate::support::error::with_sources;

mod error;
pub mod outside;

pub use self::error::ReleaseError;
use self::error::Result;

/// The pull requests of a changelog body, ranked: those of `favoured` repositories first, in
/// the order `favoured` lists them (the component's before the platform's), then by repository
/// and number. A commit without a pull request is left out.
pub fn suspects(body: &str, favoured: &[&str]) -> Result<Vec<SuspectChange>> {
    let mut ranked: Vec<(usize, SuspectChange)> = release_controller::pull_requests(body)
        .map_err(ReleaseError::Changelog)?
        .into_iter()
        .map(|p| {
            let rank = favoured
                .iter()
                .position(|f| f.eq_ignore_ascii_case(&p.repository));
            let change = SuspectChange {
                repository: p.repository,
                number: p.number,
                url: p.url,
                title: p.title,
                component_match: rank.is_some(),
                commit: None,
                merged_at: None,
                why: String::new(),
            };
            (rank.unwrap_or(usize::MAX), change)
        })
        .collect();
    ranked.sort_by(|(ra, a), (rb, b)| {
        ra.cmp(rb)
            .then(a.repository.cmp(&b.repository))
            .then(a.number.cmp(&b.number))
    });
    Ok(ranked.into_iter().map(|(_, c)| c).collect())
}

/// How far before a claim the payloads holding its pull requests are looked for (a pull
/// request merges before its issue moves), and how many changelogs one lookup reads at most.
const FIX_LOOKBACK_SECS: i64 = 7 * DAY;
const FIX_CHANGELOGS: usize = 120;

/// Where a claimed fix's pull requests first shipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixPayload {
    /// The first payload holding every one of them, and its build time.
    In { payload: String, built: i64 },
    /// Not in any payload a run has tested yet (or no pull request to look for): why.
    NotYet(String),
}

/// The changelog between two payloads, kept in the store once read.
async fn kept_changelog(
    store: &Store,
    client: &ReleaseController,
    base: &str,
    arch: &str,
    (from, to): (&str, &str),
) -> Result<String> {
    if let Some(body) = store.changelogs().changelog(arch, from, to).await? {
        return Ok(body);
    }
    let body = client.changelog(base, from, to).await?;
    store
        .changelogs()
        .keep_changelog(arch, from, to, &body)
        .await?;
    Ok(body)
}

/// The first payload of `release` that holds every pull request of `pulls`, walking the
/// payloads runs tested from a week before `claimed_at`, one changelog between neighbours at a
/// time (each kept, so a later lookup reads none again). `Err` when the release controller
/// cannot be asked (not configured for `arch`) or does not answer: a later cycle tries again.
pub async fn fix_payload(
    store: &Store,
    settings: &ReleaseControllerSettings,
    release: &str,
    arch: &str,
    pulls: &[String],
    claimed_at: i64,
    now: i64,
) -> Result<FixPayload> {
    if pulls.is_empty() {
        return Ok(FixPayload::NotYet(
            crate::words::fix::NO_PULL_REQUEST.into(),
        ));
    }

    let base = settings
        .urls
        .get(arch)
        .ok_or_else(|| ReleaseError::NoReleaseController { arch: arch.into() })?;

    let client = ReleaseController::new(settings)?;
    let payloads = store
        .runs()
        .payloads_built(release, claimed_at - FIX_LOOKBACK_SECS, now)
        .await?;

    let mut missing: Vec<&String> = pulls.iter().collect();
    let mut last = None;
    for pair in payloads.windows(2).take(FIX_CHANGELOGS) {
        let (from, to) = (&pair[0], &pair[1]);
        let body = kept_changelog(store, &client, base, arch, (&from.0, &to.0)).await?;
        let shipped = suspects(&body, &[])?;
        missing.retain(|url| !shipped.iter().any(|c| c.url.eq_ignore_ascii_case(url)));
        if missing.is_empty() {
            last = Some(to.clone());
            break;
        }
    }

    Ok(match last {
        Some((payload, built)) => FixPayload::In { payload, built },
        None => FixPayload::NotYet(crate::words::fix::not_shipped(
            missing.len(),
            pulls.len(),
            release,
        )),
    })
}

/// The repositories that rank first for a report: its component's, then its platform's.
fn favoured<'a>(
    settings: &'a ReleaseControllerSettings,
    report: &RegressionReport,
) -> Vec<&'a str> {
    let owners = [
        Some(report.component.as_str()),
        report.attribution.platform_component.as_deref(),
    ];
    owners
        .into_iter()
        .flatten()
        .flat_map(|owner| {
            settings
                .repositories
                .iter()
                .filter(move |r| r.component == owner)
        })
        .flat_map(|r| r.repositories.iter().map(String::as_str))
        .collect()
}

/// Fills in each active regression's suspect changes from its payload window: from the kept
/// changelog, else the release controller of its architecture (kept unless `dry_run`). A
/// failure is logged and leaves `changes_pending`; the cycle goes on.
pub async fn attach_payload_changes(
    store: &Store,
    settings: &ReleaseControllerSettings,
    regressions: &mut [RegressionReport],
    dry_run: bool,
) {
    if settings.urls.is_empty() {
        return;
    }

    let client = match ReleaseController::new(settings) {
        Ok(c) => c,
        Err(e) => return tracing::warn!("payload changes not read: {}", with_sources(&e)),
    };

    for r in regressions.iter_mut().filter(|r| r.status.is_active()) {
        let Some(onset) = &r.onset else { continue };
        let (Some(from), Some(to)) = (
            onset.last_good_payload.clone(),
            onset.first_bad_payload.clone(),
        ) else {
            continue;
        };
        let arch = r
            .scope
            .single(Dimension::Architecture)
            .unwrap_or("amd64")
            .to_string();
        let Some(base) = settings.urls.get(&arch) else {
            continue;
        };
        let body = match store.changelogs().changelog(&arch, &from, &to).await {
            Ok(Some(body)) => Ok(body),
            Ok(None) => client.changelog(base, &from, &to).await.map_err(Into::into),
            Err(e) => Err(ReleaseError::from(e)),
        };
        match body.and_then(|b| suspects(&b, &favoured(settings, r)).map(|s| (b, s))) {
            Ok((body, list)) => {
                if !dry_run
                    && let Err(e) = store
                        .changelogs()
                        .keep_changelog(&arch, &from, &to, &body)
                        .await
                {
                    tracing::warn!(
                        "cannot keep the changelog {from}..{to}: {}",
                        with_sources(&e)
                    );
                }
                r.suspect_changes = list;
                r.changes_pending = false;
            }
            Err(e) => {
                tracing::warn!(fingerprint = %r.fingerprint, "changes between {from} and {to} not read yet: {}", with_sources(&e));
                r.changes_pending = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = r#"{"from": {"name": "4.14.0-0.nightly-2026-11-21-200000", "created": "2026-11-21T20:00:00Z"},
      "to": {"name": "4.14.0-0.nightly-2026-11-22-000000", "created": "2026-11-22T00:00:00Z"},
      "components": [{"name": "Kubernetes", "version": "1.27.6"}],
      "updatedImages": [
        {"name": "cluster-monitoring-operator", "path": "https://github.com/openshift/cluster-monitoring-operator",
         "commits": [{"subject": "Bump prometheus", "pullID": 2001, "pullURL": "https://github.com/openshift/cluster-monitoring-operator/pull/2001"}]},
        {"name": "cluster-image-registry-operator", "path": "https://github.com/openshift/cluster-image-registry-operator",
         "commits": [{"subject": "Scale the registry down during upgrades", "pullID": 912, "pullURL": "https://github.com/openshift/cluster-image-registry-operator/pull/912"},
                     {"subject": "Merge branch without a PR", "commitID": "abc"}]},
        {"name": "docker-registry", "path": "https://github.com/openshift/image-registry/", "commits": []}]}"#;

    #[test]
    fn the_component_repositories_rank_first_and_commits_without_a_pull_request_are_left_out() {
        let list = suspects(
            BODY,
            &[
                "openshift/cluster-image-registry-operator",
                "openshift/image-registry",
            ],
        )
        .unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(
            (
                list[0].repository.as_str(),
                list[0].number,
                list[0].component_match
            ),
            ("openshift/cluster-image-registry-operator", 912, true)
        );
        assert_eq!((list[1].number, list[1].component_match), (2001, false));
        assert!(suspects("<html>", &[]).is_err());
    }

    #[test]
    fn a_pull_request_url_that_is_no_web_address_becomes_the_repository_s_own() {
        let body = BODY.replace(
            "https://github.com/openshift/cluster-monitoring-operator/pull/2001",
            "javascript:alert(document.domain)//https://github.com/x",
        );
        let list = suspects(&body, &[]).unwrap();
        let pr = list.iter().find(|s| s.number == 2001).unwrap();
        assert_eq!(
            pr.url,
            "https://github.com/openshift/cluster-monitoring-operator/pull/2001"
        );
    }
}
