//! A fake Jira REST API (v2 and v3 under one server): JQL search (`labels = "…"`, `statusCategory
//! != Done`), create, get, comments (with comment properties and paging), transitions, issue
//! links. Errors come as Jira sends them: 401 without credentials, 404 for an unknown issue,
//! 400 with `errors`, 429 with `Retry-After`. Bodies are recorded for jira-adf-check.

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::faults::{Faults, refuse, spoil};

pub const TOKEN: &str = "jira-test-token";

type DateTime = chrono::DateTime<chrono::Utc>;

/// Issues a `key in (…)` search answers per page: small, so paging is exercised.
const KEY_PAGE: usize = 3;

#[derive(Debug, Clone)]
pub struct Issue {
    pub key: String,
    pub fields: Value,
    pub labels: Vec<String>,
    pub status: String,
    pub done: bool,
    pub resolution: Option<String>,
    pub resolved_at: Option<String>,
    pub comments: Vec<Value>,
    pub links: Vec<String>,
    pub transitions: Vec<String>,
    /// Status changes, as the changelog lists them (`expand=changelog`).
    pub histories: Vec<Value>,
    /// Remote links (`/remotelink`), as Jira lists them.
    pub remote_links: Vec<Value>,
}

#[derive(Default)]
struct Inner {
    issues: Vec<Issue>,
    requests: HashMap<String, usize>,
    /// Answer the next request with this status (e.g. 401, 403, 404, 500).
    fail_next: Vec<u16>,
}

#[derive(Clone)]
struct Fake {
    inner: Arc<Mutex<Inner>>,
    faults: Faults,
    record: std::path::PathBuf,
}

pub struct FakeJira {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
}

impl FakeJira {
    pub async fn start(name: &str, faults: Faults) -> FakeJira {
        let dir =
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../sheriff-recorded/jira");
        std::fs::create_dir_all(&dir).unwrap();
        let record = dir.join(format!("{name}.jsonl"));
        let _ = std::fs::remove_file(&record);
        let inner = Arc::new(Mutex::new(Inner::default()));
        let fake = Fake {
            inner: inner.clone(),
            faults: faults.clone(),
            record,
        };
        let app = Router::new()
            .route("/rest/api/{v}/search", get(search))
            .route("/rest/api/{v}/search/jql", get(search))
            .route("/rest/api/{v}/issue", post(create))
            .route("/rest/api/{v}/issue/{key}", get(issue))
            .route(
                "/rest/api/{v}/issue/{key}/comment",
                get(comments).post(add_comment),
            )
            .route(
                "/rest/api/{v}/issue/{key}/transitions",
                get(transitions).post(transition),
            )
            .route("/rest/api/{v}/issue/{key}/remotelink", get(remote_links))
            .route("/rest/api/{v}/issueLink", post(link))
            .with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeJira { url, inner }
    }

    pub fn issues(&self) -> Vec<Issue> {
        self.inner.lock().unwrap().issues.clone()
    }

    /// Closes an issue as a person would: status Done with `resolution`, resolved `days_ago`.
    pub fn close(&self, key: &str, resolution: &str, days_ago: i64) {
        let mut inner = self.inner.lock().unwrap();
        let i = inner.issues.iter_mut().find(|i| i.key == key).unwrap();
        i.done = true;
        i.status = "Closed".into();
        i.resolution = Some(resolution.into());
        i.resolved_at = Some(
            (chrono::Utc::now() - chrono::Duration::days(days_ago))
                .format("%Y-%m-%dT%H:%M:%S%.3f%z")
                .to_string(),
        );
    }

