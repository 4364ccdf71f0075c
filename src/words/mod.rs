//! The words people read, made from the domain's typed values: each [`Told`] of the incident
//! planner and the store, as the text an incident's history keeps and its thread, issue and
//! channel summary are told. The same line goes to every output; Slack's blocks and Jira's ADF
//! frame it (`notify`). The domain and the store never import this module: the application
//! hands them [`line()`] as their [`Wording`](crate::domain::incidents::Wording).
//! A request people made that was not carried out ([`Refusal`]) is said here too.
//!
//! A regression's own account is said in `regression` (its summary, evidence lines, onset and
//! suspects) and `mechanism` (what its sample runs show), from the facts the attribution found.
//! A claimed fix and why it waits are said in `fix`; what a cycle saw in the data that is not a
//! regression, in `findings`. What sheriff answers people in Slack (its slash command, buttons
//! and dialogs) is said in `slack`; a Jira issue (its summary, its description as a document, a
//! comment on a change), in `issue`.

pub(crate) mod findings;
pub(crate) mod fix;
pub(crate) mod issue;
pub(crate) mod mechanism;
pub(crate) mod regression;
pub(crate) mod slack;

use std::fmt;

use crate::domain::incidents::Change;
use crate::domain::incidents::Refusal;
use crate::domain::incidents::ResolvedAs;
use crate::domain::incidents::Told;
use crate::domain::incidents::manual::{MAX_ALLOWANCE_SECS, MAX_SILENCE_SECS};
use crate::domain::incidents::plan::Resolution;
use crate::model::actor::slack_user;
use crate::model::{Allowance, DAY, FixVerdict, Verification, secs, utc_minute};

/// The text of one [`Told`].
pub fn line(t: &Told<'_>) -> String {
    match *t {
        Told::Change(c) => change(c),
        Told::Changes(changes) => changes.iter().map(change).collect::<Vec<_>>().join("; "),
        Told::Verdict(v) => verdict(v),
        Told::Resolved(how) => resolution(how),
        Told::Acknowledged { by } => format!("acknowledged by {}", person(by)),
        Told::AskedForJira { by } => format!("{} asked for a Jira issue", person(by)),
        Told::Silenced { silence, id } => {
            format!(
                "silenced until {} (silence #{id}): {}",
                utc_minute(silence.expires_at),
                silence.reason
            )
        }
        Told::Held { silence } => format!("notifications held by silence #{silence}"),
        Told::FiledInJira { key } => format!("filed in Jira as {key}"),
        Told::WhileSilenced { lines } => format!("while silenced: {}", lines.join("; ")),
        Told::NotARegression { reason } => format!("not a regression: {}", own_words(reason)),
        Told::Accepted { allowance } => format!(
            "{}; sheriff stays quiet while it holds, and says so if the level goes above it",
            accepted_level(allowance)
        ),
        Told::AboveAccepted { allowance, level } => {
            format!(
                "{} is {} now: above the {}",
                allowance.percentile,
                secs(level),
                accepted_level(allowance)
            )
        }
        Told::AcceptedLapsing {
            allowance: a,
            incident,
        } => format!(
            "reminder: the {} lapses on {}; to keep it, `sheriff incidents accept {incident} --level \"{}<={}s\" --until …`",
            accepted_level(a),
            utc_minute(a.until.unwrap_or_default()),
            a.percentile,
            a.seconds
        ),
        Told::AcceptedEnded {
            allowance,
            with_resolution,
        } => {
            let why = if with_resolution {
                "ended with the incident's resolution"
            } else {
                "lapsed"
            };
            format!("{} {why}", accepted_level(allowance))
        }
        Told::Label { snapshot: s } => {
            format!("{} {} ({})", s.family, s.release, s.scope.describe())
        }
        Told::Headline { snapshot, news } => {
            format!("{} — {news}", line(&Told::Label { snapshot }))
        }
        Told::NotFiled { cap, labels } => {
            format!(
                "not filed in Jira this cycle (at most {cap} new issues a cycle): {}",
                labels.join("; ")
            )
        }
    }
}

/// "accepted level P50 ≤ 25s (until …, set by …: reason)": an incident's accepted level, in its
/// lines, on the board and on its page.
pub(crate) fn accepted_level(a: &Allowance) -> String {
    let until = a
        .until
        .map_or_else(String::new, |u| format!("until {}, ", utc_minute(u)));
    format!(
        "accepted level {} ({until}set by {}: {})",
        a.level(),
        person(&a.by),
        a.reason
    )
}

