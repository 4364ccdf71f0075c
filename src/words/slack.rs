//! What sheriff answers people in Slack: the replies to its slash command and to an incident
//! message's buttons, and the sentences of its dialogs. The edge (`edge::server::slack`) frames
//! them as messages, escapes what came from people, and sends them.

use crate::model::{DAY, HOUR};

/// To someone who is not an operator asking for a change (`user` is their Slack id).
pub fn not_an_operator(user: &str) -> String {
    format!(
        "Sorry <@{user}>, only the people configured as sheriff's operators can change incidents or run cycles. \
         `help`, `status`, `query` and `explain` are open to everyone."
    )
}

/// What a dialog says to someone who is not an operator.
pub const NOT_AN_OPERATOR_IN_A_DIALOG: &str = "You are not allowed to change incidents.";

/// The answer within Slack's 3 seconds to work that takes longer.
pub const WORKING: &str = "Working on it; the answer follows here.";

/// The answer within Slack's 3 seconds to `evaluate`.
pub const EVALUATING: &str = "Evaluating now; the result follows here.";

/// Asked to explain where the dialog is the place to answer.
pub const TELL_WHY_IN_THE_DIALOG: &str = "Tell sheriff why in the dialog.";

/// Asked to accept a level where the dialog is the place to set it.
pub const SET_THE_LEVEL_IN_THE_DIALOG: &str = "Set the accepted level in the dialog.";

/// `ack` or the Acknowledge button; `fresh` when it was not acknowledged before.
pub fn acknowledged(incident: i64, user: &str, fresh: bool) -> String {
    if fresh {
        format!("Incident #{incident} acknowledged by <@{user}>.")
    } else {
        format!("Incident #{incident} was already acknowledged by <@{user}>.")
    }
}

/// A dialog answered for an incident that is resolved meanwhile.
pub fn resolved_already(incident: i64) -> String {
    format!("Incident #{incident} is resolved already; nothing was changed.")
}

/// A button pressed on a resolved incident's message.
pub fn buttons_no_longer_act(incident: i64) -> String {
    format!("Incident #{incident} is resolved; its buttons no longer act. Nothing was changed.")
}

/// The Silence 24 h button.
pub fn silenced_for_a_day(silence: i64, incident: &str, user: &str) -> String {
    format!("Silence #{silence}: incident #{incident} for 24 h by <@{user}>.")
}

/// `silence`: what is silenced (`target`), for how long, by whom, why, and what the silence
/// holds now (`holds`).
pub fn silence_made(
    silence: i64,
    target: &str,
    seconds: i64,
    user: &str,
    reason: &str,
    holds: &str,
) -> String {
    format!(
        "Silence #{silence}: {target} for {} by <@{user}>: {reason}{holds}",
        span(seconds)
    )
}

/// `unsilence`.
pub fn silences_ended(n: usize) -> String {
    format!("Ended {n} silence(s).")
}

/// The File in Jira button.
pub fn filing_in_jira(incident: i64) -> String {
    format!("Filing a Jira issue for #{incident} now.")
}

/// A button that opens a dialog, without Slack's API to open it: the command to use instead.
pub fn no_slack_api(instead: &str) -> String {
    format!("Slack's API is not configured; use `{instead}`.")
}

/// A button sheriff does not know.
pub fn unknown_button(action: &str) -> String {
    format!("Unknown action `{action}`.")
}

/// `explain` of an incident there is not.
pub fn no_such_incident(reference: &str) -> String {
    format!("No incident {reference}. `status` lists the open ones.")
}

/// `evaluate`, done.
pub fn cycle_done(
    groups: usize,
    active: usize,
    opened: usize,
    changed: usize,
    resolved: usize,
) -> String {
    format!(
        "Cycle done: {groups} groups judged, {active} regression(s); incidents {opened} opened, {changed} changed, {resolved} resolved."
    )
}

/// `status`'s first line.
pub fn open_incidents(n: usize) -> String {
    format!("*{n} open incident(s)*, newest first")
}

/// `status`'s last line.
pub fn silences_and_outbox(silences: usize, pending: i64, dead: i64) -> String {
    format!("silences: {silences} · outbox: {pending} pending, {dead} dead")
}

/// The Accept level dialog's opening: where the incident stands (`percentile` at `level`).
pub fn accept_level_intro(incident: i64, percentile: &str, level: &str) -> String {
    format!(
        "Incident #{incident} is at {percentile} {level} now. sheriff stays quiet while it stays within the level you accept, and says so once it goes above. The reference is not raised."
    )
}

/// The Not a regression dialog's opening.
pub fn not_a_regression_intro(incident: &str) -> String {
    format!("Resolve incident #{incident} as not a regression, and keep it quiet for 30 days.")
}

/// `30m`, `24h`, `3d`: a silence's length as people read it.
fn span(seconds: i64) -> String {
    match seconds {
        s if s % DAY == 0 => format!("{}d", s / DAY),
        s if s % HOUR == 0 => format!("{}h", s / HOUR),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silence_is_as_long_as_its_largest_whole_unit() {
        assert_eq!(span(3 * DAY), "3d");
        assert_eq!(span(24 * HOUR), "1d");
        assert_eq!(span(30 * HOUR), "30h");
        assert_eq!(span(90 * 60), "90m");
        assert_eq!(span(61), "61s");
    }

    #[test]
    fn a_made_silence_says_what_for_how_long_by_whom_and_why() {
        assert_eq!(
            silence_made(7, "`platform=metal`", 2 * DAY, "U1", "known", ""),
            "Silence #7: `platform=metal` for 2d by <@U1>: known"
        );
    }
}
