//! What sheriff's outgoing HTTP clients (GCS, BigQuery, GitHub, Slack, Jira) share.

use std::time::Duration;

/// A client builder with sheriff's user agent and a whole-request timeout.
pub fn client_builder(timeout: Duration) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .timeout(timeout)
        .user_agent(concat!("sheriff/", env!("CARGO_PKG_VERSION")))
}

/// A response body, refused once it grows past `max` bytes (the limit named by `setting`).
pub(crate) async fn read_limited(
    response: reqwest::Response,
    setting: &'static str,
    max: u64,
) -> Result<Vec<u8>, BodyError> {
    use futures::StreamExt as _;
    if response.content_length().is_some_and(|n| n > max) {
        return Err(BodyError::TooLarge { setting, max });
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| BodyError::Read(super::error::with_sources(&e)))?;
        if body.len() as u64 + chunk.len() as u64 > max {
            return Err(BodyError::TooLarge { setting, max });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Why a response's body was not read whole.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// It grew past `max` bytes, the limit named by `setting`.
    #[error("the answer is larger than {setting} ({max} bytes)")]
    TooLarge { setting: &'static str, max: u64 },
    /// The connection failed while it arrived, with the transport's reasons.
    #[error("reading the response body: {0}")]
    Read(String),
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
pub(crate) fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
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
