//! GitHub's REST API, for the changes outside the payload: the commits merged in a window of a
//! repository that ships in no release payload (the CI harness, the step registry, origin's
//! monitor tests), and when a pull request or a commit named as a fix merged.
//!
//! `GET /repos/{owner}/{repo}/commits?since=&until=&path=&per_page=100` answers a JSON array,
//! newest first, with the next page in `Link: <…>; rel="next"`; `since` and `until` are ISO
//! 8601 and compare with the commit's date. `GET /repos/{owner}/{repo}/pulls/{n}` has
//! `merged_at` (null until merged), `GET /repos/{owner}/{repo}/commits/{sha}` the commit's
//! dates. A missing repository is `404 {"message": "Not Found"}`. Over the rate limit GitHub
//! answers `403` or `429`, with `x-ratelimit-remaining: 0` and `x-ratelimit-reset` (Unix
//! seconds) for the primary limit, or `Retry-After` (seconds) for a secondary one: a wait up to
//! `github.max_wait_secs` is sat out and the request asked once more; a longer one is an error
//! that says when to come back.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use super::SetupError;
use crate::config::{GitHubSettings, Secret};
use crate::model::DAY;
use crate::support::error::with_sources;
use crate::support::http::BodyError;

type Result<T, E = GitHubError> = std::result::Result<T, E>;

/// A GitHub call that did not give sheriff what it asked for.
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    /// A repository or path that makes no URL.
    #[error("a commits URL: {0}")]
    Url(String),
    /// A next page outside the API URL, not asked: the token would go there.
    #[error("GitHub sent a next page outside {api_url}: {url}")]
    ForeignPage { api_url: String, url: String },
    /// GitHub's rate limit is spent for longer than sheriff waits (`github.max_wait_secs`),
    /// `again` after one wait: the caller asks nothing more this cycle.
    #[error("GitHub {url}{}: GitHub rate limit: {}", if *again { ", again" } else { "" }, retry_words(*wait))]
    RateLimited {
        url: String,
        /// How long GitHub asked to wait.
        wait: Duration,
        again: bool,
    },
    /// GitHub answered `url` with an error status other than a rate limit, and this reason.
    #[error("GitHub {url} answered {}: {reason}", super::status_line(*status))]
    Status {
        url: String,
        status: u16,
        reason: String,
    },
    /// The call to `url` got no usable answer.
    #[error("GitHub {url}: {failure}")]
    Call { url: String, failure: Failure },
}

/// Why a GitHub call got no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The request got no answer (connection, timeout), with the transport's reasons.
    #[error("{0}")]
    Transport(String),
    /// The answer could not be read whole (too large, or cut off).
    #[error(transparent)]
    Body(BodyError),
    /// An answer that is not what was asked for (`a list of commits`).
    #[error("not {what}: {error}")]
    Unreadable {
        what: &'static str,
        error: serde_json::Error,
    },
    #[error("a commit without a date")]
    Undated,
}

impl GitHubError {
    /// Whether GitHub's rate limit is spent: nothing more should be asked this cycle.
    pub fn is_rate_limited(&self) -> bool {
        matches!(self, GitHubError::RateLimited { .. })
    }
}

/// The body of `url`'s answer read as `what`.
fn read_json<T: serde::de::DeserializeOwned>(
    url: &str,
    body: &[u8],
    what: &'static str,
) -> Result<T> {
    serde_json::from_slice(body).map_err(|error| GitHubError::Call {
        url: url.to_string(),
        failure: Failure::Unreadable { what, error },
    })
}

/// One commit on a repository's default branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    pub sha: String,
    /// Its page on github.com.
    pub url: String,
    /// The first line of its message.
    pub title: String,
    /// When it landed on the branch (the committer's date: the merge, for a merged pull
    /// request), Unix seconds.
    pub at: i64,
}

#[derive(Deserialize)]
struct WireCommit {
    sha: String,
    #[serde(default)]
    html_url: String,
    commit: WireCommitBody,
}

#[derive(Deserialize)]
struct WireCommitBody {
    #[serde(default)]
    message: String,
    committer: Option<WireSignature>,
    author: Option<WireSignature>,
}

#[derive(Deserialize)]
struct WireSignature {
    date: Option<DateTime<Utc>>,
}

#[derive(Deserialize)]
struct WirePull {
    merged_at: Option<DateTime<Utc>>,
}

#[derive(Deserialize, Default)]
struct WireError {
    #[serde(default)]
    message: String,
}

impl WireCommit {
    fn into_commit(self, repository: &str) -> Option<Commit> {
        let signature = self.commit.committer.or(self.commit.author)?;
        let url = if self.html_url.starts_with("https://github.com/") {
            self.html_url
        } else {
            format!("https://github.com/{repository}/commit/{}", self.sha)
        };
        let title = self
            .commit
            .message
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        Some(Commit {
            sha: self.sha,
            url,
            title,
            at: signature.date?.timestamp(),
        })
    }
}

