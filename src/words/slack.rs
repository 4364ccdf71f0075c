//! What sheriff says in Slack: an incident's message (its headline, fields and buttons), its
//! thread's replies and a cycle's summary, which the Slack sink frames as Block Kit
//! (`notify::slack::blocks`); and the replies to its slash command and to an incident
//! message's buttons, and the sentences of its dialogs, which the edge
//! (`edge::server::slack`) frames and sends. Both escape what came from people and artifacts.

use crate::domain::incidents::plan::Happened;
use crate::domain::incidents::{Incident, ResolvedAs, State};
use crate::model::{DAY, HOUR, Percentile};

/// The labels of an incident message's buttons, by action: acknowledge, silence for a day, file
/// in Jira, accept a level, not a regression.
pub const BUTTONS: [&str; 5] = [
    "Acknowledge",
    "Silence 24 h",
    "File Jira now",
    "Accept level",
    "Not a regression",
];

/// The labels of an incident message's five fields.
pub const FIELDS: [&str; 5] = ["State", "Scope", "Now / reference", "Regressed", "Jira"];

/// The labels of the details reply's fields.
pub const DETAIL_FIELDS: [&str; 3] = ["Component", "Confidence", "Suspect changes"];

/// What the Regressed field says without an onset.
pub const ONSET_NOT_KNOWN: &str = "not known";

/// What the Jira field says before an issue is filed.
pub const NOT_FILED: &str = "not filed";

/// The link to the incidents page.
pub const ALL_INCIDENTS: &str = "All incidents";

/// The link from a summary's line to its incident's thread.
pub const THREAD: &str = "thread";

/// What the header says of an incident (after its family's "disruption"): how it was resolved
/// (only a recovery is "no longer observed"), or that it regressed, with an accepted level or
/// too few runs for a verdict.
pub fn headline(i: &Incident) -> String {
    match (i.state, i.resolution) {
        (State::Resolved, Some(ResolvedAs::Fixed)) => "fixed".into(),
        (State::Resolved, Some(ResolvedAs::NotARegression)) => "marked not a regression".into(),
        (State::Resolved, Some(ResolvedAs::ByHand)) => "resolved by hand".into(),
        (State::Resolved, Some(ResolvedAs::Merged)) => match i.merged_into {
            Some(into) => format!("merged into #{into}"),
            None => "merged".into(),
        },
        (State::Resolved, _) => "no longer observed".into(),
        (State::Stale, _) => "regressed, too few runs to judge now".into(),
        _ if i.allowance.is_some() => "regressed, within an accepted level".into(),
        _ => "regressed".into(),
    }
}

/// The header: `image-registry disruption regressed: 4.14 metal` (after the state's emoji).
pub fn title(i: &Incident) -> String {
    let s = &i.snapshot;
    format!(
        "{} disruption {}: {} {}",
        s.family,
        headline(i),
        s.release,
        s.scope.describe()
    )
}

/// The State field's first line: the state, or how it was resolved, and when it opened.
pub fn state(i: &Incident, opened: &str) -> String {
    match i.resolution {
        Some(ResolvedAs::Recovered) if i.state == State::Resolved => {
            format!("resolved: {} (opened {opened})", super::NO_LONGER_OBSERVED)
        }
        Some(how) if i.state == State::Resolved => {
            format!("resolved: {} (opened {opened})", super::resolved_as(how))
        }
        _ => format!("{} (opened {opened})", i.state),
    }
}

/// The State field's line on a claimed fix: its issue, its status and its last verdict (none:
/// pending).
pub fn fix_claimed(key: &str, status: &str, verdict: Option<&str>) -> String {
    format!(
        "Fix claimed: {key} {status} ({})",
        verdict.unwrap_or(super::VERDICT_PENDING)
    )
}

/// The State field's line on an accepted level.
pub fn accepted(level: &str) -> String {
    format!("Accepted: {level}")
}

/// The State field's line on who acknowledged it (`who` as the message shows a person).
pub fn acknowledged_by(who: &str) -> String {
    format!("Acknowledged by {who}")
}

/// The Now / reference field: `P50 31s / 2s (allowed 5s)`.
pub fn now_and_reference(
    percentile: Percentile,
    now: &str,
    reference: &str,
    allowed: &str,
) -> String {
    format!("{percentile} {now} / {reference} (allowed {allowed})")
}

/// The footer's note of the last thing a person did (`kind` as the history records it, `who`
/// as the message shows a person).
pub fn last_action(kind: &str, who: &str) -> String {
    format!("last action: {} by {who}", kind.replace('_', " "))
}

/// The heading of the details reply's list of groups.
pub fn affected_groups(n: usize) -> String {
    format!("Affected groups ({n})")
}

/// The last line of a list cut short, before the link to the rest.
pub fn and_more(n: usize) -> String {
    format!("… and {n} more")
}

/// Where the rest of a list cut short is, without sheriff's address.
pub const THE_REST_IN_THE_LIST: &str = "(`sheriff incidents list` has them all)";

/// A thread reply on a change: `image-registry: changed … (P50 now 31s)` (after the state's
/// emoji).
pub fn change_reply(family: &str, change: &str, percentile: Percentile, now: &str) -> String {
    format!("{family}: {change} ({percentile} now {now})")
}

/// A cycle summary's header.
pub fn summary_title(changes: usize) -> String {
    format!("sheriff: {changes} incident change(s)")
}

/// What a cycle summary's line says happened, before the line: "new: ", "changed: ", ….
pub fn happened(what: Happened) -> &'static str {
    match what {
        Happened::New => "new: ",
        Happened::Changed | Happened::Reopened => "changed: ",
        Happened::Resolved => "resolved: ",
        Happened::NotFiled => "",
    }
}

/// Where a message the console shows in Slack's place was for (`channel` empty: the default
/// channel), and that it was not posted: no bot token is set.
pub fn shown_not_posted(edit_of: Option<&str>, channel: &str, thread: Option<&str>) -> String {
    let channel = if channel.is_empty() {
        "the default channel"
    } else {
        channel
    };
    let thread = thread.map_or(String::new(), |t| format!(" (thread {t})"));
    match edit_of {
        Some(ts) => format!("Slack edit of {ts} in {channel} (no bot token: shown, not posted)"),
        None => format!("Slack message for {channel}{thread} (no bot token: shown, not posted)"),
    }
}

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
