//! A fake GitHub REST API, as api.github.com answers the three calls sheriff makes:
//! `GET /repos/{owner}/{repo}/commits?since=&until=&path=&per_page=&page=` (a JSON array of
//! commits, newest first, filtered on the committer's date and on the files a commit touched,
//! paginated with `Link: <…>; rel="next", <…>; rel="last"`), `GET
//! /repos/{owner}/{repo}/commits/{sha}` and `GET /repos/{owner}/{repo}/pulls/{number}`
//! (`merged_at`, null until merged). An unknown repository, commit or pull request is `404
//! {"message": "Not Found", …}`. A test can switch it to the primary rate limit (`403`,
//! `x-ratelimit-remaining: 0`, `x-ratelimit-reset` an hour away, GitHub's message), to `429`
//! with `Retry-After` for the next few requests, or to `502`. Every request is recorded with
//! its `Authorization` header.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

/// How the fake answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// The primary rate limit is spent until an hour from now.
    RateLimited,
    /// `429` with `Retry-After: 1` for this many more requests, then normal.
    TooMany(u32),
    /// `502 Bad Gateway`, as GitHub answers when it is down.
    Down,
}

/// A commit the fake holds.
#[derive(Debug, Clone)]
pub struct FakeCommit {
    pub repository: String,
    pub sha: String,
    pub message: String,
    pub at: DateTime<Utc>,
    /// The files it touched.
    pub files: Vec<String>,
}

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    pub query: HashMap<String, String>,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct Data {
    commits: Vec<FakeCommit>,
    pulls: HashMap<(String, u64), Option<DateTime<Utc>>>,
    requests: Vec<Request>,
    mode: Option<Mode>,
}

#[derive(Clone)]
struct Fake {
    url: String,
    page_size: usize,
    data: Arc<Mutex<Data>>,
}

pub struct FakeGitHub {
    pub url: String,
    data: Arc<Mutex<Data>>,
}

impl FakeGitHub {
    /// A fake that pages at most `page_size` commits however many are asked for, so a test
    /// sees pagination with a handful.
    pub async fn start(page_size: usize) -> FakeGitHub {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let fake = Fake {
            url: url.clone(),
            page_size,
            data: Arc::default(),
        };
        let data = fake.data.clone();
        let app = Router::new()
            .route("/repos/{owner}/{repo}/commits", get(list_commits))
            .route("/repos/{owner}/{repo}/commits/{sha}", get(one_commit))
            .route("/repos/{owner}/{repo}/pulls/{number}", get(pull))
            .with_state(fake);
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeGitHub { url, data }
    }

    pub fn add_commit(
        &self,
        repository: &str,
        sha: &str,
        message: &str,
        at: DateTime<Utc>,
        files: &[&str],
    ) {
        self.data.lock().unwrap().commits.push(FakeCommit {
            repository: repository.into(),
            sha: sha.into(),
            message: message.into(),
            at,
            files: files.iter().map(|f| (*f).to_string()).collect(),
        });
    }

    pub fn add_pull(&self, repository: &str, number: u64, merged_at: Option<DateTime<Utc>>) {
        self.data
            .lock()
            .unwrap()
            .pulls
            .insert((repository.into(), number), merged_at);
    }

    pub fn set_mode(&self, mode: Mode) {
        self.data.lock().unwrap().mode = Some(mode);
    }