/// A GitHub REST API client.
pub struct GitHub {
    http: reqwest::Client,
    api_url: String,
    token: Option<Secret>,
    max_pages: u32,
    max_bytes: u64,
    max_wait: Duration,
}

/// One page: its body and the next page's URL.
struct Page {
    body: Vec<u8>,
    next: Option<String>,
}

impl GitHub {
    pub fn new(settings: &GitHubSettings) -> Result<GitHub, SetupError> {
        let http =
            crate::support::http::client_builder(Duration::from_secs(settings.timeout_secs.max(1)))
                .build()
                .map_err(|e| SetupError::http("GitHub", &e))?;
        Ok(GitHub {
            http,
            api_url: settings.api_url.trim_end_matches('/').to_string(),
            token: settings.token.clone(),
            max_pages: settings.max_pages.max(1),
            max_bytes: settings.max_response_bytes,
            max_wait: Duration::from_secs(settings.max_wait_secs),
        })
    }

    /// The commits of `repository` (touching `path`, when not empty) dated from `since` to
    /// `until`, newest first. Past `github.max_pages` pages the rest is left out, and logged.
    pub async fn commits(
        &self,
        repository: &str,
        path: &str,
        since: i64,
        until: i64,
    ) -> Result<Vec<Commit>> {
        let iso = |t: i64| {
            DateTime::from_timestamp(t, 0)
                .unwrap_or_default()
                .to_rfc3339_opts(SecondsFormat::Secs, true)
        };

        let mut query = vec![
            ("since", iso(since)),
            ("until", iso(until)),
            ("per_page", "100".to_string()),
        ];

        if !path.is_empty() {
            query.push(("path", path.to_string()));
        }

        let first = reqwest::Url::parse_with_params(
            &format!("{}/repos/{repository}/commits", self.api_url),
            &query,
        )
        .map_err(|e| GitHubError::Url(e.to_string()))?;

        let mut url = Some(first.to_string());
        let mut out = Vec::new();
        for _ in 0..self.max_pages {
            let Some(u) = url.take() else { break };
            let page = self.get(&u).await?;
            let wire: Vec<WireCommit> = read_json(&u, &page.body, "a list of commits")?;
            out.extend(wire.into_iter().filter_map(|c| c.into_commit(repository)));
            url = page.next;
        }

        if url.is_some() {
            tracing::warn!(
                repository,
                "more than {} pages of commits; the oldest are left out",
                self.max_pages
            );
        }

        Ok(out)
    }

    /// When pull request `number` of `repository` merged; None while it is not merged.
    pub async fn pull_merged_at(&self, repository: &str, number: u64) -> Result<Option<i64>> {
        let url = format!("{}/repos/{repository}/pulls/{number}", self.api_url);
        let page = self.get(&url).await?;
        let pull: WirePull = read_json(&url, &page.body, "a pull request")?;
        Ok(pull.merged_at.map(|t| t.timestamp()))
    }

    /// When commit `sha` of `repository` landed (its committer's date).
    pub async fn commit_at(&self, repository: &str, sha: &str) -> Result<i64> {
        let url = format!("{}/repos/{repository}/commits/{sha}", self.api_url);
        let page = self.get(&url).await?;
        let wire: WireCommit = read_json(&url, &page.body, "a commit")?;
        let commit = wire.into_commit(repository).ok_or(GitHubError::Call {
            url,
            failure: Failure::Undated,
        })?;
        Ok(commit.at)
    }

    /// One page, sitting out one short rate-limit wait.
    async fn get(&self, url: &str) -> Result<Page> {
        match self.get_once(url).await? {
            Answer::Page(p) => Ok(p),
            Answer::RateLimited(wait) if wait <= self.max_wait => {
                tracing::info!(url, "GitHub rate limit: waiting {} s", wait.as_secs());
                tokio::time::sleep(wait).await;
                match self.get_once(url).await? {
                    Answer::Page(p) => Ok(p),
                    Answer::RateLimited(wait) => Err(GitHubError::RateLimited {
                        url: url.to_string(),
                        wait,
                        again: true,
                    }),
                }
            }
            Answer::RateLimited(wait) => Err(GitHubError::RateLimited {
                url: url.to_string(),
                wait,
                again: false,
            }),
        }
    }

    async fn get_once(&self, url: &str) -> Result<Answer> {
        if !url.starts_with(&format!("{}/", self.api_url)) {
            // no token elsewhere
            return Err(GitHubError::ForeignPage {
                api_url: self.api_url.clone(),
                url: url.to_string(),
            });
        }

        let failed = |failure| GitHubError::Call {
            url: url.to_string(),
            failure,
        };

        let mut request = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28");

        if let Some(token) = &self.token {
            request = request.bearer_auth(token.expose());
        }

        let response = request
            .send()
            .await
            .map_err(|e| failed(Failure::Transport(with_sources(&e))))?;

        let status = response.status();
        let headers = response.headers().clone();
        let body = crate::support::http::read_limited(
            response,
            "github.max_response_bytes",
            self.max_bytes,
        )
        .await
        .map_err(|e| failed(Failure::Body(e)))?;

        if status.is_success() {
            return Ok(Answer::Page(Page {
                body,
                next: next_link(&headers),
            }));
        }

        let message = serde_json::from_slice::<WireError>(&body)
            .unwrap_or_default()
            .message;

        if let Some(wait) =
            rate_limit_wait(status.as_u16(), &headers, &message, Utc::now().timestamp())
        {
            return Ok(Answer::RateLimited(wait));
        }

        let reason = if message.is_empty() {
            String::from_utf8_lossy(&body[..body.len().min(200)])
                .trim()
                .to_string()
        } else {
            message.chars().take(200).collect()
        };

        Err(GitHubError::Status {
            url: url.to_string(),
            status: status.as_u16(),
            reason,
        })
    }
}

