//! BigQuery over its REST API (v2): `jobs.query`, then `getQueryResults` page by page.
//!
//! Every query carries `maximumBytesBilled` (BigQuery refuses, before running it, a query that
//! would bill more), the labels `app=sheriff` and `query=NAME`, and its values as named query
//! parameters, never spliced into the SQL. A dry run first logs the bytes it would scan (an
//! API that refuses dry runs only loses the estimate). Requests answered 429, 5xx or
//! `rateLimitExceeded` are retried with backoff, honouring `Retry-After`; a refused query
//! (the bytes cap, a permission) is an error naming the query and the cap. The base URL is a
//! setting, so tests point it at an emulator or a local fake.

pub mod service_account;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use super::google::{ErrorBody, ErrorItem};
use crate::config::{BigQuerySettings, Secret};
use crate::support::error::with_sources;

type Result<T, E = BigQueryError> = std::result::Result<T, E>;

/// How long one query may take to finish, polled in steps of [`POLL_MS`].
const MAX_QUERY_WAIT: Duration = Duration::from_secs(30 * 60);

/// How long one `getQueryResults` call waits for the query to finish before answering.
const POLL_MS: u64 = 10_000;

/// The reasons BigQuery gives for a query it will not run as asked: retrying does not help.
const REFUSED: [&str; 5] = [
    "bytesBilledLimitExceeded",
    "accessDenied",
    "quotaExceeded",
    "billingNotEnabled",
    "responseTooLarge",
];

/// A small client for the calls sheriff needs, billed to one project.
#[derive(Clone)]
pub struct BigQueryClient {
    http: reqwest::Client,
    api_url: String,
    /// The project queries run (and are billed) in.
    project: String,
    credentials: Credentials,
    max_bytes_billed: u64,
    page_rows: u32,
    max_response_bytes: u64,
    max_attempts: u32,
}

/// Where the access token comes from: the environment (read once), or a file read again for
/// every query so that a token refreshed beside sheriff is used.
#[derive(Clone)]
enum Credentials {
    Token(Secret),
    File(PathBuf),
    /// A service-account key, exchanged for tokens as they are needed.
    ServiceAccount(std::sync::Arc<service_account::ServiceAccount>),
}

/// A value bound to a named parameter (`@name` in the SQL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    Int(i64),
    Text(String),
}

