//! The Slack dialogs (modals) sheriff opens from an incident's buttons.

use serde_json::{Value, json};

use crate::adapters::notify::slack::blocks;

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