/// One material change, for a thread reply, a comment or the history.
fn change(c: &Change) -> String {
    match c {
        Change::ScopeGrew { from, to } => format!("scope grew: {from} → {to}"),
        Change::ScopeShrank { from, to } => format!("scope shrank: {from} → {to}"),
        Change::ScopeMoved { from, to } => format!("scope changed: {from} → {to}"),
        Change::TierChanged { from, to } => format!("severity changed: {from} → {to}"),
        Change::EvidenceChanged { from, to } => {
            let from = if from.is_empty() { "none" } else { from };
            format!("strongest evidence changed: {from} → {to}")
        }
        Change::Resolved => {
            format!("recovered: {NO_LONGER_OBSERVED} (back within its reference)")
        }
        Change::Reopened => "regressed again after it was resolved".into(),
        Change::Stale => {
            "stale: not enough runs this cycle to judge (a data gap is not a fix)".into()
        }
        Change::Returned => "runs again after a data gap; still regressed".into(),
        Change::NoData { since } => format!(
            "no data since {since}: the scope's runs go on but no longer report this backend; that is not a recovery, so the incident stays open"
        ),
        Change::Verdict { text, .. } => text.clone(),
    }
}

/// The verdict on a claimed fix: the line told in the thread, the Jira comment and the history,
/// and kept with the claim.
fn verdict(v: &Verification) -> String {
    let since = match (&v.payload, v.since) {
        (Some(p), Some(t)) if v.by_merge => {
            format!(
                "since payload {p} and the merge outside the payload ({})",
                utc_minute(t)
            )
        }
        (Some(p), _) => format!("since payload {p}"),
        (None, Some(t)) if v.by_merge => {
            format!(
                "started after the fix merged outside the payload ({})",
                utc_minute(t)
            )
        }
        (None, Some(t)) => format!("since the fix was claimed ({})", utc_minute(t)),
        (None, None) => String::new(),
    };

    let level = format!(
        "{} {} on {} runs {since}, reference {} (allowed {})",
        v.percentile,
        v.observed.map_or_else(|| "-".into(), secs),
        v.runs,
        v.reference.map_or_else(|| "-".into(), secs),
        secs(v.allowed)
    );

    match v.verdict {
        FixVerdict::Fixed => format!("fix verified for {}: fixed — {level}", v.key),
        FixVerdict::FailedFix => {
            format!(
                "failed fix for {}: still regressed — {level}; the incident stays open",
                v.key
            )
        }
        FixVerdict::PartiallyFixed => {
            let parts: Vec<String> = v
                .parts
                .iter()
                .map(|p| format!("{} {}", p.part, fix::verdict(p.verdict)))
                .collect();
            format!(
                "partially fixed for {}: {} — {level}",
                v.key,
                parts.join(", ")
            )
        }
        FixVerdict::Inconclusive => format!("fix for {} inconclusive so far: {}", v.key, v.reason),
    }
}

/// How an incident was resolved, for the history, the thread and the Jira comment.
fn resolution(how: &Resolution) -> String {
    match how {
        Resolution::Recovered => change(&Change::Resolved),
        Resolution::Fixed { text } => text.clone(),
        Resolution::ByHand { reason, by } if reason.is_empty() => {
            format!("resolved by hand by {}", person(by))
        }
        Resolution::ByHand { reason, by } => {
            format!("resolved by hand by {}: {reason}", person(by))
        }
        Resolution::NotARegression { reason } => {
            format!("resolved as not a regression: {}", own_words(reason))
        }
        Resolution::Merged { into } => {
            format!("merged into #{into}: the same problem, followed there")
        }
    }
}

/// An actor as people read it: a Slack user by name (`alice`, or `Slack user U012AB` when no
/// name was sent), a command-line user by login (`bob (command line)`), anyone else as
/// recorded (`sheriff`, `jira`).
pub fn person(actor: &str) -> String {
    if let Some(id) = slack_user(actor) {
        let name = actor
            .split_once(" (")
            .map(|(_, n)| n.trim_end_matches(')'))
            .filter(|n| !n.is_empty());
        return name.map_or_else(|| format!("Slack user {id}"), str::to_string);
    }
    match actor.strip_prefix("cli:") {
        Some(login) => format!("{login} (command line)"),
        None => actor.to_string(),
    }
}

/// How an incident was resolved, in a word or two: "recovered", "fixed", "by hand", "not a
/// regression", "merged".
pub fn resolved_as(how: ResolvedAs) -> &'static str {
    match how {
        ResolvedAs::Recovered => "recovered",
        ResolvedAs::Fixed => "fixed",
        ResolvedAs::ByHand => "by hand",
        ResolvedAs::NotARegression => "not a regression",
        ResolvedAs::Merged => "merged",
    }
}

