//! Which change broke it: the pull requests that entered between a regression's last good and
//! first bad payloads, read from the release controller and ranked by the attributed component.
//!
//! The release controller (`openshift/release-controller`) answers
//! `GET /changelog?from=TAG&to=TAG&format=json` with the changelog `oc adm release info
//! --changelog` builds: `{"from": {…}, "to": {…}, "components": […], "updatedImages": [{"name",
//! "path": "https://github.com/openshift/<repo>", "commits": [{"subject", "pullID", "pullURL",
//! …}]}], "newImages": […]}`. An unknown tag is `400` with a plain-text reason, a failure `500`.
//! A changelog never changes once both payloads exist, so each is read once and kept in
//! `changelogs`; one that could not be read leaves the report's `changes_pending` set, and a
//! later cycle tries again.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::config::ReleaseControllerSettings;
use crate::model::{DAY, Dimension, RegressionReport, SuspectChange};
use crate::store::Store;

pub mod outside;

/// Bytes of a changelog read at most.
const MAX_BODY: usize = 8 << 20;

#[derive(Deserialize, Default)]
#[serde(default)]
struct ChangeLog {
    #[serde(rename = "updatedImages")]
    updated_images: Vec<Image>,
    #[serde(rename = "newImages")]
    new_images: Vec<Image>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Image {
    name: String,
    path: String,
    commits: Vec<Commit>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Commit {
    subject: String,
    #[serde(rename = "pullID")]
    pull_id: u64,
    #[serde(rename = "pullURL")]
    pull_url: String,
}

/// `openshift/name` of a GitHub URL (`https://github.com/openshift/name`), else the text itself.
fn repository_of(path: &str) -> String {
    path.trim_end_matches('/')
        .trim_end_matches(".git")
        .strip_prefix("https://github.com/")
        .unwrap_or(path)
        .to_string()
}

/// The pull requests of a changelog body, ranked: those of `favoured` repositories first, in
/// the order `favoured` lists them (the component's before the platform's), then by repository
/// and number. A commit without a pull request is left out.
pub fn suspects(body: &str, favoured: &[&str]) -> Result<Vec<SuspectChange>> {
    let log: ChangeLog =
        serde_json::from_str(body).context("the changelog is not the release controller's JSON")?;
    let mut ranked: Vec<(usize, SuspectChange)> = Vec::new();
    for image in log.updated_images.iter().chain(&log.new_images) {
        let repository = if image.path.is_empty() { image.name.clone() } else { repository_of(&image.path) };
        let rank = favoured.iter().position(|f| f.eq_ignore_ascii_case(&repository));
        for c in image.commits.iter().filter(|c| c.pull_id > 0) {
            // the changelog's link only when it is a plain web address
            let url = match crate::render::web_link(&c.pull_url) {
                Some(u) => u.to_string(),
                None => format!("https://github.com/{repository}/pull/{}", c.pull_id),
            };
            if ranked.iter().any(|(_, s)| s.url == url) {
                continue; // one PR in several images of one repository
            }
            let change = SuspectChange {
                repository: repository.clone(),
                number: c.pull_id,
                url,
                title: c.subject.clone(),
                component_match: rank.is_some(),
                commit: None,
                merged_at: None,
                why: String::new(),
            };
            ranked.push((rank.unwrap_or(usize::MAX), change));
        }
    }
    ranked.sort_by(|(ra, a), (rb, b)| {
        ra.cmp(rb).then(a.repository.cmp(&b.repository)).then(a.number.cmp(&b.number))
    });
    Ok(ranked.into_iter().map(|(_, c)| c).collect())
}

/// A release controller client.
pub struct ReleaseController {
    http: reqwest::Client,
}

impl ReleaseController {
    pub fn new(settings: &ReleaseControllerSettings) -> Result<ReleaseController> {
        let http = crate::http::client_builder(Duration::from_secs(settings.timeout_secs.max(1))).build()?;
        Ok(ReleaseController { http })
    }

    /// The changelog between two payloads, as the release controller's JSON.
    pub async fn changelog(&self, base: &str, from: &str, to: &str) -> Result<String> {
        let url = format!("{}/changelog", base.trim_end_matches('/'));
        let response = self
            .http
            .get(&url)
            .query(&[("from", from), ("to", to), ("format", "json")])
            .send()
            .await
            .with_context(|| format!("release controller {url}"))?;
        let status = response.status();
        // stopped at the limit as it arrives: a body without end holds no more than that
        let body = crate::http::read_limited(response, "the changelog limit", MAX_BODY as u64)
            .await
            .with_context(|| format!("release controller {url}: reading the body"))?;
        if !status.is_success() {
            let reason: String = String::from_utf8_lossy(&body[..body.len().min(200)]).trim().to_string();
            bail!("release controller {url} answered {status}: {reason}");
        }
        String::from_utf8(body).context("the changelog is not UTF-8")
    }
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

impl ReleaseController {
    /// The changelog between two payloads, kept in the store once read.
    async fn kept_changelog(
        &self,
        store: &Store,
        base: &str,
        arch: &str,
        from: &str,
        to: &str,
    ) -> Result<String> {
        if let Some(body) = store.releases().changelog(arch, from, to).await? {
            return Ok(body);
        }
        let body = self.changelog(base, from, to).await?;
        store.releases().keep_changelog(arch, from, to, &body).await?;
        Ok(body)
    }
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
        return Ok(FixPayload::NotYet("no pull request is linked to the issue".into()));
    }
    let base = settings.urls.get(arch).with_context(|| format!("no release controller for {arch}"))?;
    let client = ReleaseController::new(settings)?;
    let payloads = store.runs().payloads_built(release, claimed_at - FIX_LOOKBACK_SECS, now).await?;
    let mut missing: Vec<&String> = pulls.iter().collect();
    let mut last = None;
    for pair in payloads.windows(2).take(FIX_CHANGELOGS) {
        let (from, to) = (&pair[0], &pair[1]);
        let body = client.kept_changelog(store, base, arch, &from.0, &to.0).await?;
        let shipped = suspects(&body, &[])?;
        missing.retain(|url| !shipped.iter().any(|c| c.url.eq_ignore_ascii_case(url)));
        if missing.is_empty() {
            last = Some(to.clone());
            break;
        }
    }
    Ok(match last {
        Some((payload, built)) => FixPayload::In { payload, built },
        None => FixPayload::NotYet(format!(
            "the fix is in no payload yet ({} of {} pull requests not shipped in {release})",
            missing.len(),
            pulls.len()
        )),
    })
}

/// The repositories that rank first for a report: its component's, then its platform's.
fn favoured<'a>(settings: &'a ReleaseControllerSettings, report: &RegressionReport) -> Vec<&'a str> {
    let owners = [Some(report.component.as_str()), report.attribution.platform_component.as_deref()];
    owners
        .into_iter()
        .flatten()
        .flat_map(|owner| settings.repositories.iter().filter(move |r| r.component == owner))
        .flat_map(|r| r.repositories.iter().map(String::as_str))
        .collect()
}

