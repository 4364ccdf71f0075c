//! `POST /slack/commands` and `POST /slack/interactions`: the slash command and the buttons.
//!
//! Every request's signature is checked before anything else (401 otherwise, nothing changes).
//! Answers come within Slack's 3 seconds: quick work answers in the response itself; work that
//! may take longer (an evaluation cycle, or anything slower than 2.5 s) is acknowledged at once
//! and answered through the request's `response_url`.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use crate::incidents::silence::Target;
use crate::notify::slack::command::{self, Command, HELP};
use crate::notify::slack::{Message, blocks, verify};

/// How long a request may work before it answers "working on it" and goes on in the background.
const QUICK: Duration = Duration::from_millis(2500);

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct CommandForm {
    user_id: String,
    text: String,
    response_url: String,
}

/// The 401 answer when the request is not signed by Slack; None when it is.
fn refused(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Option<Response> {
    let s = &state.settings.slack;
    let secrets: Vec<&crate::config::Secret> =
        s.signing_secret.iter().chain(s.signing_secret_previous.iter()).collect();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let e = verify::verify(&secrets, header("x-slack-signature"), header("x-slack-request-timestamp"), body)
        .err()?;
    tracing::warn!("refused a Slack request: {e}");
    metrics::counter!("sheriff_slack_requests_refused_total").increment(1);
    Some((StatusCode::UNAUTHORIZED, format!("{e}\n")).into_response())
}

fn ephemeral(m: &Message) -> Response {
    axum::Json(json!({ "response_type": "ephemeral", "text": m.text, "blocks": m.blocks })).into_response()
}

fn text_message(text: &str) -> Message {
    Message {
        text: blocks::truncate(text, blocks::MAX_MESSAGE_TEXT),
        blocks: json!([blocks::section(&blocks::escape(text))]),
    }
}

/// Whether `user` may change things: a configured user, or a member of a configured group.
async fn authorized(state: &AppState, user: &str) -> bool {
    let s = &state.settings.slack;
    if s.authorized_users.iter().any(|u| u == user) {
        return true;
    }
    let Some(client) = state.slack.as_ref().filter(|_| !s.authorized_groups.is_empty()) else {
        return false;
    };
    for g in &s.authorized_groups {
        match client.group_members(g).await {
            Ok(members) if members.iter().any(|m| m == user) => return true,
            Ok(_) => {}
            Err(e) => tracing::warn!(group = %g, "cannot read the user group: {e}"),
        }
    }
    false
}

fn refusal(user: &str) -> Message {
    text_message(&format!(
        "Sorry <@{user}>, only the people configured as sheriff's operators can change incidents or run cycles. \
         `help`, `status`, `query` and `explain` are open to everyone."
    ))
}

/// Sends `m` to the `response_url` (when there is one).
async fn respond_later(http: &reqwest::Client, url: &str, m: &Message) {
    if url.is_empty() {
        return;
    }
    if let Err(e) = crate::notify::slack::respond(http, url, m, false).await {
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
        _ => ephemeral(&text_message("Working on it; the answer follows here.")),
    }
}

pub async fn commands(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(r) = refused(&state, &headers, &body) {
        return r;
    }
    let form: CommandForm = match serde_urlencoded::from_bytes(&body) {
        Ok(f) => f,
        Err(e) => {
            return (StatusCode::BAD_REQUEST, format!("not a slash-command form: {e}\n")).into_response();
        }
    };
    metrics::counter!("sheriff_slack_commands_total").increment(1);
    let parsed = match command::parse(&form.text) {
        Ok(c) => c,
        Err(why) => return ephemeral(&text_message(&why)),
    };
    if parsed.is_mutating() && !authorized(&state, &form.user_id).await {
        tracing::info!(user = %form.user_id, "refused a change from an unauthorized user");
        return ephemeral(&refusal(&form.user_id));
    }
    let user = form.user_id.clone();
    match parsed {
        Command::Help => ephemeral(&text_message(HELP)),
        Command::Evaluate => {
            let url = form.response_url.clone();
            tokio::spawn(async move {
                let m = evaluate_now(&state, &user).await;
                respond_later(&state.http, &url, &m).await;
            });
            ephemeral(&text_message("Evaluating now; the result follows here."))
        }
        other => {
            within_slack_time(state.http.clone(), form.response_url.clone(), async move {
                run(&state, other, &user).await
            })
            .await
        }
    }
}

async fn evaluate_now(state: &AppState, user: &str) -> Message {
    let options = crate::cycle::CycleOptions { at: chrono::Utc::now(), dry_run: false };
    tracing::info!(user, "evaluation cycle asked for from Slack");
    match crate::cycle::run_cycle(&state.store, &state.settings, options).await {
        Ok(r) => {
            let active = r.regressions.iter().filter(|x| x.status.is_active()).count();
            let c = &r.incidents;
            text_message(&format!(
                "Cycle done: {} groups judged, {active} regression(s); incidents {} opened, {} changed, {} resolved.",
                r.groups_evaluated, c.opened, c.changed, c.resolved
            ))
        }
        Err(e) => text_message(&format!("The cycle failed: {e:#}")),
    }
}

/// Answers one command (not `help` or `evaluate`).
async fn run(state: &AppState, c: Command, user: &str) -> Message {
    match run_inner(state, c, user).await {
        Ok(m) => m,
        Err(e) => text_message(&format!("{e:#}")),
    }
}

async fn run_inner(state: &AppState, c: Command, user: &str) -> anyhow::Result<Message> {
    let store = &state.store;
    let now = chrono::Utc::now().timestamp();
    let actor = format!("slack:{user}");
    Ok(match c {
        Command::Status => {
            let s = crate::ops::status(store, now).await?;
            let mut lines = vec![format!("*{} open incident(s)*, newest first", s.incidents.len())];
            lines.extend(
                s.incidents.iter().map(|i| format!("• {}", blocks::escape(&crate::ops::incident_line(i)))),
            );
            lines.push(format!(
                "silences: {} · outbox: {} pending, {} dead",
                s.silences.len(),
                s.outbox.pending,
                s.outbox.dead
            ));
            Message {
                text: lines[0].clone(),
                blocks: Value::Array(blocks::sections_of_lines(&lines, 10, None)),
            }
        }
        Command::Query(q) => {
            let a = crate::query::answer(store, &state.settings.evaluate, &q, now).await?;
            let (title, table) = crate::query::render(&a);
            Message {
                text: title.clone(),
                blocks: json!([
                    blocks::section(&format!("*{}*", blocks::escape(&title))),
                    blocks::section(&format!("```\n{table}\n```"))
                ]),
            }
        }
        Command::Explain(reference) => match crate::ops::explain(store, &reference).await? {
            None => text_message(&format!("No incident {reference}. `status` lists the open ones.")),
            Some(e) => {
                let text = crate::ops::render_explain(&e);
                let lines: Vec<String> = text.lines().map(blocks::escape).collect();
                Message {
                    text: lines.first().cloned().unwrap_or_default(),
                    blocks: Value::Array(blocks::sections_of_lines(&lines, 10, None)),
                }
            }
        },
        Command::Silence { target, seconds, reason } => {
            let reason = if reason.is_empty() { "silenced from Slack".to_string() } else { reason };
            let id = store.add_silence(&target, now + seconds, &reason, &actor).await?;
            text_message(&format!(
                "Silence #{id}: {} for {}h by <@{user}>: {reason}",
                target.describe(),
                seconds / 3600
            ))
        }
        Command::Unsilence(reference) => {
            let n = store.remove_silences(&reference, &actor).await?;
            text_message(&if n == 0 {
                format!("No active silence matches {reference}.")
            } else {
                format!("Ended {n} silence(s).")
            })
        }
        Command::Ack(reference) => {
            let i = store.ack_incident(&reference, &actor).await?;
            text_message(&format!("Incident #{} acknowledged by <@{user}>.", i.id))
        }
        Command::Help | Command::Evaluate => text_message(HELP),
    })
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct InteractionForm {
    payload: String,
}

pub async fn interactions(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(r) = refused(&state, &headers, &body) {
        return r;
    }
    let form: InteractionForm = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let Ok(payload) = serde_json::from_str::<Value>(&form.payload) else {
        return (StatusCode::BAD_REQUEST, "the payload field is not JSON\n").into_response();
    };
    let user = payload["user"]["id"].as_str().unwrap_or_default().to_string();
    let response_url = payload["response_url"].as_str().unwrap_or_default().to_string();
    match payload["type"].as_str() {
        Some("block_actions") => {
            let action = &payload["actions"][0];
            let id = action["action_id"].as_str().unwrap_or_default().to_string();
            let incident = action["value"].as_str().unwrap_or_default().to_string();
            metrics::counter!("sheriff_slack_actions_total", "action" => id.clone()).increment(1);
            if !authorized(&state, &user).await {
                respond_later(&state.http, &response_url, &refusal(&user)).await;
                return StatusCode::OK.into_response();
            }
            let trigger = payload["trigger_id"].as_str().unwrap_or_default().to_string();
            let m = match button(&state, &id, &incident, &user, &trigger).await {
                Ok(m) => m,
                Err(e) => text_message(&format!("{e:#}")),
            };
            respond_later(&state.http, &response_url, &m).await;
            StatusCode::OK.into_response()
        }
        Some("view_submission") if payload["view"]["callback_id"] == "not_a_regression" => {
            if !authorized(&state, &user).await {
                return axum::Json(json!({ "response_action": "errors", "errors": { "reason": "You are not allowed to change incidents." } })).into_response();
            }
            let incident = payload["view"]["private_metadata"].as_str().unwrap_or_default().to_string();
            let reason = payload["view"]["state"]["values"]["reason"]["reason"]["value"]
                .as_str()
                .unwrap_or_default()
                .trim()
                .to_string();
            if reason.is_empty() {
                return axum::Json(json!({ "response_action": "errors", "errors": { "reason": "Say why it is not a regression." } })).into_response();
            }
            match not_a_regression(&state, &incident, &user, &reason).await {
                Ok(()) => axum::Json(json!({ "response_action": "clear" })).into_response(),
                Err(e) => axum::Json(
                    json!({ "response_action": "errors", "errors": { "reason": format!("{e:#}") } }),
                )
                .into_response(),
            }
        }
        _ => StatusCode::OK.into_response(),
    }
}

async fn button(
    state: &AppState,
    action: &str,
    incident: &str,
    user: &str,
    trigger: &str,
) -> anyhow::Result<Message> {
    let store = &state.store;
    let actor = format!("slack:{user}");
    let now = chrono::Utc::now().timestamp();
    Ok(match action {
        "ack" => {
            let i = store.ack_incident(incident, &actor).await?;
            text_message(&format!("Incident #{} acknowledged by <@{user}>.", i.id))
        }
        "silence_24h" => {
            let target = Target { fingerprint: Some(incident.to_string()), ..Default::default() };
            let id = store.add_silence(&target, now + 86_400, "silenced for 24 h from Slack", &actor).await?;
            text_message(&format!("Silence #{id}: incident #{incident} for 24 h by <@{user}>."))
        }
        "file_jira" => {
            if !state.settings.jira.enabled() {
                text_message("Jira is not configured for sheriff.")
            } else {
                let i = store.file_now(incident, &actor).await?;
                text_message(&format!("Filing a Jira issue for #{} now.", i.id))
            }
        }
        "not_a_regression" => {
            let Some(client) = &state.slack else {
                return Ok(text_message(
                    "Slack's API is not configured; use `sheriff incidents resolve --reason`.",
                ));
            };
            client
                .open_view(trigger, &not_a_regression_view(incident))
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            text_message("Tell sheriff why in the dialog.")
        }
        other => text_message(&format!("Unknown action `{other}`.")),
    })
}

/// The dialog that asks why an incident is not a regression.
pub fn not_a_regression_view(incident: &str) -> Value {
    json!({
        "type": "modal",
        "callback_id": "not_a_regression",
        "private_metadata": incident,
        "title": { "type": "plain_text", "text": "Not a regression" },
        "submit": { "type": "plain_text", "text": "Resolve" },
        "close": { "type": "plain_text", "text": "Cancel" },
        "blocks": [
            blocks::section(&format!("Resolve incident #{} as not a regression, and keep it quiet for 30 days.", blocks::escape(incident))),
            {
                "type": "input",
                "block_id": "reason",
                "label": { "type": "plain_text", "text": "Why?" },
                "element": { "type": "plain_text_input", "action_id": "reason", "multiline": true }
            }
        ]
    })
}

/// Resolves the incident with the reason and silences it for 30 days.
async fn not_a_regression(state: &AppState, incident: &str, user: &str, reason: &str) -> anyhow::Result<()> {
    let actor = format!("slack:{user}");
    let policy = crate::incidents::plan::Policy::from_settings(&state.settings);
    let i = state
        .store
        .find_incident(incident)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no incident {incident}"))?;
    state.store.record_action(i.id, &actor, "not_a_regression", reason).await?;
    if i.state.is_open() {
        state.store.resolve_incident(&i.id.to_string(), &actor, "", &policy).await?;
    }
    let target = Target { fingerprint: Some(i.fingerprint.clone()), ..Default::default() };
    let expires = chrono::Utc::now().timestamp() + 30 * 86_400;
    state.store.add_silence(&target, expires, &format!("not a regression: {reason}"), &actor).await?;
    Ok(())
}
