//! The slash command's grammar (`/sheriff …`), also what `sheriff query` answers.
//!
//! ```text
//! help
//! status
//! query <backend> [release=] [platform=] [network=] [upgrade=] [topology=] [arch=] [window=7d]
//! explain <incident>
//! silence <incident|matcher…> <duration> [reason…]
//! unsilence <silence|incident>
//! ack <incident>
//! evaluate
//! ```

use std::collections::BTreeMap;

use crate::domain::incidents::silence::{Target, TargetError};
pub use crate::model::Query;
use crate::model::{DAY, Dimension, parse_span};

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Help,
    Status,
    Query(Query),
    Explain(String),
    Silence {
        target: Target,
        seconds: i64,
        reason: String,
    },
    Unsilence(String),
    Ack(String),
    Evaluate,
}

impl Command {
    /// Changes something: only configured people may run it.
    pub(crate) fn is_mutating(&self) -> bool {
        matches!(
            self,
            Command::Silence { .. } | Command::Unsilence(_) | Command::Ack(_) | Command::Evaluate
        )
    }
}

pub const HELP: &str = "*sheriff* answers:\n\
• `help` — this\n\
• `status` — open incidents, newest first\n\
• `query <backend> [release=4.14] [platform=metal] [network=ovn] [upgrade=micro] [topology=ha] [arch=amd64] [window=7d]` — runs, P50/P75/P95/P99, threshold, baseline, trend\n\
• `explain <incident>` — attribution, evidence and who did what\n\
• `silence <incident|backend=… platform=…> <duration like 24h, 7d> [reason]`, `unsilence <silence|incident>`\n\
• `ack <incident>` — acknowledge\n\
• `evaluate` — run an evaluation cycle now";

/// Why the words typed are not a command; the text is the reply to whoever typed them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("unknown command `{0}`. Try `help`.")]
    Unknown(String),
    /// `verb` takes one word, `what`, and got none.
    #[error("`{verb}` needs {what}")]
    Missing { verb: String, what: &'static str },
    /// `verb` takes one word, `what`, and got more.
    #[error("`{verb}` takes just {what}")]
    TooMany { verb: String, what: &'static str },
    /// `verb` takes no words and got `rest`.
    #[error("`{verb}` takes nothing after it; `{verb} {rest}` is not a command")]
    Trailing { verb: String, rest: String },
    #[error(
        "`silence` needs a duration such as `24h` or `7d`: `silence 12 24h known metal outage`"
    )]
    NoDuration,
    #[error("a silence lasts at most 90d")]
    TooLong,
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("`query` needs a backend, e.g. `query image-registry-new-connections platform=metal`")]
    NoBackend,
    #[error("`query` needs the backend first, then key=value filters")]
    FiltersFirst,
    #[error("`{0}` is not key=value")]
    NotKeyValue(String),
    #[error("`{0}=` needs a value")]
    NoValue(String),
    #[error("window must be whole days up to 90, like `7d` or `2w`; not `{0}`")]
    Window(String),
    #[error(
        "unknown filter `{0}`: use release, platform, network, upgrade, topology, arch, window"
    )]
    UnknownFilter(String),
}

fn query_key(k: &str) -> Option<Dimension> {
    match k {
        "upgrade" => Some(Dimension::UpgradeType),
        "arch" => Some(Dimension::Architecture),
        "from" => Some(Dimension::FromRelease),
        "stack" => Some(Dimension::NetworkStack),
        _ => Dimension::parse(k),
    }
}

/// Parses the text after the command name. Errors are short answers for the user.
pub fn parse(text: &str) -> Result<Command, CommandError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let Some((verb, rest)) = words.split_first() else {
        return Ok(Command::Help);
    };

    let one = |what: &'static str| -> Result<String, CommandError> {
        let verb = verb.to_string();
        match rest {
            [x] => Ok(x.trim_start_matches('#').to_string()),
            [] => Err(CommandError::Missing { verb, what }),
            _ => Err(CommandError::TooMany { verb, what }),
        }
    };

    match verb.to_ascii_lowercase().as_str() {
        "help" | "?" => Ok(Command::Help),
        "status" | "list" | "evaluate" if !rest.is_empty() => Err(CommandError::Trailing {
            verb: verb.to_string(),
            rest: rest.join(" "),
        }),
        "status" | "list" => Ok(Command::Status),
        "evaluate" => Ok(Command::Evaluate),
        "explain" | "show" => one("an incident (its number or fingerprint)").map(Command::Explain),
        "ack" => one("an incident (its number or fingerprint)").map(Command::Ack),
        "unsilence" => one("a silence number or an incident").map(Command::Unsilence),
        "query" => parse_query(rest).map(Command::Query),
        "silence" => {
            let at = rest
                .iter()
                .position(|w| parse_span(w).is_some())
                .ok_or(CommandError::NoDuration)?;
            let target = Target::parse(&rest[..at])?;
            let seconds = parse_span(rest[at]).unwrap_or_default();
            if seconds > 90 * DAY {
                return Err(CommandError::TooLong);
            }
            Ok(Command::Silence {
                target,
                seconds,
                reason: rest[at + 1..].join(" "),
            })
        }
        other => Err(CommandError::Unknown(other.to_string())),
    }
}

