//! Changes outside the payload: commits merged in a regression's onset window into repositories
//! that ship in no release payload (the CI harness of a platform, the step registry, origin's
//! monitor tests), read from GitHub ([`crate::clients::github`]) and ranked with the payload's pull
//! requests by the regression's scope.
//!
//! The ranking, best first, and why:
//! 1. commits of a repository that shapes only the regressed platforms' CI clusters (metal's
//!    dev-scripts): they reach only those clusters, and only those regressed;
//! 2. the payload's pull requests of the attributed component's (or the platform's)
//!    repositories, in the changelog's order;
//! 3. commits of a repository every platform's CI runs (the step registry, the monitor tests):
//!    they could have changed any platform's runs, or how disruption is measured;
//! 4. every other pull request of the payload window.
//!
//! Commits of one tier come nearest the onset first. A window's commits are kept once read
//! (`outside_commits`); GitHub unreachable leaves the report's `outside_pending` set and a
//! later cycle asks again.

use super::error::{ReleaseError, Result};
use crate::clients::github::{Commit, GitHub};
use crate::config::{GitHubSettings, OutsideRepository};
use crate::model::{Dimension, RegressionReport, SuspectChange};
use crate::store::Store;
use crate::support::error::with_sources;

/// Commits kept per repository and window, those nearest the onset: a busy repository (the step
/// registry merges dozens a day) must not bury the rest.
const PER_REPOSITORY: usize = 20;

/// The outside repositories read for a report: those every platform's CI runs, and those of
/// the platforms its scope is limited to.
pub fn repositories_for<'a>(
    settings: &'a GitHubSettings,
    report: &RegressionReport,
) -> Vec<&'a OutsideRepository> {
    let platforms = report.scope.get(Dimension::Platform);
    settings
        .repositories
        .iter()
        .filter(|r| !r.for_one_platform() || platforms.is_some_and(|p| p.contains(&r.platform)))
        .collect()
}

/// The payload's pull requests (in the changelog's order, the favoured repositories' marked)
/// and the commits outside the payload, ranked together by `report`'s scope (see the module).
pub fn rank(
    payload: Vec<SuspectChange>,
    outside: Vec<(&OutsideRepository, Commit)>,
    report: &RegressionReport,
) -> Vec<SuspectChange> {
    let onset = report.onset.as_ref().map_or(0, |o| o.at.timestamp());
    let mut ranked: Vec<(u8, i64, SuspectChange)> = payload
        .into_iter()
        .filter(|c| c.commit.is_none())
        .map(|c| (if c.component_match { 1 } else { 3 }, 0, c))
        .collect();
    for (repo, commit) in outside {
        let tier = if repo.for_one_platform() { 0 } else { 2 };
        let change = SuspectChange {
            repository: repo.repository.clone(),
            number: 0,
            url: commit.url,
            title: commit.title,
            component_match: false,
            commit: Some(commit.sha),
            merged_at: Some(commit.at),
            why: crate::words::regression::why_outside(repo, report),
        };
        ranked.push((tier, (commit.at - onset).abs(), change));
    }
    ranked.sort_by_key(|(tier, distance, _)| (*tier, *distance)); // stable: the changelog's order stays
    let mut out: Vec<SuspectChange> = Vec::with_capacity(ranked.len());
    for (_, _, c) in ranked {
        if !out.iter().any(|o| o.url == c.url) {
            out.push(c); // one commit under two configured paths
        }
    }
    out
}

/// The commits of `repo` from `since` to `until` kept from an earlier read.
async fn kept_commits(
    store: &Store,
    repo: &OutsideRepository,
    (since, until): (i64, i64),
) -> Result<Option<Vec<Commit>>> {
    match store
        .outside_commits()
        .commits(&repo.repository, &repo.path, since, until)
        .await?
    {
        Some(body) => Ok(Some(
            serde_json::from_str(&body).map_err(ReleaseError::KeptCommits)?,
        )),
        None => Ok(None),
    }
}

/// The commits of `repo` from `since` to `until`: kept ones, else GitHub's (kept unless
/// `dry_run`).
async fn window_commits(
    store: &Store,
    client: &GitHub,
    repo: &OutsideRepository,
    (since, until): (i64, i64),
    dry_run: bool,
) -> Result<Vec<Commit>> {
    if let Some(kept) = kept_commits(store, repo, (since, until)).await? {
        return Ok(kept);
    }
    let mut list = client
        .commits(&repo.repository, &repo.path, since, until)
        .await?;
    list.retain(|c| (since..=until).contains(&c.at));
    if !dry_run {
        let body = serde_json::to_string(&list).map_err(ReleaseError::Encode)?;
        store
            .outside_commits()
            .keep_commits(&repo.repository, &repo.path, (since, until), &body)
            .await?;
    }
    Ok(list)
}

