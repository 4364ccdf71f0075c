//! Google Cloud Storage over its JSON API: list objects by prefix, download what sheriff reads.
//!
//! The base URL is a setting, so tests point it at a local fake. Requests answered 429 or 5xx,
//! and connection failures, are retried with exponential backoff and jitter, honouring
//! `Retry-After`.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;

use crate::config::{GcsSettings, Secret};

/// A small client for the two calls sheriff needs.
#[derive(Clone)]
pub struct GcsClient {
    http: reqwest::Client,
    api_url: String,
    token: Option<Secret>,
    max_attempts: u32,
}

/// One object of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub name: String,
    pub size: u64,
}

/// One level of a listing: objects directly under the prefix and, with a delimiter, the
/// "folders" below it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Listing {
    pub objects: Vec<Object>,
    pub prefixes: Vec<String>,
}

#[derive(Deserialize)]
struct ListPage {
    #[serde(default)]
    items: Vec<RawObject>,
    #[serde(default)]
    prefixes: Vec<String>,
    #[serde(rename = "nextPageToken")]
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
struct RawObject {
    name: String,
    #[serde(default)]
    size: Option<Size>,
}

/// An object's size: the JSON API sends it as a string (a uint64 in JSON); a number is taken
/// too, and anything else reads as 0.
#[derive(Deserialize)]
#[serde(untagged)]
enum Size {
    Text(String),
    Number(u64),
    Other(serde::de::IgnoredAny),
}

impl Size {
    fn bytes(&self) -> u64 {
        match self {
            Size::Text(s) => s.parse().unwrap_or(0),
            Size::Number(n) => *n,
            Size::Other(_) => 0,
        }
    }
}

/// An answer GCS gave with an error status, and its message.
#[derive(Debug)]
pub(crate) struct GcsError {
    pub status: u16,
    pub message: String,
}

impl std::fmt::Display for GcsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let reason = reqwest::StatusCode::from_u16(self.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or_default();
        write!(f, "GCS answered {} {reason}: {}", self.status, self.message)
    }
}

impl std::error::Error for GcsError {}

/// An object that was larger than the limit it was read with.
#[derive(Debug)]
pub struct TooLarge(pub u64);

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "over {} bytes, larger than the {}-byte limit; skipped", self.0, self.0)
    }
}

impl std::error::Error for TooLarge {}

/// Whether an error says the object is not there (404, 410): a retry will not find it.
pub(crate) fn is_gone(error: &anyhow::Error) -> bool {
    error.chain().any(|e| e.downcast_ref::<GcsError>().is_some_and(|g| matches!(g.status, 404 | 410)))
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    message: String,
}

impl GcsClient {
    pub fn new(settings: &GcsSettings) -> Result<GcsClient> {
        let http = crate::http::client_builder(Duration::from_secs(settings.timeout_secs))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .context("building the GCS HTTP client")?;
        Ok(GcsClient {
            http,
            api_url: settings.api_url.trim_end_matches('/').to_string(),
            token: settings.token.clone(),
            max_attempts: settings.max_attempts.max(1),
        })
    }