    /// Moves an issue to `status` at `at` as a person or a bot would (Red Hat's workflow:
    /// NEW, ASSIGNED, POST, MODIFIED, ON_QA, Verified, Closed), recording it in the changelog;
    /// Closed takes `resolution`.
    pub fn set_status(&self, key: &str, status: &str, resolution: Option<&str>, at: DateTime) {
        let mut inner = self.inner.lock().unwrap();
        let i = inner.issues.iter_mut().find(|i| i.key == key).unwrap();
        let created = at.format("%Y-%m-%dT%H:%M:%S%.3f%z").to_string();
        i.histories.push(json!({
            "id": format!("{}", i.histories.len() + 100),
            "created": created,
            "items": [{ "field": "status", "fieldtype": "jira", "fromString": i.status, "toString": status }]
        }));
        i.status = status.into();
        i.done = status.eq_ignore_ascii_case("Closed");
        i.resolution = resolution.filter(|_| i.done).map(str::to_string);
        i.resolved_at = i.done.then_some(created);
    }

    /// Links a pull request to an issue, as the CI's Jira plugin does (a remote link).
    pub fn link_pull_request(&self, key: &str, url: &str) {
        let mut inner = self.inner.lock().unwrap();
        let i = inner.issues.iter_mut().find(|i| i.key == key).unwrap();
        let n = i.remote_links.len() + 10_000;
        i.remote_links.push(json!({
            "id": n,
            "self": format!("http://jira.example/rest/api/2/issue/{key}/remotelink/{n}"),
            "globalId": url,
            "application": { "type": "com.github", "name": "GitHub" },
            "relationship": "links to",
            "object": { "url": url, "title": format!("GitHub Pull Request {url}"), "icon": {}, "status": { "resolved": false, "icon": {} } }
        }));
    }

    /// Sets a field (say the "Git Pull Request" custom field) as an API client would.
    pub fn set_field(&self, key: &str, field: &str, value: Value) {
        let mut inner = self.inner.lock().unwrap();
        let i = inner.issues.iter_mut().find(|i| i.key == key).unwrap();
        i.fields[field] = value;
    }

    /// Requests the fake answered, by what they asked (`search`, `remote links`, …).
    pub fn requests(&self, what: &str) -> usize {
        self.inner
            .lock()
            .unwrap()
            .requests
            .get(what)
            .copied()
            .unwrap_or(0)
    }

    pub fn fail_next(&self, statuses: &[u16]) {
        self.inner.lock().unwrap().fail_next = statuses.to_vec();
    }
}

fn jira_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(json!({ "errorMessages": [message], "errors": {} })),
    )
        .into_response()
}

/// Jira's 404 for an issue key it does not know (or will not show).
fn no_such_issue() -> Response {
    jira_error(
        StatusCode::NOT_FOUND,
        "Issue does not exist or you do not have permission to see it.",
    )
}

fn gate(fake: &Fake, headers: &HeaderMap, what: &str) -> (super::faults::Fault, Option<Response>) {
    let mut inner = fake.inner.lock().unwrap();
    *inner.requests.entry(what.to_string()).or_default() += 1;
    if !inner.fail_next.is_empty() {
        let status = inner.fail_next.remove(0);
        let s = StatusCode::from_u16(status).unwrap();
        let mut r = jira_error(s, &format!("injected {status}"));
        if status == 429 {
            r.headers_mut().insert("retry-after", "1".parse().unwrap());
        }
        return (super::faults::Fault::None, Some(r));
    }
    drop(inner);
    let fault = fake.faults.next();
    if let Some(r) = refuse(
        fault,
        "{\"errorMessages\":[\"Internal server error\"],\"errors\":{}}",
    ) {
        return (fault, Some(r));
    }
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let basic = format!(
        "Basic {}",
        base64_encode(&format!("bot@example.com:{TOKEN}"))
    );
    if auth != format!("Bearer {TOKEN}") && auth != basic {
        return (
            fault,
            Some(jira_error(
                StatusCode::UNAUTHORIZED,
                "You are not authenticated. Authentication required to perform this operation.",
            )),
        );
    }
    (fault, None)
}

fn base64_encode(s: &str) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn record(fake: &Fake, body: &Value) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&fake.record)
        .unwrap();
    writeln!(f, "{body}").unwrap();
}

