//! A fake Google Cloud Storage JSON API over a local folder (`<root>/<bucket>/<object name>`).
//!
//! It answers the two calls sheriff makes as the real API does: `GET /storage/v1/b/{bucket}/o`
//! with `prefix`, `delimiter`, `maxResults` and `pageToken` (items and prefixes, sizes as
//! strings, `nextPageToken`), and `GET /storage/v1/b/{bucket}/o/{object}?alt=media`; a missing
//! object is a 404 with GCS's JSON error body. It can inject 429 (with `Retry-After`) and 503
//! answers on a fixed share of requests, to exercise retries.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// A bucket's objects by name, with their sizes.
type Objects = BTreeMap<String, u64>;

#[derive(Clone)]
struct Fake {
    root: PathBuf,
    /// Every Nth request fails (alternately 429 and 503); 0 never.
    fail_every: u64,
    requests: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    downloads: Arc<AtomicU64>,
    /// Every object downloaded, and its size, in order.
    downloaded: Arc<std::sync::Mutex<Vec<(String, u64)>>>,
    /// Each bucket's objects, walked once: the tree is fixed once the fake has started.
    listed: Arc<std::sync::Mutex<HashMap<String, Arc<Objects>>>>,
}

/// A running fake; dropped with the test's runtime.
pub struct FakeGcs {
    pub url: String,
    failures: Arc<AtomicU64>,
    downloads: Arc<AtomicU64>,
    downloaded: Arc<std::sync::Mutex<Vec<(String, u64)>>>,
}

impl FakeGcs {
    pub async fn start(root: &Path, fail_every: u64) -> FakeGcs {
        let fake = Fake {
            root: root.to_path_buf(),
            fail_every,
            requests: Arc::default(),
            failures: Arc::default(),
            downloads: Arc::default(),
            downloaded: Arc::default(),
            listed: Arc::default(),
        };
        let (failures, downloads, downloaded) = (
            fake.failures.clone(),
            fake.downloads.clone(),
            fake.downloaded.clone(),
        );
        let app = Router::new()
            .route("/storage/v1/b/{bucket}/o", get(list))
            .route("/storage/v1/b/{bucket}/o/{*object}", get(media))
            .with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeGcs {
            url,
            failures,
            downloads,
            downloaded,
        }
    }

    /// The objects downloaded so far (name, bytes), in order.
    pub fn downloaded(&self) -> Vec<(String, u64)> {
        self.downloaded.lock().unwrap().clone()
    }

    pub fn injected_failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }
    pub fn downloads(&self) -> u64 {
        self.downloads.load(Ordering::Relaxed)
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({"error": {"code": status.as_u16(), "message": message,
        "errors": [{"message": message, "domain": "global", "reason": if status == StatusCode::NOT_FOUND { "notFound" } else { "backendError" }}]}});
    (
        status,
        [("content-type", "application/json; charset=UTF-8")],
        body.to_string(),
    )
        .into_response()
}

impl Fake {
    fn injected(&self) -> Option<Response> {
        let n = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        if self.fail_every == 0 || !n.is_multiple_of(self.fail_every) {
            return None;
        }
        self.failures.fetch_add(1, Ordering::Relaxed);
        if (n / self.fail_every) % 2 == 1 {
            let mut r = error(
                StatusCode::TOO_MANY_REQUESTS,
                "The rate of change requests to the object is too high.",
            );
            r.headers_mut().insert("retry-after", "0".parse().unwrap());
            Some(r)
        } else {
            Some(error(StatusCode::SERVICE_UNAVAILABLE, "Backend Error"))
        }
    }

    fn objects(&self, bucket: &str) -> Arc<BTreeMap<String, u64>> {
        let mut listed = self.listed.lock().unwrap();
        listed
            .entry(bucket.to_string())
            .or_insert_with(|| Arc::new(self.walk(bucket)))
            .clone()
    }

    fn walk(&self, bucket: &str) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        let base = self.root.join(bucket);
        let mut stack = vec![base.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let name = p
                        .strip_prefix(&base)
                        .unwrap()
                        .to_string_lossy()
                        .replace('\\', "/");
                    out.insert(name, e.metadata().map(|m| m.len()).unwrap_or(0));
                }
            }
        }
        out
    }
}

async fn list(
    State(fake): State<Fake>,
    UrlPath(bucket): UrlPath<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = fake.injected() {
        return r;
    }
    if !fake.root.join(&bucket).is_dir() {
        return error(
            StatusCode::NOT_FOUND,
            "The specified bucket does not exist.",
        );
    }
    let prefix = q.get("prefix").cloned().unwrap_or_default();
    let delimiter = q.get("delimiter").cloned().filter(|d| !d.is_empty());
    let max: usize = q
        .get("maxResults")
        .and_then(|m| m.parse().ok())
        .unwrap_or(1000)
        .clamp(1, 1000);
    let start: usize = q
        .get("pageToken")
        .and_then(|t| t.strip_prefix("page-"))
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    // Results in name order, objects and prefixes together, as the API pages them.
    let mut results: Vec<(String, Option<u64>)> = Vec::new();
    let mut seen_prefixes = std::collections::BTreeSet::new();
    for (name, size) in fake.objects(&bucket).range(prefix.clone()..) {
        if !name.starts_with(&prefix) {
            break;
        }
        if let Some(d) = &delimiter
            && let Some(i) = name[prefix.len()..].find(d.as_str())
        {
            let p = name[..prefix.len() + i + d.len()].to_string();
            if seen_prefixes.insert(p.clone()) {
                results.push((p, None));
            }
            continue;
        }
        results.push((name.clone(), Some(*size)));
    }
    let page: Vec<_> = results.iter().skip(start).take(max).collect();
    let items: Vec<_> = page
        .iter()
        .filter_map(|(n, s)| s.map(|s| serde_json::json!({"kind": "storage#object", "name": n, "bucket": bucket, "size": s.to_string()})))
        .collect();
    let prefixes: Vec<_> = page
        .iter()
        .filter(|(_, s)| s.is_none())
        .map(|(n, _)| n.clone())
        .collect();
    let mut body = serde_json::json!({"kind": "storage#objects"});
    if !items.is_empty() {
        body["items"] = serde_json::json!(items);
    }
    if !prefixes.is_empty() {
        body["prefixes"] = serde_json::json!(prefixes);
    }
    if start + max < results.len() {
        body["nextPageToken"] = serde_json::json!(format!("page-{}", start + max));
    }
    axum::Json(body).into_response()
}

async fn media(
    State(fake): State<Fake>,
    UrlPath((bucket, object)): UrlPath<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    _headers: HeaderMap,
) -> Response {
    if let Some(r) = fake.injected() {
        return r;
    }
    if q.get("alt").map(String::as_str) != Some("media") {
        return error(StatusCode::BAD_REQUEST, "this fake serves only alt=media");
    }
    if object.contains("..") {
        return error(StatusCode::BAD_REQUEST, "Invalid object name");
    }
    match std::fs::read(fake.root.join(&bucket).join(&object)) {
        Ok(bytes) => {
            fake.downloads.fetch_add(1, Ordering::Relaxed);
            fake.downloaded
                .lock()
                .unwrap()
                .push((object.clone(), bytes.len() as u64));
            (
                StatusCode::OK,
                [("content-type", "application/octet-stream")],
                bytes,
            )
                .into_response()
        }
        Err(_) => error(
            StatusCode::NOT_FOUND,
            &format!("No such object: {bucket}/{object}"),
        ),
    }
}