/// A regression that recovered with no fix verified, wherever its resolution is said.
pub const NO_LONGER_OBSERVED: &str = "no longer observed; no fix was verified";

/// A claimed fix whose first verdict is still to come.
pub const VERDICT_PENDING: &str = "verdict pending";

/// The link to an incident's page from the end of a message or an issue.
pub const FULL_VIEW: &str = "Full view";

/// What a person is told when their request failed on sheriff's side: nothing changed, and the
/// reference the log names it by.
pub fn failed_on_our_side(reference: &str) -> String {
    format!("Something went wrong on sheriff's side; nothing was changed (reference {reference}).")
}

/// `; it holds incident #3, #5`, or a warning that a new silence holds no open incident.
pub fn silence_holds(incidents: &[i64]) -> String {
    if incidents.is_empty() {
        return "; it matches no open incident now (it holds any that opens matching it before it ends)"
            .into();
    }
    let ids: Vec<String> = incidents.iter().map(|id| format!("#{id}")).collect();
    format!("; it holds incident {}", ids.join(", "))
}

/// Why a request was not carried out, as the person who made it is told (Slack's reply, the
/// command line's error).
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NoIncident { reference } => write!(f, "no incident {reference}"),
            Refusal::NoActiveSilence { reference } => {
                write!(f, "no active silence matches {reference}")
            }
            Refusal::JiraOff => f.write_str("Jira is not configured for sheriff."),
            Refusal::JiraFiled { id, key } => write!(f, "incident #{id} already has {key}"),
            Refusal::JiraBeingFiled { id } => {
                write!(f, "incident #{id}'s Jira issue is being filed")
            }
            Refusal::AlreadyResolved { id } => write!(f, "incident #{id} is already resolved"),
            Refusal::NothingToAccept { id } => {
                write!(f, "incident #{id} is resolved; nothing to accept")
            }
            Refusal::NotARegressionWithoutReason => f.write_str("Say why it is not a regression."),
            Refusal::AcceptedWithoutReason => {
                f.write_str("Say why this level is accepted (--reason).")
            }
            Refusal::BadLevel(e) => write!(f, "{e}"),
            Refusal::BadUntil { text } => write!(
                f,
                "--until {text:?}: use a date (2026-12-15), a time (2026-12-15T12:00:00Z) or a span (14d)"
            ),
            Refusal::UntilNotInFuture => {
                f.write_str("an accepted level ends in the future (--until)")
            }
            Refusal::AcceptedTooLong => write!(
                f,
                "an accepted level lasts at most {} days",
                MAX_ALLOWANCE_SECS / DAY
            ),
            Refusal::NoSilenceDuration => {
                f.write_str("a silence needs a duration such as 24h or 7d")
            }
            Refusal::SilenceTooLong => {
                write!(f, "a silence lasts at most {}d", MAX_SILENCE_SECS / DAY)
            }
            Refusal::DurationTooLong => f.write_str("that duration is too long"),
        }
    }
}

/// A refusal is the error of an action refused; its `Display` (above) is what the person reads.
impl std::error::Error for Refusal {}

