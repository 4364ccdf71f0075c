//! A fake Slack Web API: `chat.postMessage`, `chat.update`, `conversations.history` and
//! `conversations.replies` (with `include_all_metadata` and cursor pagination),
//! `usergroups.users.list`, `views.open`, and `response_url` endpoints. Like Slack it answers
//! HTTP 200 with `{"ok": false, "error": …}` for API errors, 429 with `Retry-After` when rate
//! limited; it checks the bot token. Every message body is recorded for slack-blocks-check.

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::faults::{Faults, refuse, spoil};

pub const TOKEN: &str = "xoxb-test-token";

#[derive(Debug, Clone)]
pub struct Posted {
    pub channel: String,
    pub ts: String,
    pub thread_ts: Option<String>,
    pub text: String,
    pub blocks: Value,
    pub key: Option<String>,
    /// Times `chat.update` replaced it.
    pub edits: usize,
}

#[derive(Default)]
struct Inner {
    messages: Vec<Posted>,
    next_ts: u64,
    responses: Vec<Value>,
    views: Vec<Value>,
    groups: HashMap<String, Vec<String>>,
    rate_limit_next: u32,
    retry_after: u64,
}

#[derive(Clone)]
struct Fake {
    inner: Arc<Mutex<Inner>>,
    faults: Faults,
    record: Option<std::path::PathBuf>,
}

pub struct FakeSlack {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
}

impl FakeSlack {
    /// Starts the fake; messages are recorded under `sheriff-recorded/slack/<name>.jsonl`.
    pub async fn start(name: &str, faults: Faults) -> FakeSlack {
        let dir =
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../sheriff-recorded/slack");
        std::fs::create_dir_all(&dir).unwrap();
        let record = dir.join(format!("{name}.jsonl"));
        let _ = std::fs::remove_file(&record);
        let inner = Arc::new(Mutex::new(Inner {
            next_ts: 1,
            ..Default::default()
        }));
        let fake = Fake {
            inner: inner.clone(),
            faults: faults.clone(),
            record: Some(record),
        };
        let app = Router::new()
            .route("/api/chat.postMessage", post(post_message))
            .route("/api/chat.update", post(update))
            .route("/api/conversations.history", get(history))
            .route("/api/conversations.replies", get(replies))
            .route("/api/usergroups.users.list", get(group_users))
            .route("/api/views.open", post(views_open))
            .route("/response/{id}", post(response_url))
            .with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeSlack { url, inner }
    }

    pub fn api_url(&self) -> String {
        format!("{}/api", self.url)
    }

    pub fn messages(&self) -> Vec<Posted> {
        self.inner.lock().unwrap().messages.clone()
    }

    pub fn responses(&self) -> Vec<Value> {
        self.inner.lock().unwrap().responses.clone()
    }

    pub fn views(&self) -> Vec<Value> {
        self.inner.lock().unwrap().views.clone()
    }

    pub fn set_group(&self, group: &str, users: &[&str]) {
        self.inner
            .lock()
            .unwrap()
            .groups
            .insert(group.into(), users.iter().map(|u| u.to_string()).collect());
    }

    /// The next `n` requests get 429 with `Retry-After: <secs>`.
    pub fn rate_limit_next(&self, n: u32, secs: u64) {
        let mut inner = self.inner.lock().unwrap();
        inner.rate_limit_next = n;
        inner.retry_after = secs;
    }

    /// Messages per metadata key, to find duplicates.
    pub fn count_by_key(&self) -> HashMap<String, usize> {
        let mut m = HashMap::new();
        for p in self.messages() {
            if let Some(k) = p.key {
                *m.entry(k).or_default() += 1;
            }
        }
        m
    }
}

fn error(e: &str) -> Response {
    axum::Json(json!({ "ok": false, "error": e })).into_response()
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"))
}

/// Common gate: faults, the forced rate limit, the token. Some(answer) stops the request.
fn gate(fake: &Fake, headers: &HeaderMap) -> (super::faults::Fault, Option<Response>) {
    {
        let mut inner = fake.inner.lock().unwrap();
        if inner.rate_limit_next > 0 {
            inner.rate_limit_next -= 1;
            let fault = super::faults::Fault::RateLimited(inner.retry_after);
            return (
                fault,
                refuse(fault, "{\"ok\":false,\"error\":\"ratelimited\"}"),
            );
        }
    }
    let fault = fake.faults.next();
    if let Some(r) = refuse(fault, "{\"ok\":false,\"error\":\"internal_error\"}") {
        return (fault, Some(r));
    }
    if !authorized(headers) {
        return (fault, Some(error("invalid_auth")));
    }
    (fault, None)
}

fn check_blocks(blocks: &Value) -> Result<(), &'static str> {
    let Some(list) = blocks.as_array() else {
        return Ok(());
    };
    if list.len() > 50 {
        return Err("invalid_blocks");
    }
    for b in list {
        if b["type"] == "section"
            && b["text"]["text"]
                .as_str()
                .is_some_and(|t| t.chars().count() > 3000)
        {
            return Err("invalid_blocks");
        }
        if b["type"] == "header"
            && b["text"]["text"]
                .as_str()
                .is_some_and(|t| t.chars().count() > 150)
        {
            return Err("invalid_blocks");
        }
    }
    Ok(())
}

fn record(fake: &Fake, body: &Value) {
    if let Some(path) = &fake.record {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        writeln!(f, "{body}").unwrap();
    }
}