/// One query: a name (its `query` label, and what errors call it), the SQL and its parameters.
#[derive(Debug, Clone)]
pub struct Query {
    pub name: &'static str,
    pub sql: String,
    pub params: Vec<(&'static str, Param)>,
}

/// One row of a result: each column's value as BigQuery sends it (text), or None for NULL.
pub type Row = Vec<Option<String>>;

/// A BigQuery call that did not give sheriff what it asked for.
#[derive(Debug, thiserror::Error)]
pub enum BigQueryError {
    /// No credentials, or a token file that gave none; the text says which and why.
    #[error("{0}")]
    Credentials(String),
    /// The service-account key gave no token.
    #[error(transparent)]
    Key(#[from] service_account::KeyError),
    /// The HTTP client could not be built.
    #[error("building the BigQuery HTTP client: {0}")]
    Client(String),
    /// The API URL setting cannot take a query's path.
    #[error("invalid BigQuery API URL {0}")]
    Url(String),
    /// A call made for `query` got no usable answer.
    #[error("query `{query}`: {failure}")]
    Call {
        query: &'static str,
        failure: Failure,
    },
    /// An answer that asking again will not change (the bytes cap, a permission), with what to
    /// do about it when sheriff knows.
    #[error("BigQuery {} query `{query}`{hint}: {answer}", if *refused { "refused" } else { "failed" })]
    Refused {
        query: &'static str,
        refused: bool,
        hint: String,
        answer: Answer,
    },
    #[error("query `{0}`: BigQuery did not finish it and gave no job to wait for")]
    NoJob(&'static str),
    #[error("query `{query}` did not finish within {secs} s")]
    Unfinished { query: &'static str, secs: u64 },
    /// The query ran and failed, for this reason.
    #[error("query `{query}` failed: {reason}")]
    Failed { query: &'static str, reason: String },
    #[error("the dry run gave no totalBytesProcessed")]
    NoEstimate,
    /// A result row of another width than the schema.
    #[error("a result row has {columns} columns, the schema {width}")]
    RaggedRow { columns: usize, width: usize },
    /// A nested value (a record, an array) where sheriff reads scalars.
    #[error("a nested value ({0}) where sheriff reads scalars")]
    Nested(Value),
}

/// Why one call got no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// BigQuery answered with an error status.
    #[error(transparent)]
    Status(Answer),
    /// The answer could not be read whole (too large, or cut off).
    #[error("reading BigQuery's answer: {0}")]
    Body(crate::support::http::BodyError),
    #[error("unexpected answer from BigQuery: {0}")]
    Unreadable(serde_json::Error),
    /// The request got no answer (connection, timeout), with the transport's reasons.
    #[error("request to BigQuery failed: {0}")]
    Transport(String),
    /// Asking again did not help; the last attempt's failure.
    #[error("{last} (gave up after {attempts} attempts)")]
    GaveUp { last: Box<Failure>, attempts: u32 },
}

/// An answer BigQuery gave with an error status: the first error's reason and the message.
#[derive(Debug, thiserror::Error)]
#[error("BigQuery answered {status} {reason}: {message}")]
pub struct Answer {
    pub status: u16,
    pub reason: String,
    pub message: String,
}

impl Answer {
    fn retryable(&self) -> bool {
        self.status == 429 || self.status >= 500 || self.reason == "rateLimitExceeded"
    }
}

/// The fields of a `jobs.query` or `getQueryResults` answer sheriff reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueryResponse {
    #[serde(default)]
    job_complete: bool,
    job_reference: Option<JobReference>,
    schema: Option<Schema>,
    #[serde(default)]
    rows: Vec<RawRow>,
    page_token: Option<String>,
    total_bytes_processed: Option<String>,
    #[serde(default)]
    errors: Vec<ErrorItem>,
}

#[derive(Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct JobReference {
    job_id: String,
    location: Option<String>,
}

#[derive(Deserialize)]
struct Schema {
    #[serde(default)]
    fields: Vec<Field>,
}

#[derive(Deserialize)]
struct Field {
    name: String,
}

#[derive(Deserialize)]
struct RawRow {
    f: Vec<Cell>,
}

#[derive(Deserialize)]
struct Cell {
    v: Value,
}

/// A query's result, read one page at a time so a large result is never held whole.
pub struct Pages<'a> {
    client: &'a BigQueryClient,
    query: &'static str,
    job: Option<JobReference>,
    columns: Vec<String>,
    first: Option<Vec<Row>>,
    page_token: Option<String>,
    /// Rows read so far, and pages.
    pub rows_read: u64,
    pub pages_read: u64,
}

impl Pages<'_> {
    /// The columns' names, in order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The next page of rows, or None after the last.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Row>>> {
        if let Some(rows) = self.first.take() {
            return Ok(Some(self.counted(rows)));
        }
        let (Some(token), Some(job)) = (self.page_token.take(), self.job.clone()) else {
            return Ok(None);
        };
        let page = self.client.results(self.query, &job, Some(&token)).await?;
        self.page_token = page.page_token.clone().filter(|t| !t.is_empty());
        let rows = rows_of(page.rows, self.columns.len())?;
        Ok(Some(self.counted(rows)))
    }

    fn counted(&mut self, rows: Vec<Row>) -> Vec<Row> {
        self.rows_read += rows.len() as u64;
        self.pages_read += 1;
        rows
    }
}

