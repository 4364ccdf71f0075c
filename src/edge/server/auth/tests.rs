//! Router tests without a socket: a route put under the Slack signature's layer, the push
//! layer or the pages layer is refused without the signature or the token, whatever it does
//! itself; a handler served outside its layer does no work.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::{get, post};
use tower::ServiceExt;

use super::SlackSigned;
use crate::clients::slack::signature::sign;
use crate::config::{Secret, Settings};
use crate::edge::server::AppState;

const SECRET: &str = "signing-secret-for-tests";
const TOKEN: &str = "push-token-for-tests";

async fn state(tweak: impl FnOnce(&mut Settings)) -> (AppState, tempfile::TempDir) {
    crate::init_crypto();
    let dir = tempfile::tempdir().unwrap();
    let database = crate::config::DatabaseSettings {
        url: format!("sqlite://{}", dir.path().join("auth.db").display())
            .parse()
            .unwrap(),
        ..Default::default()
    };
    let store = crate::store::Store::open(&database).await.unwrap();
    let mut settings = Settings::default();
    settings.slack.signing_secret = Some(Secret::new(SECRET));
    settings.ingest.push_token = Some(Secret::new(TOKEN));
    tweak(&mut settings);
    (
        AppState::new(
            Arc::new(store),
            Arc::new(crate::application::warm::Warm::new()),
            Arc::new(settings),
        ),
        dir,
    )
}

/// A new route among the Slack routes, its handler checking nothing.
fn new_slack_route(state: AppState) -> Router {
    let routes = Router::new().route("/slack/new", post(|| async { "ran" }));
    crate::edge::server::slack_signature_required(routes, &state).with_state(state)
}

/// A new route under the push API's layer, its handler checking nothing.
fn new_push_route(state: AppState) -> Router {
    let routes = Router::new().route("/api/v1/new", post(|| async { "ran" }));
    crate::edge::server::push_token_required(routes, &state).with_state(state)
}

async fn call(app: Router, request: Request<Body>) -> (StatusCode, String) {
    let response = app.oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn slack_request(secret: Option<&str>) -> Request<Body> {
    let body = "user_id=U1&text=help";
    let now = chrono::Utc::now().timestamp();
    let mut request = Request::post("/slack/new");
    if let Some(secret) = secret {
        request = request
            .header("x-slack-request-timestamp", now.to_string())
            .header("x-slack-signature", sign(secret, now, body.as_bytes()));
    }
    request.body(Body::from(body)).unwrap()
}

#[tokio::test]
async fn a_new_slack_route_runs_only_on_a_signed_request() {
    let (state, _dir) = state(|_| {}).await;
    let (status, body) = call(new_slack_route(state.clone()), slack_request(None)).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::UNAUTHORIZED,
            "the X-Slack-Signature or X-Slack-Request-Timestamp header is missing\n"
        )
    );
    let (status, _) = call(
        new_slack_route(state.clone()),
        slack_request(Some("a-forged-secret")),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = call(new_slack_route(state), slack_request(Some(SECRET))).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ran"));
}

#[tokio::test]
async fn a_slack_handler_gets_the_signed_body_as_sent() {
    let (state, _dir) = state(|_| {}).await;
    let routes = Router::new().route(
        "/slack/new",
        post(|signed: SlackSigned, body: String| async move {
            let signed = signed.into_body();
            format!("{}|{body}", String::from_utf8_lossy(&signed))
        }),
    );
    let app = crate::edge::server::slack_signature_required(routes, &state).with_state(state);
    let (status, body) = call(app, slack_request(Some(SECRET))).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::OK, "user_id=U1&text=help|user_id=U1&text=help")
    );
}

#[tokio::test]
async fn a_slack_handler_served_without_the_signature_layer_does_no_work() {
    let (state, _dir) = state(|_| {}).await;
    let app = Router::new()
        .route("/slack/new", post(crate::edge::server::slack::commands))
        .with_state(state);
    let (status, body) = call(app, slack_request(Some(SECRET))).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(
        !body.contains("signature"),
        "the cause stays in the log: {body}"
    );
}