    /// Every object under `prefix` (all pages). With `delimiter = Some("/")`, one folder level.
    pub(crate) async fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        delimiter: Option<&str>,
    ) -> Result<Listing> {
        let mut listing = Listing::default();
        let mut page_token: Option<String> = None;
        loop {
            let mut url = reqwest::Url::parse(&format!("{}/storage/v1/b/", self.api_url))
                .with_context(|| format!("invalid GCS API URL {}", self.api_url))?;
            url.path_segments_mut()
                .map_err(|_| anyhow!("GCS API URL cannot take a path"))?
                .pop_if_empty()
                .extend([bucket, "o"]);
            {
                let mut q = url.query_pairs_mut();
                q.append_pair("prefix", prefix);
                q.append_pair("maxResults", "1000");
                q.append_pair("fields", "items(name,size),prefixes,nextPageToken");
                if let Some(d) = delimiter {
                    q.append_pair("delimiter", d);
                }
                if let Some(t) = &page_token {
                    q.append_pair("pageToken", t);
                }
            }
            let body = self.get(url).await.with_context(|| format!("listing gs://{bucket}/{prefix}"))?;
            let page: ListPage = serde_json::from_slice(&body)
                .with_context(|| format!("listing gs://{bucket}/{prefix}: unexpected response"))?;
            for o in page.items {
                let size = o.size.as_ref().map_or(0, Size::bytes);
                listing.objects.push(Object { name: o.name, size });
            }
            listing.prefixes.extend(page.prefixes);
            match page.next_page_token.filter(|t| !t.is_empty()) {
                Some(t) => page_token = Some(t),
                None => break,
            }
        }
        Ok(listing)
    }

    /// The content of one object.
    pub async fn download(&self, bucket: &str, name: &str) -> Result<Vec<u8>> {
        let url = self.media_url(bucket, name)?;
        self.get(url).await.with_context(|| format!("downloading gs://{bucket}/{name}"))
    }

    /// One object, written to a temporary file as it arrives (removed when the path is dropped),
    /// no more than `max_bytes` of it: memory holds one chunk, whatever the object's size.
    pub async fn download_to_file(
        &self,
        bucket: &str,
        name: &str,
        max_bytes: u64,
    ) -> Result<tempfile::TempPath> {
        use tokio::io::AsyncWriteExt as _;
        let url = self.media_url(bucket, name)?;
        let context = || format!("downloading gs://{bucket}/{name}");
        let mut response = self.send(url).await.with_context(context)?;
        let (file, path) = tempfile::NamedTempFile::new().context("creating a temporary file")?.into_parts();
        let mut out = tokio::fs::File::from_std(file);
        let mut read = 0u64;
        while let Some(chunk) =
            response.chunk().await.context("reading the response body").with_context(context)?
        {
            read += chunk.len() as u64;
            if read > max_bytes {
                return Err(anyhow::Error::new(TooLarge(max_bytes)).context(context()));
            }
            out.write_all(&chunk).await.context("writing a temporary file").with_context(context)?;
        }
        out.flush().await.context("writing a temporary file").with_context(context)?;
        Ok(path)
    }

    fn media_url(&self, bucket: &str, name: &str) -> Result<reqwest::Url> {
        let mut url = reqwest::Url::parse(&format!("{}/storage/v1/b/", self.api_url))
            .with_context(|| format!("invalid GCS API URL {}", self.api_url))?;
        url.path_segments_mut()
            .map_err(|_| anyhow!("GCS API URL cannot take a path"))?
            .pop_if_empty()
            .extend([bucket, "o", name]);
        url.query_pairs_mut().append_pair("alt", "media");
        Ok(url)
    }

    async fn get(&self, url: reqwest::Url) -> Result<Vec<u8>> {
        let response = self.send(url).await?;
        Ok(response.bytes().await.context("reading the response body")?.to_vec())
    }

    /// Sends a GET, retrying 429, 5xx and connection failures; the response once it succeeds.
    async fn send(&self, url: reqwest::Url) -> Result<reqwest::Response> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut request = self.http.get(url.clone());
            if let Some(token) = &self.token {
                request = request.bearer_auth(token.expose());
            }
            let (error, retry_after): (anyhow::Error, Option<Duration>) = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    let retry_after = crate::http::retry_after(response.headers());
                    if status.is_success() {
                        return Ok(response);
                    }
                    let body = response.text().await.unwrap_or_default();
                    let message = serde_json::from_str::<ErrorBody>(&body)
                        .map(|e| e.error.message)
                        .unwrap_or_else(|_| body.chars().take(200).collect());
                    let error = anyhow::Error::new(GcsError { status: status.as_u16(), message });
                    if status.as_u16() == 429 || status.is_server_error() {
                        (error, retry_after)
                    } else {
                        return Err(error);
                    }
                }
                Err(e) => (anyhow!(e).context("request to GCS failed"), None),
            };
            if attempt >= self.max_attempts {
                bail!("{error:#} (gave up after {attempt} attempts)");
            }
            let wait =
                retry_after.map(|d| d.min(Duration::from_secs(60))).unwrap_or_else(|| backoff(attempt));
            tracing::debug!(%url, attempt, wait_ms = wait.as_millis() as u64, "retrying GCS request: {error:#}");
            tokio::time::sleep(wait).await;
        }
    }
}

/// Exponential backoff from 200 ms, capped at 10 s, with up to 50 % jitter.
pub fn backoff(attempt: u32) -> Duration {
    let base = 200u64.saturating_mul(1 << attempt.min(10).saturating_sub(1)).min(10_000);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let jitter = base / 2 * u64::from(nanos % 1000) / 1000;
    Duration::from_millis(base + jitter)
}

/// `gs://bucket/prefix` → (bucket, prefix).
pub(crate) fn parse_gs_url(source: &str) -> Option<(String, String)> {
    let rest = source.strip_prefix("gs://")?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    (!bucket.is_empty()).then(|| (bucket.to_string(), prefix.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gs_urls() {
        assert_eq!(
            parse_gs_url("gs://test-platform-results/logs/job"),
            Some(("test-platform-results".into(), "logs/job".into()))
        );
        assert_eq!(parse_gs_url("gs://bucket"), Some(("bucket".into(), String::new())));
        assert_eq!(parse_gs_url("gs:///x"), None);
        assert_eq!(parse_gs_url("/data"), None);
    }

    #[test]
    fn a_listing_reads_sizes_as_the_json_api_sends_them() {
        let page: ListPage = serde_json::from_str(
            r#"{"items": [{"name": "a", "size": "1024"}, {"name": "b", "size": 7}, {"name": "c", "size": -1},
                          {"name": "d"}], "prefixes": ["logs/x/"], "nextPageToken": "t"}"#,
        )
        .unwrap();
        let sizes: Vec<u64> = page.items.iter().map(|o| o.size.as_ref().map_or(0, Size::bytes)).collect();
        assert_eq!(sizes, [1024, 7, 0, 0]);
        assert_eq!(page.next_page_token.as_deref(), Some("t"));
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(1) >= Duration::from_millis(200) && backoff(1) < Duration::from_millis(301));
        assert!(backoff(3) >= Duration::from_millis(800));
        assert!(backoff(30) <= Duration::from_millis(15_000));
    }
}
