//! Did the fix work, and what level has been accepted on purpose.
//!
//! A [`FixClaim`] is what sheriff learned from an incident's Jira issue: the status that claims
//! a fix, when it was claimed, the pull requests linked to it and, with the release controller,
//! the first payload holding all of them. A cycle judges the runs after that fix point against
//! the incident's frozen reference and gives a [`Verification`]: one of four [`FixVerdict`]s,
//! each told once per claim.
//!
//! An [`Allowance`] is a level people accepted ("P50 ≤ 20 s until …, because …"): it mutes the
//! incident while the observed level stays within it plus the minimum effect, and never raises
//! the reference.

use serde::{Deserialize, Serialize};

use super::{DAY, Percentile, secs};

/// One of the four answers to "did the fix work?".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum FixVerdict {
    /// Back to the reference, on enough runs and significantly better than the regression.
    Fixed,
    /// Still regressed on enough runs after the fix.
    FailedFix,
    /// Some parts of the scope recovered, others did not.
    PartiallyFixed,
    /// Too few runs after the fix, the fix in no payload yet, or no clear answer yet.
    Inconclusive,
}

/// A verdict as it was told (Slack thread, Jira comment, history).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToldVerdict {
    pub verdict: FixVerdict,
    pub at: i64,
    pub text: String,
}

/// A fix someone claimed on the incident's Jira issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixClaim {
    pub key: String,
    /// The status that claims it (`ON_QA`, `Closed`, …) and its resolution, if any.
    pub status: String,
    #[serde(default)]
    pub resolution: Option<String>,
    /// When the issue entered a claiming status (its changelog), else when sheriff first saw it.
    pub claimed_at: i64,
    /// Linked pull requests (remote links and the pull-request field), as GitHub URLs.
    #[serde(default)]
    pub pull_requests: Vec<String>,
    /// The first payload holding every linked pull request, and when it was built.
    #[serde(default)]
    pub payload: Option<String>,
    #[serde(default)]
    pub payload_at: Option<i64>,
    /// When the linked changes outside the payload (the CI harness, the step registry: they
    /// ship in no payload) merged, the latest of them: the runs started after it are the fix's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_at: Option<i64>,
    /// Why the fix point is not known yet ("in no payload yet", "not merged yet"), when the
    /// release controller or GitHub could not place the linked changes.
    #[serde(default)]
    pub pending: Option<String>,
    /// Verdicts told for this claim, oldest first.
    #[serde(default)]
    pub verdicts: Vec<ToldVerdict>,
}

impl FixClaim {
    /// Runs from this time on are the fix's: the fix payload's build time or the merge of the
    /// changes outside the payload (the later of the two when there are both), else the
    /// claim's time; None while the fix is in no payload yet or not merged yet.
    pub fn fix_point(&self) -> Option<i64> {
        if self.pending.is_some() {
            return None;
        }
        match (self.payload_at, self.merged_at) {
            (Some(p), Some(m)) => Some(p.max(m)),
            (Some(t), None) | (None, Some(t)) => Some(t),
            (None, None) => Some(self.claimed_at),
        }
    }

    /// Whether this verdict was told already for this claim.
    pub fn told(&self, verdict: FixVerdict) -> bool {
        self.verdicts.iter().any(|v| v.verdict == verdict)
    }

    /// The same claim, as far as its verdicts go: same issue, same time, same pull requests
    /// and fix payload.
    pub fn same_claim(&self, other: &FixClaim) -> bool {
        self.key == other.key
            && self.claimed_at == other.claimed_at
            && self.pull_requests == other.pull_requests
            && self.payload == other.payload
            && self.merged_at == other.merged_at
            && self.pending.is_some() == other.pending.is_some()
    }
}

/// One part of an incident's scope judged on its own (a platform, a network, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartVerdict {
    /// `network=ovn`.
    pub part: String,
    pub verdict: FixVerdict,
    pub runs: u64,
    pub observed: Option<f64>,
}

/// What the runs after a claimed fix say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    pub verdict: FixVerdict,
    pub key: String,
    /// The fix point (Unix seconds); None while the fix is in no payload yet.
    pub since: Option<i64>,
    pub payload: Option<String>,
    /// The fix merged outside the payload at `since`: judged on the runs started after it.
    #[serde(default)]
    pub by_merge: bool,
    /// Runs in the scope after the fix point, and how many more a verdict needs.
    pub runs: u64,
    pub needed: u64,
    pub percentile: Percentile,
    pub observed: Option<f64>,
    /// What the frozen reference allows, and its own value.
    pub allowed: f64,
    pub reference: Option<f64>,
    #[serde(default)]
    pub parts: Vec<PartVerdict>,
    /// Why it is inconclusive, when it is.
    #[serde(default)]
    pub reason: String,
}