impl BigQueryClient {
    /// A client billing `project`. Credentials are required: without a token (environment or
    /// file) no query is sent.
    pub fn new(settings: &BigQuerySettings, project: &str) -> Result<BigQueryClient> {
        let credentials = match (&settings.credentials_file, &settings.token_file, &settings.token) {
            (Some(key), _, _) => {
                let key = service_account::ServiceAccount::load(key)?;
                Credentials::ServiceAccount(std::sync::Arc::new(key))
            }
            (None, Some(path), _) => Credentials::File(path.clone()),
            (None, None, Some(token)) => Credentials::Token(token.clone()),
            (None, None, None) => return Err(BigQueryError::Credentials(
                "BigQuery needs credentials: set bigquery.credentials_file (a service-account key), bigquery.token_file (a file holding an access token) or SHERIFF__BIGQUERY__TOKEN".into()
            )),
        };
        let http = crate::support::http::client_builder(Duration::from_secs(settings.timeout_secs))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| BigQueryError::Client(with_sources(&e)))?;
        Ok(BigQueryClient {
            http,
            api_url: settings.api_url.trim_end_matches('/').to_string(),
            project: project.to_string(),
            credentials,
            max_bytes_billed: settings.max_bytes_billed,
            page_rows: settings.page_rows,
            max_response_bytes: settings.max_response_bytes,
            max_attempts: settings.max_attempts.max(1),
        })
    }

    /// Runs `query` and returns its first page; the rest follow from [`Pages::next_page`].
    pub async fn query(&self, query: &Query) -> Result<Pages<'_>> {
        match self.dry_run(query).await {
            Ok(bytes) => tracing::info!(
                query = query.name,
                bytes,
                "BigQuery estimates the query scans this many bytes"
            ),
            Err(e) => tracing::info!(
                query = query.name,
                "no byte estimate (the dry run failed): {e:#}"
            ),
        }

        let mut body = self.body(query);
        body["maxResults"] = json!(self.page_rows);
        body["timeoutMs"] = json!(POLL_MS);
        let url = format!(
            "{}/bigquery/v2/projects/{}/queries",
            self.api_url, self.project
        );

        let mut page: QueryResponse = self
            .send(query, reqwest::Method::POST, &url, Some(&body))
            .await?;

        let started = Instant::now();
        while !page.job_complete {
            let Some(job) = page.job_reference.clone() else {
                return Err(BigQueryError::NoJob(query.name));
            };
            if started.elapsed() > MAX_QUERY_WAIT {
                return Err(BigQueryError::Unfinished {
                    query: query.name,
                    secs: MAX_QUERY_WAIT.as_secs(),
                });
            }
            page = self.results(query.name, &job, None).await?;
        }

        if let Some(reason) = page.errors.first().map(|e| e.reason.clone()) {
            return Err(BigQueryError::Failed {
                query: query.name,
                reason,
            });
        }

        let columns: Vec<String> = page
            .schema
            .map(|s| s.fields.into_iter().map(|f| f.name).collect())
            .unwrap_or_default();

        tracing::info!(
            query = query.name,
            bytes_processed = page.total_bytes_processed.as_deref().unwrap_or("unknown"),
            "BigQuery ran the query"
        );

        let first = rows_of(page.rows, columns.len())?;
        Ok(Pages {
            client: self,
            query: query.name,
            job: page.job_reference,
            columns,
            first: Some(first),
            page_token: page.page_token.filter(|t| !t.is_empty()),
            rows_read: 0,
            pages_read: 0,
        })
    }

    /// The bytes `query` would scan, from a dry run.
    async fn dry_run(&self, query: &Query) -> Result<u64> {
        let mut body = self.body(query);
        body["dryRun"] = json!(true);
        let url = format!(
            "{}/bigquery/v2/projects/{}/queries",
            self.api_url, self.project
        );
        let answer: QueryResponse = self
            .send(query, reqwest::Method::POST, &url, Some(&body))
            .await?;
        answer
            .total_bytes_processed
            .and_then(|b| b.parse().ok())
            .ok_or(BigQueryError::NoEstimate)
    }

    /// The request body every query shares: SQL, parameters, the cap and the labels.
    fn body(&self, query: &Query) -> Value {
        let params: Vec<Value> = query
            .params
            .iter()
            .map(|(name, value)| {
                let (kind, text) = match value {
                    Param::Int(n) => ("INT64", n.to_string()),
                    Param::Text(s) => ("STRING", s.clone()),
                };
                json!({"name": name, "parameterType": {"type": kind}, "parameterValue": {"value": text}})
            })
            .collect();
        json!({
            "query": query.sql,
            "useLegacySql": false,
            "parameterMode": "NAMED",
            "queryParameters": params,
            // int64 as a JSON string, as the API takes it
            "maximumBytesBilled": self.max_bytes_billed.to_string(),
            "labels": {"app": "sheriff", "query": query.name},
        })
    }

    /// One `getQueryResults` call: the next page after `token`, or (without one) the first
    /// page once the query has finished.
    async fn results(
        &self,
        name: &'static str,
        job: &JobReference,
        token: Option<&str>,
    ) -> Result<QueryResponse> {
        let invalid = || BigQueryError::Url(self.api_url.clone());
        let mut url = reqwest::Url::parse(&format!("{}/bigquery/v2/projects/", self.api_url))
            .map_err(|_| invalid())?;
        url.path_segments_mut()
            .map_err(|_| invalid())?
            .pop_if_empty()
            .extend([self.project.as_str(), "queries", job.job_id.as_str()]);
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("maxResults", &self.page_rows.to_string());
            q.append_pair("timeoutMs", &POLL_MS.to_string());
            if let Some(location) = &job.location {
                q.append_pair("location", location);
            }
            if let Some(t) = token {
                q.append_pair("pageToken", t);
            }
        }
        let query = Query {
            name,
            sql: String::new(),
            params: Vec::new(),
        };
        self.send(&query, reqwest::Method::GET, url.as_str(), None)
            .await
    }

    /// One call, retried on 429, 5xx and rate limits; a refusal names the query and the cap.
    async fn send(
        &self,
        query: &Query,
        method: reqwest::Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<QueryResponse> {
        let failed = |failure| BigQueryError::Call {
            query: query.name,
            failure,
        };

        let mut attempt = 0;
        loop {
            attempt += 1;
            let token = self.token().await?;
            let mut request = self
                .http
                .request(method.clone(), url)
                .bearer_auth(token.expose());
            if let Some(body) = body {
                request = request.json(body);
            }
            let (error, retry_after) = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    let retry_after = crate::support::http::retry_after(response.headers());
                    let bytes = crate::support::http::read_limited(
                        response,
                        "bigquery.max_response_bytes",
                        self.max_response_bytes,
                    )
                    .await
                    .map_err(|e| failed(Failure::Body(e)))?;
                    if status.is_success() {
                        return serde_json::from_slice(&bytes)
                            .map_err(|e| failed(Failure::Unreadable(e)));
                    }
                    let answer = api_error(status.as_u16(), &bytes);
                    if !answer.retryable() {
                        return Err(self.refused(query.name, answer));
                    }
                    (Failure::Status(answer), retry_after)
                }
                Err(e) => (Failure::Transport(with_sources(&e)), None),
            };
            if attempt >= self.max_attempts {
                return Err(failed(Failure::GaveUp {
                    last: Box::new(error),
                    attempts: attempt,
                }));
            }
            let wait = retry_after
                .map(|d| d.min(Duration::from_secs(60)))
                .unwrap_or_else(|| super::gcs::backoff(attempt));
            tracing::warn!(
                query = query.name,
                attempt,
                wait_ms = wait.as_millis() as u64,
                "retrying BigQuery: {error}"
            );
            tokio::time::sleep(wait).await;
        }
    }

    /// The error for an answer that retrying will not change, naming the query and, when the
    /// cap refused it, the cap.
    fn refused(&self, query: &'static str, answer: Answer) -> BigQueryError {
        let hint = match answer.reason.as_str() {
            "bytesBilledLimitExceeded" => format!(
                "; the cap is bigquery.max_bytes_billed = {} bytes: raise it, or read less (a later --since)",
                self.max_bytes_billed
            ),
            "accessDenied" => {
                format!(
                    "; the credentials may not run queries in project {} or read the dataset",
                    self.project
                )
            }
            _ => String::new(),
        };
        let refused = REFUSED.contains(&answer.reason.as_str());
        BigQueryError::Refused {
            query,
            refused,
            hint,
            answer,
        }
    }

    /// The access token for the next request; a token file is read each time, and an empty
    /// one is an error, never an anonymous request.
    async fn token(&self) -> Result<Secret> {
        match &self.credentials {
            Credentials::ServiceAccount(key) => Ok(key.token(&self.http).await?),
            Credentials::Token(t) => Ok(t.clone()),
            Credentials::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    BigQueryError::Credentials(format!(
                        "reading bigquery.token_file {}: {e}",
                        path.display()
                    ))
                })?;
                let first = text.lines().next().unwrap_or_default().trim();
                if first.is_empty() {
                    let empty = format!("bigquery.token_file {} is empty", path.display());
                    return Err(BigQueryError::Credentials(empty));
                }
                Ok(Secret::new(first))
            }
        }
    }
}

