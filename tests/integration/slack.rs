//! The Slack endpoints through the router (no socket): signatures, authorization, the slash
//! command and the buttons; and `/metrics`.

use crate::common;
use sheriff::model::DAY;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::faults::Faults;
use common::slack::FakeSlack;
use sheriff::clients::slack::sign;
use sheriff::config::{Secret, Settings};
use sheriff::edge::server::{AppState, router};
use tower::ServiceExt;

const SECRET: &str = "signing-secret-for-tests";

fn state(db: &common::TestDb, slack: &FakeSlack) -> AppState {
    state_with(db, slack, |_| {})
}

fn state_with(
    db: &common::TestDb,
    slack: &FakeSlack,
    tweak: impl FnOnce(&mut Settings),
) -> AppState {
    let mut s = Settings::default();
    s.slack.signing_secret = Some(Secret::new(SECRET));
    s.slack.signing_secret_previous = Some(Secret::new("the-old-secret"));
    s.slack.bot_token = Some(Secret::new(common::slack::TOKEN));
    s.slack.api_url = slack.api_url();
    s.slack.authorized_users = vec!["UOPS".into()];
    s.slack.authorized_groups = vec!["SOPS".into()];
    tweak(&mut s);
    let store = tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(sheriff::store::Store::open(&db.settings))
    })
    .unwrap();
    AppState::new(
        Arc::new(store),
        Arc::new(sheriff::application::warm::Warm::new()),
        Arc::new(s),
    )
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
    send_bytes(state, path, body.as_bytes(), secret, age).await
}

/// [`send`] for bodies that need not be text.
async fn send_bytes(
    state: &AppState,
    path: &str,
    body: &[u8],
    secret: Option<&str>,
    age: i64,
) -> (StatusCode, serde_json::Value) {
    let ts = chrono::Utc::now().timestamp() - age;
    let mut req = Request::post(path).header("content-type", "application/x-www-form-urlencoded");
    if let Some(secret) = secret {
        req = req
            .header("x-slack-request-timestamp", ts.to_string())
            .header("x-slack-signature", sign(secret, ts, body));
    }
    let response = router(state.clone())
        .oneshot(req.body(Body::from(body.to_vec())).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::String(
            String::from_utf8_lossy(&bytes).into(),
        )),
    )
}

/// A signed interaction (`payload=<json>`) from `user`; its HTTP status and answer.
async fn interaction(
    state: &AppState,
    payload: serde_json::Value,
) -> (StatusCode, serde_json::Value) {
    send(
        state,
        "/slack/interactions",
        &form(&[("payload", &payload.to_string())]),
        Some(SECRET),
        0,
    )
    .await
}

fn click(slack: &FakeSlack, user: &str, action: &str, incident: i64) -> serde_json::Value {
    serde_json::json!({
        "type": "block_actions",
        "user": { "id": user },
        "trigger_id": "T123.456",
        "response_url": format!("{}/response/{user}-{action}", slack.url),
        "actions": [{ "action_id": action, "value": incident.to_string(), "type": "button" }]
    })
}

/// An incident made the way sheriff makes them: a month with the metal registry regression and
/// one cycle (with Jira off, so that "File Jira now" has something to do).
async fn one_incident(db: &common::TestDb) -> sheriff::domain::incidents::Incident {
    let end = sheriff::synth::day(2026, 11, 29);
    common::load_metal_regression(&db.store, 7, end).await;
    let options = sheriff::application::cycle::CycleOptions {
        at: end,
        dry_run: false,
    };
    sheriff::application::cycle::run_cycle(
        &db.store,
        &sheriff::application::warm::Warm::new(),
        &Settings::default(),
        options,
    )
    .await
    .unwrap();
    let incidents = db.store.incidents().all().await.unwrap();
    assert_eq!(incidents.len(), 1, "{incidents:#?}");
    incidents.into_iter().next().unwrap()
}