/// `BACKEND [key=value…]`, the words of `query`.
pub(crate) fn parse_query(words: &[&str]) -> Result<Query, CommandError> {
    let Some((backend, filters)) = words.split_first() else {
        return Err(CommandError::NoBackend);
    };
    if backend.contains('=') {
        return Err(CommandError::FiltersFirst);
    }
    let mut q = Query {
        backend: backend.to_string(),
        filters: BTreeMap::new(),
        window_days: 7,
    };
    for f in filters {
        let Some((k, v)) = f.split_once('=') else {
            return Err(CommandError::NotKeyValue(f.to_string()));
        };
        if v.is_empty() {
            return Err(CommandError::NoValue(k.to_string()));
        }
        if k == "window" {
            let secs = parse_span(v)
                .filter(|s| s % DAY == 0 && *s <= 90 * DAY)
                .ok_or_else(|| CommandError::Window(v.to_string()))?;
            q.window_days = secs / DAY;
            continue;
        }
        let d = query_key(k).ok_or_else(|| CommandError::UnknownFilter(k.to_string()))?;
        q.filters.insert(d, v.to_string());
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_parses() {
        assert_eq!(parse(""), Ok(Command::Help));
        assert_eq!(parse("help"), Ok(Command::Help));
        assert_eq!(parse("status"), Ok(Command::Status));
        assert_eq!(parse("evaluate"), Ok(Command::Evaluate));
        assert_eq!(parse("explain #12"), Ok(Command::Explain("12".into())));
        assert_eq!(
            parse("ack sheriff-00ff"),
            Ok(Command::Ack("sheriff-00ff".into()))
        );
        assert_eq!(parse("unsilence 3"), Ok(Command::Unsilence("3".into())));
        let Ok(Command::Query(q)) = parse(
            "query image-registry-new-connections release=4.14 platform=metal upgrade=micro arch=amd64 window=14d",
        ) else {
            panic!()
        };
        assert_eq!(q.backend, "image-registry-new-connections");
        assert_eq!(q.window_days, 14);
        assert_eq!(q.filters[&Dimension::UpgradeType], "micro");
        assert_eq!(q.filters[&Dimension::Architecture], "amd64");
        let Ok(Command::Silence {
            target,
            seconds,
            reason,
        }) = parse("silence backend=image-registry-* platform=metal 24h known metal outage")
        else {
            panic!()
        };
        assert_eq!(target.backend.as_deref(), Some("image-registry-*"));
        assert_eq!(seconds, 86_400);
        assert_eq!(reason, "known metal outage");
        assert!(matches!(
            parse("silence 12 7d"),
            Ok(Command::Silence {
                seconds: 604_800,
                ..
            })
        ));
    }

    #[test]
    fn mistakes_get_short_helpful_answers() {
        assert!(
            parse("frobnicate")
                .unwrap_err()
                .to_string()
                .contains("unknown command `frobnicate`")
        );
        assert!(
            parse("query")
                .unwrap_err()
                .to_string()
                .contains("needs a backend")
        );
        assert!(
            parse("query x colour=red")
                .unwrap_err()
                .to_string()
                .contains("unknown filter `colour`")
        );
        assert!(
            parse("query x window=3h")
                .unwrap_err()
                .to_string()
                .contains("whole days")
        );
        assert!(
            parse("query x platform")
                .unwrap_err()
                .to_string()
                .contains("not key=value")
        );
        assert!(
            parse("silence 12")
                .unwrap_err()
                .to_string()
                .contains("needs a duration")
        );
        assert!(
            parse("silence 12 365d")
                .unwrap_err()
                .to_string()
                .contains("at most 90d")
        );
        assert_eq!(
            parse("ack").unwrap_err().to_string(),
            "`ack` needs an incident (its number or fingerprint)"
        );
        assert!(
            parse("ack 1 2")
                .unwrap_err()
                .to_string()
                .contains("takes just")
        );
        // Extra words are a mistake to point out, not to ignore (`evaluate now please`).
        assert!(
            parse("evaluate now please")
                .unwrap_err()
                .to_string()
                .contains("`evaluate` takes nothing after it")
        );
        assert_eq!(
            parse("status open").unwrap_err().to_string(),
            "`status` takes nothing after it; `status open` is not a command"
        );
        assert_eq!(parse("  EVALUATE  "), Ok(Command::Evaluate));
    }

    #[test]
    fn only_changes_need_authorization() {
        assert!(!parse("query x").unwrap().is_mutating());
        assert!(!parse("explain 1").unwrap().is_mutating());
        assert!(parse("ack 1").unwrap().is_mutating());
        assert!(parse("evaluate").unwrap().is_mutating());
    }
}
