//! What Google's JSON APIs (Cloud Storage's and BigQuery's) answer an error with:
//! `{"error": {"code": 403, "message": "…", "errors": [{"reason": "…"}], "status": "…"}}`.

use serde::Deserialize;

#[derive(Deserialize)]
pub(super) struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Deserialize)]
pub(super) struct ErrorDetail {
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub errors: Vec<ErrorItem>,
    #[serde(default)]
    pub status: String,
}

/// One of an error's reasons (`rateLimitExceeded`, `notFound`, …).
#[derive(Deserialize)]
pub(super) struct ErrorItem {
    #[serde(default)]
    pub reason: String,
}
