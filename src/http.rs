//! What sheriff's outgoing HTTP clients (GCS, BigQuery, GitHub, Slack, Jira) share.

use std::time::Duration;

/// A client builder with sheriff's user agent and a whole-request timeout.
pub fn client_builder(timeout: Duration) -> reqwest::ClientBuilder {
    reqwest::Client::builder().timeout(timeout).user_agent(concat!("sheriff/", env!("CARGO_PKG_VERSION")))
}

/// A response body, refused once it grows past `max` bytes (the limit named by `setting`).
pub(crate) async fn read_limited(
    response: reqwest::Response,
    setting: &str,
    max: u64,
) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context as _;
    use futures::StreamExt as _;
    if response.content_length().is_some_and(|n| n > max) {
        anyhow::bail!("the answer is larger than {setting} ({max} bytes)");
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.context("reading the response body")?;
        if body.len() as u64 + chunk.len() as u64 > max {
            anyhow::bail!("the answer is larger than {setting} ({max} bytes)");
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
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