/// A reason as a person gave it, without a "not a regression:" they typed in front of it
/// themselves, so the line does not say it twice.
fn own_words(reason: &str) -> &str {
    const SAID: &str = "not a regression:";
    match reason.get(..SAID.len()) {
        Some(start) if start.eq_ignore_ascii_case(SAID) => reason[SAID.len()..].trim_start(),
        _ => reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actors_read_as_people() {
        let alice = crate::model::actor::slack_actor("UTRT1", "alice.smith");
        assert_eq!(person(&alice), "alice.smith");
        assert_eq!(person("slack:UTRT1"), "Slack user UTRT1");
        assert_eq!(person("cli:bob"), "bob (command line)");
        assert_eq!(person("sheriff"), "sheriff");
    }
    use crate::domain::incidents::plan::NewSilence;
    use crate::domain::incidents::silence::Target;

    /// Every refusal's text, as the person who asked reads it (word for word what the planner
    /// wrote before the refusals were typed).
    #[test]
    fn a_refusal_says_what_was_asked_and_why_not() {
        use crate::domain::incidents::manual::parse_until;
        let level = crate::model::Allowance::parse_level("P50=3").unwrap_err();
        let level_text = level.to_string();
        let too_long = parse_until(&"x".repeat(100), 0).unwrap_err();
        let cut = format!(
            "--until {:?}: use a date (2026-12-15), a time (2026-12-15T12:00:00Z) or a span (14d)",
            "x".repeat(40)
        );
        let cases: Vec<(Refusal, &str)> = vec![
            (Refusal::no_incident("#12"), "no incident #12"),
            (
                Refusal::NoActiveSilence {
                    reference: "7".into(),
                },
                "no active silence matches 7",
            ),
            (Refusal::JiraOff, "Jira is not configured for sheriff."),
            (
                Refusal::JiraFiled {
                    id: 3,
                    key: "OCPBUGS-1".into(),
                },
                "incident #3 already has OCPBUGS-1",
            ),
            (
                Refusal::JiraBeingFiled { id: 3 },
                "incident #3's Jira issue is being filed",
            ),
            (
                Refusal::AlreadyResolved { id: 3 },
                "incident #3 is already resolved",
            ),
            (
                Refusal::NothingToAccept { id: 3 },
                "incident #3 is resolved; nothing to accept",
            ),
            (
                Refusal::NotARegressionWithoutReason,
                "Say why it is not a regression.",
            ),
            (
                Refusal::AcceptedWithoutReason,
                "Say why this level is accepted (--reason).",
            ),
            (Refusal::BadLevel(level), &level_text),
            (too_long, &cut),
            (
                Refusal::UntilNotInFuture,
                "an accepted level ends in the future (--until)",
            ),
            (
                Refusal::AcceptedTooLong,
                "an accepted level lasts at most 180 days",
            ),
            (
                Refusal::NoSilenceDuration,
                "a silence needs a duration such as 24h or 7d",
            ),
            (Refusal::SilenceTooLong, "a silence lasts at most 90d"),
            (Refusal::DurationTooLong, "that duration is too long"),
        ];
        for (refusal, text) in cases {
            assert_eq!(refusal.to_string(), text, "{refusal:?}");
        }
    }

    #[test]
    fn what_people_did_and_what_a_silence_held_name_who_and_which_silence() {
        assert_eq!(
            line(&Told::Acknowledged { by: "cli:alice" }),
            format!("acknowledged by {}", person("cli:alice"))
        );
        assert_eq!(
            line(&Told::Held { silence: 4 }),
            "notifications held by silence #4"
        );
        let silence = NewSilence {
            target: Target {
                fingerprint: Some("f".into()),
                backend: None,
                dimensions: Default::default(),
            },
            expires_at: 0,
            reason: "upgrade window".into(),
            incident: Some(1),
        };
        assert_eq!(
            line(&Told::Silenced {
                silence: &silence,
                id: 7
            }),
            format!(
                "silenced until {} (silence #7): upgrade window",
                utc_minute(0)
            )
        );
        let held = [
            "scope grew: a → b".to_string(),
            "severity changed: x → y".to_string(),
        ];
        assert_eq!(
            line(&Told::WhileSilenced { lines: &held }),
            "while silenced: scope grew: a → b; severity changed: x → y"
        );
    }

    #[test]
    fn several_changes_are_one_line_and_a_resolution_by_hand_names_its_reason_when_it_has_one() {
        let changes = [
            Change::Reopened,
            Change::EvidenceChanged {
                from: String::new(),
                to: "outages".into(),
            },
        ];
        assert_eq!(
            line(&Told::Changes(&changes)),
            "regressed again after it was resolved; strongest evidence changed: none → outages"
        );
        let by = "cli:bob".to_string();
        let bare = Resolution::ByHand {
            reason: String::new(),
            by: by.clone(),
        };
        let why = Resolution::ByHand {
            reason: "reverted".into(),
            by,
        };
        assert_eq!(
            line(&Told::Resolved(&bare)),
            format!("resolved by hand by {}", person("cli:bob"))
        );
        assert_eq!(
            line(&Told::Resolved(&why)),
            format!("resolved by hand by {}: reverted", person("cli:bob"))
        );
        assert_eq!(
            line(&Told::Resolved(&Resolution::Recovered)),
            line(&Told::Change(&Change::Resolved))
        );
    }

    #[test]
    fn a_reason_that_already_says_not_a_regression_is_not_told_twice() {
        let typed = "Not a regression: a test change";
        assert_eq!(
            line(&Told::NotARegression { reason: typed }),
            "not a regression: a test change"
        );
        assert_eq!(
            line(&Told::Resolved(&Resolution::NotARegression {
                reason: typed.into()
            })),
            "resolved as not a regression: a test change"
        );
        assert_eq!(
            line(&Told::NotARegression {
                reason: "a test change"
            }),
            "not a regression: a test change"
        );
    }
}
