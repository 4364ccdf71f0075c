//! BigQuery for the tests: the Crucible emulator (`crucible serve --dialect bigquery`), and a
//! small front that sheriff talks to in its place.
//!
//! The emulator answers the REST v2 `jobs.query` and `getQueryResults` calls, paging by
//! `pageToken`, over DuckDB. What it does not do, the front does as BigQuery does, with
//! BigQuery's own error bodies: it binds named `queryParameters` (the emulator refuses the
//! field) as typed literals before passing the query on, answers dry runs with a byte
//! estimate (the emulator refuses them), refuses a query whose `maximumBytesBilled` is below
//! that estimate (`bytesBilledLimitExceeded`; the emulator accepts the cap without enforcing
//! it), and answers scripted 429s (with `Retry-After`) and 500s. It keeps a query log: every
//! call, its labels and the rows it returned.

use std::collections::VecDeque;
use std::net::TcpListener as StdListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The emulator's project for the tests' dataset.
pub const PROJECT: &str = "ci-test-project";
pub const DATASET: &str = "ci_data";

/// A running `crucible serve --dialect bigquery`, stopped when dropped.
pub struct Emulator {
    pub url: String,
    child: Child,
    http: reqwest::Client,
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `crucible` is on the PATH.
fn crucible_installed() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("crucible").is_file()))
}

