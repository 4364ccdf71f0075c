//! The Slack dialogs (modals) sheriff opens from an incident's buttons.

use serde_json::{Value, json};

use crate::adapters::notify::slack::blocks;
use crate::words::slack as words;

/// The dialog that asks which level to accept, until when and why.
pub fn accept_level_view(i: &crate::domain::incidents::Incident) -> Value {
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
            blocks::section(&words::accept_level_intro(
                i.id,
                &s.percentile.to_string(),
                &crate::model::secs(now),
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
            blocks::section(&words::not_a_regression_intro(&blocks::escape(incident))),
            {
                "type": "input",
                "block_id": "reason",
                "label": { "type": "plain_text", "text": "Why?" },
                "element": { "type": "plain_text_input", "action_id": "reason", "multiline": true }
            }
        ]
    })
}
