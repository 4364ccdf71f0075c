//! The error of reading which changes a regression's window holds and where a claimed fix
//! shipped: why the release controller, GitHub or the store did not tell.
//!
//! Its text is what the cycle logs for a changelog or a window's commits not read yet, and for a
//! fix payload or merge time not known yet. A variant that wraps a client's error says that
//! error's text as its own and hands on that error's sources; one with words of its own (the
//! store's, so that [`crate::store::is_storage_error`] finds it) hands the error it wraps on as
//! its source: the chain (`{:#}`) tells the words, then why.

use crate::clients::SetupError;
use crate::clients::github::GitHubError;
use crate::clients::release_controller::ReleaseControllerError;
use crate::store::StoreError;

/// The result of the releases' functions.
pub type Result<T, E = ReleaseError> = std::result::Result<T, E>;

/// Why the changes of a window, or the payload or merge time of a fix, could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// The release controller or GitHub client could not be built from its settings.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The release controller did not answer for a changelog, or answered what cannot be read.
    #[error(transparent)]
    ReleaseController(#[from] ReleaseControllerError),
    /// A changelog body (kept, or just read) that is not the release controller's JSON. Made
    /// where the body is read (no `From`), so a failed call never passes for an unreadable body.
    #[error(transparent)]
    Changelog(ReleaseControllerError),
    /// No release controller is configured for this architecture (`release_controller.urls`).
    #[error("no release controller for {arch}")]
    NoReleaseController {
        /// The architecture asked for (`amd64`).
        arch: String,
    },
    /// GitHub did not answer, or answered what cannot be read; `is_rate_limited()` says when
    /// it asks to be left alone for a while.
    #[error(transparent)]
    GitHub(#[from] GitHubError),
    /// A merge time asked of GitHub while `github.enabled` is off.
    #[error("GitHub is not read (github.enabled is off)")]
    GitHubOff,
    /// A window's commits not kept, and GitHub not asked: its rate limit is spent this cycle.
    #[error("GitHub's rate limit is spent")]
    RateLimitSpent,
    /// The commits kept for a window cannot be read back.
    #[error("kept commits outside the payload")]
    KeptCommits(#[source] serde_json::Error),
    /// A window's commits could not be written as JSON to be kept.
    #[error(transparent)]
    Encode(serde_json::Error),
    /// The store failed: reading or keeping a changelog or commits, or the payloads runs tested.
    /// The store's error is this one's source ([`crate::store::is_storage_error`] finds it).
    #[error("reading or keeping changelogs, commits and payloads")]
    Store(#[from] StoreError),
}

impl ReleaseError {
    /// Whether GitHub said its rate limit is spent: ask it nothing more this cycle.
    pub fn is_rate_limited(&self) -> bool {
        matches!(self, ReleaseError::GitHub(e) if e.is_rate_limited())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text the cycle logs of the error (`{:#}`: the error and its sources).
    fn chain(e: ReleaseError) -> String {
        format!("{:#}", anyhow::Error::from(e))
    }

    #[test]
    fn unreadable_kept_commits_say_so_before_why() {
        let e = ReleaseError::KeptCommits(serde_json::from_str::<u8>("x").unwrap_err());
        assert_eq!(e.to_string(), "kept commits outside the payload");
        assert_eq!(
            chain(e),
            "kept commits outside the payload: expected value at line 1 column 1"
        );
    }

    #[test]
    fn a_refused_setting_says_which() {
        assert_eq!(
            chain(ReleaseError::GitHubOff),
            "GitHub is not read (github.enabled is off)"
        );
        let e = ReleaseError::NoReleaseController {
            arch: "arm64".into(),
        };
        assert_eq!(chain(e), "no release controller for arm64");
    }

    #[test]
    fn a_client_error_reads_as_its_own_and_a_store_error_stays_in_the_chain() {
        let refused = || StoreError::Refused("the days are backfilled already".into());
        assert_eq!(
            chain(ReleaseError::from(refused())),
            "reading or keeping changelogs, commits and payloads: the days are backfilled already"
        );
        let lost = ReleaseError::from(StoreError::Connection(sqlx::Error::PoolTimedOut));
        assert!(crate::store::is_storage_error(&anyhow::Error::from(lost)));
        let body = || crate::clients::release_controller::pull_requests("<html>").unwrap_err();
        assert_eq!(
            chain(ReleaseError::Changelog(body())),
            format!("{:#}", anyhow::Error::from(body()))
        );
    }
}
