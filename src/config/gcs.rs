//! `[gcs]`: the Google Cloud Storage client.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Secret;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GcsSettings {
    /// Base URL of the GCS JSON API; tests point it at a local fake.
    pub api_url: String,
    /// Parallel downloads.
    pub concurrency: usize,
    /// Seconds before one request times out.
    pub timeout_secs: u64,
    /// Attempts for a request answered 429 or 5xx.
    pub max_attempts: u32,
    /// OAuth access token for a private bucket. Environment or file only; public buckets need none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// A file holding the access token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
}

impl Default for GcsSettings {
    fn default() -> Self {
        Self {
            api_url: "https://storage.googleapis.com".into(),
            concurrency: 16,
            timeout_secs: 60,
            max_attempts: 5,
            token: None,
            token_file: None,
        }
    }
}
