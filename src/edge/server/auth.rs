//! Who may call what, decided before a handler acts: [`require_slack_signature`] for Slack's
//! requests (their handlers take the [`SlackSigned`] body it leaves), [`require_push_token`] for
//! the push API (its handlers take the [`PushTokenChecked`] it leaves), [`require_pages_token`]
//! for the pages and their JSON (their handlers take the [`PagesAllowed`] it leaves).
//!
//! Changes need an operator, and the guard is the type: every action that changes anything
//! takes an [`Operator`](crate::application::actions::Operator), which only
//! [`Operator::authorize`](crate::application::actions::Operator::authorize) makes for a Slack
//! user (the architecture test keeps the command line's own operator to the command line), so
//! a handler that forgot the check would not compile. It is asked for in the handler, once the
//! request is known to change something, not in an extractor: anyone in the channel may ask
//! what is open, and authorizing may ask Slack for a user group's members.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{ApiError, AppState};
use crate::clients::slack::signature::{self, VerifyError};

/// Slack's signature, checked before the handler runs: the body, signed with the signing
/// secret (or the previous one) within the last five minutes, goes on to the handler (as the
/// body and as [`SlackSigned`]); an unsigned, forged or stale request is answered 401 (400 when
/// signed but not text), logged and counted, and nothing else runs.
///
/// The body is read whole before the signature can be checked, so it is bounded: by the
/// route's `DefaultBodyLimit` (`server.slack_max_body_bytes` on the Slack routes, axum's 2 MB
/// elsewhere), answered 413 as axum answers it.
pub async fn require_slack_signature(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let mut reading = Request::new(body);
    *reading.headers_mut() = parts.headers.clone();
    // the body limit travels in the extensions
    *reading.extensions_mut() = parts.extensions.clone();
    let body = match Bytes::from_request(reading, &state).await {
        Ok(body) => body,
        Err(rejection) => return rejection.into_response(),
    };
    if let Err(e) = verify_slack(&state, &parts.headers, &body) {
        return unsigned(&e);
    }
    parts.extensions.insert(SlackSigned(body.clone()));
    next.run(Request::from_parts(parts, axum::body::Body::from(body)))
        .await
}

/// Ok when `body` carries Slack's signature in `headers`.
fn verify_slack(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Result<(), VerifyError> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let s = &state.settings.slack;
    // An empty secret signs for anyone who guesses it is empty: it counts as none.
    let secrets: Vec<&crate::config::Secret> = s
        .signing_secret
        .iter()
        .chain(s.signing_secret_previous.iter())
        .filter(|secret| !secret.expose().is_empty())
        .collect();
    signature::verify(
        &secrets,
        header("x-slack-signature"),
        header("x-slack-request-timestamp"),
        body,
    )
}

/// The answer to a request Slack did not sign (`e` says why), logged and counted.
fn unsigned(e: &VerifyError) -> Response {
    tracing::warn!("refused a Slack request: {e}");
    metrics::counter!("sheriff_slack_requests_refused_total").increment(1);
    let status = if *e == VerifyError::NotText {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::UNAUTHORIZED
    };
    (status, format!("{e}\n")).into_response()
}

/// A request's body, signed by Slack: left in the request by [`require_slack_signature`] and
/// by nothing else, so a handler that takes one answers 500, never its work, when served
/// outside that layer. Its body is read, never set.
#[derive(Debug, Clone)]
pub struct SlackSigned(Bytes);

impl SlackSigned {
    /// The signed body.
    pub fn into_body(self) -> Bytes {
        self.0
    }
}

impl<S: Send + Sync> FromRequestParts<S> for SlackSigned {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<SlackSigned, ApiError> {
        parts.extensions.remove::<SlackSigned>().ok_or_else(|| {
            ApiError::Internal(anyhow::anyhow!(
                "a Slack route is served without the signature's layer"
            ))
        })
    }
}

/// The push API's bearer token (`ingest.push_token`), checked before the handler runs and
/// before any of the body is read: an unauthenticated sender costs nothing but the headers.
/// No token configured: the push API is off (503). A wrong or missing one: 401.
pub async fn require_push_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = &state.settings.ingest.push_token else {
        return ApiError::user(
            StatusCode::SERVICE_UNAVAILABLE,
            "the push API is off: set SHERIFF__INGEST__PUSH_TOKEN",
        )
        .into_response();
    };
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(crate::support::http::bearer_token);
    // `matches` never takes an empty token, nor anything for an empty secret
    if !expected.matches(given) {
        return ApiError::user(StatusCode::UNAUTHORIZED, "missing or wrong bearer token")
            .into_response();
    }
    let mut request = request;
    request.extensions_mut().insert(PushTokenChecked(()));
    next.run(request).await
}

/// Proof that [`require_push_token`] let this request through: nothing else makes one, so a
/// handler that takes it answers 500, never its work, when served outside that layer.
#[derive(Debug, Clone)]
pub struct PushTokenChecked(());

impl<S: Send + Sync> FromRequestParts<S> for PushTokenChecked {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<PushTokenChecked, ApiError> {
        proof(
            parts,
            "a push route is served without the push token's layer",
        )
    }
}

/// The pages' token (`server.pages_token`), asked for when one is set, before the handler runs:
/// a bearer token, or any user with it as the password of basic auth (what a browser can send),
/// compared in constant time. A wrong or missing one: 401, with the basic-auth challenge. No
/// token set: the pages are open, for running behind an authenticating proxy.
pub async fn require_pages_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let allowed = match &state.settings.server.pages_token {
        None => true,
        Some(token) => token.matches(given_token(request.headers()).as_deref()),
    };
    if allowed {
        let mut request = request;
        request.extensions_mut().insert(PagesAllowed(()));
        return next.run(request).await;
    }
    let mut r = (
        StatusCode::UNAUTHORIZED,
        "sheriff's pages need the pages token\n",
    )
        .into_response();
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Basic realm=\"sheriff\""),
    );
    r
}

fn given_token(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    if let Some(t) = crate::support::http::bearer_token(value) {
        return Some(t.to_string());
    }
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64_decode(encoded.trim())?;
    let text = String::from_utf8(decoded).ok()?;
    text.split_once(':')
        .map(|(_, password)| password.to_string())
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let bytes: Vec<u8> = s.bytes().filter(|c| *c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let v: Vec<u8> = chunk.iter().map(|c| value(*c)).collect::<Option<_>>()?;
        let n = v
            .iter()
            .enumerate()
            .fold(0u32, |n, (k, x)| n | (u32::from(*x) << (18 - 6 * k)));
        out.extend((0..v.len().saturating_sub(1)).map(|k| (n >> (16 - 8 * k)) as u8));
    }
    Some(out)
}

/// Proof that [`require_pages_token`] let this request through: nothing else makes one, so a
/// page that takes it answers 500, never its content, when served outside that layer.
#[derive(Debug, Clone)]
pub struct PagesAllowed(());

impl<S: Send + Sync> FromRequestParts<S> for PagesAllowed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<PagesAllowed, ApiError> {
        proof(parts, "a page is served without the pages token's layer")
    }
}

/// The proof a layer left in the request; without it, a 500 saying which layer is missing (in
/// the log only: the caller sees a reference).
fn proof<T: Clone + Send + Sync + 'static>(
    parts: &Parts,
    missing: &'static str,
) -> Result<T, ApiError> {
    parts
        .extensions
        .get::<T>()
        .cloned()
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!(missing)))
}

#[cfg(test)]
mod tests;
