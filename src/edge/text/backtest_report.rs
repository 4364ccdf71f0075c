//! A backtest as terminal text: what `sheriff backtest` prints.

use crate::application::backtest::Backtest;

/// The readable form of a backtest.
pub fn backtest(b: &Backtest) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "backtest {} → {}: {} cycles over {} runs ({} samples) in {:.1} s",
        b.from.format("%Y-%m-%d %H:%M"),
        b.to.format("%Y-%m-%d %H:%M"),
        b.cycles,
        b.runs,
        b.samples,
        b.seconds
    );

    for i in &b.incidents {
        let onset = i
            .onset
            .as_ref()
            .map_or("-".to_string(), crate::words::regression::onset_moment);
        let resolved = i.resolved_at.map_or("still open".to_string(), |t| {
            format!("resolved {}", t.format("%Y-%m-%d %H:%M"))
        });
        let _ = writeln!(
            s,
            "\n{} {} ({}): opened {}, {resolved}; onset {onset}",
            i.family,
            i.release,
            i.scope.describe(),
            i.opened_at.format("%Y-%m-%d %H:%M")
        );
        for c in &i.states {
            let _ = writeln!(
                s,
                "  {} {:<14} {}",
                c.at.format("%Y-%m-%d %H:%M"),
                c.state,
                c.detail
            );
        }
        let n = &i.notifications;
        let _ = writeln!(
            s,
            "  would have sent: {} Slack post(s), {} replies, {} edits; {} Jira issue(s), {} comments, {} transitions",
            n.slack_posts,
            n.slack_replies,
            n.slack_updates,
            n.jira_creates,
            n.jira_comments,
            n.jira_transitions
        );
    }

    let m = &b.summary;
    let _ = writeln!(
        s,
        "\n{} incident(s) ({} open at the end, {} resolved), {:.2} a week; median onset → opened {}",
        m.incidents,
        m.open_at_end,
        m.resolved,
        m.alerts_per_week,
        m.median_hours_onset_to_opened
            .map_or("-".into(), |h| format!("{h:.1} h"))
    );

    s
}