/// Adds to each active regression's suspects the commits outside the payload merged in its
/// onset window, and ranks them with its pull requests. A repository GitHub does not answer
/// for is logged and leaves `outside_pending`; the cycle goes on.
pub async fn attach_outside_changes(
    store: &Store,
    settings: &GitHubSettings,
    regressions: &mut [RegressionReport],
    dry_run: bool,
) {
    if !settings.enabled || settings.repositories.is_empty() {
        return;
    }

    let client = match GitHub::new(settings) {
        Ok(c) => c,
        Err(e) => return tracing::warn!("outside commits not read: {}", with_sources(&e)),
    };

    let mut rate_limited = false;
    for r in regressions.iter_mut().filter(|r| r.status.is_active()) {
        let Some(onset) = &r.onset else { continue };
        let (at, window) = (
            onset.at.timestamp(),
            (onset.earliest.timestamp(), onset.latest.timestamp()),
        );
        let mut outside = Vec::new();
        let mut pending = false;
        for repo in repositories_for(settings, r) {
            let read = if rate_limited {
                kept_commits(store, repo, window)
                    .await
                    .and_then(|k| k.ok_or(ReleaseError::RateLimitSpent))
            } else {
                window_commits(store, &client, repo, window, dry_run).await
            };
            match read {
                Ok(mut list) => {
                    list.sort_by_key(|c| (c.at - at).abs());
                    outside.extend(list.into_iter().take(PER_REPOSITORY).map(|c| (repo, c)));
                }
                Err(e) => {
                    tracing::warn!(fingerprint = %r.fingerprint, repository = %repo.repository, "commits outside the payload not read yet: {}", with_sources(&e));
                    // over the rate limit: ask nothing more this cycle, as GitHub asks
                    rate_limited |= e.is_rate_limited();
                    pending = true;
                }
            }
        }
        let payload = std::mem::take(&mut r.suspect_changes);
        r.suspect_changes = rank(payload, outside, r);
        r.outside_pending = pending;
    }
}

/// `(owner/name, what)` of a GitHub pull request or commit URL.
fn parse_url(url: &str) -> Option<(String, Target)> {
    let rest = url.strip_prefix("https://github.com/")?;
    let mut parts = rest.split('/');
    let (owner, name, kind, id) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    if !plain(owner) || !plain(name) || name == ".." {
        return None; // it goes into a request path
    }
    let target = match kind {
        "pull" => Target::Pull(id.parse().ok()?),
        "commit" if (7..=40).contains(&id.len()) && id.chars().all(|c| c.is_ascii_hexdigit()) => {
            Target::Commit(id.to_string())
        }
        _ => return None,
    };
    Some((format!("{owner}/{name}"), target))
}

enum Target {
    Pull(u64),
    Commit(String),
}

/// Whether a linked fix lands outside the payload, so it is verified by time: a commit, or a
/// pull request of one of the outside repositories.
pub fn is_outside(settings: &GitHubSettings, url: &str) -> bool {
    match parse_url(url) {
        Some((_, Target::Commit(_))) => true,
        Some((repository, Target::Pull(_))) => settings
            .repositories
            .iter()
            .any(|r| r.repository.eq_ignore_ascii_case(&repository)),
        None => false,
    }
}

