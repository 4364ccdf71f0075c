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
use crate::actions::ActionError;
use crate::incidents::manual::Refusal;
use crate::incidents::silence::Target;
use crate::model::{DAY, HOUR};
use crate::notify::slack::command::{self, Command, HELP};
use crate::notify::slack::{Message, blocks, signature};

/// How long a request may work before it answers "working on it" and goes on in the background.
const QUICK: Duration = Duration::from_millis(2500);

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct CommandForm {
    user_id: String,
    /// The user's name, for the history; their id is what authorizes.
    user_name: String,
    text: String,
    response_url: String,
}

/// The 401 answer when the request is not signed by Slack; None when it is.
fn refused(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Option<Response> {
    let s = &state.settings.slack;
    let secrets: Vec<&crate::config::Secret> =
        s.signing_secret.iter().chain(s.signing_secret_previous.iter()).collect();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let e =
        signature::verify(&secrets, header("x-slack-signature"), header("x-slack-request-timestamp"), body)
            .err()?;
    tracing::warn!("refused a Slack request: {e}");
    metrics::counter!("sheriff_slack_requests_refused_total").increment(1);
    let status =
        if e == signature::VerifyError::NotText { StatusCode::BAD_REQUEST } else { StatusCode::UNAUTHORIZED };
    Some((status, format!("{e}\n")).into_response())
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
    let actor = crate::render::slack_actor(&form.user_id, &form.user_name);
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
                run(&state, other, &user, &actor).await
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
        Err(e) => text_message(&crate::actions::ActionError::Internal(e).for_people()),
    }
}

/// Answers one command (not `help` or `evaluate`).
async fn run(state: &AppState, c: Command, user: &str, actor: &str) -> Message {
    match run_inner(state, c, user, actor).await {
        Ok(m) => m,
        Err(e) => text_message(&e.for_people()),
    }
}

fn status_message(s: &crate::board::Status) -> Message {
    let mut lines = vec![format!("*{} open incident(s)*, newest first", s.incidents.len())];
    lines
        .extend(s.incidents.iter().map(|i| format!("• {}", blocks::escape(&crate::board::incident_line(i)))));
    lines.push(format!(
        "silences: {} · outbox: {} pending, {} dead",
        s.silences.len(),
        s.outbox.pending,
        s.outbox.dead
    ));
    Message { text: lines[0].clone(), blocks: Value::Array(blocks::sections_of_lines(&lines, 10, None)) }
}

fn lines_message(text: &str) -> Message {
    let lines: Vec<String> = text.lines().map(blocks::escape).collect();
    Message {
        text: lines.first().cloned().unwrap_or_default(),
        blocks: Value::Array(blocks::sections_of_lines(&lines, 10, None)),
    }
}

