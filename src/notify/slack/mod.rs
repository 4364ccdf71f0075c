//! Slack: the Web API client, the console stand-in, Block Kit messages, the slash command and
//! request verification.
//!
//! Every call goes to `slack.api_url` (a local fake in tests). Posts carry message metadata
//! (`event_type` `sheriff_effect`, the outbox idempotency key in its payload), so a retried post
//! first looks for its own earlier message (`conversations.history` / `conversations.replies`
//! with `include_all_metadata`) and is never posted twice.

pub mod blocks;
pub mod command;
pub mod signature;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::DeliveryError;
use crate::config::SlackSettings;
use crate::incidents::Incident;
use crate::incidents::plan::{Effect, SummaryLine};
use crate::store::Store;
use crate::store::outbox::{DeliveryResult, OutboxEntry};

/// The metadata event type sheriff marks its messages with.
pub const EVENT_TYPE: &str = "sheriff_effect";

/// Where Slack messages go: the Web API, or the console when no bot token is configured.
pub struct SlackSink {
    pub api: Option<SlackClient>,
    pub links: blocks::Links,
}

/// A message as sheriff sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The notification text (also what clients without Block Kit show).
    pub text: String,
    pub blocks: Value,
}

impl SlackSink {
    pub fn from_settings(settings: &crate::config::Settings) -> Result<SlackSink> {
        let s = &settings.slack;
        Ok(SlackSink {
            api: s.bot_token.is_some().then(|| SlackClient::new(s)).transpose()?,
            links: blocks::Links {
                public_url: settings.server.public_url.clone(),
                jira_url: settings.jira.url.clone(),
                workspace_url: settings.slack.workspace_url.clone(),
            },
        })
    }

    /// Delivers one Slack outbox entry.
    pub(super) async fn deliver(
        &self,
        store: &Store,
        entry: &OutboxEntry,
        incident: Option<&Incident>,
        effect: &Effect,
    ) -> Result<DeliveryResult, DeliveryError> {
        let key = entry.idempotency_key.as_str();
        let retried = entry.attempts > 1;
        // The parent message shows the last action, so it needs the incident's history.
        let parent = async |i: &Incident| -> Result<Message, DeliveryError> {
            let events = store
                .incidents()
                .events(i.id)
                .await
                .map_err(|e| DeliveryError::transient(format!("{e:#}")))?;
            Ok(blocks::incident_message(i, &events, &self.links))
        };
        fn need(i: Option<&Incident>) -> Result<&Incident, DeliveryError> {
            i.ok_or_else(|| DeliveryError::permanent("the entry names no incident"))
        }
        let thread = |i: &Incident| match (&i.slack_channel, &i.slack_ts) {
            (Some(c), Some(ts)) => Ok((c.clone(), ts.clone())),
            _ => Err(DeliveryError::permanent("the incident's parent message was never posted")),
        };
        match effect {
            Effect::SlackPost { channel } => {
                let i = need(incident)?;
                self.post(channel, None, &parent(i).await?, key, retried, entry.created_at).await
            }
            Effect::SlackUpdate => {
                let i = need(incident)?;
                let (channel, ts) = thread(i)?;
                self.update(&channel, &ts, &parent(i).await?).await?;
                Ok(DeliveryResult::Done { note: format!("edited {ts}") })
            }
            Effect::SlackDetails => {
                let i = need(incident)?;
                let (channel, ts) = thread(i)?;
                let message = blocks::details_message(i, &self.links);
                self.post(&channel, Some(&ts), &message, key, retried, entry.created_at).await
            }
            Effect::SlackReply { text } => {
                let i = need(incident)?;
                let (channel, ts) = thread(i)?;
                let message = blocks::reply_message(i, text, &self.links);
                self.post(&channel, Some(&ts), &message, key, retried, entry.created_at).await
            }
            Effect::SlackSummary { channel, lines } => {
                let mut threads = HashMap::new();
                for line in lines {
                    if let SummaryLine::Line { fingerprint, .. } = line
                        && !fingerprint.is_empty()
                        && let Some(i) = store
                            .incidents()
                            .find(fingerprint)
                            .await
                            .map_err(|e| DeliveryError::transient(format!("{e:#}")))?
                    {
                        threads.insert(fingerprint.clone(), i);
                    }
                }
                let message = blocks::summary_message(lines, &threads, &self.links);
                self.post(channel, None, &message, key, retried, entry.created_at).await
            }
            other => Err(DeliveryError::permanent(format!("{} is not a Slack effect", other.kind()))),
        }
    }

