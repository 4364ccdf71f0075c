//! `POST /slack/commands` and `POST /slack/interactions`: the slash command (its grammar in
//! [`command`], also what `sheriff query` reads) and the buttons.
//!
//! Every route is behind Slack's signature (`server::auth`), its handler taking the `SlackSigned`
//! body: an unsigned request is answered 401 before any of this runs, and nothing changes.
//! Changes need an `Operator`. Answers come within Slack's 3 seconds: quick work answers in the response itself; work that may take longer (an
//! evaluation cycle, or anything slower than 2.5 s) is acknowledged at once and answered
//! through the request's `response_url`.

pub mod command;
mod dialogs;
mod interactions;
mod slash_commands;

use std::time::Duration;

use axum::response::{IntoResponse, Response};
use serde_json::json;

pub use interactions::{Button, Decoded, Interaction, decode_interaction, interactions};
pub use slash_commands::commands;

use super::AppState;
use crate::adapters::notify::slack::blocks;
use crate::application::actions::{ActionError, Operator};
use crate::clients::slack::Message;
use crate::words::slack as words;

/// How long a request may work before it answers "working on it" and goes on in the background.
const QUICK: Duration = Duration::from_millis(2500);

fn ephemeral(m: &Message) -> Response {
    axum::Json(json!({ "response_type": "ephemeral", "text": m.text, "blocks": m.blocks }))
        .into_response()
}

fn text_message(text: &str) -> Message {
    Message {
        text: blocks::truncate(text, blocks::MAX_MESSAGE_TEXT),
        blocks: json!([blocks::section(&blocks::escape(text))]),
    }
}

/// Slack's `user`, named `name`, as an [`Operator`], or None.
async fn operator(state: &AppState, user: &str, name: &str) -> Option<Operator> {
    Operator::authorize(&state.settings.slack, state.slack.as_deref(), user, name).await
}

/// The answer to someone who is not an [`Operator`] asking for a change.
fn refusal(user: &str) -> Message {
    text_message(&words::not_an_operator(user))
}

/// Sends `m` to the `response_url` (when there is one).
async fn respond_later(http: &reqwest::Client, url: &str, m: &Message) {
    if url.is_empty() {
        return;
    }
    if let Err(e) = crate::clients::slack::respond(http, url, m, false).await {
        tracing::warn!("cannot answer through response_url: {e}");
    }
}

/// Runs `work`; its answer when quick, else "working on it" now and the answer later.
async fn within_slack_time(
    http: reqwest::Client,
    response_url: String,
    work: impl std::future::Future<Output = Message> + Send + 'static,
) -> Response {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let url = response_url.clone();
    tokio::spawn(async move {
        let m = work.await;
        if let Err(m) = tx.send(m) {
            respond_later(&http, &url, &m).await;
        }
    });
    match tokio::time::timeout(QUICK, rx).await {
        Ok(Ok(m)) => ephemeral(&m),
        _ => ephemeral(&text_message(words::WORKING)),
    }
}

/// `ack` and the Acknowledge button: the incident acknowledged by `operator`.
async fn acknowledged(
    store: &crate::store::Store,
    reference: &str,
    operator: &Operator,
    now: i64,
) -> Result<Message, ActionError> {
    let user = operator.user();
    let (i, fresh) =
        crate::application::actions::acknowledge(store, reference, operator, now).await?;
    Ok(text_message(&words::acknowledged(i.id, user, fresh)))
}

/// The number of the incident `reference` names when it is resolved: the buttons and dialogs
/// of its message act no more.
async fn resolved(
    store: &crate::store::Store,
    reference: &str,
) -> Result<Option<i64>, ActionError> {
    Ok(store
        .incidents()
        .find(reference)
        .await?
        .filter(|i| !i.state.is_open())
        .map(|i| i.id))
}