    pub fn requests(&self) -> Vec<Request> {
        self.data.lock().unwrap().requests.clone()
    }
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn commit_json(base: &str, c: &FakeCommit) -> Value {
    let person = json!({"name": "Dev", "email": "dev@example.com", "date": iso(c.at)});
    json!({
        "sha": c.sha,
        "node_id": format!("C_{}", c.sha),
        "commit": {"author": person, "committer": person, "message": c.message, "comment_count": 0,
                   "tree": {"sha": "0000000", "url": format!("{base}/repos/{}/git/trees/0000000", c.repository)},
                   "verification": {"verified": false, "reason": "unsigned", "signature": null, "payload": null}},
        "url": format!("{base}/repos/{}/commits/{}", c.repository, c.sha),
        "html_url": format!("https://github.com/{}/commit/{}", c.repository, c.sha),
        "parents": [],
    })
}

fn not_found(documentation: &str) -> Response {
    let body = json!({"message": "Not Found", "documentation_url": documentation, "status": "404"});
    (StatusCode::NOT_FOUND, axum::Json(body)).into_response()
}

/// Records the request and answers per the mode: None to go on normally.
fn gate(
    fake: &Fake,
    path: String,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Option<Response> {
    let mut data = fake.data.lock().unwrap();
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    data.requests.push(Request {
        path,
        query: query.clone(),
        authorization,
    });
    match data.mode.unwrap_or(Mode::Normal) {
        Mode::Normal => None,
        Mode::Down => Some(
            (
                StatusCode::BAD_GATEWAY,
                "<html><body><h1>502 Bad Gateway</h1></body></html>",
            )
                .into_response(),
        ),
        Mode::RateLimited => {
            let reset = (Utc::now().timestamp() + 3_600).to_string();
            let body = json!({
                "message": "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
            });
            let headers = [
                ("x-ratelimit-limit", "60".to_string()),
                ("x-ratelimit-remaining", "0".to_string()),
                ("x-ratelimit-used", "60".to_string()),
                ("x-ratelimit-reset", reset),
                ("x-ratelimit-resource", "core".to_string()),
            ];
            Some((StatusCode::FORBIDDEN, headers, axum::Json(body)).into_response())
        }
        Mode::TooMany(n) => {
            data.mode = Some(if n > 1 {
                Mode::TooMany(n - 1)
            } else {
                Mode::Normal
            });
            let body = json!({
                "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
            });
            Some(
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [("retry-after", "1")],
                    axum::Json(body),
                )
                    .into_response(),
            )
        }
    }
}

async fn list_commits(
    State(fake): State<Fake>,
    Path((owner, repo)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let repository = format!("{owner}/{repo}");
    if let Some(r) = gate(&fake, format!("/repos/{repository}/commits"), &q, &headers) {
        return r;
    }
    let time = |k: &str| {
        q.get(k)
            .and_then(|v| DateTime::parse_from_rfc3339(v).ok())
            .map(|t| t.with_timezone(&Utc))
    };
    let (since, until) = (time("since"), time("until"));
    let path = q.get("path").cloned().unwrap_or_default();
    let data = fake.data.lock().unwrap();
    if !data.commits.iter().any(|c| c.repository == repository) {
        return not_found("https://docs.github.com/rest/commits/commits#list-commits");
    }
    let mut matching: Vec<&FakeCommit> = data
        .commits
        .iter()
        .filter(|c| c.repository == repository)
        .filter(|c| since.is_none_or(|s| c.at >= s) && until.is_none_or(|u| c.at <= u))
        .filter(|c| {
            path.is_empty()
                || c.files
                    .iter()
                    .any(|f| f == &path || f.starts_with(&format!("{path}/")))
        })
        .collect();
    matching.sort_by_key(|c| std::cmp::Reverse(c.at));
    let per_page = q
        .get("per_page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let size = per_page.min(fake.page_size);
    let page = q
        .get("page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let last = matching.len().div_ceil(size).max(1);
    let items: Vec<Value> = matching
        .iter()
        .skip((page - 1) * size)
        .take(size)
        .map(|c| commit_json(&fake.url, c))
        .collect();
    let page_url = |n: usize| {
        let mut params: Vec<(String, String)> = q
            .iter()
            .filter(|(k, _)| *k != "page")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        params.sort();
        params.push(("page".into(), n.to_string()));
        reqwest::Url::parse_with_params(
            &format!("{}/repos/{repository}/commits", fake.url),
            &params,
        )
        .unwrap()
        .to_string()
    };
    let mut links = Vec::new();
    if page < last {
        links.push(format!("<{}>; rel=\"next\"", page_url(page + 1)));
        links.push(format!("<{}>; rel=\"last\"", page_url(last)));
    }
    if page > 1 {
        links.push(format!("<{}>; rel=\"prev\"", page_url(page - 1)));
        links.push(format!("<{}>; rel=\"first\"", page_url(1)));
    }
    let mut response = axum::Json(Value::Array(items)).into_response();
    if !links.is_empty() {
        response
            .headers_mut()
            .insert("link", links.join(", ").parse().unwrap());
    }
    response
}

async fn one_commit(
    State(fake): State<Fake>,
    Path((owner, repo, sha)): Path<(String, String, String)>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let repository = format!("{owner}/{repo}");
    if let Some(r) = gate(
        &fake,
        format!("/repos/{repository}/commits/{sha}"),
        &q,
        &headers,
    ) {
        return r;
    }
    let data = fake.data.lock().unwrap();
    match data
        .commits
        .iter()
        .find(|c| c.repository == repository && c.sha.starts_with(&sha))
    {
        Some(c) => axum::Json(commit_json(&fake.url, c)).into_response(),
        None => not_found("https://docs.github.com/rest/commits/commits#get-a-commit"),
    }
}

async fn pull(
    State(fake): State<Fake>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let repository = format!("{owner}/{repo}");
    if let Some(r) = gate(
        &fake,
        format!("/repos/{repository}/pulls/{number}"),
        &q,
        &headers,
    ) {
        return r;
    }
    let data = fake.data.lock().unwrap();
    match data.pulls.get(&(repository.clone(), number)) {
        Some(merged_at) => axum::Json(json!({
            "number": number,
            "state": if merged_at.is_some() { "closed" } else { "open" },
            "title": format!("change {number}"),
            "html_url": format!("https://github.com/{repository}/pull/{number}"),
            "merged": merged_at.is_some(),
            "merged_at": merged_at.map(iso),
            "merge_commit_sha": merged_at.map(|_| format!("{number:040x}")),
        }))
        .into_response(),
        None => not_found("https://docs.github.com/rest/pulls/pulls#get-a-pull-request"),
    }
}