#[tokio::test]
async fn an_empty_signing_secret_signs_nothing() {
    let (state, _dir) = state(|s| s.slack.signing_secret = Some(Secret::new(""))).await;
    let (status, body) = call(new_slack_route(state), slack_request(Some(""))).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::UNAUTHORIZED,
            "no signing secret is configured\n"
        )
    );
}

fn push_request(token: Option<&str>) -> Request<Body> {
    let mut request = Request::post("/api/v1/new");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    request.body(Body::from("{}")).unwrap()
}

#[tokio::test]
async fn a_new_route_under_the_push_layer_runs_only_with_the_token() {
    let (state, _dir) = state(|_| {}).await;
    let refused = r#"{"error":"missing or wrong bearer token"}"#;
    let (status, body) = call(new_push_route(state.clone()), push_request(None)).await;
    assert_eq!((status, body.as_str()), (StatusCode::UNAUTHORIZED, refused));
    let (status, body) = call(new_push_route(state.clone()), push_request(Some("wrong"))).await;
    assert_eq!((status, body.as_str()), (StatusCode::UNAUTHORIZED, refused));
    let (status, body) = call(new_push_route(state), push_request(Some(TOKEN))).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ran"));
}

#[tokio::test]
async fn without_a_push_token_the_push_layer_is_off_and_an_empty_one_takes_nothing() {
    let (off, _dir) = state(|s| s.ingest.push_token = None).await;
    let (status, body) = call(new_push_route(off), push_request(Some(TOKEN))).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("the push API is off"), "{body}");
    let (empty, _dir) = state(|s| s.ingest.push_token = Some(Secret::new(""))).await;
    for token in [None, Some("")] {
        let (status, _) = call(new_push_route(empty.clone()), push_request(token)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?}");
    }
}

#[tokio::test]
async fn the_push_handler_served_without_the_push_layer_does_no_work() {
    let (state, _dir) = state(|_| {}).await;
    let app = Router::new()
        .route("/api/v1/runs", post(crate::edge::server::push::push_run))
        .with_state(state);
    let request = Request::post("/api/v1/runs")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::from(r#"{"path": "logs/job/1", "files": {}}"#))
        .unwrap();
    let (status, body) = call(app, request).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(
        !body.contains("push token"),
        "the cause stays in the log: {body}"
    );
}

/// A page's route, under the pages token's layer.
fn pages_route(state: AppState) -> Router {
    Router::new()
        .route(
            "/api/v1/incidents",
            get(crate::edge::server::pages::index_json),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            super::require_pages_token,
        ))
        .with_state(state)
}

fn page_request(authorization: Option<&str>) -> Request<Body> {
    let mut r = Request::get("/api/v1/incidents");
    if let Some(a) = authorization {
        r = r.header("authorization", a);
    }
    r.body(Body::empty()).unwrap()
}

#[tokio::test]
async fn a_page_asks_for_the_pages_token_when_one_is_set_and_is_open_when_none_is() {
    let (open, _dir) = state(|s| s.server.pages_token = None).await;
    let (status, body) = call(pages_route(open), page_request(None)).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let (guarded, _dir) = state(|s| s.server.pages_token = Some(Secret::new("pages"))).await;
    for wrong in [None, Some("Bearer nope"), Some("Basic dTpub3Bl")] {
        let (status, _) = call(pages_route(guarded.clone()), page_request(wrong)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{wrong:?}");
    }
    // `u:pages` in basic auth, as a browser sends it, and the bearer token
    for right in ["Basic dTpwYWdlcw==", "Bearer pages"] {
        let (status, body) = call(pages_route(guarded.clone()), page_request(Some(right))).await;
        assert_eq!(status, StatusCode::OK, "{right}: {body}");
    }
}

#[tokio::test]
async fn a_page_served_without_the_pages_layer_shows_nothing() {
    let (state, _dir) = state(|s| s.server.pages_token = None).await;
    let app = Router::new()
        .route(
            "/api/v1/incidents",
            get(crate::edge::server::pages::index_json),
        )
        .with_state(state);
    let (status, body) = call(app, page_request(None)).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(!body.contains("incidents\""), "{body}");
}
