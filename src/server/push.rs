//! `POST /api/v1/runs`: a CI system pushes one finished run's files.
//!
//! Body (JSON): `{"bucket": "test-platform-results", "path": "logs/<job>/<build>",
//! "files": {"prowjob.json": …, "started.json": …, "finished.json": …,
//! "artifacts/…/backend-disruption_20231114-220000.json": …}, "force": false}`. A file's value
//! is its text as a JSON string, or the file's JSON itself. Authorization: `Bearer <token>`
//! matching `ingest.push_token`.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::{ApiError, AppState};
use crate::ingest::run::{RunFile, RunFiles};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushedRun {
    #[serde(default)]
    bucket: String,
    path: String,
    files: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    force: bool,
}

pub async fn push_run(
    State(state): State<AppState>,
    request: axum::extract::Request,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let headers: &HeaderMap = request.headers();
    let Some(expected) = &state.settings.ingest.push_token else {
        return Err(ApiError::user(
            StatusCode::SERVICE_UNAVAILABLE,
            "the push API is off: set SHERIFF__INGEST__PUSH_TOKEN",
        ));
    };
    let given = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !bool::from(given.as_bytes().ct_eq(expected.expose().as_bytes())) {
        return Err(ApiError::user(StatusCode::UNAUTHORIZED, "missing or wrong bearer token"));
    }
    // The body is read and parsed only once the token holds: an unauthenticated sender costs
    // nothing but the headers.
    let limit = state.settings.server.max_body_bytes;
    let bytes = axum::body::to_bytes(request.into_body(), limit).await.map_err(|e| {
        ApiError::user(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is over {limit} bytes or broken: {e}"),
        )
    })?;
    let pushed: PushedRun = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::user(StatusCode::BAD_REQUEST, format!("bad body: {e}")))?;
    let path = pushed.path.trim_matches('/').to_string();
    if path.is_empty() || path.split('/').any(|p| p == ".." || p.is_empty()) {
        return Err(ApiError::user(
            StatusCode::BAD_REQUEST,
            "`path` must be the run folder, e.g. logs/<job>/<build>",
        ));
    }
    let files = pushed
        .files
        .into_iter()
        .map(|(name, value)| {
            let content = match value {
                serde_json::Value::String(text) => text.into_bytes(),
                other => other.to_string().into_bytes(),
            };
            RunFile { name, content: Ok(content) }
        })
        .collect();
    let run = RunFiles { bucket: pushed.bucket, path: path.clone(), files };
    let summary = crate::ingest::ingest_pushed_run(&state.store, run, pushed.force).await?;
    summary.count("push");
    let (status, outcome) = if summary.ingested > 0 {
        (StatusCode::CREATED, "ingested")
    } else if summary.storage_failed > 0 {
        // sheriff's own storage failed, not the file: retryable
        (StatusCode::SERVICE_UNAVAILABLE, "not stored, try again")
    } else if summary.failed > 0 {
        (StatusCode::UNPROCESSABLE_ENTITY, "failed")
    } else {
        (StatusCode::OK, "already stored")
    };
    Ok((status, Json(serde_json::json!({ "run": path, "outcome": outcome, "errors": summary.errors }))))
}