/// `30m`, `24h`, `3d`: a silence's length as people read it.
fn span_words(seconds: i64) -> String {
    match seconds {
        s if s % DAY == 0 => format!("{}d", s / DAY),
        s if s % HOUR == 0 => format!("{}h", s / HOUR),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

async fn run_inner(state: &AppState, c: Command, user: &str, actor: &str) -> Result<Message, ActionError> {
    let store = &state.store;
    let now = chrono::Utc::now().timestamp();
    Ok(match c {
        Command::Status => status_message(&crate::board::status(store, now).await?),
        Command::Query(q) => {
            let a = crate::query::answer(store, &state.settings.evaluate, &q, now).await?;
            let (title, table) = crate::query::render(&a);
            let mut parts = vec![blocks::plain_section(&title)];
            if !table.is_empty() {
                parts.push(blocks::section(&format!("```\n{table}\n```")));
            }
            Message { text: title.clone(), blocks: json!(parts) }
        }
        Command::Explain(reference) => match crate::board::explain(store, &reference).await? {
            None => text_message(&format!("No incident {reference}. `status` lists the open ones.")),
            Some(e) => lines_message(&crate::board::render_explain(&e)),
        },
        Command::Silence { target, seconds, reason } => {
            let reason = if reason.is_empty() { "silenced from Slack".to_string() } else { reason };
            let made = crate::actions::silence(store, &target, seconds, &reason, actor, now).await?;
            text_message(&format!(
                "Silence #{}: {} for {} by <@{user}>: {}{}",
                made.id,
                blocks::code(&target.describe()),
                span_words(seconds),
                blocks::escape(&reason),
                made.holds_words()
            ))
        }
        Command::Unsilence(reference) => {
            let n = crate::actions::unsilence(store, &state.settings, &reference, actor, now).await?;
            text_message(&format!("Ended {n} silence(s)."))
        }
        Command::Ack(reference) => acknowledged(store, &reference, actor, user, now).await?,
        Command::Help | Command::Evaluate => text_message(HELP),
    })
}

async fn acknowledged(
    store: &crate::store::Store,
    reference: &str,
    actor: &str,
    user: &str,
    now: i64,
) -> Result<Message, ActionError> {
    let (i, fresh) = crate::actions::acknowledge(store, reference, actor, now).await?;
    Ok(text_message(&if fresh {
        format!("Incident #{} acknowledged by <@{user}>.", i.id)
    } else {
        format!("Incident #{} was already acknowledged by <@{user}>.", i.id)
    }))
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct InteractionForm {
    payload: String,
}

/// The parts of an interaction payload sheriff reads; Slack sends much more, and the rest is
/// left alone (slack-morphism's models require every field Slack sends, so a payload missing
/// one that sheriff does not need would be refused).
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct Payload {
    #[serde(rename = "type")]
    kind: String,
    user: PayloadUser,
    response_url: String,
    trigger_id: String,
    actions: Vec<PayloadAction>,
    view: PayloadView,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct PayloadUser {
    id: String,
    /// The user's handle and name; the handle is recorded when both come.
    username: String,
    name: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct PayloadAction {
    action_id: String,
    value: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct PayloadView {
    callback_id: String,
    private_metadata: String,
    state: serde_json::Value,
}

/// The buttons of an incident's parent message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Button {
    Acknowledge,
    Silence24h,
    FileJira,
    NotARegression,
    AcceptLevel,
    Unknown(String),
}

impl Button {
    fn parse(action_id: &str) -> Button {
        match action_id {
            "ack" => Button::Acknowledge,
            "silence_24h" => Button::Silence24h,
            "file_jira" => Button::FileJira,
            "not_a_regression" => Button::NotARegression,
            "accept_level" => Button::AcceptLevel,
            other => Button::Unknown(other.chars().take(64).collect()),
        }
    }

    /// Its name in metrics: one of a few, whatever a request says.
    fn label(&self) -> &'static str {
        match self {
            Button::Acknowledge => "ack",
            Button::Silence24h => "silence_24h",
            Button::FileJira => "file_jira",
            Button::NotARegression => "not_a_regression",
            Button::AcceptLevel => "accept_level",
            Button::Unknown(_) => "unknown",
        }
    }
}

/// A verified interaction, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interaction {
    Pressed { button: Button, incident: String, trigger: String },
    NotARegressionSubmitted { incident: String, reason: String },
    AcceptSubmitted { incident: String, level: String, until: String, reason: String },
    Ignored,
}

impl Payload {
    fn interaction(&self) -> Interaction {
        match self.kind.as_str() {
            "block_actions" => match self.actions.first() {
                Some(a) => Interaction::Pressed {
                    button: Button::parse(&a.action_id),
                    incident: a.value.clone(),
                    trigger: self.trigger_id.clone(),
                },
                None => Interaction::Ignored,
            },
            "view_submission" if self.view.callback_id == "not_a_regression" => {
                let reason =
                    self.view.state["values"]["reason"]["reason"]["value"].as_str().unwrap_or_default();
                Interaction::NotARegressionSubmitted {
                    incident: self.view.private_metadata.clone(),
                    reason: reason.trim().to_string(),
                }
            }
            "view_submission" if self.view.callback_id == "accept_level" => {
                let value = |block: &str| {
                    self.view.state["values"][block][block]["value"]
                        .as_str()
                        .unwrap_or_default()
                        .trim()
                        .to_string()
                };
                Interaction::AcceptSubmitted {
                    incident: self.view.private_metadata.clone(),
                    level: value("level"),
                    until: value("until"),
                    reason: value("reason"),
                }
            }
            _ => Interaction::Ignored,
        }
    }
}

/// An "Accept level" dialog's answer: the allowance recorded, or the field to correct.
async fn accept_submitted(
    state: &AppState,
    user: &str,
    actor: &str,
    incident: &str,
    level: String,
    until: &str,
    reason: String,
) -> Response {
    let errors = |block: &str, text: &str| {
        axum::Json(json!({ "response_action": "errors", "errors": { block: text } })).into_response()
    };
    if !authorized(state, user).await {
        return errors("reason", "You are not allowed to change incidents.");
    }
    match resolved(&state.store, incident).await {
        Ok(None) => {}
        Ok(Some(id)) => {
            return errors("reason", &format!("Incident #{id} is resolved already; nothing was changed."));
        }
        Err(e) => return errors("reason", &e.for_people()),
    }
    let now = chrono::Utc::now().timestamp();
    let until = if until.is_empty() {
        None
    } else {
        match crate::incidents::manual::parse_until(until, now) {
            Ok(t) => Some(t),
            Err(e) => return errors("until", &e.to_string()),
        }
    };
    if let Err(e) = crate::model::Allowance::parse_level(&level) {
        return errors("level", &e);
    }
    let a = crate::incidents::manual::Accept { level, until, reason, jira_key: None };
    match crate::actions::accept(&state.store, incident, &a, actor, now).await {
        Ok(_) => axum::Json(json!({ "response_action": "clear" })).into_response(),
        Err(e) => errors("reason", &e.for_people()),
    }
}

fn dialog_error(reason: &str) -> Response {
    axum::Json(json!({ "response_action": "errors", "errors": { "reason": reason } })).into_response()
}

/// An interaction request's body as who did what, and where the answer goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub user: String,
    /// Who the user is as the history records them ([`crate::render::slack_actor`]).
    pub actor: String,
    pub response_url: String,
    pub interaction: Interaction,
}

/// Decodes an interaction request's form (`payload=<json>`); Err when the payload field is
/// not an interaction payload (answered 400). Anything else unexpected decodes to
/// [`Interaction::Ignored`] or a button sheriff does not know.
pub fn decode_interaction(body: &[u8]) -> Result<Decoded, &'static str> {
    let form: InteractionForm = serde_urlencoded::from_bytes(body).unwrap_or_default();
    let payload = serde_json::from_str::<Payload>(&form.payload)
        .map_err(|_| "the payload field is not JSON of an interaction")?;
    Ok(Decoded {
        interaction: payload.interaction(),
        actor: crate::render::slack_actor(
            &payload.user.id,
            if payload.user.username.is_empty() { &payload.user.name } else { &payload.user.username },
        ),
        user: payload.user.id,
        response_url: payload.response_url,
    })
}

pub async fn interactions(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(r) = refused(&state, &headers, &body) {
        return r;
    }
    let Ok(Decoded { user, actor, response_url, interaction }) = decode_interaction(&body) else {
        return (StatusCode::BAD_REQUEST, "the payload field is not an interaction payload\n")
            .into_response();
    };
    match interaction {
        Interaction::Pressed { button, incident, trigger } => {
            metrics::counter!("sheriff_slack_actions_total", "action" => button.label()).increment(1);
            let m = if authorized(&state, &user).await {
                pressed(&state, &button, &incident, (&user, &actor), &trigger)
                    .await
                    .unwrap_or_else(|e| text_message(&e.for_people()))
            } else {
                refusal(&user)
            };
            respond_later(&state.http, &response_url, &m).await;
            StatusCode::OK.into_response()
        }
        Interaction::NotARegressionSubmitted { incident, reason } => {
            if !authorized(&state, &user).await {
                return dialog_error("You are not allowed to change incidents.");
            }
            match resolved(&state.store, &incident).await {
                Ok(None) => {}
                Ok(Some(id)) => {
                    return dialog_error(&format!(
                        "Incident #{id} is resolved already; nothing was changed."
                    ));
                }
                Err(e) => return dialog_error(&e.for_people()),
            }
            let now = chrono::Utc::now().timestamp();
            match crate::actions::not_a_regression(
                &state.store,
                &state.settings,
                &incident,
                &reason,
                &actor,
                now,
            )
            .await
            {
                Ok(_) => axum::Json(json!({ "response_action": "clear" })).into_response(),
                Err(e) => dialog_error(&e.for_people()),
            }
        }
        Interaction::AcceptSubmitted { incident, level, until, reason } => {
            accept_submitted(&state, &user, &actor, &incident, level, &until, reason).await
        }
        Interaction::Ignored => StatusCode::OK.into_response(),
    }
}

/// The number of the incident `reference` names when it is resolved: the buttons and dialogs
/// of its message act no more.
async fn resolved(store: &crate::store::Store, reference: &str) -> Result<Option<i64>, ActionError> {
    Ok(store.find_incident(reference).await?.filter(|i| !i.state.is_open()).map(|i| i.id))
}

async fn pressed(
    state: &AppState,
    button: &Button,
    incident: &str,
    (user, actor): (&str, &str),
    trigger: &str,
) -> Result<Message, ActionError> {
    let store = &state.store;
    let now = chrono::Utc::now().timestamp();
    if !matches!(button, Button::Unknown(_))
        && let Some(id) = resolved(store, incident).await?
    {
        return Ok(text_message(&format!(
            "Incident #{id} is resolved; its buttons no longer act. Nothing was changed."
        )));
    }
    Ok(match button {
        Button::Acknowledge => acknowledged(store, incident, actor, user, now).await?,
        Button::Silence24h => {
            let target = Target { fingerprint: Some(incident.to_string()), ..Default::default() };
            let made =
                crate::actions::silence(store, &target, DAY, "silenced for 24 h from Slack", actor, now)
                    .await?;
            text_message(&format!(
                "Silence #{}: incident #{} for 24 h by <@{user}>.",
                made.id,
                blocks::escape(incident)
            ))
        }
        Button::FileJira => {
            let i = crate::actions::file_now(store, &state.settings, incident, actor, now).await?;
            text_message(&format!("Filing a Jira issue for #{} now.", i.id))
        }
        Button::NotARegression => {
            let Some(client) = &state.slack else {
                return Ok(text_message(
                    "Slack's API is not configured; use `sheriff incidents resolve --reason`.",
                ));
            };
            let Some(i) = store.find_incident(incident).await? else {
                return Err(Refusal::NotFound(format!("no incident {incident}")).into());
            };
            client
                .open_view(trigger, &not_a_regression_view(&i.id.to_string()))
                .await
                .map_err(|e| ActionError::Internal(anyhow::anyhow!("opening the dialog: {e}")))?;
            text_message("Tell sheriff why in the dialog.")
        }
        Button::AcceptLevel => {
            let Some(client) = &state.slack else {
                return Ok(text_message(
                    "Slack's API is not configured; use `sheriff incidents accept --level`.",
                ));
            };
            let Some(i) = store.find_incident(incident).await? else {
                return Err(Refusal::NotFound(format!("no incident {incident}")).into());
            };
            client
                .open_view(trigger, &accept_level_view(&i))
                .await
                .map_err(|e| ActionError::Internal(anyhow::anyhow!("opening the dialog: {e}")))?;
            text_message("Set the accepted level in the dialog.")
        }
        Button::Unknown(other) => text_message(&format!("Unknown action `{}`.", blocks::escape(other))),
    })
}

/// The dialog that asks which level to accept, until when and why.
pub fn accept_level_view(i: &crate::incidents::Incident) -> Value {
    let s = &i.snapshot;
    let (now, _) = s.now_and_reference();
    let input = |block: &str, label: &str, hint: &str, optional: bool, multiline: bool| {
        json!({
            "type": "input",
            "block_id": block,
            "optional": optional,
            "label": { "type": "plain_text", "text": label },
            "hint": { "type": "plain_text", "text": hint },
            "element": { "type": "plain_text_input", "action_id": block, "multiline": multiline }
        })
    };
    json!({
        "type": "modal",
        "callback_id": "accept_level",
        "private_metadata": i.id.to_string(),
        "title": { "type": "plain_text", "text": "Accept a level" },
        "submit": { "type": "plain_text", "text": "Accept" },
        "close": { "type": "plain_text", "text": "Cancel" },
        "blocks": [
            blocks::section(&format!(
                "Incident #{} is at {} {} now. sheriff stays quiet while it stays within the level you accept, and says so once it goes above. The reference is not raised.",
                i.id,
                s.percentile,
                crate::model::secs(now)
            )),
            input("level", "Accepted level", "e.g. P50<=20s", false, false),
            input("until", "Until", "a date (2026-12-15) or a span (14d); empty: no end", true, false),
            input("reason", "Why?", "the decision, and where it was made", false, true)
        ]
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
