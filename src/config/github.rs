//! `[github]`: GitHub, read for the commits outside the payload, and the repositories read.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ConfigError, HOUR, Secret};

/// GitHub, read for the changes outside the payload: the commits of the CI harness, the step
/// registry and origin's monitor tests merged in a regression's onset window; `[github]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GitHubSettings {
    /// Read GitHub at all. Off by default, like the release controller without URLs: a sheriff
    /// that cannot reach GitHub never waits on it.
    pub enabled: bool,
    /// Base URL of the GitHub REST API; tests point it at a local fake.
    pub api_url: String,
    /// Seconds before one request times out.
    pub timeout_secs: u64,
    /// Pages of 100 commits read at most per repository and window (`Link: rel="next"`).
    pub max_pages: u32,
    /// The largest response body read, in bytes; a larger page is an error.
    pub max_response_bytes: u64,
    /// The longest rate-limit wait (`Retry-After`, `x-ratelimit-reset`) a cycle sits out before
    /// asking once more; a longer one leaves the changes pending until a later cycle.
    pub max_wait_secs: u64,
    /// A token (fine-grained, read-only) for 5,000 requests an hour instead of 60. Environment
    /// or file only; public repositories need none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// A file holding the token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// The repositories outside the payload whose commits are suspects, by platform (`*`: every
    /// platform), each optionally limited to a path.
    pub repositories: Vec<OutsideRepository>,
}

/// One repository outside the payload: `{ platform = "metal", repository =
/// "openshift-metal3/dev-scripts" }`, `{ platform = "*", repository = "openshift/origin", path =
/// "pkg/monitortests" }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutsideRepository {
    /// The platform whose CI clusters it shapes; `*` for all of them.
    pub platform: String,
    /// `owner/name`.
    pub repository: String,
    /// Only commits touching this path (GitHub's `path=`); empty: the whole repository.
    #[serde(default)]
    pub path: String,
}

impl OutsideRepository {
    /// Whether it shapes only one platform's clusters (not every platform's).
    pub fn for_one_platform(&self) -> bool {
        self.platform != "*"
    }
}

impl Default for GitHubSettings {
    fn default() -> Self {
        let repo = |platform: &str, repository: &str, path: &str| OutsideRepository {
            platform: platform.into(),
            repository: repository.into(),
            path: path.into(),
        };
        Self {
            enabled: false,
            api_url: "https://api.github.com".into(),
            timeout_secs: 10,
            max_pages: 5,
            max_response_bytes: 8 * 1024 * 1024,
            max_wait_secs: 5,
            token: None,
            token_file: None,
            repositories: vec![
                repo("metal", "openshift-metal3/dev-scripts", ""),
                repo("*", "openshift/release", "ci-operator/step-registry"),
                repo("*", "openshift/origin", "pkg/monitortests"),
            ],
        }
    }
}

impl GitHubSettings {
    /// GitHub's numbers within range, and each outside repository `owner/name` with a relative
    /// path, so neither can leave the `/repos/{owner}/{repo}/commits` request it is put in.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let gh = self;
        let ranges: [(&str, u64, u64, u64); 4] = [
            ("github.timeout_secs", gh.timeout_secs, 1, HOUR),
            ("github.max_pages", gh.max_pages.into(), 1, 100),
            (
                "github.max_response_bytes",
                gh.max_response_bytes,
                1_024,
                1 << 30,
            ),
            ("github.max_wait_secs", gh.max_wait_secs, 0, 600),
        ];

        if let Some((key, _, min, max)) = ranges
            .iter()
            .find(|(_, v, min, max)| !(min..=max).contains(&v))
        {
            return Err(ConfigError::Invalid(format!(
                "`{key}`: must be between {min} and {max}"
            )));
        }

        let plain = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };

        for r in &self.repositories {
            let named = r
                .repository
                .split_once('/')
                .is_some_and(|(o, n)| plain(o) && plain(n) && n != "..");
            let path_ok = r.path.is_empty()
                || (!r.path.starts_with('/')
                    && r.path.split('/').all(|p| plain(p) && p != ".." && p != "."));
            let why = if !named {
                "a repository is owner/name"
            } else if !path_ok {
                "a path is relative, like ci-operator/step-registry"
            } else if r.platform.trim().is_empty() {
                "a platform is named, or * for every platform"
            } else {
                continue;
            };
            return Err(ConfigError::Invalid(format!(
                "`github.repositories` ({}): {why}",
                r.repository
            )));
        }

        Ok(())
    }
}
