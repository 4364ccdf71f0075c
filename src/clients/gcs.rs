//! Google Cloud Storage over its JSON API: list objects by prefix, download what sheriff reads.
//!
//! The base URL is a setting, so tests point it at a local fake. Requests answered 429 or 5xx,
//! and connection failures, are retried with exponential backoff and jitter, honouring
//! `Retry-After`.

use std::time::Duration;

use serde::Deserialize;

use super::google::ErrorBody;
use crate::config::{GcsSettings, Secret};
use crate::support::error::with_sources;

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

/// A GCS call that did not give sheriff what it asked for: the call (`downloading gs://…`) and
/// why.
#[derive(Debug, thiserror::Error)]
#[error("{call}: {failure}")]
pub struct GcsError {
    pub call: String,
    pub failure: Failure,
}

/// Why a GCS call failed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// GCS answered with an error status, and this message.
    #[error("GCS answered {status} {}: {message}", canonical_reason(*status))]
    Status { status: u16, message: String },
    /// The object was larger than the limit it was read with.
    #[error("over {max} bytes, larger than the {max}-byte limit; skipped")]
    TooLarge { max: u64 },
    /// The request got no answer (connection, timeout), with the transport's reasons.
    #[error("request to GCS failed: {0}")]
    Transport(String),
    #[error("reading the response body: {0}")]
    Body(String),
    /// An answer sheriff cannot read.
    #[error("unexpected response: {0}")]
    Unreadable(serde_json::Error),
    /// The temporary file a download is written to: creating or writing it.
    #[error("{doing} a temporary file: {error}")]
    Spool {
        doing: &'static str,
        error: std::io::Error,
    },
    /// The API URL setting cannot take an object's path.
    #[error("invalid GCS API URL {0}")]
    Url(String),
    /// The HTTP client could not be built.
    #[error("{0}")]
    Client(String),
    /// Asking again did not help; the last attempt's failure.
    #[error("{last} (gave up after {attempts} attempts)")]
    GaveUp { last: Box<Failure>, attempts: u32 },
}

impl GcsError {
    /// Whether the object is not there (404, 410): a retry will not find it.
    pub(crate) fn is_gone(&self) -> bool {
        matches!(
            self.failure,
            Failure::Status {
                status: 404 | 410,
                ..
            }
        )
    }
}

fn canonical_reason(status: u16) -> &'static str {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or_default()
}

impl GcsClient {
    pub fn new(settings: &GcsSettings) -> Result<GcsClient, GcsError> {
        let http = crate::support::http::client_builder(Duration::from_secs(settings.timeout_secs))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| GcsError {
                call: "building the GCS HTTP client".into(),
                failure: Failure::Client(with_sources(&e)),
            })?;
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
    ) -> Result<Listing, GcsError> {
        let failed = |failure| GcsError {
            call: format!("listing gs://{bucket}/{prefix}"),
            failure,
        };

        let mut listing = Listing::default();
        let mut page_token: Option<String> = None;
        loop {
            let mut url = self.objects_url(&[bucket, "o"]).map_err(failed)?;
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
            let body = self.get(url).await.map_err(failed)?;
            let page: ListPage =
                serde_json::from_slice(&body).map_err(|e| failed(Failure::Unreadable(e)))?;
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
    pub async fn download(&self, bucket: &str, name: &str) -> Result<Vec<u8>, GcsError> {
        let failed = |failure| GcsError {
            call: format!("downloading gs://{bucket}/{name}"),
            failure,
        };
        let url = self.media_url(bucket, name).map_err(failed)?;
        self.get(url).await.map_err(failed)
    }

    /// One object, written to a temporary file as it arrives (removed when the path is dropped),
    /// no more than `max_bytes` of it: memory holds one chunk, whatever the object's size.
    pub async fn download_to_file(
        &self,
        bucket: &str,
        name: &str,
        max_bytes: u64,
    ) -> Result<tempfile::TempPath, GcsError> {
        let failed = |failure| GcsError {
            call: format!("downloading gs://{bucket}/{name}"),
            failure,
        };
        let url = self.media_url(bucket, name).map_err(failed)?;
        let response = self.send(url).await.map_err(failed)?;
        spool(response, max_bytes).await.map_err(failed)
    }

    fn media_url(&self, bucket: &str, name: &str) -> Result<reqwest::Url, Failure> {
        let mut url = self.objects_url(&[bucket, "o", name])?;
        url.query_pairs_mut().append_pair("alt", "media");
        Ok(url)
    }

    /// `…/storage/v1/b/` and then `segments`, each escaped as one path segment.
    fn objects_url(&self, segments: &[&str]) -> Result<reqwest::Url, Failure> {
        let mut url = reqwest::Url::parse(&format!("{}/storage/v1/b/", self.api_url))
            .map_err(|_| Failure::Url(self.api_url.clone()))?;
        url.path_segments_mut()
            .map_err(|_| Failure::Url(self.api_url.clone()))?
            .pop_if_empty()
            .extend(segments);
        Ok(url)
    }

    async fn get(&self, url: reqwest::Url) -> Result<Vec<u8>, Failure> {
        let response = self.send(url).await?;
        let body = response
            .bytes()
            .await
            .map_err(|e| Failure::Body(with_sources(&e)))?;
        Ok(body.to_vec())
    }

    /// Sends a GET, retrying 429, 5xx and connection failures; the response once it succeeds.
    async fn send(&self, url: reqwest::Url) -> Result<reqwest::Response, Failure> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut request = self.http.get(url.clone());
            if let Some(token) = &self.token {
                request = request.bearer_auth(token.expose());
            }
            let (error, retry_after) = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    let retry_after = crate::support::http::retry_after(response.headers());
                    if status.is_success() {
                        return Ok(response);
                    }
                    let body = response.text().await.unwrap_or_default();
                    let message = serde_json::from_str::<ErrorBody>(&body)
                        .map(|e| e.error.message)
                        .unwrap_or_else(|_| body.chars().take(200).collect());
                    let error = Failure::Status {
                        status: status.as_u16(),
                        message,
                    };
                    if status.as_u16() == 429 || status.is_server_error() {
                        (error, retry_after)
                    } else {
                        return Err(error);
                    }
                }
                Err(e) => (Failure::Transport(with_sources(&e)), None),
            };
            if attempt >= self.max_attempts {
                return Err(Failure::GaveUp {
                    last: Box::new(error),
                    attempts: attempt,
                });
            }
            let wait = retry_after
                .map(|d| d.min(Duration::from_secs(60)))
                .unwrap_or_else(|| backoff(attempt));
            tracing::debug!(%url, attempt, wait_ms = wait.as_millis() as u64, "retrying GCS request: {error}");
            tokio::time::sleep(wait).await;
        }
    }
}

