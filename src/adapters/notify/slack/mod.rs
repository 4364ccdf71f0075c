//! Slack as an outbox sink: each Slack effect delivered through the Web API client
//! ([`crate::clients::slack`]), or shown on the console when no bot token is configured; and the
//! Block Kit messages ([`blocks`]).
//!
//! A retried post first looks for its own earlier message by the idempotency key its metadata
//! carries, so it is never posted twice.

pub mod blocks;

use std::collections::HashMap;

use crate::clients::slack::{Message, SlackClient};
use crate::clients::{CallError, SetupError};
use crate::domain::incidents::Incident;
use crate::domain::incidents::plan::{Effect, SummaryLine};
use crate::store::Store;
use crate::store::outbox::{DeliveryResult, OutboxEntry};

/// Where Slack messages go: the Web API, or the console when no bot token is configured.
pub struct SlackSink {
    pub api: Option<SlackClient>,
    pub links: blocks::Links,
}

impl SlackSink {
    pub fn from_settings(settings: &crate::config::Settings) -> Result<SlackSink, SetupError> {
        let s = &settings.slack;
        Ok(SlackSink {
            api: s
                .bot_token
                .is_some()
                .then(|| SlackClient::new(s))
                .transpose()?,
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
    ) -> Result<DeliveryResult, CallError> {
        let key = entry.idempotency_key.as_str();
        let retried = entry.attempts > 1;
        match effect {
            Effect::SlackPost { channel } => {
                let i = need(incident)?;
                self.post(
                    channel,
                    None,
                    &self.parent_message(store, i).await?,
                    key,
                    retried,
                    entry.created_at,
                )
                .await
            }
            Effect::SlackUpdate => {
                let i = need(incident)?;
                let (channel, ts) = thread(i)?;
                self.update(&channel, &ts, &self.parent_message(store, i).await?)
                    .await?;
                Ok(DeliveryResult::Done {
                    note: format!("edited {ts}"),
                })
            }
            Effect::SlackDetails | Effect::SlackReply { .. } => {
                let i = need(incident)?;
                let (channel, ts) = thread(i)?;
                let message = match effect {
                    Effect::SlackReply { text } => blocks::reply_message(i, text, &self.links),
                    _ => blocks::details_message(i, &self.links),
                };
                self.post(
                    &channel,
                    Some(&ts),
                    &message,
                    key,
                    retried,
                    entry.created_at,
                )
                .await
            }
            Effect::SlackSummary { channel, lines } => {
                let threads = summary_threads(store, lines).await?;
                let message = blocks::summary_message(lines, &threads, &self.links);
                self.post(channel, None, &message, key, retried, entry.created_at)
                    .await
            }
            other => Err(CallError::permanent(format!(
                "{} is not a Slack effect",
                other.kind()
            ))),
        }
    }

    /// The incident's parent message. It shows the last action, so it needs the incident's
    /// history.
    async fn parent_message(&self, store: &Store, i: &Incident) -> Result<Message, CallError> {
        let events = store
            .incidents()
            .events(i.id)
            .await
            .map_err(|e| super::store_failure("reading the incident's events", &e))?;
        Ok(blocks::incident_message(i, &events, &self.links))
    }

    async fn post(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        message: &Message,
        key: &str,
        retried: bool,
        since: i64,
    ) -> Result<DeliveryResult, CallError> {
        match &self.api {
            Some(client) => {
                if retried
                    && let Some(ts) = client
                        .find_by_key(channel, thread_ts, key, since - 300)
                        .await?
                {
                    tracing::info!(key, ts, "found the message an earlier attempt posted");
                    return Ok(DeliveryResult::SlackPosted {
                        channel: channel.into(),
                        ts,
                    });
                }
                let (channel, ts) = client
                    .post_message(channel, thread_ts, message, key)
                    .await?;
                Ok(DeliveryResult::SlackPosted { channel, ts })
            }
            None => {
                eprintln!(
                    "── {} ──\n{}\n",
                    crate::words::slack::shown_not_posted(None, channel, thread_ts),
                    blocks::to_text(message)
                );
                Ok(DeliveryResult::SlackPosted {
                    channel: channel.into(),
                    ts: format!("console-{key}"),
                })
            }
        }
    }

    async fn update(&self, channel: &str, ts: &str, message: &Message) -> Result<(), CallError> {
        match &self.api {
            Some(client) => Ok(client.update_message(channel, ts, message).await?),
            None => {
                eprintln!(
                    "── {} ──\n{}\n",
                    crate::words::slack::shown_not_posted(Some(ts), channel, None),
                    blocks::to_text(message)
                );
                Ok(())
            }
        }
    }
}

/// The incident the entry names, which its effect needs.
fn need(i: Option<&Incident>) -> Result<&Incident, CallError> {
    i.ok_or_else(|| CallError::permanent("the entry names no incident"))
}

/// The channel and timestamp of the incident's parent message.
fn thread(i: &Incident) -> Result<(String, String), CallError> {
    match (&i.slack_channel, &i.slack_ts) {
        (Some(c), Some(ts)) => Ok((c.clone(), ts.clone())),
        _ => Err(CallError::permanent(
            "the incident's parent message was never posted",
        )),
    }
}

/// The incidents a summary's lines name, by fingerprint, for links to their threads.
async fn summary_threads(
    store: &Store,
    lines: &[SummaryLine],
) -> Result<HashMap<String, Incident>, CallError> {
    let mut threads = HashMap::new();
    for line in lines {
        let SummaryLine::Line { fingerprint, .. } = line else {
            continue;
        };
        if fingerprint.is_empty() {
            continue;
        }
        match store.incidents().find(fingerprint).await {
            Ok(Some(i)) => {
                threads.insert(fingerprint.clone(), i);
            }
            Ok(None) => {}
            // the link is all it gives: the summary goes out without it
            Err(e) if e.fails_every_time() => {
                tracing::warn!(%fingerprint, "a summary's line goes without its thread link: {e}");
            }
            Err(e) => return Err(super::store_failure("reading a summary's incident", &e)),
        }
    }
    Ok(threads)
}
