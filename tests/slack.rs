//! The Slack endpoints through the router (no socket): signatures, authorization, the slash
//! command and the buttons; and `/metrics`.

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::faults::Faults;
use common::slack::FakeSlack;
use sheriff::config::{Secret, Settings};
use sheriff::notify::slack::verify::sign;
use sheriff::server::{AppState, router};
use tower::ServiceExt;

const SECRET: &str = "signing-secret-for-tests";

fn state(db: &common::TestDb, slack: &FakeSlack) -> AppState {
    let mut s = Settings::default();
    s.slack.signing_secret = Some(Secret::new(SECRET));
    s.slack.signing_secret_previous = Some(Secret::new("the-old-secret"));
    s.slack.bot_token = Some(Secret::new(common::slack::TOKEN));
    s.slack.api_url = slack.api_url();
    s.slack.authorized_users = vec!["UOPS".into()];
    s.slack.authorized_groups = vec!["SOPS".into()];
    let store = tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(sheriff::store::Store::open(&db.settings))
    })
    .unwrap();
    AppState::new(Arc::new(store), Arc::new(s))
}

fn form(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap()
}

async fn send(
    state: &AppState,
    path: &str,
    body: &str,
    secret: Option<&str>,
    age: i64,
) -> (StatusCode, serde_json::Value) {
    let ts = chrono::Utc::now().timestamp() - age;
    let mut req = Request::post(path).header("content-type", "application/x-www-form-urlencoded");
    if let Some(secret) = secret {
        req = req
            .header("x-slack-request-timestamp", ts.to_string())
            .header("x-slack-signature", sign(secret, ts, body.as_bytes()));
    }
    let response =
        router(state.clone()).oneshot(req.body(Body::from(body.to_string())).unwrap()).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (
        status,
        serde_json::from_slice(&bytes)
            .unwrap_or(serde_json::Value::String(String::from_utf8_lossy(&bytes).into())),
    )
}

async fn command(state: &AppState, user: &str, text: &str, response_url: &str) -> serde_json::Value {
    let body =
        form(&[("command", "/sheriff"), ("user_id", user), ("text", text), ("response_url", response_url)]);
    let (status, answer) = send(state, "/slack/commands", &body, Some(SECRET), 0).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer
}

on_both_engines! {
    async fn signatures_are_checked_before_anything_changes(db) {
        let slack = FakeSlack::start("slack-signatures", Faults::none()).await;
        let state = state(&db, &slack);
        let body = form(&[("command", "/sheriff"), ("user_id", "UOPS"), ("text", "silence backend=x* 24h test")]);
        for (secret, age) in [(Some("wrong-secret"), 0), (None, 0), (Some(SECRET), 600)] {
            let (status, _) = send(&state, "/slack/commands", &body, secret, age).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "secret {secret:?} age {age}");
            let (status, _) = send(&state, "/slack/interactions", &body, secret, age).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        }
        assert!(state.store.silences(chrono::Utc::now().timestamp()).await.unwrap().is_empty(), "nothing changed");
        // the previous secret still works during a rotation
        let (status, _) = send(&state, "/slack/commands", &form(&[("user_id", "U1"), ("text", "help")]), Some("the-old-secret"), 0).await;
        assert_eq!(status, StatusCode::OK);
    }

    async fn commands_answer_and_only_operators_change_things(db) {
        let slack = FakeSlack::start("slack-commands", Faults::none()).await;
        slack.set_group("SOPS", &["UGROUPMEMBER"]);
        let state = state(&db, &slack);
        let help = command(&state, "UANY", "help", "").await;
        assert!(help["text"].as_str().unwrap().contains("query <backend>"));
        let unknown = command(&state, "UANY", "frobnicate", "").await;
        assert!(unknown["text"].as_str().unwrap().contains("unknown command `frobnicate`"));
        let bad = command(&state, "UANY", "query x colour=red", "").await;
        assert!(bad["text"].as_str().unwrap().contains("unknown filter `colour`"));
        let query = command(&state, "UANY", "query image-registry-new-connections platform=metal window=7d", "").await;
        assert!(query["text"].as_str().unwrap().contains("image-registry-new-connections platform=metal"), "{query}");

        let refused = command(&state, "UANY", "silence backend=image-registry-* platform=metal 24h noisy", "").await;
        assert!(refused["text"].as_str().unwrap().starts_with("Sorry <@UANY>"), "{refused}");
        assert!(state.store.silences(chrono::Utc::now().timestamp()).await.unwrap().is_empty());

        let ok = command(&state, "UOPS", "silence backend=image-registry-* platform=metal 24h known metal outage", "").await;
        assert!(ok["text"].as_str().unwrap().contains("Silence #1"), "{ok}");
        let by_group = command(&state, "UGROUPMEMBER", "unsilence 1", "").await;
        assert!(by_group["text"].as_str().unwrap().contains("Ended 1 silence"), "{by_group}");
        let silences = state.store.silences(0).await.unwrap();
        assert!(silences.is_empty());

        let status = command(&state, "UANY", "status", "").await;
        assert!(status["text"].as_str().unwrap().contains("0 open incident"), "{status}");
        let explain = command(&state, "UANY", "explain 42", "").await;
        assert!(explain["text"].as_str().unwrap().contains("No incident 42"));
        // every shape answered above passes Slack's own block models (recorded for the CI check)
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../sheriff-recorded/slack");
        std::fs::create_dir_all(&dir).unwrap();
        let lines: Vec<String> = [help, unknown, bad, query, refused, ok, status].iter().map(|v| v.to_string()).collect();
        std::fs::write(dir.join(format!("slash-answers-{:?}.jsonl", db.store.engine())), lines.join("\n")).unwrap();
    }

    async fn metrics_are_exposed_in_prometheus_text(db) {
        let slack = FakeSlack::start("slack-metrics", Faults::none()).await;
        let state = state(&db, &slack);
        let response = router(state.clone()).oneshot(Request::get("/metrics").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let text = String::from_utf8(axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap().to_vec()).unwrap();
        for name in ["sheriff_outbox_entries", "sheriff_outbox_oldest_pending_seconds", "sheriff_incidents"] {
            assert!(text.lines().any(|l| l.starts_with(name)), "{name} missing from:\n{text}");
        }
        for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            let value = line.rsplit(' ').next().unwrap();
            assert!(value.parse::<f64>().is_ok(), "not a sample line: {line}");
        }
    }
}
