//! `[bigquery]`: the BigQuery source, its limits, and the intervals table it reads.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ConfigError, Secret};

/// The BigQuery source (`sheriff ingest bq://PROJECT/DATASET`); `[bigquery]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BigQuerySettings {
    /// Base URL of the BigQuery REST API; tests point it at an emulator or a local fake.
    pub api_url: String,
    /// The most bytes one query may bill (`maximumBytesBilled`): BigQuery refuses a query that
    /// would bill more, before it runs.
    pub max_bytes_billed: u64,
    /// Hours before the watermark an incremental ingest reads again, for rows loaded late.
    pub overlap_hours: u32,
    /// Rows asked for per page of results.
    pub page_rows: u32,
    /// The largest response body read, in bytes; a larger page is an error.
    pub max_response_bytes: u64,
    /// Seconds before one request times out.
    pub timeout_secs: u64,
    /// Attempts for a request answered 429 or 5xx (with backoff, honouring `Retry-After`).
    pub max_attempts: u32,
    /// OAuth access token. Environment or file only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// A file holding the access token; read again for every query, so a refreshed token is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// A service-account key file (JSON): sheriff signs a JWT with its key and exchanges it at
    /// the key's `token_uri` for an access token, renewed before it expires.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials_file: Option<PathBuf>,
    /// The intervals table read with `ingest.intervals = "bigquery"`: `TABLE` in the source's
    /// dataset, or `DATASET.TABLE` in its project (the CI loads them to `ci_data_autodl`).
    pub intervals_table: String,
    /// The most interval rows read for one run; a run with more is left without interval
    /// evidence, as an interval file over `ingest.max_interval_file_bytes` is.
    pub max_interval_rows: u64,
}

impl Default for BigQuerySettings {
    fn default() -> Self {
        Self {
            api_url: "https://bigquery.googleapis.com".into(),
            max_bytes_billed: 10 * 1024 * 1024 * 1024,
            overlap_hours: 48,
            page_rows: 10_000,
            max_response_bytes: 64 * 1024 * 1024,
            timeout_secs: 120,
            max_attempts: 5,
            token: None,
            token_file: None,
            credentials_file: None,
            intervals_table: "e2e_intervals".into(),
            max_interval_rows: 250_000,
        }
    }
}

impl BigQuerySettings {
    /// `bigquery.intervals_table` goes into the SQL as a table path (identifiers cannot be query
    /// parameters): `TABLE` or `DATASET.TABLE`, each a plain BigQuery name.
    pub(super) fn validate_intervals_table(&self) -> Result<(), ConfigError> {
        let table = &self.intervals_table;
        let parts: Vec<&str> = table.split('.').collect();
        let plain = |p: &&str| {
            (1..=1024).contains(&p.len())
                && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if parts.len() > 2 || !parts.iter().all(plain) {
            let why = format!("`{table}` is not TABLE or DATASET.TABLE (letters, digits and `_`)");
            return Err(ConfigError::Invalid(format!(
                "`bigquery.intervals_table`: {why}"
            )));
        }
        Ok(())
    }
}
