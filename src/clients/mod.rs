//! One client per outside system sheriff talks to: Slack's Web API ([`slack`]), Jira's REST
//! API (`jira`), Google Cloud Storage's JSON API ([`gcs`]), BigQuery's REST API
//! (`bigquery`), the release controller (`release_controller`) and GitHub's REST API
//! (`github`).
//!
//! Each is a small concrete type with methods named for what sheriff needs, a timeout on every
//! request and a base URL taken from the settings (a local fake in the tests). Answers are read
//! through typed structs private to each client (BigQuery's result cells stay JSON values: the
//! query's schema gives their types); callers see sheriff's own types. What to do with the answers (deliver the outbox, watch fixes, rank
//! changes, ingest runs) is the callers' business.

pub(crate) mod bigquery;
pub mod gcs;
pub(crate) mod github;
mod google;
pub(crate) mod jira;
pub(crate) mod release_controller;
pub mod slack;

use std::time::Duration;

/// A client that could not be built from its settings.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A setting the client cannot work without is not set: its key.
    #[error("{0} is not set")]
    Unset(&'static str),
    /// The HTTP client could not be built, with reqwest's reasons.
    #[error("building the {client} client: {reason}")]
    Http {
        client: &'static str,
        reason: String,
    },
}

impl SetupError {
    fn http(client: &'static str, error: &reqwest::Error) -> SetupError {
        SetupError::Http {
            client,
            reason: crate::support::error::with_sources(error),
        }
    }
}

/// An HTTP status as reqwest shows it: `404 Not Found`.
fn status_line(status: u16) -> String {
    reqwest::StatusCode::from_u16(status).map_or_else(|_| status.to_string(), |s| s.to_string())
}

/// A call Slack or Jira did not carry out, or a delivery that failed the same way before any
/// call (an entry that does not decode, its incident gone or unreadable, Jira not configured),
/// and whether asking again can help.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct CallError {
    pub message: String,
    /// False when retrying cannot help (a refused request, a missing channel).
    pub retryable: bool,
    /// The remote side's `Retry-After`.
    pub retry_after: Option<Duration>,
}

impl CallError {
    pub(crate) fn retryable(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retryable: true,
            retry_after: None,
        }
    }
    pub(crate) fn permanent(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retryable: false,
            retry_after: None,
        }
    }
}
