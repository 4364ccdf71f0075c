//! What the incidents tell people, as typed values: the facts of each line an incident's
//! history, thread, issue or a channel summary carries, with no words of their own.
//!
//! The planner and the store say what happened with a [`Told`]; the words layer (`crate::words`)
//! turns it into text, and the application hands that function over as [`Wording`], so the domain
//! and the store never import the words.

use super::plan::{NewSilence, Resolution};
use super::{Change, Snapshot};
use crate::model::{Allowance, Verification};

/// What one line tells, with the facts it names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Told<'a> {
    /// A material change.
    Change(&'a Change),
    /// Several material changes of one step, in order, in one line.
    Changes(&'a [Change]),
    /// The verdict on the incident's claimed fix, with what it was judged on.
    Verdict(&'a Verification),
    /// How the incident was resolved.
    Resolved(&'a Resolution),
    /// A person (`by`, as recorded: `cli:alice`, `slack:U012AB (alice)`) acknowledged the incident.
    Acknowledged { by: &'a str },
    /// A person (`by`, as recorded) asked for the incident's Jira issue now.
    AskedForJira { by: &'a str },
    /// The incident was silenced by silence number `id`, which the store has just given it.
    Silenced { silence: &'a NewSilence, id: i64 },
    /// Silence number `silence` held the step's notifications.
    Held { silence: i64 },
    /// The incident's Jira issue was filed as `key`.
    FiledInJira { key: &'a str },
    /// What a silence held, as it was told then (each an earlier rendered line).
    WhileSilenced { lines: &'a [String] },
    /// A person said the incident is not a regression, for a reason.
    NotARegression { reason: &'a str },
    /// A person accepted the incident's level.
    Accepted { allowance: &'a Allowance },
    /// The incident's level went above its accepted level: `level` seconds at the allowance's
    /// percentile.
    AboveAccepted {
        allowance: &'a Allowance,
        level: f64,
    },
    /// The accepted level lapses soon; how to keep it for incident `incident`.
    AcceptedLapsing {
        allowance: &'a Allowance,
        incident: i64,
    },
    /// The accepted level ended: with the incident's resolution, or it lapsed.
    AcceptedEnded {
        allowance: &'a Allowance,
        with_resolution: bool,
    },
    /// The incident in a summary line: its family, release and scope.
    Label { snapshot: &'a Snapshot },
    /// A summary line: the incident's label, then what is new (its summary, or what changed).
    Headline {
        snapshot: &'a Snapshot,
        news: &'a str,
    },
    /// The incidents (by label) the Jira cap left unfiled this cycle, at most `cap` a cycle.
    NotFiled { cap: usize, labels: &'a [String] },
}

/// The function that turns a [`Told`] into its text: the words layer's, handed over by the
/// application (in [`super::plan::Policy`], and to the store when it applies a plan).
pub type Wording = for<'a, 'b> fn(&'b Told<'a>) -> String;