async fn post_message(
    State(fake): State<Fake>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let (fault, stop) = gate(&fake, &headers);
    if let Some(r) = stop {
        return r;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return error("invalid_json");
    };
    let channel = body["channel"].as_str().unwrap_or_default().to_string();
    if channel.is_empty() {
        return error("channel_not_found");
    }
    if let Err(e) = check_blocks(&body["blocks"]) {
        return error(e);
    }
    record(&fake, &body);
    let ts = {
        let mut inner = fake.inner.lock().unwrap();
        let ts = format!("1700000000.{:06}", inner.next_ts);
        inner.next_ts += 1;
        let thread_ts = body["thread_ts"].as_str().map(str::to_string);
        if let Some(t) = &thread_ts
            && !inner.messages.iter().any(|m| &m.ts == t)
        {
            return error("thread_not_found");
        }
        inner.messages.push(Posted {
            channel: channel.clone(),
            ts: ts.clone(),
            thread_ts,
            text: body["text"].as_str().unwrap_or_default().to_string(),
            blocks: body["blocks"].clone(),
            key: body["metadata"]["event_payload"]["key"]
                .as_str()
                .map(str::to_string),
            edits: 0,
        });
        ts
    };
    spoil(
        fault,
        axum::Json(json!({ "ok": true, "channel": channel, "ts": ts, "message": { "ts": ts } }))
            .into_response(),
    )
    .await
}

async fn update(State(fake): State<Fake>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let (fault, stop) = gate(&fake, &headers);
    if let Some(r) = stop {
        return r;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return error("invalid_json");
    };
    if let Err(e) = check_blocks(&body["blocks"]) {
        return error(e);
    }
    record(&fake, &body);
    {
        let mut inner = fake.inner.lock().unwrap();
        let ts = body["ts"].as_str().unwrap_or_default();
        let Some(m) = inner
            .messages
            .iter_mut()
            .find(|m| m.ts == ts && m.channel == body["channel"].as_str().unwrap_or_default())
        else {
            return error("message_not_found");
        };
        m.edits += 1;
        m.blocks = body["blocks"].clone();
        m.text = body["text"].as_str().unwrap_or_default().to_string();
    }
    spoil(
        fault,
        axum::Json(json!({ "ok": true, "channel": body["channel"], "ts": body["ts"] }))
            .into_response(),
    )
    .await
}

/// Pages of 2 messages, newest first, so paging is exercised.
fn page(messages: &[&Posted], cursor: Option<&String>, with_metadata: bool) -> Value {
    let start: usize = cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
    let slice: Vec<Value> = messages
        .iter()
        .skip(start)
        .take(2)
        .map(|m| {
            let mut v = json!({ "type": "message", "ts": m.ts, "text": m.text });
            if with_metadata && let Some(k) = &m.key {
                v["metadata"] =
                    json!({ "event_type": "sheriff_effect", "event_payload": { "key": k } });
            }
            v
        })
        .collect();
    let more = start + 2 < messages.len();
    json!({
        "ok": true,
        "messages": slice,
        "has_more": more,
        "response_metadata": { "next_cursor": if more { (start + 2).to_string() } else { String::new() } },
    })
}

async fn history(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (_, stop) = gate(&fake, &headers);
    if let Some(r) = stop {
        return r;
    }
    let inner = fake.inner.lock().unwrap();
    let channel = q.get("channel").cloned().unwrap_or_default();
    let mut list: Vec<&Posted> = inner
        .messages
        .iter()
        .filter(|m| m.channel == channel && m.thread_ts.is_none())
        .collect();
    list.reverse();
    axum::Json(page(
        &list,
        q.get("cursor"),
        q.get("include_all_metadata").is_some_and(|v| v == "true"),
    ))
    .into_response()
}

async fn replies(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (_, stop) = gate(&fake, &headers);
    if let Some(r) = stop {
        return r;
    }
    let inner = fake.inner.lock().unwrap();
    let ts = q.get("ts").cloned().unwrap_or_default();
    if !inner.messages.iter().any(|m| m.ts == ts) {
        return error("thread_not_found");
    }
    let list: Vec<&Posted> = inner
        .messages
        .iter()
        .filter(|m| m.ts == ts || m.thread_ts.as_deref() == Some(ts.as_str()))
        .collect();
    axum::Json(page(
        &list,
        q.get("cursor"),
        q.get("include_all_metadata").is_some_and(|v| v == "true"),
    ))
    .into_response()
}

async fn group_users(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if !authorized(&headers) {
        return error("invalid_auth");
    }
    let inner = fake.inner.lock().unwrap();
    match inner
        .groups
        .get(q.get("usergroup").map(String::as_str).unwrap_or_default())
    {
        Some(users) => axum::Json(json!({ "ok": true, "users": users })).into_response(),
        None => error("no_such_subteam"),
    }
}

async fn views_open(
    State(fake): State<Fake>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if !authorized(&headers) {
        return error("invalid_auth");
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return error("invalid_json");
    };
    record(&fake, &json!({ "blocks": body["view"]["blocks"] }));
    fake.inner.lock().unwrap().views.push(body);
    axum::Json(json!({ "ok": true, "view": { "id": "V1" } })).into_response()
}

async fn response_url(
    State(fake): State<Fake>,
    Path(_id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return (axum::http::StatusCode::BAD_REQUEST, "bad").into_response();
    };
    record(&fake, &body);
    fake.inner.lock().unwrap().responses.push(body);
    "ok".into_response()
}
