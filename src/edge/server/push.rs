//! `POST /api/v1/runs`: a CI system pushes one finished run's files.
//!
//! Body (JSON): `{"bucket": "test-platform-results", "path": "logs/<job>/<build>",
//! "files": {"prowjob.json": …, "started.json": …, "finished.json": …,
//! "artifacts/…/backend-disruption_20231114-220000.json": …}, "force": false}`. A file's value
//! is its text as a JSON string, or the file's JSON itself. Authorization: `Bearer <token>`
//! matching `ingest.push_token`, checked by the route's layer before this handler runs.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;

use super::auth::PushTokenChecked;
use super::{ApiError, AppState};
use crate::adapters::ingest::assembly::{Content, RunFile, RunFiles};

/// Segments of a run path, at most (real ones have 3 for periodics, 6 for presubmits).
const MAX_PATH_SEGMENTS: usize = 12;
/// Bytes of a job name or any path segment, at most (Prow's job names stay well under this).
const MAX_SEGMENT_BYTES: usize = 256;
/// Bytes of a file name inside a run, at most.
const MAX_FILE_NAME_BYTES: usize = 1024;

/// What is wrong with a pushed run path or file name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameProblem {
    #[error("no empty, `.` or `..` segments")]
    BadSegment,
    /// The path has this many segments.
    #[error("2 to {MAX_PATH_SEGMENTS} segments, not {0}")]
    Segments(usize),
    /// A segment of this many bytes.
    #[error("a segment of {0} bytes is over {MAX_SEGMENT_BYTES}")]
    LongSegment(usize),
    #[error(
        "no control characters, bidirectional overrides, line separators or invisible characters"
    )]
    Hostile,
    #[error("1 to {MAX_FILE_NAME_BYTES} bytes")]
    FileNameLength,
    #[error("a relative name inside the run, without `..`")]
    NotRelative,
}

/// Why a push body is refused (400); the text is the answer's message.
#[derive(Debug, thiserror::Error)]
pub enum PushRefused {
    /// Not the JSON object documented.
    #[error("bad body: {0}")]
    Body(serde_json::Error),
    #[error("`path` must be the run folder, e.g. logs/<job>/<build>: {0}")]
    Path(NameProblem),
    /// A file name, escaped and cut at 80 characters, and what is wrong with it.
    #[error("file name {shown:?}: {why}")]
    FileName { shown: String, why: NameProblem },
}

/// What is wrong with a pushed run path, if anything.
pub(crate) fn run_path_problem(path: &str) -> Result<(), NameProblem> {
    let segments: Vec<&str> = path.split('/').collect();
    if path.is_empty()
        || segments
            .iter()
            .any(|s| s.is_empty() || *s == "." || *s == "..")
    {
        return Err(NameProblem::BadSegment);
    }
    if segments.len() < 2 || segments.len() > MAX_PATH_SEGMENTS {
        return Err(NameProblem::Segments(segments.len()));
    }
    if let Some(s) = segments.iter().find(|s| s.len() > MAX_SEGMENT_BYTES) {
        return Err(NameProblem::LongSegment(s.len()));
    }
    if path.chars().any(crate::support::render::is_hostile_char) {
        return Err(NameProblem::Hostile);
    }
    Ok(())
}