/// An error answer's reason and message, from BigQuery's error body when it sent one.
fn api_error(status: u16, body: &[u8]) -> Answer {
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(b) => Answer {
            status,
            reason: b
                .error
                .errors
                .first()
                .map(|e| e.reason.clone())
                .unwrap_or(b.error.status),
            message: b.error.message,
        },
        Err(_) => Answer {
            status,
            reason: String::new(),
            message: String::from_utf8_lossy(body).chars().take(200).collect(),
        },
    }
}

/// A page's rows as text values; a row of another width than the schema is an error.
fn rows_of(raw: Vec<RawRow>, width: usize) -> Result<Vec<Row>> {
    raw.into_iter()
        .map(|r| {
            if r.f.len() != width {
                return Err(BigQueryError::RaggedRow {
                    columns: r.f.len(),
                    width,
                });
            }
            r.f.into_iter()
                .map(|c| match c.v {
                    Value::Null => Ok(None),
                    Value::String(s) => Ok(Some(s)),
                    Value::Number(n) => Ok(Some(n.to_string())),
                    Value::Bool(b) => Ok(Some(b.to_string())),
                    other => Err(BigQueryError::Nested(other)),
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_body_gives_its_first_reason() {
        let body = br#"{"error":{"code":400,"message":"Query exceeded limit for bytes billed: 1000. 20971520 or higher required.","errors":[{"message":"Query exceeded limit","domain":"global","reason":"bytesBilledLimitExceeded"}],"status":"INVALID_ARGUMENT"}}"#;
        let e = api_error(400, body);
        assert_eq!(e.reason, "bytesBilledLimitExceeded");
        assert!(!e.retryable());
        assert!(api_error(503, b"<html>").retryable());
        assert!(
            api_error(
                403,
                br#"{"error":{"errors":[{"reason":"rateLimitExceeded"}]}}"#
            )
            .retryable()
        );
        assert!(
            !api_error(403, br#"{"error":{"errors":[{"reason":"accessDenied"}]}}"#).retryable()
        );
    }

    #[test]
    fn a_refusal_by_the_cap_names_the_query_and_the_cap() {
        crate::init_crypto();
        let settings = BigQuerySettings {
            token: Some(Secret::new("t")),
            max_bytes_billed: 1000,
            ..Default::default()
        };
        let client = BigQueryClient::new(&settings, "p").unwrap();
        let body = br#"{"error":{"message":"Query exceeded limit for bytes billed: 1000.","errors":[{"reason":"bytesBilledLimitExceeded"}]}}"#;
        let e = client.refused("runs", api_error(400, body));
        assert!(
            matches!(
                &e,
                BigQueryError::Refused {
                    query: "runs",
                    refused: true,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "BigQuery refused query `runs`; the cap is bigquery.max_bytes_billed = 1000 bytes: raise it, or read less (a later --since): BigQuery answered 400 bytesBilledLimitExceeded: Query exceeded limit for bytes billed: 1000."
        );
    }

    #[test]
    fn values_are_bound_as_named_parameters_never_spliced() {
        crate::init_crypto();
        let settings = BigQuerySettings {
            token: Some(Secret::new("t")),
            ..Default::default()
        };
        let client = BigQueryClient::new(&settings, "p").unwrap();
        let q = Query {
            name: "runs",
            sql: "SELECT 1 WHERE x = @job".into(),
            params: vec![
                ("job", Param::Text("a'; DROP TABLE x; --".into())),
                ("since", Param::Int(7)),
            ],
        };
        let body = client.body(&q);
        assert_eq!(body["query"], "SELECT 1 WHERE x = @job");
        assert_eq!(body["parameterMode"], "NAMED");
        assert_eq!(
            body["queryParameters"][0]["parameterValue"]["value"],
            "a'; DROP TABLE x; --"
        );
        assert_eq!(body["queryParameters"][1]["parameterType"]["type"], "INT64");
        assert_eq!(
            body["maximumBytesBilled"],
            settings.max_bytes_billed.to_string()
        );
        assert_eq!(body["labels"], json!({"app": "sheriff", "query": "runs"}));
    }

    #[test]
    fn no_credentials_is_an_error_not_an_anonymous_client() {
        let e = BigQueryClient::new(&BigQuerySettings::default(), "p")
            .err()
            .unwrap();
        assert!(e.to_string().contains("credentials"), "{e}");
    }

    #[test]
    fn rows_keep_nulls_and_refuse_a_ragged_row() {
        let raw: Vec<RawRow> = serde_json::from_str(r#"[{"f":[{"v":"a"},{"v":null}]}]"#).unwrap();
        assert_eq!(
            rows_of(raw, 2).unwrap(),
            vec![vec![Some("a".to_string()), None]]
        );
        let raw: Vec<RawRow> = serde_json::from_str(r#"[{"f":[{"v":"a"}]}]"#).unwrap();
        assert!(rows_of(raw, 2).is_err());
    }
}
