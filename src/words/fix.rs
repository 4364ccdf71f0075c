//! A claimed fix in words: the claim as an incident's history keeps it, why it is not placed
//! yet (not merged, in no payload, an outside system silent) and why its verdict waits.

use crate::model::{FixClaim, FixVerdict, utc_minute};

/// A verdict in a word or two: "fixed", "failed fix", "partially fixed", "inconclusive".
pub fn verdict(v: FixVerdict) -> &'static str {
    match v {
        FixVerdict::Fixed => "fixed",
        FixVerdict::FailedFix => "failed fix",
        FixVerdict::PartiallyFixed => "partially fixed",
        FixVerdict::Inconclusive => "inconclusive",
    }
}

/// "OCPBUGS-7 moved to ON_QA, 1 pull request, first in payload …": a claimed fix, in the
/// incident's history, on the board and on its page.
pub fn claim(c: &FixClaim) -> String {
    let mut s = format!("{} moved to {}", c.key, c.status);
    if let Some(r) = &c.resolution {
        s.push_str(&format!(" ({r})"));
    }
    match c.pull_requests.len() {
        0 => s.push_str(", no linked pull request"),
        1 => s.push_str(&format!(", pull request {}", c.pull_requests[0])),
        n => s.push_str(&format!(", {n} pull requests")),
    }
    match (&c.payload, &c.pending) {
        (Some(p), _) => s.push_str(&format!(", first in payload {p}")),
        (None, Some(why)) => s.push_str(&format!(", {why}")),
        (None, None) => {}
    }
    if let (Some(t), None) = (c.merged_at, &c.pending) {
        s.push_str(&format!(", merged outside the payload {}", utc_minute(t)));
    }
    s
}

/// The issue no longer claims a fix: "OCPBUGS-7 moved to ASSIGNED: no fix claimed any more".
pub fn withdrawn(key: &str, status: &str) -> String {
    format!("{key} moved to {status}: no fix claimed any more")
}

/// Why a claim has no fix point yet: its issue links no pull request.
pub const NO_PULL_REQUEST: &str = "no pull request is linked to the issue";

/// Why a claim has no fix point yet, when nothing more precise is known.
pub const IN_NO_PAYLOAD_YET: &str = "the fix is in no payload yet";

/// Why a claim has no fix point yet: some of its pull requests shipped in no payload.
pub fn not_shipped(missing: usize, linked: usize, release: &str) -> String {
    format!("{IN_NO_PAYLOAD_YET} ({missing} of {linked} pull requests not shipped in {release})")
}

/// Why a claim has no fix point yet: its change outside the payload is not merged.
pub const NOT_MERGED_YET: &str = "the fix outside the payload is not merged yet";

/// Why a claim has no fix point yet: GitHub did not say when its change merged.
pub const GITHUB_SILENT: &str =
    "GitHub did not answer; when the fix merged outside the payload is not known yet";

/// Why a claim has no fix point yet: the release controller did not place its pull requests.
pub const RELEASE_CONTROLLER_SILENT: &str =
    "the release controller did not answer; the fix payload is not known yet";

/// Why a verdict waits: too few runs since the fix.
pub fn runs_needed(runs: u64, needed: u64) -> String {
    format!(
        "{runs} of the {needed} runs a verdict needs since the fix; {} more needed",
        needed.saturating_sub(runs)
    )
}

/// Why a verdict waits with enough runs: they are neither back nor clearly regressed.
pub fn unclear(runs: u64) -> String {
    format!("neither back at the reference nor clearly regressed on {runs} runs yet")
}