fn issue_json(i: &Issue) -> Value {
    let category = if i.done {
        "done"
    } else if ["New", "NEW", "Reopened"].contains(&i.status.as_str()) {
        "new"
    } else {
        "indeterminate"
    };
    let mut fields = json!({
        "summary": i.fields["summary"],
        "labels": i.labels,
        "status": { "name": i.status, "statusCategory": { "key": category } },
        "resolution": i.resolution.as_ref().map(|r| json!({ "name": r })),
        "resolutiondate": i.resolved_at,
    });
    for (k, v) in i
        .fields
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("customfield_"))
    {
        fields[k.as_str()] = v.clone();
    }
    json!({ "id": i.key.trim_start_matches("OCPBUGS-"), "key": i.key, "fields": fields })
}

/// An issue as a search lists it, with its changelog when asked.
fn listed(i: &Issue, changelog: bool) -> Value {
    let mut v = issue_json(i);
    if changelog {
        v["changelog"] = json!({ "startAt": 0, "maxResults": i.histories.len(), "total": i.histories.len(), "histories": i.histories });
    }
    v
}

/// `key in (A-1, B-2)`: the keys, or None when the JQL is not such a query.
fn keys_of(jql: &str) -> Option<Vec<String>> {
    let rest = jql.split("key in (").nth(1)?;
    let list = rest.split(')').next()?;
    Some(
        list.split(',')
            .map(|k| k.trim().trim_matches('"').to_string())
            .filter(|k| !k.is_empty())
            .collect(),
    )
}

/// A `key in (…)` search: v2 pages by `startAt` and refuses unknown keys unless
/// `validateQuery=warn`; v3 (`/search/jql`) pages by `nextPageToken` and leaves them out.
fn key_search(fake: &Fake, v3: bool, keys: &[String], q: &HashMap<String, String>) -> Response {
    let inner = fake.inner.lock().unwrap();
    let unknown: Vec<&String> = keys
        .iter()
        .filter(|k| !inner.issues.iter().any(|i| &i.key == *k))
        .collect();
    let warn = q.get("validateQuery").is_some_and(|v| v == "warn");
    if !v3
        && !warn
        && let Some(k) = unknown.first()
    {
        return jira_error(
            StatusCode::BAD_REQUEST,
            &format!("An issue with key '{k}' does not exist for field 'key'."),
        );
    }
    let changelog = q.get("expand").is_some_and(|e| e.contains("changelog"));
    let mut found: Vec<&Issue> = inner
        .issues
        .iter()
        .filter(|i| keys.contains(&i.key))
        .collect();
    found.sort_by(|a, b| a.key.cmp(&b.key));
    let start: usize = if v3 {
        q.get("nextPageToken")
            .and_then(|t| t.strip_prefix("page-"))
            .and_then(|t| t.parse().ok())
            .unwrap_or(0)
    } else {
        q.get("startAt").and_then(|s| s.parse().ok()).unwrap_or(0)
    };
    let page: Vec<Value> = found
        .iter()
        .skip(start)
        .take(KEY_PAGE)
        .map(|i| listed(i, changelog))
        .collect();
    let next = start + page.len();
    let body = if v3 {
        let mut b = json!({ "issues": page, "isLast": next >= found.len() });
        if next < found.len() {
            b["nextPageToken"] = json!(format!("page-{next}"));
        }
        b
    } else {
        let warnings: Vec<String> = unknown
            .iter()
            .map(|k| format!("An issue with key '{k}' does not exist for field 'key'."))
            .collect();
        json!({ "issues": page, "total": found.len(), "startAt": start, "maxResults": KEY_PAGE, "warningMessages": warnings })
    };
    axum::Json(body).into_response()
}

async fn remote_links(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Path((_v, key)): Path<(String, String)>,
) -> Response {
    let (_, stop) = gate(&fake, &headers, "remote links");
    if let Some(r) = stop {
        return r;
    }
    let mut inner = fake.inner.lock().unwrap();
    let Some(i) = find(&mut inner, &key) else {
        return no_such_issue();
    };
    axum::Json(Value::Array(i.remote_links.clone())).into_response()
}