/// When the last of `urls` (pull requests and commits outside the payload) merged; None while
/// one is not merged yet.
pub async fn merged_at(settings: &GitHubSettings, urls: &[String]) -> Result<Option<i64>> {
    if !settings.enabled {
        return Err(ReleaseError::GitHubOff);
    }
    let client = GitHub::new(settings)?;
    let mut last = None;
    for url in urls {
        let at = match parse_url(url) {
            Some((repository, Target::Pull(n))) => client.pull_merged_at(&repository, n).await?,
            Some((repository, Target::Commit(sha))) => {
                Some(client.commit_at(&repository, &sha).await?)
            }
            None => continue,
        };
        let Some(at) = at else { return Ok(None) };
        last = last.max(Some(at));
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Onset, Scope};

    const ONSET: i64 = 1_700_000_000;

    fn report(platforms: &[&str]) -> RegressionReport {
        let mut scope = Scope::new();
        scope.set(Dimension::Release, ["4.14"]);
        if !platforms.is_empty() {
            scope.set(Dimension::Platform, platforms.iter().copied());
        }
        let mut r = crate::synth::example_report(scope, 30.0, 2.0);
        r.onset = Onset::from_secs(ONSET, ONSET - 8 * 3_600, ONSET + 4 * 3_600);
        r
    }

    fn pull(repository: &str, number: u64, component_match: bool) -> SuspectChange {
        SuspectChange {
            repository: repository.into(),
            number,
            url: format!("https://github.com/{repository}/pull/{number}"),
            title: format!("change {number}"),
            component_match,
            commit: None,
            merged_at: None,
            why: String::new(),
        }
    }

    fn commit(sha: &str, at: i64) -> Commit {
        Commit {
            sha: sha.into(),
            url: format!("https://github.com/x/y/commit/{sha}"),
            title: sha.into(),
            at,
        }
    }

    fn changelog() -> Vec<SuspectChange> {
        vec![
            pull("openshift/cluster-image-registry-operator", 912, true),
            pull("openshift/image-registry", 400, true),
            pull("openshift/cluster-monitoring-operator", 2001, false),
        ]
    }

    #[test]
    fn a_harness_commit_of_the_regressed_platform_ranks_first_and_says_why() {
        let settings = GitHubSettings::default();
        let metal = report(&["metal"]);
        let repos = repositories_for(&settings, &metal);
        assert_eq!(
            repos.len(),
            3,
            "dev-scripts and the two every platform runs"
        );
        let (dev_scripts, release) = (repos[0], repos[1]);
        let outside = vec![
            (release, commit("aaa1111", ONSET - 60)),
            (dev_scripts, commit("bbb2222", ONSET - 3_600)),
            (dev_scripts, commit("ccc3333", ONSET - 60)),
        ];
        let ranked = rank(changelog(), outside, &metal);
        let refs: Vec<String> = ranked.iter().map(SuspectChange::reference).collect();
        assert_eq!(
            refs,
            [
                "openshift-metal3/dev-scripts@ccc3333", // nearest the onset first
                "openshift-metal3/dev-scripts@bbb2222",
                "openshift/cluster-image-registry-operator#912",
                "openshift/image-registry#400",
                "openshift/release@aaa1111",
                "openshift/cluster-monitoring-operator#2001",
            ]
        );
        assert!(
            ranked[0].why.contains("only metal regressed"),
            "{}",
            ranked[0].why
        );
        assert!(
            ranked[4].why.contains("every platform's CI runs"),
            "{}",
            ranked[4].why
        );
        assert_eq!(ranked[0].merged_at, Some(ONSET - 60));
    }

    #[test]
    fn a_regression_of_every_platform_reads_no_platform_s_harness_and_ranks_the_component_first() {
        let settings = GitHubSettings::default();
        let all = report(&[]);
        let repos = repositories_for(&settings, &all);
        assert!(repos.iter().all(|r| !r.for_one_platform()), "{repos:?}");
        let ranked = rank(
            changelog(),
            vec![(repos[0], commit("aaa1111", ONSET))],
            &all,
        );
        assert_eq!(ranked[0].number, 912);
        assert_eq!(ranked[2].commit.as_deref(), Some("aaa1111"));
        assert!(
            repositories_for(&settings, &report(&["aws"]))
                .iter()
                .all(|r| r.platform != "metal")
        );
    }

    #[test]
    fn the_mechanism_s_harness_is_named_in_the_reason() {
        let settings = GitHubSettings::default();
        let mut metal = report(&["metal"]);
        metal.attribution.harness = Some("openshift-metal3/dev-scripts".into());
        let ranked = rank(
            Vec::new(),
            vec![(&settings.repositories[0], commit("ccc3333", ONSET))],
            &metal,
        );
        assert!(
            ranked[0]
                .why
                .ends_with("the mechanism points at the test environment too"),
            "{}",
            ranked[0].why
        );
    }

    #[test]
    fn a_fix_outside_the_payload_is_a_commit_or_a_pull_request_of_an_outside_repository() {
        let settings = GitHubSettings::default();
        assert!(is_outside(
            &settings,
            "https://github.com/openshift-metal3/dev-scripts/pull/1590"
        ));
        assert!(is_outside(
            &settings,
            "https://github.com/openshift/kubernetes/commit/1a2b3c4"
        ));
        assert!(!is_outside(
            &settings,
            "https://github.com/openshift/cluster-image-registry-operator/pull/912"
        ));
        assert!(!is_outside(&settings, "https://example.com/o/r/pull/1"));
        assert!(
            !is_outside(&settings, "https://github.com/o/r/commit/..%2F..%2Fusers"),
            "no path tricks"
        );
        assert!(!is_outside(
            &settings,
            "https://github.com/o/../commit/1a2b3c4"
        ));
    }
}