/// The metal regression's incident with Slack and Jira on (the fakes), posted and filed.
async fn live_incident(
    db: &common::TestDb,
    name: &str,
) -> (AppState, FakeSlack, common::jira::FakeJira) {
    let name = format!("{name}-{:?}", db.store.engine());
    let slack = FakeSlack::start(&name, Faults::none()).await;
    let jira = common::jira::FakeJira::start(&name, Faults::none()).await;
    let state = state_with(db, &slack, |s| {
        s.slack.channel = "C0DISRUPT".into();
        s.slack.min_post_interval_ms = 0;
        s.jira.url = jira.url.clone();
        s.jira.project = "OCPBUGS".into();
        s.jira.token = Some(Secret::new(common::jira::TOKEN));
        s.server.public_url = "https://sheriff.example.com".into();
    });
    let end = sheriff::synth::day(2026, 11, 29);
    common::load_metal_regression(&state.store, 7, end).await;
    let options = sheriff::application::cycle::CycleOptions {
        at: end,
        dry_run: false,
    };
    sheriff::application::cycle::run_cycle(&state.store, &state.warm, &state.settings, options)
        .await
        .unwrap();
    sheriff::application::outbox::deliver_for_a_while(state.store.clone(), &state.settings)
        .await
        .unwrap();
    (state, slack, jira)
}

async fn command(
    state: &AppState,
    user: &str,
    text: &str,
    response_url: &str,
) -> serde_json::Value {
    let body = form(&[
        ("command", "/sheriff"),
        ("user_id", user),
        ("text", text),
        ("response_url", response_url),
    ]);
    let (status, answer) = send(state, "/slack/commands", &body, Some(SECRET), 0).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer
}

/// The words sheriff keeps for the comparison level in prose: "reference" and "allowed" only.
/// Identifiers that keep an older word (`threshold_seconds`, `baseline_days`) are not prose:
/// a token joined by `_` is skipped, and so are code spans and fenced blocks.
fn old_word_for_the_comparison_level(prose: &str) -> Option<String> {
    let lower = prose.to_lowercase();
    if let Some(at) = lower.find("configured limit") {
        return Some(lower[at..].chars().take(80).collect());
    }
    lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| !t.contains('_'))
        .find(|t| t.starts_with("threshold") || t.starts_with("baseline"))
        .map(str::to_string)
}

/// A Markdown file's prose: without fenced blocks and `code spans`.
fn markdown_prose(text: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.extend(line.split('`').step_by(2).map(|s| format!("{s} ")));
            out.push('\n');
        }
    }
    out
}

