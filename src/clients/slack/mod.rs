//! Slack: the Web API client, answers through a `response_url`, and request verification
//! (`signature`; [`sign`] signs a request as Slack does).
//!
//! Every call goes to `slack.api_url` (a local fake in tests). Posts carry message metadata
//! (`event_type` `sheriff_effect`, the outbox idempotency key in its payload), so a retried post
//! can first look for its own earlier message (`conversations.history` / `conversations.replies`
//! with `include_all_metadata`) and is never posted twice.
//!
//! Wire types: slack-morphism's where they fit as they are (`SlackApiUserGroupsUsersListResponse`,
//! `SlackResponseMetadata`). Its request types do not: messages carry the Block Kit JSON sheriff
//! builds (`notify::slack::blocks`), which slack-morphism's block model would have to re-type,
//! and `SlackApiConversationsRepliesRequest` has no `include_all_metadata`. Nor do its message
//! types: `SlackHistoryMessage` parses every block of every message, so one block type it does
//! not know would fail a whole page, and `SlackMessageMetadata` takes only string payloads. Those
//! are small private structs here.

pub(crate) mod signature;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use slack_morphism::api::SlackApiUserGroupsUsersListResponse;
use slack_morphism::prelude::SlackResponseMetadata;
use tokio::sync::Mutex;

pub use self::signature::sign;
use super::{CallError, SetupError};
use crate::config::SlackSettings;

/// The metadata event type sheriff marks its messages with.
pub(crate) const EVENT_TYPE: &str = "sheriff_effect";

/// A message as sheriff sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The notification text (also what clients without Block Kit show).
    pub text: String,
    pub blocks: Value,
}

/// What every Web API answer says first: whether it worked, and if not, the error code.
#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    ok: bool,
    error: Option<String>,
}

/// `chat.postMessage`'s body.
#[derive(Serialize)]
struct PostMessage<'a> {
    channel: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    thread_ts: Option<&'a str>,
    text: &'a str,
    blocks: &'a Value,
    unfurl_links: bool,
    unfurl_media: bool,
    metadata: Metadata<'a>,
}

/// The message metadata sheriff's posts carry.
#[derive(Serialize)]
struct Metadata<'a> {
    event_type: &'a str,
    event_payload: EffectPayload<'a>,
}

#[derive(Serialize, Deserialize)]
struct EffectPayload<'a> {
    /// The outbox entry's idempotency key.
    key: &'a str,
}

/// `chat.postMessage`'s answer.
#[derive(Deserialize)]
struct Posted {
    channel: Option<String>,
    ts: Option<String>,
}

/// `chat.update`'s body.
#[derive(Serialize)]
struct UpdateMessage<'a> {
    channel: &'a str,
    ts: &'a str,
    text: &'a str,
    blocks: &'a Value,
}

/// The query of `conversations.history` (with `oldest`) or `conversations.replies` (with `ts`).
#[derive(Serialize)]
struct HistoryQuery<'a> {
    channel: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    oldest: Option<i64>,
    include_all_metadata: bool,
    limit: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<String>,
}

impl<'a> HistoryQuery<'a> {
    /// The first page's query of a channel's messages, 200 at a time, with their metadata.
    fn first_page(channel: &'a str) -> Self {
        HistoryQuery {
            channel,
            ts: None,
            oldest: None,
            include_all_metadata: true,
            limit: 200,
            cursor: None,
        }
    }
}

/// One page of `conversations.history` or `conversations.replies`.
#[derive(Deserialize)]
struct History {
    #[serde(default)]
    messages: Vec<HistoryMessage>,
    response_metadata: Option<SlackResponseMetadata>,
}

/// The parts of a listed message sheriff reads.
#[derive(Deserialize)]
struct HistoryMessage {
    ts: Option<String>,
    metadata: Option<MessageMetadata>,
}

/// Any app's message metadata; the payload is read only when the event type is sheriff's.
#[derive(Deserialize)]
struct MessageMetadata {
    #[serde(default)]
    event_type: String,
    #[serde(default)]
    event_payload: Value,
}

impl HistoryMessage {
    /// Whether sheriff posted this message for the outbox entry `key`.
    fn carries(&self, key: &str) -> bool {
        self.metadata
            .as_ref()
            .filter(|m| m.event_type == EVENT_TYPE)
            .is_some_and(|m| {
                EffectPayload::deserialize(&m.event_payload)
                    .is_ok_and(|p: EffectPayload| p.key == key)
            })
    }
}