enum Answer {
    Page(Page),
    /// Over a rate limit: how long to wait.
    RateLimited(Duration),
}

fn retry_words(wait: Duration) -> String {
    let at = Utc::now() + chrono::Duration::seconds(wait.as_secs().min(DAY.unsigned_abs()) as i64);
    format!(
        "try again after {} UTC (in {} s)",
        at.format("%H:%M:%S"),
        wait.as_secs()
    )
}

/// How long a rate-limited answer asks to wait: `Retry-After`, else `x-ratelimit-reset` when
/// `x-ratelimit-remaining` is 0, else a minute for a secondary limit's message. None: not a
/// rate limit (a 403 for want of permission, say).
fn rate_limit_wait(
    status: u16,
    headers: &reqwest::header::HeaderMap,
    message: &str,
    now: i64,
) -> Option<Duration> {
    if status != 403 && status != 429 {
        return None;
    }
    if let Some(wait) = crate::support::http::retry_after(headers) {
        return Some(wait);
    }
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if header("x-ratelimit-remaining") == Some("0")
        && let Some(reset) = header("x-ratelimit-reset").and_then(|v| v.parse::<i64>().ok())
    {
        return Some(Duration::from_secs((reset - now).max(0) as u64));
    }
    (status == 429 || message.to_ascii_lowercase().contains("rate limit"))
        .then_some(Duration::from_secs(60))
}

/// The `rel="next"` URL of a `Link` header.
fn next_link(headers: &reqwest::header::HeaderMap) -> Option<String> {
    let link = headers.get(reqwest::header::LINK)?.to_str().ok()?;
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        let next = params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"");
        next.then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
    })
}

#[cfg(test)]
mod tests {
    use reqwest::header::{HeaderMap, HeaderValue};

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_next_page_is_read_from_the_link_header() {
        let h = headers(&[(
            "link",
            r#"<https://api.github.com/repositories/1/commits?page=2>; rel="next", <https://api.github.com/repositories/1/commits?page=9>; rel="last""#,
        )]);
        assert_eq!(
            next_link(&h).as_deref(),
            Some("https://api.github.com/repositories/1/commits?page=2")
        );
        let last = headers(&[(
            "link",
            r#"<https://api.github.com/x?page=1>; rel="prev", <https://api.github.com/x?page=1>; rel="first""#,
        )]);
        assert_eq!(next_link(&last), None);
        assert_eq!(next_link(&HeaderMap::new()), None);
    }

    #[test]
    fn a_rate_limit_waits_for_retry_after_then_the_reset_and_a_plain_403_is_no_rate_limit() {
        let retry = headers(&[("retry-after", "7")]);
        assert_eq!(
            rate_limit_wait(429, &retry, "", 0),
            Some(Duration::from_secs(7))
        );
        let reset = headers(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1100"),
        ]);
        assert_eq!(
            rate_limit_wait(403, &reset, "API rate limit exceeded", 1000),
            Some(Duration::from_secs(100))
        );
        let secondary = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.";
        assert_eq!(
            rate_limit_wait(403, &HeaderMap::new(), secondary, 0),
            Some(Duration::from_secs(60))
        );
        let left = headers(&[("x-ratelimit-remaining", "4999")]);
        assert_eq!(
            rate_limit_wait(403, &left, "Resource not accessible by integration", 0),
            None
        );
        assert_eq!(rate_limit_wait(500, &retry, "", 0), None);
    }

    #[test]
    fn a_commit_keeps_its_first_line_and_its_committer_s_date() {
        let wire: WireCommit = serde_json::from_str(
            r#"{"sha": "abc123", "html_url": "javascript:alert(1)", "commit": {"message": "Use RWX storage\n\nand two replicas",
                "author": {"date": "2023-09-01T08:00:00Z"}, "committer": {"date": "2023-09-02T10:00:00Z"}}}"#,
        )
        .unwrap();
        let c = wire.into_commit("openshift-metal3/dev-scripts").unwrap();
        assert_eq!(c.title, "Use RWX storage");
        assert_eq!(
            c.at,
            DateTime::parse_from_rfc3339("2023-09-02T10:00:00Z")
                .unwrap()
                .timestamp()
        );
        assert_eq!(
            c.url,
            "https://github.com/openshift-metal3/dev-scripts/commit/abc123"
        );
    }
}