#[test]
fn no_document_or_configuration_comment_calls_the_comparison_level_threshold_baseline_or_limit() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    assert!(files.len() > 5, "{files:?}");
    for path in files {
        let prose = markdown_prose(&std::fs::read_to_string(&path).unwrap());
        for line in prose.lines() {
            let found = old_word_for_the_comparison_level(line);
            assert!(found.is_none(), "{} says {found:?}: {line}", path.display());
        }
    }
    let config = std::fs::read_to_string(root.join("config/sheriff.toml")).unwrap();
    let comments: Vec<&str> = config
        .lines()
        .filter(|l| l.trim_start().starts_with('#'))
        .collect();
    assert!(comments.len() > 50);
    for line in comments {
        let found = old_word_for_the_comparison_level(&markdown_prose(line));
        assert!(
            found.is_none(),
            "config/sheriff.toml says {found:?}: {line}"
        );
    }
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
        assert!(state.store.incidents().silences(chrono::Utc::now().timestamp()).await.unwrap().is_empty(), "nothing changed");
        // A correctly signed body that is not UTF-8 is told so (400), not called forged.
        let raw = b"command=%2Fsheriff&user_id=UOPS&text=\xff\xfe";
        let (status, answer) = send_bytes(&state, "/slack/commands", raw, Some(SECRET), 0).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert!(answer.as_str().unwrap().contains("not UTF-8"), "{answer}");
        let (status, _) = send_bytes(&state, "/slack/commands", raw, Some("wrong-secret"), 0).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
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
        common::load_metal_regression(&state.store, 3, chrono::Utc::now()).await;
        let query = command(&state, "UANY", "query image-registry-new-connections platform=metal window=7d", "").await;
        let text = query["text"].as_str().unwrap();
        assert!(text.contains("image-registry-new-connections platform=metal") && !text.contains("unknown"), "{query}");
        // A misspelled backend is called unknown, with the nearest names; a glob is shown as typed.
        let typo = command(&state, "UANY", "query image-registry-new-connection", "").await;
        assert!(typo["text"].as_str().unwrap().contains("unknown backend `image-registry-new-connection`: no stored run has recorded it; did you mean image-registry-new-connections"), "{typo}");
        let star = command(&state, "UANY", "query * platform=*-metal", "").await;
        assert_eq!(star["blocks"][0]["text"]["type"], "plain_text", "{star}");
        assert!(star["blocks"][0]["text"]["text"].as_str().unwrap().starts_with("* platform=*-metal — last 7 days"), "{star}");
        let extra = command(&state, "UOPS", "evaluate now please", "").await;
        assert!(extra["text"].as_str().unwrap().contains("`evaluate` takes nothing after it"), "{extra}");

        let refused = command(&state, "UANY", "silence backend=image-registry-* platform=metal 24h noisy", "").await;
        assert!(refused["text"].as_str().unwrap().starts_with("Sorry <@UANY>"), "{refused}");
        assert!(state.store.incidents().silences(chrono::Utc::now().timestamp()).await.unwrap().is_empty());

        let ok = command(&state, "UOPS", "silence backend=image-registry-* platform=metal 24h known metal outage", "").await;
        assert!(ok["text"].as_str().unwrap().contains("Silence #1"), "{ok}");
        let by_group = command(&state, "UGROUPMEMBER", "unsilence 1", "").await;
        assert!(by_group["text"].as_str().unwrap().contains("Ended 1 silence"), "{by_group}");
        let silences = state.store.incidents().silences(0).await.unwrap();
        assert!(silences.is_empty());

        let status = command(&state, "UANY", "status", "").await;
        assert!(status["text"].as_str().unwrap().contains("0 open incident"), "{status}");
        let explain = command(&state, "UANY", "explain 42", "").await;
        assert!(explain["text"].as_str().unwrap().contains("No incident 42"));
        // every shape answered above passes Slack's own block models (recorded for the CI check)
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../sheriff-recorded/slack");
        std::fs::create_dir_all(&dir).unwrap();
        let lines: Vec<String> = [help, unknown, bad, query, typo, star, refused, ok, status].iter().map(|v| v.to_string()).collect();
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

    async fn buttons_act_for_operators_and_every_action_is_recorded(db) {
        let slack = FakeSlack::start(&format!("slack-buttons-{:?}", db.store.engine()), Faults::none()).await;
        let incident = one_incident(&db).await;
        let state = state_with(&db, &slack, |s| {
            s.jira.url = "http://127.0.0.1:9".into();
            s.jira.project = "OCPBUGS".into();
            s.jira.token = Some(Secret::new("jira-token"));
        });
        let id = incident.id;

        // someone not configured: a polite refusal through response_url, nothing changes
        let (status, _) = interaction(&state, click(&slack, "UANY", "ack", id)).await;
        assert_eq!(status, StatusCode::OK);
        let answers = slack.responses();
        assert!(answers[0]["text"].as_str().unwrap().starts_with("Sorry <@UANY>"), "{answers:?}");
        assert!(state.store.incidents().find("1").await.unwrap().unwrap().acked_by.is_none());

        interaction(&state, click(&slack, "UOPS", "ack", id)).await;
        let acked = state.store.incidents().find("1").await.unwrap().unwrap();
        assert_eq!(acked.acked_by.as_deref(), Some("slack:UOPS"));
        assert!(slack.responses()[1]["text"].as_str().unwrap().contains("acknowledged by <@UOPS>"));

        interaction(&state, click(&slack, "UOPS", "silence_24h", id)).await;
        let silences = state.store.incidents().silences(chrono::Utc::now().timestamp()).await.unwrap();
        assert_eq!(silences.len(), 1);
        assert_eq!(silences[0].fingerprint.as_deref(), Some(incident.fingerprint.as_str()));
        let left = silences[0].expires_at - chrono::Utc::now().timestamp();
        assert!((DAY - 100..=DAY).contains(&left), "{left}");

        interaction(&state, click(&slack, "UOPS", "file_jira", id)).await;
        let pending = state.store.outbox().entries(sheriff::store::EntryState::Pending, 100).await.unwrap();
        assert!(pending.iter().any(|e| e.idempotency_key == format!("jira_create:{id}")), "{pending:#?}");
        // a second click does not file twice
        interaction(&state, click(&slack, "UOPS", "file_jira", id)).await;
        let again = state.store.outbox().entries(sheriff::store::EntryState::Pending, 100).await.unwrap();
        assert_eq!(again.iter().filter(|e| e.kind == "jira_create").count(), 1);

        // "Not a regression" opens a dialog; its submission needs a reason
        interaction(&state, click(&slack, "UOPS", "not_a_regression", id)).await;
        let views = slack.views();
        assert_eq!(views.len(), 1);
        assert_eq!(views[0]["trigger_id"], "T123.456");
        assert_eq!(views[0]["view"]["callback_id"], "not_a_regression");
        let submission = |user: &str, reason: &str| serde_json::json!({
            "type": "view_submission",
            "user": { "id": user },
            "view": {
                "callback_id": "not_a_regression",
                "private_metadata": id.to_string(),
                "state": { "values": { "reason": { "reason": { "type": "plain_text_input", "value": reason } } } }
            }
        });
        let (_, empty) = interaction(&state, submission("UOPS", "  ")).await;
        assert_eq!(empty["response_action"], "errors", "{empty}");
        let (_, stranger) = interaction(&state, submission("UANY", "flaky")).await;
        assert_eq!(stranger["response_action"], "errors", "{stranger}");
        assert!(state.store.incidents().find("1").await.unwrap().unwrap().state.is_open());
        let (_, done) = interaction(&state, submission("UOPS", "the metal lab was being rewired")).await;
        assert_eq!(done["response_action"], "clear", "{done}");
        let resolved = state.store.incidents().find("1").await.unwrap().unwrap();
        assert_eq!(resolved.state.as_str(), "resolved");
        let silences = state.store.incidents().silences(chrono::Utc::now().timestamp()).await.unwrap();
        assert!(silences.iter().any(|s| s.reason.contains("the metal lab was being rewired")
            && s.expires_at > chrono::Utc::now().timestamp() + 29 * DAY));

        // resolved now: its buttons and dialogs act no more, and say so
        let silenced = state.store.incidents().silences(chrono::Utc::now().timestamp()).await.unwrap().len();
        for action in ["ack", "silence_24h", "file_jira"] {
            interaction(&state, click(&slack, "UOPS", action, id)).await;
            let answer = slack.responses().last().unwrap()["text"].as_str().unwrap().to_string();
            assert!(answer.contains("is resolved"), "{action}: {answer}");
        }
        assert_eq!(state.store.incidents().silences(chrono::Utc::now().timestamp()).await.unwrap().len(), silenced);
        let (_, again) = interaction(&state, submission("UOPS", "still not one")).await;
        assert_eq!(again["response_action"], "errors", "{again}");
        assert_eq!(state.store.incidents().events(id).await.unwrap().iter().filter(|e| e.kind == "not_a_regression").count(), 1);

        // who did what, when: in the events and in `explain`
        let events = state.store.incidents().events(id).await.unwrap();
        let kinds: Vec<(&str, &str)> = events.iter().map(|e| (e.actor.as_str(), e.kind.as_str())).collect();
        for expected in [("slack:UOPS", "ack"), ("slack:UOPS", "silenced"), ("slack:UOPS", "file_jira"), ("slack:UOPS", "not_a_regression")] {
            assert!(kinds.contains(&expected), "{expected:?} missing from {kinds:?}");
        }
        assert!(!kinds.iter().any(|(a, _)| *a == "slack:UANY"), "{kinds:?}");
        let explain = command(&state, "UANY", "explain 1", "").await;
        let text = explain["blocks"].to_string();
        assert!(text.contains("not_a_regression") && text.contains("Slack user UOPS"), "{text}");
    }

    async fn after_not_a_regression_the_header_says_so_not_no_longer_observed(db) {
        let (state, slack, _jira) = live_incident(&db, "slack-header").await;
        let submission = serde_json::json!({
            "type": "view_submission",
            "user": { "id": "UOPS", "username": "alice" },
            "view": {
                "callback_id": "not_a_regression",
                "private_metadata": "1",
                "state": { "values": { "reason": { "reason": { "type": "plain_text_input", "value": "the lab was rewired" } } } }
            }
        });
        let (_, done) = interaction(&state, submission).await;
        assert_eq!(done["response_action"], "clear", "{done}");
        sheriff::application::outbox::deliver_for_a_while(state.store.clone(), &state.settings).await.unwrap();
        let parent = slack.messages().into_iter().find(|m| m.key.as_deref() == Some("slack_post:1")).unwrap();
        let header = parent.blocks[0]["text"]["text"].as_str().unwrap().to_string();
        assert!(header.contains("marked not a regression") && !header.contains("no longer observed"), "{header}");
        let context = parent.blocks.as_array().unwrap().last().unwrap().to_string();
        assert!(context.contains("last action: resolved by <@UOPS>"), "{context}");
    }

    async fn no_message_page_or_command_calls_the_comparison_level_threshold_baseline_or_limit(db) {
        let (state, slack, jira) = live_incident(&db, "slack-words").await;
        let mut ack = click(&slack, "UOPS", "ack", 1);
        ack["user"] = serde_json::json!({ "id": "UOPS", "username": "alice" });
        interaction(&state, ack).await;
        sheriff::application::outbox::deliver_for_a_while(state.store.clone(), &state.settings).await.unwrap();
        let mut said: Vec<(String, String)> = Vec::new();
        for m in slack.messages() {
            said.push((format!("Slack {:?}", m.key), format!("{} {}", m.text, m.blocks)));
        }
        for i in jira.issues() {
            said.push((format!("Jira {}", i.key), format!("{} {} {:?}", i.fields["summary"], i.fields["description"], i.comments)));
        }
        for path in ["/", "/incidents/1", "/explore?backend=image-registry-new-connections&release=4.14&platform=metal"] {
            let page = router(state.clone()).oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
            assert_eq!(page.status(), StatusCode::OK, "{path}");
            let bytes = axum::body::to_bytes(page.into_body(), 1 << 22).await.unwrap();
            let html = String::from_utf8(bytes.to_vec()).unwrap();
            // what people read: the style sheet's keywords (`align-items: baseline`) are not words
            let visible = match (html.find("<style"), html.find("</style>")) {
                (Some(a), Some(b)) => format!("{}{}", &html[..a], &html[b..]),
                _ => html,
            };
            said.push((format!("page {path}"), visible));
        }
        let query = command(&state, "UANY", "query image-registry-new-connections platform=metal", "").await;
        said.push(("/sheriff query".into(), query.to_string()));
        let explain = command(&state, "UANY", "explain 1", "").await;
        said.push(("/sheriff explain".into(), explain.to_string()));
        for args in [
            &["incidents", "list"][..],
            &["incidents", "show", "1"],
            &["status"],
            &["query", "image-registry-new-connections", "platform=metal"],
            &["evaluate", "--dry-run", "--at", "2026-11-29T00:00:00Z"],
        ] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_sheriff"))
                .args(args)
                .env("SHERIFF__DATABASE__URL", db.url())
                .output()
                .unwrap();
            assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
            said.push((format!("sheriff {}", args.join(" ")), String::from_utf8(out.stdout).unwrap()));
        }
        let word = |text: &str, w: &str| {
            text.to_lowercase()
                .split(|c: char| !c.is_ascii_alphabetic())
                .any(|t| t == w)
        };
        for (where_, text) in &said {
            for w in ["threshold", "baseline", "limit"] {
                let at = text.to_lowercase().find(w).unwrap_or(0);
                assert!(!word(text, w), "{where_} says {w}: …{}…", text.get(at.saturating_sub(120)..(at + 60).min(text.len())).unwrap_or(text));
            }
        }
        assert!(said.iter().any(|(_, t)| t.contains("allowed")) && said.iter().any(|(_, t)| t.contains("reference")));
    }

    async fn people_are_mentioned_in_slack_and_named_in_jira_the_pages_and_the_cli(db) {
        let (state, slack, jira) = live_incident(&db, "slack-people").await;
        let alice = serde_json::json!({ "id": "UOPS", "username": "alice", "name": "Alice Doe" });
        let mut ack = click(&slack, "UOPS", "ack", 1);
        ack["user"] = alice.clone();
        interaction(&state, ack).await;
        let accept = serde_json::json!({
            "type": "view_submission",
            "user": alice,
            "view": {
                "callback_id": "accept_level",
                "private_metadata": "1",
                "state": { "values": {
                    "level": { "level": { "type": "plain_text_input", "value": "P50<=40s" } },
                    "until": { "until": { "type": "plain_text_input", "value": "14d" } },
                    "reason": { "reason": { "type": "plain_text_input", "value": "the registry drains on purpose" } }
                } }
            }
        });
        let (_, done) = interaction(&state, accept).await;
        assert_eq!(done["response_action"], "clear", "{done}");
        sheriff::application::outbox::deliver_for_a_while(state.store.clone(), &state.settings).await.unwrap();
        // Slack: a real mention, never the recorded actor
        let parent = slack.messages().into_iter().find(|m| m.key.as_deref() == Some("slack_post:1")).unwrap();
        let blocks = parent.blocks.to_string();
        assert!(blocks.contains("Acknowledged by <@UOPS>") && blocks.contains("by <@UOPS>"), "{blocks}");
        assert!(!blocks.contains("slack:") && !blocks.contains("<@slack"), "{blocks}");
        // Jira: the name
        let comments = serde_json::to_string(&jira.issues()[0].comments).unwrap();
        assert!(comments.contains("set by alice") && !comments.contains("slack:"), "{comments}");
        // the page and `explain`: the name
        let page = router(state.clone())
            .oneshot(Request::get("/incidents/1").body(Body::empty()).unwrap())
            .await
            .unwrap();
        let page = String::from_utf8(axum::body::to_bytes(page.into_body(), 1 << 22).await.unwrap().to_vec()).unwrap();
        assert!(page.contains(r#"<td data-label="who">alice</td>"#) && !page.contains("slack:UOPS"), "the history names alice");
        let explain = command(&state, "UANY", "explain 1", "").await.to_string();
        assert!(explain.contains("alice") && !explain.contains("slack:"), "{explain}");
        // the command line: the name, and its own actor is the login, else the host
        let sheriff = |args: &[&str]| {
            let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_sheriff"));
            c.args(args).env("SHERIFF__DATABASE__URL", db.url()).env_remove("USER").env("HOSTNAME", "ci-host-7");
            let out = c.output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        };
        let list = sheriff(&["incidents", "list"]);
        assert!(list.contains("acked by alice") && !list.contains("slack:"), "{list}");
        sheriff(&["incidents", "ack", "1"]);
        let events = state.store.incidents().events(1).await.unwrap();
        assert_eq!(events.last().unwrap().actor, "cli:ci-host-7", "{events:#?}");
        assert!(sheriff(&["incidents", "list"]).contains("acked by ci-host-7 (command line)"));
    }

    async fn the_accept_level_button_opens_a_dialog_and_its_answer_records_the_level(db) {
        let slack = FakeSlack::start(&format!("slack-accept-{:?}", db.store.engine()), Faults::none()).await;
        let incident = one_incident(&db).await;
        let state = state(&db, &slack);
        let id = incident.id;
        interaction(&state, click(&slack, "UOPS", "accept_level", id)).await;
        let views = slack.views();
        assert_eq!(views[0]["view"]["callback_id"], "accept_level");
        let submission = |user: &str, level: &str, until: &str, reason: &str| serde_json::json!({
            "type": "view_submission",
            "user": { "id": user },
            "view": {
                "callback_id": "accept_level",
                "private_metadata": id.to_string(),
                "state": { "values": {
                    "level": { "level": { "type": "plain_text_input", "value": level } },
                    "until": { "until": { "type": "plain_text_input", "value": until } },
                    "reason": { "reason": { "type": "plain_text_input", "value": reason } }
                } }
            }
        });
        // each bad field is named in the dialog, and nothing is stored
        let (_, level) = interaction(&state, submission("UOPS", "P50 about 20", "14d", "known")).await;
        assert_eq!((level["response_action"].as_str(), level["errors"]["level"].is_string()), (Some("errors"), true), "{level}");
        let (_, until) = interaction(&state, submission("UOPS", "P50<=20s", "next tuesday", "known")).await;
        assert!(until["errors"]["until"].is_string(), "{until}");
        let (_, reason) = interaction(&state, submission("UOPS", "P50<=20s", "", " ")).await;
        assert!(reason["errors"]["reason"].is_string(), "{reason}");
        let (_, stranger) = interaction(&state, submission("UANY", "P50<=20s", "14d", "known")).await;
        assert_eq!(stranger["response_action"], "errors");
        assert!(state.store.incidents().find("1").await.unwrap().unwrap().allowance.is_none());
        let (_, done) = interaction(&state, submission("UOPS", "P50<=20s", "14d", "the registry drains on purpose")).await;
        assert_eq!(done["response_action"], "clear", "{done}");
        let a = state.store.incidents().find("1").await.unwrap().unwrap().allowance.unwrap();
        assert_eq!((a.seconds, a.by.as_str()), (20.0, "slack:UOPS"));
        let left = a.until.unwrap() - chrono::Utc::now().timestamp();
        assert!((14 * DAY - 60..=14 * DAY).contains(&left), "{left}");
        let events = state.store.incidents().events(id).await.unwrap();
        assert!(events.iter().any(|e| e.kind == "accepted" && e.actor == "slack:UOPS"), "{events:#?}");
        let status = sheriff::application::board::status(&state.store, chrono::Utc::now().timestamp()).await.unwrap();
        assert!(sheriff::edge::text::status(&status).contains("accepted levels:\n  #1 accepted level P50 ≤ 20s"));
    }
}

/// Slack's signature can only be checked once the body is read, so the Slack routes read no
/// more than `server.slack_max_body_bytes`: one that says it is longer is refused at once, one
/// that is longer is cut off there; pushed runs keep their own, larger limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slack_body_over_its_limit_is_refused_before_it_is_read() {
    let db = common::TestDb::sqlite().await;
    let slack = FakeSlack::start("slack-body-limit", Faults::none()).await;
    let state = state(&db, &slack);
    let limit = state.settings.server.slack_max_body_bytes;
    assert!(limit < 1 << 20, "a few hundred KB at most");
    for path in ["/slack/commands", "/slack/interactions"] {
        let big = vec![b'a'; limit + 1];
        let (status, _) = send_bytes(&state, path, &big, None, 0).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{path}");
        // a body that only says it is 30 MB is refused on its word, before anything is read
        let req = Request::post(path)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("content-length", (30 << 20).to_string())
            .body(Body::from("a=b"))
            .unwrap();
        let response = router(state.clone()).oneshot(req).await.unwrap();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE, "{path}");
    }
    // a real-sized signed command still works
    let (status, _) = send(
        &state,
        "/slack/commands",
        &form(&[("user_id", "U1"), ("text", "help")]),
        Some(SECRET),
        0,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}
