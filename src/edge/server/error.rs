//! One error type for every handler: what the caller may see, kept apart from what is logged.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// An error answer. `Internal` hides its cause from the caller and logs it with a reference.
#[derive(Debug)]
pub enum ApiError {
    /// The caller's mistake, said plainly.
    User { status: StatusCode, message: String },
    /// Too much at once: 503 with `Retry-After`, the request untouched.
    Busy(String),
    /// Ours: logged in full, answered generically.
    Internal(anyhow::Error),
}

impl ApiError {
    pub fn user(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError::User {
            status,
            message: message.into(),
        }
    }

    pub fn busy(message: impl Into<String>) -> ApiError {
        ApiError::Busy(message.into())
    }
}

/// Seconds a caller turned away as busy is asked to wait.
const BUSY_RETRY_AFTER_SECS: &str = "5";

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> ApiError {
        ApiError::Internal(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::User { status, message } => {
                (status, Json(serde_json::json!({ "error": message }))).into_response()
            }
            ApiError::Busy(message) => (
                StatusCode::SERVICE_UNAVAILABLE,
                [(axum::http::header::RETRY_AFTER, BUSY_RETRY_AFTER_SECS)],
                Json(serde_json::json!({ "error": message })),
            )
                .into_response(),
            ApiError::Internal(e) => {
                let reference = format!("{:016x}", rand_id());
                tracing::error!(reference, "request failed: {e:#}");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Json(serde_json::json!({ "error": "internal error", "reference": reference })),
                )
                    .into_response()
            }
        }
    }
}

/// A reference id for an error report; unique enough to find the log line.
fn rand_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}
