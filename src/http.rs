//! What sheriff's outgoing HTTP clients (GCS, Slack, Jira) share.

use std::time::Duration;

/// A client builder with sheriff's user agent and a whole-request timeout.
pub fn client_builder(timeout: Duration) -> reqwest::ClientBuilder {
    reqwest::Client::builder().timeout(timeout).user_agent(concat!("sheriff/", env!("CARGO_PKG_VERSION")))
}

/// The `Retry-After` header in seconds, when an answer carries one.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}