async fn search(
    State(fake): State<Fake>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (fault, stop) = gate(&fake, &headers, "search");
    if let Some(r) = stop {
        return r;
    }
    let jql = q.get("jql").cloned().unwrap_or_default();
    if let Some(keys) = keys_of(&jql) {
        return spoil(
            fault,
            key_search(&fake, uri.path().ends_with("/jql"), &keys, &q),
        )
        .await;
    }
    let Some(label) = jql
        .split("labels = \"")
        .nth(1)
        .and_then(|s| s.split('"').next())
    else {
        return jira_error(StatusCode::BAD_REQUEST, "Error in the JQL Query");
    };
    let open_only = jql.contains("statusCategory != Done");
    let mut found: Vec<Value> = {
        let inner = fake.inner.lock().unwrap();
        inner
            .issues
            .iter()
            .filter(|i| i.labels.iter().any(|l| l == label) && !(open_only && i.done))
            .map(issue_json)
            .collect()
    };
    found.reverse();
    let total = found.len();
    spoil(
        fault,
        axum::Json(json!({ "issues": found, "total": total, "startAt": 0, "maxResults": 20 }))
            .into_response(),
    )
    .await
}

async fn create(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Path(v): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let (fault, stop) = gate(&fake, &headers, "create");
    if let Some(r) = stop {
        return r;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return jira_error(StatusCode::BAD_REQUEST, "Unexpected character");
    };
    let f = &body["fields"];
    let mut errors = serde_json::Map::new();
    if f["summary"]
        .as_str()
        .is_none_or(|s| s.is_empty() || s.chars().count() > 255)
    {
        errors.insert(
            "summary".into(),
            json!("You must specify a summary of the issue."),
        );
    }
    let description_ok = if v == "3" {
        f["description"]["type"] == "doc"
    } else {
        f["description"].is_string()
    };
    if !description_ok {
        errors.insert(
            "description".into(),
            json!("Operation value must be a string"),
        );
    }
    if f["project"]["key"].as_str().is_none_or(str::is_empty) {
        errors.insert("project".into(), json!("project is required"));
    }
    if !errors.is_empty() {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({ "errorMessages": [], "errors": errors })),
        )
            .into_response();
    }
    record(&fake, &body);
    let key = {
        let mut inner = fake.inner.lock().unwrap();
        let key = format!("OCPBUGS-{}", inner.issues.len() + 1);
        inner.issues.push(Issue {
            key: key.clone(),
            fields: f.clone(),
            labels: serde_json::from_value(f["labels"].clone()).unwrap_or_default(),
            status: "New".into(),
            done: false,
            resolution: None,
            resolved_at: None,
            comments: Vec::new(),
            links: Vec::new(),
            transitions: Vec::new(),
            histories: Vec::new(),
            remote_links: Vec::new(),
        });
        key
    };
    let answer = (
        StatusCode::CREATED,
        axum::Json(json!({ "id": key.trim_start_matches("OCPBUGS-"), "key": key, "self": "" })),
    );
    spoil(fault, answer.into_response()).await
}

fn find<'a>(inner: &'a mut Inner, key: &str) -> Option<&'a mut Issue> {
    inner.issues.iter_mut().find(|i| i.key == key)
}

async fn issue(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Path((_v, key)): Path<(String, String)>,
) -> Response {
    let (fault, stop) = gate(&fake, &headers, "get");
    if let Some(r) = stop {
        return r;
    }
    let body = {
        let mut inner = fake.inner.lock().unwrap();
        find(&mut inner, &key).map(|i| issue_json(i))
    };
    let Some(body) = body else {
        return no_such_issue();
    };
    spoil(fault, axum::Json(body).into_response()).await
}