/// `views.open`'s body.
#[derive(Serialize)]
struct OpenView<'a> {
    trigger_id: &'a str,
    view: &'a Value,
}

/// An answer through a `response_url`.
#[derive(Serialize)]
struct Response<'a> {
    response_type: &'a str,
    replace_original: bool,
    text: &'a str,
    blocks: &'a Value,
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
    pub fn new(s: &SlackSettings) -> Result<SlackClient, SetupError> {
        let token = s
            .bot_token
            .clone()
            .ok_or(SetupError::Unset("slack.bot_token"))?;
        let http =
            crate::support::http::client_builder(Duration::from_secs_f64(s.timeout_secs.max(0.05)))
                .build()
                .map_err(|e| SetupError::http("Slack", &e))?;
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

    /// Calls a Web API method; the answer of an `ok` call, else a classified error.
    async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, CallError> {
        let started = Instant::now();
        let response = request.bearer_auth(self.token.expose()).send().await;
        let status_label = match &response {
            Ok(r) => r.status().as_u16().to_string(),
            Err(_) => "error".into(),
        };

        metrics::histogram!("sheriff_slack_request_seconds", "method" => method.to_string(), "status" => status_label)
            .record(started.elapsed().as_secs_f64());

        let response =
            response.map_err(|e| CallError::retryable(format!("Slack {method}: {e}")))?;

        let status = response.status();
        let retry_after = crate::support::http::retry_after(response.headers());
        let body = response
            .text()
            .await
            .map_err(|e| CallError::retryable(format!("Slack {method}: {e}")))?;

        if status.as_u16() == 429 {
            return Err(CallError {
                message: format!("Slack {method}: rate limited"),
                retryable: true,
                retry_after: retry_after.or(Some(Duration::from_secs(1))),
            });
        }

        if status.is_server_error() {
            return Err(CallError::retryable(format!(
                "Slack {method}: HTTP {status}"
            )));
        }

        let answer: Status = serde_json::from_str(&body).map_err(|_| {
            let e = format!(
                "Slack {method}: HTTP {status}, not JSON: {}",
                body.chars().take(200).collect::<String>()
            );
            if status.is_success() {
                CallError::retryable(e)
            } else {
                CallError::permanent(e)
            }
        })?;

        if answer.ok {
            return serde_json::from_str(&body).map_err(|e| {
                CallError::retryable(format!("Slack {method}: an answer not as documented: {e}"))
            });
        }

        let error = answer.error.unwrap_or_else(|| "unknown_error".into());
        let retryable = matches!(
            error.as_str(),
            "ratelimited"
                | "internal_error"
                | "fatal_error"
                | "service_unavailable"
                | "request_timeout"
                | "team_added_to_org"
        );

        Err(CallError {
            message: format!("Slack {method}: {error}"),
            retryable,
            retry_after,
        })
    }

    /// Posts a message (in a thread when `thread_ts` is given), tagged with `key`; the channel
    /// id and `ts`.
    pub async fn post_message(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        message: &Message,
        key: &str,
    ) -> Result<(String, String), CallError> {
        self.pace(channel).await;
        let body = PostMessage {
            channel,
            thread_ts,
            text: &message.text,
            blocks: &message.blocks,
            unfurl_links: false,
            unfurl_media: false,
            metadata: Metadata {
                event_type: EVENT_TYPE,
                event_payload: EffectPayload { key },
            },
        };
        let url = format!("{}/chat.postMessage", self.api_url);
        let posted: Posted = self
            .call("chat.postMessage", self.http.post(url).json(&body))
            .await?;
        let ts = posted
            .ts
            .ok_or_else(|| CallError::retryable("chat.postMessage: no ts"))?;
        Ok((posted.channel.unwrap_or_else(|| channel.to_string()), ts))
    }

    /// Replaces the text and blocks of message `ts`.
    pub(crate) async fn update_message(
        &self,
        channel: &str,
        ts: &str,
        message: &Message,
    ) -> Result<(), CallError> {
        self.pace(channel).await;
        let body = UpdateMessage {
            channel,
            ts,
            text: &message.text,
            blocks: &message.blocks,
        };
        let url = format!("{}/chat.update", self.api_url);
        self.call::<serde::de::IgnoredAny>("chat.update", self.http.post(url).json(&body))
            .await
            .map(|_| ())
    }

    /// The `ts` of a message sheriff posted with `key`, in the channel since `oldest` or in a
    /// thread; pages through the whole answer.
    pub(crate) async fn find_by_key(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        key: &str,
        oldest: i64,
    ) -> Result<Option<String>, CallError> {
        let (method, mut query) = match thread_ts {
            Some(ts) => (
                "conversations.replies",
                HistoryQuery {
                    ts: Some(ts),
                    ..HistoryQuery::first_page(channel)
                },
            ),
            None => (
                "conversations.history",
                HistoryQuery {
                    oldest: Some(oldest),
                    ..HistoryQuery::first_page(channel)
                },
            ),
        };

        for _ in 0..50 {
            let url = format!("{}/{method}", self.api_url);
            let page: History = self.call(method, self.http.get(url).query(&query)).await?;
            if let Some(m) = page.messages.iter().find(|m| m.carries(key)) {
                return Ok(m.ts.clone());
            }
            query.cursor = page
                .response_metadata
                .and_then(|r| r.next_cursor)
                .map(|c| c.0)
                .filter(|c| !c.is_empty());
            if query.cursor.is_none() {
                break;
            }
        }

        Ok(None)
    }

    /// Opens a modal dialog (`views.open`) for an interaction's `trigger_id`.
    pub(crate) async fn open_view(&self, trigger_id: &str, view: &Value) -> Result<(), CallError> {
        let url = format!("{}/views.open", self.api_url);
        let body = OpenView { trigger_id, view };
        self.call::<serde::de::IgnoredAny>("views.open", self.http.post(url).json(&body))
            .await
            .map(|_| ())
    }

    /// Members of a user group (`usergroups.users.list`).
    pub(crate) async fn group_members(&self, group: &str) -> Result<Vec<String>, CallError> {
        let url = format!("{}/usergroups.users.list", self.api_url);
        let request = self.http.get(url).query(&[("usergroup", group)]);
        let answer: SlackApiUserGroupsUsersListResponse =
            self.call("usergroups.users.list", request).await?;
        Ok(answer.users.into_iter().map(|u| u.0).collect())
    }
}