/// A level people accepted on purpose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Allowance {
    pub percentile: Percentile,
    pub seconds: f64,
    /// When it lapses; None: until removed or the incident resolves.
    pub until: Option<i64>,
    pub reason: String,
    pub by: String,
    #[serde(default)]
    pub jira_key: Option<String>,
    pub created_at: i64,
    /// The reminder before it lapses was told.
    #[serde(default)]
    pub reminded: bool,
    /// The level is above what was accepted, and people were told.
    #[serde(default)]
    pub above: bool,
}

/// How long before an allowance lapses its reminder is told.
pub const ALLOWANCE_REMINDER_SECS: i64 = 2 * DAY;

/// Why a typed level (`P50<=20s`) is not one; each names the part at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LevelError {
    /// No `<=` (or `≤`) between a percentile and seconds; the text as typed, cut at 40 characters.
    #[error("a level reads like P50<=20s, not {0:?}")]
    NoComparison(String),
    #[error("{0:?} is not one of P50, P75, P95, P99")]
    Percentile(String),
    #[error("{0:?} is not a number of seconds")]
    NotSeconds(String),
    #[error("{0:?} is not a level between 0 s and one day")]
    OutOfRange(String),
}

impl Allowance {
    /// `P50<=20s`, `P95 <= 1m`, `p50≤20`: the percentile and seconds. The error's text is a
    /// reply to the person who typed the level (a Slack form, a command), shown as it is.
    pub fn parse_level(text: &str) -> Result<(Percentile, f64), LevelError> {
        let t = text.replace('≤', "<=").replace(' ', "");
        let (p, v) = t
            .split_once("<=")
            .ok_or_else(|| LevelError::NoComparison(text.chars().take(40).collect()))?;
        let percentile = Percentile::parse(&p.to_ascii_uppercase())
            .ok_or_else(|| LevelError::Percentile(p.into()))?;
        let seconds = match v.strip_suffix('s').unwrap_or(v).parse::<f64>() {
            Ok(x) => x,
            Err(_) => super::parse_span(v)
                .map(|s| s as f64)
                .ok_or_else(|| LevelError::NotSeconds(v.into()))?,
        };
        if !seconds.is_finite() || !(0.0..=DAY as f64).contains(&seconds) {
            return Err(LevelError::OutOfRange(v.into()));
        }
        Ok((percentile, seconds))
    }

    /// Whether it holds at `now`.
    pub fn active(&self, now: i64) -> bool {
        self.until.is_none_or(|u| now < u)
    }

    /// `P50 ≤ 25s`.
    pub fn level(&self) -> String {
        format!("{} ≤ {}", self.percentile, secs(self.seconds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_read_in_the_ways_people_write_them() {
        assert_eq!(
            Allowance::parse_level("P50<=20s"),
            Ok((Percentile::P50, 20.0))
        );
        assert_eq!(
            Allowance::parse_level("p95 <= 1m"),
            Ok((Percentile::P95, 60.0))
        );
        assert_eq!(
            Allowance::parse_level("P75≤7.5"),
            Ok((Percentile::P75, 7.5))
        );
        assert!(Allowance::parse_level("P50=20s").is_err());
        assert!(Allowance::parse_level("P42<=20s").is_err());
        assert!(Allowance::parse_level("P50<=-3s").is_err());
        assert!(Allowance::parse_level("P50<=NaN").is_err());
        assert!(Allowance::parse_level("P50<=9999999h").is_err());
        assert_eq!(
            Allowance::parse_level("P42<=20s"),
            Err(LevelError::Percentile("P42".into()))
        );
        assert_eq!(
            Allowance::parse_level("P50<=soon").unwrap_err().to_string(),
            "\"soon\" is not a number of seconds"
        );
    }

    #[test]
    fn a_fix_point_is_the_payload_then_the_claim_and_none_while_pending() {
        let mut c = FixClaim {
            key: "OCPBUGS-1".into(),
            status: "ON_QA".into(),
            resolution: None,
            claimed_at: 100,
            pull_requests: vec![],
            payload: None,
            payload_at: None,
            merged_at: None,
            pending: None,
            verdicts: vec![],
        };
        assert_eq!(c.fix_point(), Some(100));
        c.merged_at = Some(90);
        assert_eq!(
            c.fix_point(),
            Some(90),
            "a merge outside the payload, before the claim"
        );
        c.pending = Some("in no payload yet".into());
        assert_eq!(c.fix_point(), None);
        c.pending = None;
        c.payload_at = Some(150);
        assert_eq!(c.fix_point(), Some(150));
        c.merged_at = Some(170);
        assert_eq!(
            c.fix_point(),
            Some(170),
            "the later of the payload and the merge"
        );
        assert!(!c.told(FixVerdict::Fixed));
    }
}