async fn comments(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Path((_v, key)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (_, stop) = gate(&fake, &headers, "list comments");
    if let Some(r) = stop {
        return r;
    }
    let mut inner = fake.inner.lock().unwrap();
    let Some(i) = find(&mut inner, &key) else {
        return no_such_issue();
    };
    let start: usize = q.get("startAt").and_then(|s| s.parse().ok()).unwrap_or(0);
    let expand = q.get("expand").is_some_and(|e| e.contains("properties"));
    // pages of 2 so paging is exercised
    let page: Vec<Value> = i
        .comments
        .iter()
        .skip(start)
        .take(2)
        .map(|c| {
            let mut c = c.clone();
            if !expand {
                c.as_object_mut().unwrap().remove("properties");
            }
            c
        })
        .collect();
    axum::Json(
        json!({ "comments": page, "startAt": start, "maxResults": 2, "total": i.comments.len() }),
    )
    .into_response()
}

async fn add_comment(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Path((v, key)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let (fault, stop) = gate(&fake, &headers, "comment");
    if let Some(r) = stop {
        return r;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return jira_error(StatusCode::BAD_REQUEST, "Unexpected character");
    };
    let ok = if v == "3" {
        body["body"]["type"] == "doc"
    } else {
        body["body"].is_string()
    };
    if !ok {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(
                json!({ "errorMessages": [], "errors": { "comment": "Comment body can not be empty!" } }),
            ),
        )
            .into_response();
    }
    record(&fake, &body);
    let id = {
        let mut inner = fake.inner.lock().unwrap();
        let Some(i) = find(&mut inner, &key) else {
            return no_such_issue();
        };
        let id = format!("{}{}", i.key.len(), i.comments.len() + 1);
        i.comments
            .push(json!({ "id": id, "body": body["body"], "properties": body["properties"] }));
        id
    };
    spoil(
        fault,
        (StatusCode::CREATED, axum::Json(json!({ "id": id }))).into_response(),
    )
    .await
}

async fn transitions(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Path((_v, key)): Path<(String, String)>,
) -> Response {
    let (_, stop) = gate(&fake, &headers, "transitions");
    if let Some(r) = stop {
        return r;
    }
    let mut inner = fake.inner.lock().unwrap();
    let Some(i) = find(&mut inner, &key) else {
        return no_such_issue();
    };
    let list = if i.done {
        json!([{ "id": "3", "name": "Reopen", "to": { "statusCategory": { "key": "new" } } }])
    } else {
        json!([{ "id": "2", "name": "Done", "to": { "statusCategory": { "key": "done" } } }])
    };
    axum::Json(json!({ "transitions": list })).into_response()
}

async fn transition(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Path((_v, key)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let (fault, stop) = gate(&fake, &headers, "transition");
    if let Some(r) = stop {
        return r;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    {
        let mut inner = fake.inner.lock().unwrap();
        let Some(i) = find(&mut inner, &key) else {
            return no_such_issue();
        };
        match body["transition"]["id"].as_str() {
            Some("2") if !i.done => {
                i.done = true;
                i.status = "Done".into();
                i.resolution = Some("Done".into());
                i.resolved_at = Some(chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3f%z").to_string());
                i.transitions.push("Done".into());
            }
            Some("3") if i.done => {
                i.done = false;
                i.status = "Reopened".into();
                i.resolution = None;
                i.resolved_at = None;
                i.transitions.push("Reopen".into());
            }
            _ => return (
                StatusCode::BAD_REQUEST,
                axum::Json(
                    json!({ "errorMessages": ["Transition id is not valid for this issue."], "errors": {} }),
                ),
            )
                .into_response(),
        }
    }
    spoil(fault, StatusCode::NO_CONTENT.into_response()).await
}

async fn link(State(fake): State<Fake>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let (_, stop) = gate(&fake, &headers, "link");
    if let Some(r) = stop {
        return r;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    let mut inner = fake.inner.lock().unwrap();
    let (a, b) = (
        body["inwardIssue"]["key"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        body["outwardIssue"]["key"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    );
    if let Some(i) = find(&mut inner, &a) {
        i.links.push(b);
    }
    StatusCode::CREATED.into_response()
}