/// What is wrong with a pushed file's name, if anything.
pub(crate) fn file_name_problem(name: &str) -> Result<(), NameProblem> {
    if name.is_empty() || name.len() > MAX_FILE_NAME_BYTES {
        return Err(NameProblem::FileNameLength);
    }
    if name.split('/').any(|s| s == "..") || name.starts_with('/') {
        return Err(NameProblem::NotRelative);
    }
    if name.chars().any(crate::support::render::is_hostile_char) {
        return Err(NameProblem::Hostile);
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PushedRun {
    #[serde(default)]
    bucket: String,
    path: String,
    files: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    force: bool,
}

/// A push body as the run's files and its `force` flag, or why it is refused (400): not the
/// JSON object documented, a `path` that is not a run folder, a file name that is not plain.
pub fn decode(bytes: &[u8]) -> Result<(RunFiles, bool), PushRefused> {
    let pushed: PushedRun = serde_json::from_slice(bytes).map_err(PushRefused::Body)?;
    let path = pushed.path.trim_matches('/').to_string();
    run_path_problem(&path).map_err(PushRefused::Path)?;
    if let Some((name, why)) = pushed
        .files
        .keys()
        .find_map(|n| file_name_problem(n).err().map(|w| (n, w)))
    {
        let shown: String = name
            .chars()
            .take(80)
            .flat_map(char::escape_default)
            .collect();
        return Err(PushRefused::FileName { shown, why });
    }
    let files = pushed
        .files
        .into_iter()
        .map(|(name, value)| {
            let content = match value {
                serde_json::Value::String(text) => text.into_bytes(),
                other => other.to_string().into_bytes(),
            };
            RunFile {
                name,
                content: Ok(Content::Bytes(content)),
            }
        })
        .collect();
    Ok((
        RunFiles {
            bucket: pushed.bucket,
            path,
            files,
        },
        pushed.force,
    ))
}

pub(crate) async fn push_run(
    State(state): State<AppState>,
    _: PushTokenChecked,
    request: axum::extract::Request,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    // The bearer token was checked by the route's layer before any of the body was read. The body is read and parsed only in a free slot: memory holds
    // at most that many bodies.
    let Ok(_slot) = state.push_slots.clone().try_acquire_owned() else {
        return Err(ApiError::busy(format!(
            "{} pushes are being stored; retry shortly (ingest.push_concurrency)",
            state.settings.ingest.push_concurrency
        )));
    };

    let limit = state.settings.server.max_body_bytes;
    let bytes = axum::body::to_bytes(request.into_body(), limit)
        .await
        .map_err(|e| {
            ApiError::user(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body is over {limit} bytes or broken: {e}"),
            )
        })?;

    let (run, force) =
        decode(&bytes).map_err(|why| ApiError::user(StatusCode::BAD_REQUEST, why.to_string()))?;

    let path = run.path.clone();
    let store_timeout =
        std::time::Duration::from_secs(state.settings.ingest.push_store_timeout_secs);

    let summary =
        crate::adapters::ingest::ingest_pushed_run(&state.store, run, force, store_timeout)
            .await
            .map_err(|e| ApiError::Internal(e.into()))?;

    summary.count("push");
    let (status, outcome) = if summary.ingested > 0 {
        (StatusCode::CREATED, "ingested")
    } else if summary.storage_failed > 0 {
        // sheriff's own storage failed, not the file: retryable
        (StatusCode::SERVICE_UNAVAILABLE, "not stored, try again")
    } else if summary.failed > 0 {
        (StatusCode::UNPROCESSABLE_ENTITY, "failed")
    } else if summary.conflicts > 0 {
        // stored before with other content: nothing changed, and the sender is told why
        (
            StatusCode::CONFLICT,
            "already stored with other content; send force: true to replace it",
        )
    } else {
        (StatusCode::OK, "already stored")
    };

    Ok((
        status,
        Json(serde_json::json!({ "run": path, "outcome": outcome, "errors": summary.errors })),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_paths_and_file_names_are_plain_or_refused() {
        assert!(
            run_path_problem("logs/periodic-ci-x-e2e-aws-ovn-upgrade/1700000000000000001").is_ok()
        );
        assert!(run_path_problem("pr-logs/pull/openshift_origin/28000/pull-ci-x/1700").is_ok());
        for bad in [
            "",
            "passwd",
            "logs/./job/1",
            "logs/../job/1",
            "logs//1",
            "logs/job\0evil/1",
            "logs/job\nINFO forged/1",
            "logs/\u{202e}boj/1",
            "logs/job\u{2028}INFO forged/1",
            "logs/job\u{a0}x/1",
            "logs/jo\u{200b}b/1",
        ] {
            assert!(run_path_problem(bad).is_err(), "{bad:?}");
        }
        assert!(run_path_problem(&format!("logs/{}/1", "j".repeat(300))).is_err());
        assert!(run_path_problem(&vec!["a"; 13].join("/")).is_err());
        assert_eq!(run_path_problem("logs/../1"), Err(NameProblem::BadSegment));
        assert!(file_name_problem("artifacts/e2e/junit/backend-disruption_1.json").is_ok());
        for bad in [
            "",
            "/etc/passwd",
            "a/../../b",
            "x\ny",
            "x\u{2028}y",
            "x\u{feff}y",
            &"f".repeat(2000),
        ] {
            assert!(file_name_problem(bad).is_err(), "{bad:?}");
        }
    }
}
