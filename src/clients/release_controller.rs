//! The release controller (`openshift/release-controller`): the changelog between two payloads.
//!
//! `GET /changelog?from=TAG&to=TAG&format=json` answers the changelog `oc adm release info
//! --changelog` builds: `{"from": {…}, "to": {…}, "components": […], "updatedImages": [{"name",
//! "path": "https://github.com/openshift/<repo>", "commits": [{"subject", "pullID", "pullURL",
//! …}]}], "newImages": […]}`. An unknown tag is `400` with a plain-text reason, a failure `500`.
//! The body is returned as it came, so the caller can keep it; [`pull_requests`] reads it.

use std::time::Duration;

use serde::Deserialize;

use super::SetupError;
use crate::config::ReleaseControllerSettings;
use crate::support::error::with_sources;
use crate::support::http::BodyError;

type Result<T, E = ReleaseControllerError> = std::result::Result<T, E>;

/// A changelog sheriff could not get or read.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseControllerError {
    /// The request to `url` got no answer (connection, timeout), with the transport's reasons.
    #[error("release controller {url}: {reason}")]
    Transport { url: String, reason: String },
    /// The answer of `url` could not be read whole (too large, or cut off).
    #[error("release controller {url}: reading the body: {error}")]
    Body { url: String, error: BodyError },
    /// The release controller answered `url` with an error status (`400` for an unknown tag),
    /// and this reason.
    #[error("release controller {url} answered {}: {reason}", super::status_line(*status))]
    Status {
        url: String,
        status: u16,
        reason: String,
    },
    #[error("the changelog is not UTF-8: {0}")]
    NotUtf8(std::string::FromUtf8Error),
    #[error("the changelog is not the release controller's JSON: {0}")]
    NotJson(serde_json::Error),
}

/// Bytes of a changelog read at most.
const MAX_BODY: usize = 8 << 20;

#[derive(Deserialize, Default)]
#[serde(default)]
struct ChangeLog {
    #[serde(rename = "updatedImages")]
    updated_images: Vec<Image>,
    #[serde(rename = "newImages")]
    new_images: Vec<Image>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Image {
    name: String,
    path: String,
    commits: Vec<Commit>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Commit {
    subject: String,
    #[serde(rename = "pullID")]
    pull_id: u64,
    #[serde(rename = "pullURL")]
    pull_url: String,
}

/// One pull request a changelog lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedPull {
    /// `openshift/name`, from the image's source path (else the image's name).
    pub repository: String,
    pub number: u64,
    /// The changelog's link when it is a plain web address, else the repository's own.
    pub url: String,
    /// The commit's subject.
    pub title: String,
}

/// `openshift/name` of a GitHub URL (`https://github.com/openshift/name`), else the text itself.
fn repository_of(path: &str) -> String {
    path.trim_end_matches('/')
        .trim_end_matches(".git")
        .strip_prefix("https://github.com/")
        .unwrap_or(path)
        .to_string()
}

/// The pull requests of a changelog body, in its order (updated images, then new ones). A
/// commit without a pull request is left out, and a pull request several images of one
/// repository list is there once.
pub fn pull_requests(body: &str) -> Result<Vec<ChangedPull>> {
    let log: ChangeLog = serde_json::from_str(body).map_err(ReleaseControllerError::NotJson)?;
    let mut out: Vec<ChangedPull> = Vec::new();
    for image in log.updated_images.iter().chain(&log.new_images) {
        let repository = if image.path.is_empty() {
            image.name.clone()
        } else {
            repository_of(&image.path)
        };
        for c in image.commits.iter().filter(|c| c.pull_id > 0) {
            // the changelog's link only when it is a plain web address
            let url = match crate::support::render::web_link(&c.pull_url) {
                Some(u) => u.to_string(),
                None => format!("https://github.com/{repository}/pull/{}", c.pull_id),
            };
            if out.iter().any(|p| p.url == url) {
                continue; // one PR in several images of one repository
            }
            out.push(ChangedPull {
                repository: repository.clone(),
                number: c.pull_id,
                url,
                title: c.subject.clone(),
            });
        }
    }
    Ok(out)
}

/// A release controller client; each call names the controller's base URL (one per
/// architecture, `release_controller.urls`).
pub struct ReleaseController {
    http: reqwest::Client,
}

impl ReleaseController {
    pub fn new(settings: &ReleaseControllerSettings) -> Result<ReleaseController, SetupError> {
        let http =
            crate::support::http::client_builder(Duration::from_secs(settings.timeout_secs.max(1)))
                .build()
                .map_err(|e| SetupError::http("release controller", &e))?;
        Ok(ReleaseController { http })
    }

    /// The changelog between two payloads, as the release controller's JSON.
    pub async fn changelog(&self, base: &str, from: &str, to: &str) -> Result<String> {
        let url = format!("{}/changelog", base.trim_end_matches('/'));
        let response = self
            .http
            .get(&url)
            .query(&[("from", from), ("to", to), ("format", "json")])
            .send()
            .await
            .map_err(|e| ReleaseControllerError::Transport {
                url: url.clone(),
                reason: with_sources(&e),
            })?;
        let status = response.status();
        // stopped at the limit as it arrives: a body without end holds no more than that
        let body =
            crate::support::http::read_limited(response, "the changelog limit", MAX_BODY as u64)
                .await
                .map_err(|error| ReleaseControllerError::Body {
                    url: url.clone(),
                    error,
                })?;
        if !status.is_success() {
            let reason: String = String::from_utf8_lossy(&body[..body.len().min(200)])
                .trim()
                .to_string();
            return Err(ReleaseControllerError::Status {
                url,
                status: status.as_u16(),
                reason,
            });
        }
        String::from_utf8(body).map_err(ReleaseControllerError::NotUtf8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_changelog_without_end_is_refused_at_the_limit_not_read_until_the_timeout() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 4096];
            let _ = socket.read(&mut head).await;
            let _ = socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n")
                .await;
            let chunk = vec![b' '; 64 * 1024];
            // no length, no end: the body goes on as long as it is read
            while socket.write_all(&chunk).await.is_ok() {}
        });
        crate::init_crypto();
        let settings = ReleaseControllerSettings {
            timeout_secs: 5,
            ..Default::default()
        };
        let started = std::time::Instant::now();
        let err = ReleaseController::new(&settings)
            .unwrap()
            .changelog(&base, "a", "b")
            .await
            .unwrap_err();
        assert!(
            format!("{err:#}").contains("larger than the changelog limit"),
            "{err:#}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "read for {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_repository_is_named_by_its_github_path() {
        assert_eq!(
            repository_of("https://github.com/openshift/image-registry/"),
            "openshift/image-registry"
        );
        assert_eq!(
            repository_of("https://github.com/openshift/origin.git"),
            "openshift/origin"
        );
        assert_eq!(repository_of("installer"), "installer");
    }
}
