//! `POST /slack/commands`: `/sheriff <text>`, parsed, then answered; changes only for an
//! [`Operator`].

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::command::{self, Command, HELP};
use super::{
    acknowledged, ephemeral, operator, refusal, respond_later, text_message, within_slack_time,
};
use crate::adapters::notify::slack::blocks;
use crate::application::actions::{ActionError, Operator};
use crate::clients::slack::Message;
use crate::edge::server::AppState;
use crate::edge::server::auth::SlackSigned;
use crate::words::slack as words;

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct CommandForm {
    user_id: String,
    /// The user's name, for the history; their id is what authorizes.
    user_name: String,
    text: String,
    response_url: String,
}

pub async fn commands(State(state): State<AppState>, signed: SlackSigned) -> Response {
    let body = signed.into_body();
    let form: CommandForm = match serde_urlencoded::from_bytes(&body) {
        Ok(f) => f,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("not a slash-command form: {e}\n"),
            )
                .into_response();
        }
    };

    metrics::counter!("sheriff_slack_commands_total").increment(1);
    let parsed = match command::parse(&form.text) {
        Ok(c) => c,
        Err(why) => return ephemeral(&text_message(&why.to_string())),
    };

    let url = form.response_url.clone();
    if !parsed.is_mutating() {
        return match parsed {
            Command::Help => ephemeral(&text_message(HELP)),
            other => {
                within_slack_time(state.http.clone(), url, async move {
                    answer(&state, other).await
                })
                .await
            }
        };
    }

    let Some(operator) = operator(&state, &form.user_id, &form.user_name).await else {
        tracing::info!(user = %form.user_id, "refused a change from an unauthorized user");
        return ephemeral(&refusal(&form.user_id));
    };

    match parsed {
        Command::Evaluate => {
            tokio::spawn(async move {
                let m = evaluate_now(&state, &operator).await;
                respond_later(&state.http, &url, &m).await;
            });
            ephemeral(&text_message(words::EVALUATING))
        }
        other => {
            within_slack_time(state.http.clone(), url, async move {
                change(&state, &operator, other).await
            })
            .await
        }
    }
}

async fn evaluate_now(state: &AppState, operator: &Operator) -> Message {
    let options = crate::application::cycle::CycleOptions {
        at: chrono::Utc::now(),
        dry_run: false,
    };
    tracing::info!(
        user = operator.user(),
        "evaluation cycle asked for from Slack"
    );
    let cycle = crate::application::cycle::run_cycle_keeping(
        &state.store,
        &state.warm,
        &state.unrecorded,
        &state.settings,
        options,
    );
    match cycle.await {
        Ok(r) => {
            let active = r
                .regressions
                .iter()
                .filter(|x| x.status.is_active())
                .count();
            let c = &r.incidents;
            text_message(&words::cycle_done(
                r.groups_evaluated,
                active,
                c.opened,
                c.changed,
                c.resolved,
            ))
        }
        Err(e) => {
            text_message(&crate::application::actions::ActionError::Internal(e.into()).for_people())
        }
    }
}

/// Answers a command that changes nothing (`status`, `query`, `explain`); open to everyone.
async fn answer(state: &AppState, c: Command) -> Message {
    answer_inner(state, c)
        .await
        .unwrap_or_else(|e| text_message(&e.for_people()))
}

async fn answer_inner(state: &AppState, c: Command) -> Result<Message, ActionError> {
    let store = &state.store;
    let now = chrono::Utc::now().timestamp();
    Ok(match c {
        Command::Status => status_message(&crate::application::board::status(store, now).await?),
        Command::Query(q) => {
            let a = crate::application::query::answer(
                store,
                &state.warm.queries,
                &state.settings.evaluate,
                &q,
                now,
            )
            .await?;
            let (title, table) = crate::edge::text::query_answer(&a);
            let mut parts = vec![blocks::plain_section(&title)];
            if !table.is_empty() {
                parts.push(blocks::section(&format!("```\n{table}\n```")));
            }
            Message {
                text: title.clone(),
                blocks: json!(parts),
            }
        }
        Command::Explain(reference) => {
            match crate::application::board::explain(store, &reference).await? {
                None => text_message(&words::no_such_incident(&reference)),
                Some(e) => lines_message(&crate::edge::text::explain(&e)),
            }
        }
        _ => text_message(HELP),
    })
}

/// Carries out a command that changes something (`silence`, `unsilence`, `ack`; not
/// `evaluate`) for `operator`.
async fn change(state: &AppState, operator: &Operator, c: Command) -> Message {
    change_inner(state, operator, c)
        .await
        .unwrap_or_else(|e| text_message(&e.for_people()))
}

async fn change_inner(
    state: &AppState,
    operator: &Operator,
    c: Command,
) -> Result<Message, ActionError> {
    let store = &state.store;
    let now = chrono::Utc::now().timestamp();
    Ok(match c {
        Command::Silence {
            target,
            seconds,
            reason,
        } => {
            let reason = if reason.is_empty() {
                "silenced from Slack".to_string()
            } else {
                reason
            };
            let made = crate::application::actions::silence(
                store, &target, seconds, &reason, operator, now,
            )
            .await?;
            text_message(&words::silence_made(
                made.id,
                &blocks::code(&target.describe()),
                seconds,
                operator.user(),
                &blocks::escape(&reason),
                &made.holds_words(),
            ))
        }
        Command::Unsilence(reference) => {
            let n = crate::application::actions::unsilence(
                store,
                &state.settings,
                &reference,
                operator,
                now,
            )
            .await?;
            text_message(&words::silences_ended(n))
        }
        Command::Ack(reference) => acknowledged(store, &reference, operator, now).await?,
        _ => text_message(HELP),
    })
}

fn status_message(s: &crate::application::board::Status) -> Message {
    let mut lines = vec![words::open_incidents(s.incidents.len())];
    lines.extend(
        s.incidents
            .iter()
            .map(|i| format!("• {}", blocks::escape(&crate::edge::text::incident_line(i)))),
    );
    lines.push(words::silences_and_outbox(
        s.silences.len(),
        s.outbox.pending,
        s.outbox.dead,
    ));
    Message {
        text: lines[0].clone(),
        blocks: Value::Array(blocks::sections_of_lines(&lines, 10, None)),
    }
}

fn lines_message(text: &str) -> Message {
    let lines: Vec<String> = text.lines().map(blocks::escape).collect();
    Message {
        text: lines.first().cloned().unwrap_or_default(),
        blocks: Value::Array(blocks::sections_of_lines(&lines, 10, None)),
    }
}
