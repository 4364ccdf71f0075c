//! `POST /slack/interactions`: an incident message's buttons and the answers to its dialogs,
//! decoded into one small [`Interaction`], then acted on for an [`Operator`] only.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::dialogs::{accept_level_view, not_a_regression_view};
use super::{acknowledged, operator, refusal, resolved, respond_later, text_message};
use crate::adapters::notify::slack::blocks;
use crate::application::actions::{self, ActionError, Operator};
use crate::clients::slack::Message;
use crate::domain::incidents::Refusal;
use crate::domain::incidents::silence::Target;
use crate::edge::server::AppState;
use crate::edge::server::auth::SlackSigned;
use crate::model::DAY;
use crate::words::slack as words;

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
    Pressed {
        button: Button,
        incident: String,
        trigger: String,
    },
    NotARegressionSubmitted {
        incident: String,
        reason: String,
    },
    AcceptSubmitted {
        incident: String,
        level: String,
        until: String,
        reason: String,
    },
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
                let reason = self.view.state["values"]["reason"]["reason"]["value"]
                    .as_str()
                    .unwrap_or_default();
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
    operator: &Operator,
    incident: &str,
    level: String,
    until: &str,
    reason: String,
) -> Response {
    let errors = |block: &str, text: &str| {
        axum::Json(json!({ "response_action": "errors", "errors": { block: text } }))
            .into_response()
    };

    match resolved(&state.store, incident).await {
        Ok(None) => {}
        Ok(Some(id)) => {
            return errors("reason", &words::resolved_already(id));
        }
        Err(e) => return errors("reason", &e.for_people()),
    }

    let now = chrono::Utc::now().timestamp();
    let until = if until.is_empty() {
        None
    } else {
        match crate::domain::incidents::manual::parse_until(until, now) {
            Ok(t) => Some(t),
            Err(e) => return errors("until", &e.to_string()),
        }
    };

    if let Err(e) = crate::model::Allowance::parse_level(&level) {
        return errors("level", &e.to_string());
    }

    let a = crate::domain::incidents::Accept {
        level,
        until,
        reason,
        jira_key: None,
    };

    match actions::accept(&state.store, incident, &a, operator, now).await {
        Ok(_) => axum::Json(json!({ "response_action": "clear" })).into_response(),
        Err(e) => errors("reason", &e.for_people()),
    }
}

fn dialog_error(reason: &str) -> Response {
    axum::Json(json!({ "response_action": "errors", "errors": { "reason": reason } }))
        .into_response()
}

/// An interaction request's body as who did what, and where the answer goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub user: String,
    /// The user's name as Slack gives it (their username, else their name): with `user`, what
    /// the history records them as.
    pub name: String,
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
        name: if payload.user.username.is_empty() {
            payload.user.name
        } else {
            payload.user.username
        },
        user: payload.user.id,
        response_url: payload.response_url,
    })
}

pub async fn interactions(State(state): State<AppState>, signed: SlackSigned) -> Response {
    let body = signed.into_body();
    let Ok(Decoded {
        user,
        name,
        response_url,
        interaction,
    }) = decode_interaction(&body)
    else {
        return (
            StatusCode::BAD_REQUEST,
            "the payload field is not an interaction payload\n",
        )
            .into_response();
    };

    match interaction {
        Interaction::Pressed {
            button,
            incident,
            trigger,
        } => {
            metrics::counter!("sheriff_slack_actions_total", "action" => button.label())
                .increment(1);
            let m = match operator(&state, &user, &name).await {
                Some(operator) => pressed(&state, &operator, &button, &incident, &trigger)
                    .await
                    .unwrap_or_else(|e| text_message(&e.for_people())),
                None => refusal(&user),
            };
            respond_later(&state.http, &response_url, &m).await;
            StatusCode::OK.into_response()
        }
        Interaction::NotARegressionSubmitted { incident, reason } => {
            let Some(operator) = operator(&state, &user, &name).await else {
                return dialog_error(words::NOT_AN_OPERATOR_IN_A_DIALOG);
            };
            not_a_regression_submitted(&state, &operator, &incident, &reason).await
        }
        Interaction::AcceptSubmitted {
            incident,
            level,
            until,
            reason,
        } => {
            let Some(operator) = operator(&state, &user, &name).await else {
                return dialog_error(words::NOT_AN_OPERATOR_IN_A_DIALOG);
            };
            accept_submitted(&state, &operator, &incident, level, &until, reason).await
        }
        Interaction::Ignored => StatusCode::OK.into_response(),
    }
}

/// A "Not a regression" dialog's answer: the incident resolved as such, or why not.
async fn not_a_regression_submitted(
    state: &AppState,
    operator: &Operator,
    incident: &str,
    reason: &str,
) -> Response {
    match resolved(&state.store, incident).await {
        Ok(None) => {}
        Ok(Some(id)) => {
            return dialog_error(&words::resolved_already(id));
        }
        Err(e) => return dialog_error(&e.for_people()),
    }
    let now = chrono::Utc::now().timestamp();
    match actions::not_a_regression(
        &state.store,
        &state.settings,
        incident,
        reason,
        operator,
        now,
    )
    .await
    {
        Ok(_) => axum::Json(json!({ "response_action": "clear" })).into_response(),
        Err(e) => dialog_error(&e.for_people()),
    }
}

async fn pressed(
    state: &AppState,
    operator: &Operator,
    button: &Button,
    incident: &str,
    trigger: &str,
) -> Result<Message, ActionError> {
    let store = &state.store;
    let now = chrono::Utc::now().timestamp();
    if !matches!(button, Button::Unknown(_))
        && let Some(id) = resolved(store, incident).await?
    {
        return Ok(text_message(&words::buttons_no_longer_act(id)));
    }

    Ok(match button {
        Button::Acknowledge => acknowledged(store, incident, operator, now).await?,
        Button::Silence24h => {
            let target = Target {
                fingerprint: Some(incident.to_string()),
                ..Default::default()
            };
            let made = actions::silence(
                store,
                &target,
                DAY,
                "silenced for 24 h from Slack",
                operator,
                now,
            )
            .await?;
            text_message(&words::silenced_for_a_day(
                made.id,
                &blocks::escape(incident),
                operator.user(),
            ))
        }
        Button::FileJira => {
            let i = actions::file_now(store, &state.settings, incident, operator, now).await?;
            text_message(&words::filing_in_jira(i.id))
        }
        Button::NotARegression => {
            let Some(client) = &state.slack else {
                return Ok(text_message(&words::no_slack_api(
                    "sheriff incidents resolve --reason",
                )));
            };
            let Some(i) = store.incidents().find(incident).await? else {
                return Err(Refusal::no_incident(incident).into());
            };
            client
                .open_view(trigger, &not_a_regression_view(&i.id.to_string()))
                .await
                .map_err(|e| ActionError::Internal(anyhow::anyhow!("opening the dialog: {e}")))?;
            text_message(words::TELL_WHY_IN_THE_DIALOG)
        }
        Button::AcceptLevel => {
            let Some(client) = &state.slack else {
                return Ok(text_message(&words::no_slack_api(
                    "sheriff incidents accept --level",
                )));
            };
            let Some(i) = store.incidents().find(incident).await? else {
                return Err(Refusal::no_incident(incident).into());
            };
            client
                .open_view(trigger, &accept_level_view(&i))
                .await
                .map_err(|e| ActionError::Internal(anyhow::anyhow!("opening the dialog: {e}")))?;
            text_message(words::SET_THE_LEVEL_IN_THE_DIALOG)
        }
        Button::Unknown(other) => text_message(&words::unknown_button(&blocks::escape(other))),
    })
}