/// A response's body written to a temporary file as it arrives, no more than `max_bytes` of it.
async fn spool(
    mut response: reqwest::Response,
    max_bytes: u64,
) -> Result<tempfile::TempPath, Failure> {
    use tokio::io::AsyncWriteExt as _;
    let (file, path) = tempfile::NamedTempFile::new()
        .map_err(|error| Failure::Spool {
            doing: "creating",
            error,
        })?
        .into_parts();
    let mut out = tokio::fs::File::from_std(file);
    let mut read = 0u64;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| Failure::Body(with_sources(&e)))?
    {
        read += chunk.len() as u64;
        if read > max_bytes {
            return Err(Failure::TooLarge { max: max_bytes });
        }
        out.write_all(&chunk)
            .await
            .map_err(|error| Failure::Spool {
                doing: "writing",
                error,
            })?;
    }
    out.flush().await.map_err(|error| Failure::Spool {
        doing: "writing",
        error,
    })?;
    Ok(path)
}

/// Exponential backoff from 200 ms, capped at 10 s, with up to 50 % jitter.
pub fn backoff(attempt: u32) -> Duration {
    let base = 200u64
        .saturating_mul(1 << attempt.min(10).saturating_sub(1))
        .min(10_000);
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
        assert_eq!(
            parse_gs_url("gs://bucket"),
            Some(("bucket".into(), String::new()))
        );
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
        let sizes: Vec<u64> = page
            .items
            .iter()
            .map(|o| o.size.as_ref().map_or(0, Size::bytes))
            .collect();
        assert_eq!(sizes, [1024, 7, 0, 0]);
        assert_eq!(page.next_page_token.as_deref(), Some("t"));
    }

    #[test]
    fn a_missing_object_is_gone_and_its_error_names_the_call_and_the_answer() {
        let gone = GcsError {
            call: "downloading gs://b/o".into(),
            failure: Failure::Status {
                status: 404,
                message: "No such object: b/o".into(),
            },
        };
        assert!(gone.is_gone());
        assert_eq!(
            gone.to_string(),
            "downloading gs://b/o: GCS answered 404 Not Found: No such object: b/o"
        );
        let busy = Failure::Status {
            status: 503,
            message: "later".into(),
        };
        let gave_up = GcsError {
            call: "listing gs://b/p".into(),
            failure: Failure::GaveUp {
                last: Box::new(busy),
                attempts: 3,
            },
        };
        assert!(!gave_up.is_gone());
        assert!(
            gave_up
                .to_string()
                .ends_with("later (gave up after 3 attempts)"),
            "{gave_up}"
        );
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(
            backoff(1) >= Duration::from_millis(200) && backoff(1) < Duration::from_millis(301)
        );
        assert!(backoff(3) >= Duration::from_millis(800));
        assert!(backoff(30) <= Duration::from_millis(15_000));
    }
}
