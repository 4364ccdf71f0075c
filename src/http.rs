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

/// The token of an `Authorization: Bearer …` value; the scheme in any case, as RFC 9110 has it.
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bearer_scheme_reads_in_any_case() {
        assert_eq!(super::bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(super::bearer_token("bearer abc "), Some("abc"));
        assert_eq!(super::bearer_token("BEARER  abc"), Some("abc"));
        assert_eq!(super::bearer_token("Basic abc"), None);
        assert_eq!(super::bearer_token("Bearer "), None);
        assert_eq!(super::bearer_token("Bearerabc"), None);
    }
}