/// Answers a slash command or an action later, through its `response_url` (no token needed).
pub async fn respond(
    http: &reqwest::Client,
    response_url: &str,
    message: &Message,
    replace: bool,
) -> Result<(), CallError> {
    let body = Response {
        response_type: "ephemeral",
        replace_original: replace,
        text: &message.text,
        blocks: &message.blocks,
    };
    let response = http
        .post(response_url)
        .json(&body)
        .send()
        .await
        .map_err(|e| CallError::retryable(format!("response_url: {e}")))?;
    if !response.status().is_success() {
        return Err(CallError::retryable(format!(
            "response_url: HTTP {}",
            response.status()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(json: &str) -> HistoryMessage {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_message_is_sheriff_s_for_a_key_only_with_sheriff_s_event_type_and_that_key() {
        let ours = r#"{"ts": "1.2", "metadata": {"event_type": "sheriff_effect", "event_payload": {"key": "k1"}}}"#;
        assert!(listed(ours).carries("k1"));
        assert!(!listed(ours).carries("k2"));
        let other_app = r#"{"ts": "1.3", "metadata": {"event_type": "deploy", "event_payload": {"key": "k1"}}}"#;
        assert!(!listed(other_app).carries("k1"));
        let odd_payload = r#"{"ts": "1.4", "metadata": {"event_type": "sheriff_effect", "event_payload": {"key": 7}}}"#;
        assert!(!listed(odd_payload).carries("7"));
        assert!(!listed(r#"{"ts": "1.5", "text": "plain"}"#).carries("k1"));
    }

    #[test]
    fn a_history_page_reads_its_cursor_and_an_empty_one_ends_the_pages() {
        let page: History = serde_json::from_str(
            r#"{"ok": true, "messages": [], "response_metadata": {"next_cursor": "bmV4dA=="}}"#,
        )
        .unwrap();
        assert_eq!(
            page.response_metadata
                .and_then(|r| r.next_cursor)
                .map(|c| c.0)
                .as_deref(),
            Some("bmV4dA==")
        );
        let last: History = serde_json::from_str(
            r#"{"ok": true, "messages": [], "response_metadata": {"next_cursor": ""}}"#,
        )
        .unwrap();
        assert!(last.response_metadata.and_then(|r| r.next_cursor).is_none());
    }
}