impl Emulator {
    /// Starts the emulator on a free port; None (saying why) when `crucible` is not installed.
    /// CI installs it (`.ci/run`), so there the tests always run.
    pub async fn start() -> Option<Emulator> {
        if !crucible_installed() {
            // CI sets it: there the emulator is installed, and a test never skips
            assert!(
                std::env::var("SHERIFF_TEST_BIGQUERY").as_deref() != Ok("required"),
                "SHERIFF_TEST_BIGQUERY=required but `crucible` is not on the PATH"
            );
            eprintln!(
                "skipped: the BigQuery emulator is not installed (pip install --pre 'crucible-emulator[server]')"
            );
            return None;
        }
        sheriff::init_crypto();
        let port = StdListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("crucible")
            .args([
                "serve",
                "--dialect",
                "bigquery",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start crucible");
        let url = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .unwrap();
        let emulator = Emulator { url, child, http };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let health = emulator
                .http
                .get(format!("{}/_crucible/health", emulator.url))
                .send()
                .await;
            if health.is_ok_and(|r| r.status().is_success()) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the BigQuery emulator did not start within 60 s"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let dataset = json!({"datasetReference": {"projectId": PROJECT, "datasetId": DATASET}});
        emulator
            .post(
                &format!("/bigquery/v2/projects/{PROJECT}/datasets"),
                dataset,
            )
            .await;
        for (table, fields) in TABLES {
            let columns: Vec<String> = fields
                .iter()
                .map(|(name, kind)| format!("{name} {kind}"))
                .collect();
            emulator
                .run(&format!(
                    "CREATE TABLE {DATASET}.{table} ({})",
                    columns.join(", ")
                ))
                .await;
        }
        Some(emulator)
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let r = self
            .http
            .post(format!("{}{path}", self.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let answer: Value = r.json().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {answer}");
        answer
    }

    /// Runs one statement in the emulator (setting up, not sheriff's queries).
    pub async fn run(&self, sql: &str) {
        let body = json!({"query": sql, "useLegacySql": false});
        self.post(&format!("/bigquery/v2/projects/{PROJECT}/queries"), body)
            .await;
    }

    /// Appends rows to `table` with a CSV load job (a multipart upload), as the CI's uploader
    /// loads them; None is NULL. Much faster in the emulator than INSERT statements.
    pub async fn load(&self, table: &str, rows: &[Vec<Option<String>>]) {
        let Some((_, fields)) = TABLES.iter().find(|(t, _)| *t == table) else {
            panic!("no table {table}")
        };
        if fields.iter().any(|(_, kind)| *kind == "JSON") {
            return self.load_through_text(table, fields, rows).await;
        }
        self.load_csv(table, fields, rows).await;
    }

    /// The emulator loads no CSV into a JSON column: the rows go to a table of the same columns
    /// with the JSON as text, then into `table` through `PARSE_JSON`, as BigQuery converts them.
    async fn load_through_text(
        &self,
        table: &str,
        fields: &[(&str, &str)],
        rows: &[Vec<Option<String>>],
    ) {
        let staging = format!("{table}_as_text");
        let as_text: Vec<(&str, &str)> = fields
            .iter()
            .map(|(name, kind)| (*name, if *kind == "JSON" { "STRING" } else { *kind }))
            .collect();
        let columns: Vec<String> = as_text
            .iter()
            .map(|(name, kind)| format!("{name} {kind}"))
            .collect();
        self.run(&format!(
            "CREATE TABLE {DATASET}.{staging} ({})",
            columns.join(", ")
        ))
        .await;
        self.load_csv(&staging, &as_text, rows).await;
        let values: Vec<String> = fields
            .iter()
            .map(|(name, kind)| {
                if *kind == "JSON" {
                    format!("PARSE_JSON({name})")
                } else {
                    name.to_string()
                }
            })
            .collect();
        self.run(&format!(
            "INSERT INTO {DATASET}.{table} SELECT {} FROM {DATASET}.{staging}",
            values.join(", ")
        ))
        .await;
        self.run(&format!("DROP TABLE {DATASET}.{staging}")).await;
    }

    async fn load_csv(&self, table: &str, fields: &[(&str, &str)], rows: &[Vec<Option<String>>]) {
        let schema: Vec<Value> = fields
            .iter()
            .map(|(name, kind)| json!({"name": name, "type": kind}))
            .collect();
        let metadata = json!({"configuration": {"load": {
            "destinationTable": {"projectId": PROJECT, "datasetId": DATASET, "tableId": table},
            "sourceFormat": "CSV", "writeDisposition": "WRITE_APPEND", "schema": {"fields": schema}}}});
        let mut csv = String::new();
        for row in rows {
            assert_eq!(row.len(), fields.len(), "a {table} row");
            let cells: Vec<String> = row
                .iter()
                .map(|v| match v {
                    None => String::new(),
                    // quoted only where CSV needs it: the emulator refuses quoted timestamps
                    Some(v) if v.is_empty() || v.contains([',', '"', '\n', '\r']) => {
                        format!("\"{}\"", v.replace('"', "\"\""))
                    }
                    Some(v) => v.clone(),
                })
                .collect();
            csv.push_str(&cells.join(","));
            csv.push('\n');
        }
        let boundary = "sheriff-test-load";
        let body = format!(
            "--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n--{boundary}\r\nContent-Type: text/csv\r\n\r\n{csv}\r\n--{boundary}--\r\n"
        );
        let r = self
            .http
            .post(format!(
                "{}/upload/bigquery/v2/projects/{PROJECT}/jobs?uploadType=multipart",
                self.url
            ))
            .header(
                "content-type",
                format!("multipart/related; boundary={boundary}"),
            )
            .body(body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let job: Value = r.json().await.unwrap();
        assert!(
            status.is_success() && job["status"]["errorResult"].is_null(),
            "loading {table}: {status} {job}"
        );
    }
}

/// The CI's tables as the disruption uploader and the job-run aggregator define them
/// (openshift/ci-tools, pkg/jobrunaggregator/jobrunaggregatorapi/types_row_*.go), with `Jobs`
/// holding the variants (the architecture is not among them); and `e2e_intervals`, one row per
/// item of a run's interval files, as the CI's data loader defines it (neisw/ci-data-loader,
/// `interval_loader.go` `generateIntervalUploader` and `big_query_loader.go`,
/// commit 1acf4febfba5cf9c53bdc03c11e6d47848e095e3: `from_time`, the day partition's column,
/// `to_time`, `interval_json` the item, and the `JobRunName` and `Source` every row carries).
pub const TABLES: [(&str, &[(&str, &str)]); 4] = [
    (
        "BackendDisruption",
        &[
            ("BackendName", "STRING"),
            ("DisruptionSeconds", "INT64"),
            ("JobName", "STRING"),
            ("JobRunName", "STRING"),
            ("JobRunStartTime", "TIMESTAMP"),
            ("JobRunEndTime", "TIMESTAMP"),
            ("Cluster", "STRING"),
            ("ReleaseTag", "STRING"),
            ("MasterNodesUpdated", "STRING"),
            ("JobRunStatus", "STRING"),
        ],
    ),
    (
        "BackendDisruption_JobRuns",
        &[
            ("Name", "STRING"),
            ("JobName", "STRING"),
            ("Status", "STRING"),
            ("StartTime", "TIMESTAMP"),
            ("EndTime", "TIMESTAMP"),
            ("ReleaseTag", "STRING"),
            ("Cluster", "STRING"),
            ("MasterNodesUpdated", "STRING"),
        ],
    ),
    (
        "Jobs",
        &[
            ("JobName", "STRING"),
            ("GCSBucketName", "STRING"),
            ("GCSJobHistoryLocationPrefix", "STRING"),
            ("CollectDisruption", "BOOL"),
            ("CollectTestRuns", "BOOL"),
            ("Platform", "STRING"),
            ("Network", "STRING"),
            ("IPMode", "STRING"),
            ("Topology", "STRING"),
            ("Release", "STRING"),
            ("FromRelease", "STRING"),
        ],
    ),
    (
        "e2e_intervals",
        &[
            ("from_time", "TIMESTAMP"),
            ("to_time", "TIMESTAMP"),
            ("interval_json", "JSON"),
            ("JobRunName", "STRING"),
            ("Source", "STRING"),
        ],
    ),
];

/// A timestamp value for a load (RFC 3339, UTC).
pub fn ts(seconds: i64) -> Option<String> {
    Some(
        chrono::DateTime::from_timestamp(seconds, 0)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string(),
    )
}

/// A GoogleSQL string literal, for binding a STRING parameter the way BigQuery would.
fn lit(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// One call the front saw.
#[derive(Debug, Clone)]
pub struct Logged {
    /// `query`, `dry_run` or `results` (a `getQueryResults` page).
    pub call: &'static str,
    /// The `query` label (queries and dry runs).
    pub label: String,
    pub labels: Value,
    /// The SQL with its parameters, as sent (before the front bound them).
    pub sql: String,
    pub params: Value,
    pub max_bytes_billed: Option<u64>,
    /// The `Authorization` header sent.
    pub authorization: String,
    pub status: u16,
    /// Rows in the answer.
    pub rows: u64,
}

/// An answer the front gives instead of passing the call on.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 `rateLimitExceeded`, with `Retry-After: seconds`.
    RateLimited { retry_after: u64 },
    /// 500 `internalError`.
    Internal,
}

#[derive(Clone)]
struct Front {
    upstream: String,
    http: reqwest::Client,
    /// Bytes a query "scans": its dry-run estimate and what the cap is checked against.
    scan_bytes: u64,
    faults: Arc<Mutex<VecDeque<Fault>>>,
    log: Arc<Mutex<Vec<Logged>>>,
}

/// The running front; sheriff's `bigquery.api_url`.
pub struct BigQueryFront {
    pub url: String,
    faults: Arc<Mutex<VecDeque<Fault>>>,
    log: Arc<Mutex<Vec<Logged>>>,
}

impl BigQueryFront {
    /// A front before `upstream` (the emulator's URL) whose queries scan `scan_bytes`.
    pub async fn start(upstream: &str, scan_bytes: u64) -> BigQueryFront {
        let front = Front {
            upstream: upstream.to_string(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()
                .unwrap(),
            scan_bytes,
            faults: Arc::default(),
            log: Arc::default(),
        };
        let (faults, log) = (front.faults.clone(), front.log.clone());
        let app = Router::new().fallback(handle).with_state(front);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        BigQueryFront { url, faults, log }
    }

    /// The next calls (queries and result pages, not dry runs) get these answers, in order.
    pub fn inject(&self, faults: impl IntoIterator<Item = Fault>) {
        self.faults.lock().unwrap().extend(faults);
    }

    pub fn log(&self) -> Vec<Logged> {
        self.log.lock().unwrap().clone()
    }

    pub fn clear_log(&self) {
        self.log.lock().unwrap().clear();
    }
}

fn error(status: StatusCode, reason: &str, api_status: &str, message: &str) -> Response {
    let body = json!({"error": {"code": status.as_u16(), "message": message,
        "errors": [{"message": message, "domain": "global", "reason": reason}], "status": api_status}});
    (status, axum::Json(body)).into_response()
}

async fn handle(
    State(front): State<Front>,
    method: Method,
    uri: Uri,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let is_query = method == Method::POST && path.ends_with("/queries");
    let is_results = method == Method::GET && path.contains("/queries/");
    let mut request: Value = if is_query {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let dry_run = request["dryRun"].as_bool().unwrap_or(false);
    let mut entry = Logged {
        call: if dry_run {
            "dry_run"
        } else if is_query {
            "query"
        } else {
            "results"
        },
        label: request["labels"]["query"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        labels: request["labels"].clone(),
        sql: request["query"].as_str().unwrap_or_default().to_string(),
        params: request["queryParameters"].clone(),
        max_bytes_billed: request["maximumBytesBilled"]
            .as_str()
            .and_then(|b| b.parse().ok()),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
        status: 200,
        rows: 0,
    };
    let answer = answer(
        &front,
        &method,
        &uri,
        is_query || is_results,
        dry_run,
        &mut request,
        &mut entry,
    )
    .await;
    entry.status = answer.status().as_u16();
    front.log.lock().unwrap().push(entry);
    answer
}

async fn answer(
    front: &Front,
    method: &Method,
    uri: &Uri,
    counted: bool,
    dry_run: bool,
    request: &mut Value,
    entry: &mut Logged,
) -> Response {
    if dry_run {
        // BigQuery's dry run: the estimate, no job, no rows
        return axum::Json(
            json!({"kind": "bigquery#queryResponse", "jobComplete": true,
            "totalBytesProcessed": front.scan_bytes.to_string(), "cacheHit": false}),
        )
        .into_response();
    }
    if counted && let Some(fault) = front.faults.lock().unwrap().pop_front() {
        return match fault {
            Fault::RateLimited { retry_after } => {
                let mut r = error(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rateLimitExceeded",
                    "RESOURCE_EXHAUSTED",
                    "Exceeded rate limits: too many api requests per user per method for this user_method.",
                );
                r.headers_mut()
                    .insert("retry-after", retry_after.to_string().parse().unwrap());
                r
            }
            Fault::Internal => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internalError",
                "INTERNAL",
                "An internal error occurred and the request could not be completed. This is usually caused by a transient issue.",
            ),
        };
    }
    if let Some(cap) = entry.max_bytes_billed.filter(|cap| *cap < front.scan_bytes) {
        let message = format!(
            "Query exceeded limit for bytes billed: {cap}. {} or higher required.",
            front.scan_bytes
        );
        return error(
            StatusCode::BAD_REQUEST,
            "bytesBilledLimitExceeded",
            "INVALID_ARGUMENT",
            &message,
        );
    }
    let body = if request.is_object() {
        bind_parameters(request);
        Some(request.to_string())
    } else {
        None
    };
    let url = format!(
        "{}{}",
        front.upstream,
        uri.path_and_query().map(|p| p.as_str()).unwrap_or("/")
    );
    let mut call = front.http.request(method.clone(), url);
    if let Some(b) = body {
        call = call.header("content-type", "application/json").body(b);
    }
    let upstream = call.send().await.unwrap();
    let status = StatusCode::from_u16(upstream.status().as_u16()).unwrap();
    let bytes = upstream.bytes().await.unwrap();
    if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
        entry.rows = v["rows"].as_array().map_or(0, |r| r.len() as u64);
    }
    (status, [("content-type", "application/json")], bytes).into_response()
}

/// Replaces each `@name` with its parameter as a typed literal and drops the fields the
/// emulator refuses, as BigQuery binds them.
fn bind_parameters(request: &mut Value) {
    let Some(params) = request
        .get("queryParameters")
        .and_then(Value::as_array)
        .cloned()
    else {
        return;
    };
    let mut sql = request["query"].as_str().unwrap_or_default().to_string();
    for p in params {
        let name = p["name"].as_str().unwrap();
        let value = p["parameterValue"]["value"].as_str().unwrap();
        let literal = match p["parameterType"]["type"].as_str().unwrap() {
            "INT64" => value
                .parse::<i64>()
                .expect("an INT64 parameter")
                .to_string(),
            "STRING" => lit(value),
            other => panic!("the front binds INT64 and STRING parameters, not {other}"),
        };
        let pattern = regex::Regex::new(&format!(r"@{name}\b")).unwrap();
        sql = pattern
            .replace_all(&sql, regex::NoExpand(&literal))
            .into_owned();
    }
    request["query"] = Value::String(sql);
    let object = request.as_object_mut().unwrap();
    object.remove("queryParameters");
    object.remove("parameterMode");
}