/// Fills in each active regression's suspect changes from its payload window: from the kept
/// changelog, else the release controller of its architecture (kept unless `dry_run`). A
/// failure is logged and leaves `changes_pending`; the cycle goes on.
pub async fn attach_changes(
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
        Err(e) => return tracing::warn!("release controller client: {e:#}"),
    };
    for r in regressions.iter_mut().filter(|r| r.status.is_active()) {
        let Some(onset) = &r.onset else { continue };
        let (Some(from), Some(to)) = (onset.last_good_payload.clone(), onset.first_bad_payload.clone())
        else {
            continue;
        };
        let arch = r.scope.single(Dimension::Architecture).unwrap_or("amd64").to_string();
        let Some(base) = settings.urls.get(&arch) else { continue };
        let body = match store.releases().changelog(&arch, &from, &to).await {
            Ok(Some(body)) => Ok(body),
            Ok(None) => client.changelog(base, &from, &to).await,
            Err(e) => Err(e),
        };
        match body.and_then(|b| suspects(&b, &favoured(settings, r)).map(|s| (b, s))) {
            Ok((body, list)) => {
                if !dry_run && let Err(e) = store.releases().keep_changelog(&arch, &from, &to, &body).await {
                    tracing::warn!("cannot keep the changelog {from}..{to}: {e:#}");
                }
                r.suspect_changes = list;
                r.changes_pending = false;
            }
            Err(e) => {
                tracing::warn!(fingerprint = %r.fingerprint, "changes between {from} and {to} not read yet: {e:#}");
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

    #[tokio::test]
    async fn a_changelog_without_end_is_refused_at_the_limit_not_read_until_the_timeout() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 4096];
            let _ = socket.read(&mut head).await;
            let _ = socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n").await;
            let chunk = vec![b' '; 64 * 1024];
            // no length, no end: the body goes on as long as it is read
            while socket.write_all(&chunk).await.is_ok() {}
        });
        crate::init_crypto();
        let settings = ReleaseControllerSettings { timeout_secs: 5, ..Default::default() };
        let started = std::time::Instant::now();
        let err = ReleaseController::new(&settings).unwrap().changelog(&base, "a", "b").await.unwrap_err();
        assert!(format!("{err:#}").contains("larger than the changelog limit"), "{err:#}");
        assert!(started.elapsed() < Duration::from_secs(4), "read for {:?}", started.elapsed());
    }

    #[test]
    fn the_component_repositories_rank_first_and_commits_without_a_pull_request_are_left_out() {
        let list = suspects(BODY, &["openshift/cluster-image-registry-operator", "openshift/image-registry"])
            .unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(
            (list[0].repository.as_str(), list[0].number, list[0].component_match),
            ("openshift/cluster-image-registry-operator", 912, true)
        );
        assert_eq!((list[1].number, list[1].component_match), (2001, false));
        assert!(suspects("<html>", &[]).is_err());
        assert_eq!(repository_of("https://github.com/openshift/image-registry/"), "openshift/image-registry");
    }

    #[test]
    fn a_pull_request_url_that_is_no_web_address_becomes_the_repository_s_own() {
        let body = BODY.replace(
            "https://github.com/openshift/cluster-monitoring-operator/pull/2001",
            "javascript:alert(document.domain)//https://github.com/x",
        );
        let list = suspects(&body, &[]).unwrap();
        let pr = list.iter().find(|s| s.number == 2001).unwrap();
        assert_eq!(pr.url, "https://github.com/openshift/cluster-monitoring-operator/pull/2001");
    }
}