    async fn post(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        message: &Message,
        key: &str,
        retried: bool,
        since: i64,
    ) -> Result<DeliveryResult, DeliveryError> {
        match &self.api {
            Some(client) => {
                if retried && let Some(ts) = client.find_by_key(channel, thread_ts, key, since - 300).await? {
                    tracing::info!(key, ts, "found the message an earlier attempt posted");
                    return Ok(DeliveryResult::SlackPosted { channel: channel.into(), ts });
                }
                let (channel, ts) = client.post_message(channel, thread_ts, message, key).await?;
                Ok(DeliveryResult::SlackPosted { channel, ts })
            }
            None => {
                let place = thread_ts.map_or(String::new(), |t| format!(" (thread {t})"));
                eprintln!(
                    "── Slack message for {}{place} (no bot token: shown, not posted) ──\n{}\n",
                    if channel.is_empty() { "the default channel" } else { channel },
                    blocks::to_text(message)
                );
                Ok(DeliveryResult::SlackPosted { channel: channel.into(), ts: format!("console-{key}") })
            }
        }
    }

    async fn update(&self, channel: &str, ts: &str, message: &Message) -> Result<(), DeliveryError> {
        match &self.api {
            Some(client) => client.update_message(channel, ts, message).await,
            None => {
                let place = if channel.is_empty() { "the default channel" } else { channel };
                eprintln!(
                    "── Slack edit of {ts} in {place} (no bot token: shown, not posted) ──\n{}\n",
                    blocks::to_text(message)
                );
                Ok(())
            }
        }
    }
}

/// The Slack Web API over reqwest.
pub struct SlackClient {
    http: reqwest::Client,
    api_url: String,
    token: crate::config::Secret,
    min_interval: Duration,
    /// When each channel was last posted to, for pacing.
    last_post: Mutex<HashMap<String, Instant>>,
}

impl SlackClient {
    pub fn new(s: &SlackSettings) -> Result<SlackClient> {
        let token = s.bot_token.clone().context("slack.bot_token is not set")?;
        let http = crate::http::client_builder(Duration::from_secs_f64(s.timeout_secs.max(0.05))).build()?;
        Ok(SlackClient {
            http,
            api_url: s.api_url.trim_end_matches('/').to_string(),
            token,
            min_interval: Duration::from_millis(s.min_post_interval_ms),
            last_post: Mutex::new(HashMap::new()),
        })
    }

    /// Waits until `channel` may be posted to again (about one message a second per channel).
    async fn pace(&self, channel: &str) {
        let mut last = self.last_post.lock().await;
        if let Some(t) = last.get(channel) {
            let next = *t + self.min_interval;
            let now = Instant::now();
            if next > now {
                tokio::time::sleep(next - now).await;
            }
        }
        last.insert(channel.to_string(), Instant::now());
    }

    /// Calls a Web API method; the JSON of an `ok` answer, else a classified error.
    async fn call(&self, method: &str, request: reqwest::RequestBuilder) -> Result<Value, DeliveryError> {
        let started = Instant::now();
        let response = request.bearer_auth(self.token.expose()).send().await;
        let status_label = match &response {
            Ok(r) => r.status().as_u16().to_string(),
            Err(_) => "error".into(),
        };
        metrics::histogram!("sheriff_slack_request_seconds", "method" => method.to_string(), "status" => status_label)
            .record(started.elapsed().as_secs_f64());
        let response = response.map_err(|e| DeliveryError::transient(format!("Slack {method}: {e}")))?;
        let status = response.status();
        let retry_after = crate::http::retry_after(response.headers());
        let body =
            response.text().await.map_err(|e| DeliveryError::transient(format!("Slack {method}: {e}")))?;
        if status.as_u16() == 429 {
            return Err(DeliveryError {
                message: format!("Slack {method}: rate limited"),
                transient: true,
                retry_after: retry_after.or(Some(Duration::from_secs(1))),
            });
        }
        if status.is_server_error() {
            return Err(DeliveryError::transient(format!("Slack {method}: HTTP {status}")));
        }
        let json: Value = serde_json::from_str(&body).map_err(|_| {
            let e = format!(
                "Slack {method}: HTTP {status}, not JSON: {}",
                body.chars().take(200).collect::<String>()
            );
            if status.is_success() { DeliveryError::transient(e) } else { DeliveryError::permanent(e) }
        })?;
        if json["ok"].as_bool() == Some(true) {
            return Ok(json);
        }
        let error = json["error"].as_str().unwrap_or("unknown_error");
        let transient = matches!(
            error,
            "ratelimited"
                | "internal_error"
                | "fatal_error"
                | "service_unavailable"
                | "request_timeout"
                | "team_added_to_org"
        );
        Err(DeliveryError { message: format!("Slack {method}: {error}"), transient, retry_after })
    }

    /// Posts a message (in a thread when `thread_ts` is given), tagged with `key`; the channel
    /// id and `ts`.
    pub async fn post_message(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        message: &Message,
        key: &str,
    ) -> Result<(String, String), DeliveryError> {
        self.pace(channel).await;
        let mut body = json!({
            "channel": channel,
            "text": message.text,
            "blocks": message.blocks,
            "unfurl_links": false,
            "unfurl_media": false,
            "metadata": { "event_type": EVENT_TYPE, "event_payload": { "key": key } },
        });
        if let Some(ts) = thread_ts {
            body["thread_ts"] = json!(ts);
        }
        let url = format!("{}/chat.postMessage", self.api_url);
        let answer = self.call("chat.postMessage", self.http.post(url).json(&body)).await?;
        let ts = answer["ts"].as_str().ok_or_else(|| DeliveryError::transient("chat.postMessage: no ts"))?;
        let channel = answer["channel"].as_str().unwrap_or(channel);
        Ok((channel.to_string(), ts.to_string()))
    }

    pub async fn update_message(
        &self,
        channel: &str,
        ts: &str,
        message: &Message,
    ) -> Result<(), DeliveryError> {
        self.pace(channel).await;
        let body = json!({ "channel": channel, "ts": ts, "text": message.text, "blocks": message.blocks });
        let url = format!("{}/chat.update", self.api_url);
        self.call("chat.update", self.http.post(url).json(&body)).await.map(|_| ())
    }

    /// The `ts` of a message sheriff posted with `key`, in the channel since `oldest` or in a
    /// thread; pages through the whole answer.
    pub async fn find_by_key(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        key: &str,
        oldest: i64,
    ) -> Result<Option<String>, DeliveryError> {
        let (method, mut query) = match thread_ts {
            Some(ts) => {
                ("conversations.replies", vec![("channel", channel.to_string()), ("ts", ts.to_string())])
            }
            None => (
                "conversations.history",
                vec![("channel", channel.to_string()), ("oldest", oldest.to_string())],
            ),
        };
        query.push(("include_all_metadata", "true".into()));
        query.push(("limit", "200".into()));
        let mut cursor = String::new();
        for _ in 0..50 {
            let mut q = query.clone();
            if !cursor.is_empty() {
                q.push(("cursor", cursor.clone()));
            }
            let url = format!("{}/{method}", self.api_url);
            let answer = self.call(method, self.http.get(url).query(&q)).await?;
            for m in answer["messages"].as_array().into_iter().flatten() {
                let meta = &m["metadata"];
                if meta["event_type"] == EVENT_TYPE && meta["event_payload"]["key"] == key {
                    return Ok(m["ts"].as_str().map(str::to_string));
                }
            }
            cursor = answer["response_metadata"]["next_cursor"].as_str().unwrap_or_default().to_string();
            if cursor.is_empty() {
                break;
            }
        }
        Ok(None)
    }

    /// Opens a modal dialog (`views.open`) for an interaction's `trigger_id`.
    pub async fn open_view(&self, trigger_id: &str, view: &Value) -> Result<(), DeliveryError> {
        let url = format!("{}/views.open", self.api_url);
        let body = json!({ "trigger_id": trigger_id, "view": view });
        self.call("views.open", self.http.post(url).json(&body)).await.map(|_| ())
    }

    /// Members of a user group (`usergroups.users.list`).
    pub async fn group_members(&self, group: &str) -> Result<Vec<String>, DeliveryError> {
        let url = format!("{}/usergroups.users.list", self.api_url);
        let answer =
            self.call("usergroups.users.list", self.http.get(url).query(&[("usergroup", group)])).await?;
        Ok(answer["users"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|u| u.as_str().map(str::to_string))
            .collect())
    }
}

/// Answers a slash command or an action later, through its `response_url` (no token needed).
pub async fn respond(
    http: &reqwest::Client,
    response_url: &str,
    message: &Message,
    replace: bool,
) -> Result<(), DeliveryError> {
    let body = json!({
        "response_type": "ephemeral",
        "replace_original": replace,
        "text": message.text,
        "blocks": message.blocks,
    });
    let response = http
        .post(response_url)
        .json(&body)
        .send()
        .await
        .map_err(|e| DeliveryError::transient(format!("response_url: {e}")))?;
    if !response.status().is_success() {
        return Err(DeliveryError::transient(format!("response_url: HTTP {}", response.status())));
    }
    Ok(())
}
