//! A fake release controller: `GET /changelog?from=TAG&to=TAG&format=json` as
//! openshift/release-controller's `httpReleaseChangelog` answers it, over a generated scenario's
//! payloads (`synth::release_changelog`). A missing `from`/`to` or an unknown tag is `400` with
//! the real plain-text reasons, an unknown format `400`. A test can switch it to answer 404
//! (a wrong base URL), 500 (`Internal error`), or to hang past any client timeout.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sheriff::synth::{self, Scenario};

/// How the fake answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    NotFound,
    Failing,
    Hanging,
}

#[derive(Clone)]
struct Fake {
    scenario: Arc<Scenario>,
    mode: Arc<Mutex<Mode>>,
    requests: Arc<AtomicU64>,
}

pub struct FakeReleaseController {
    pub url: String,
    mode: Arc<Mutex<Mode>>,
    requests: Arc<AtomicU64>,
}

impl FakeReleaseController {
    pub async fn start(scenario: &Scenario) -> FakeReleaseController {
        let fake = Fake {
            scenario: Arc::new(scenario.clone()),
            mode: Arc::new(Mutex::new(Mode::Normal)),
            requests: Arc::default(),
        };
        let (mode, requests) = (fake.mode.clone(), fake.requests.clone());
        let app = Router::new()
            .route("/changelog", get(changelog))
            .with_state(fake);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeReleaseController {
            url,
            mode,
            requests,
        }
    }

    pub fn set_mode(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

async fn changelog(
    State(fake): State<Fake>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Response {
    fake.requests.fetch_add(1, Ordering::Relaxed);
    let mode = *fake.mode.lock().unwrap();
    match mode {
        Mode::NotFound => return (StatusCode::NOT_FOUND, "404 page not found\n").into_response(),
        Mode::Failing => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal error\nfailed to run oc adm release info\n",
            )
                .into_response();
        }
        Mode::Hanging => {
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
            return StatusCode::GATEWAY_TIMEOUT.into_response();
        }
        Mode::Normal => {}
    }
    match q.get("format").map(String::as_str) {
        Some("json") => {}
        Some("html" | "markdown" | "") | None => {
            return (
                StatusCode::OK,
                "## Changes\n(only the JSON form is faked)\n",
            )
                .into_response();
        }
        Some(_) => {
            return (
                StatusCode::BAD_REQUEST,
                "unrecognized format= string: html, json, markdown, empty accepted\n",
            )
                .into_response();
        }
    }
    let Some(from) = q.get("from").filter(|f| !f.is_empty()) else {
        return (StatusCode::BAD_REQUEST, "from must be set to a valid tag\n").into_response();
    };
    let Some(to) = q.get("to").filter(|t| !t.is_empty()) else {
        return (StatusCode::BAD_REQUEST, "to must be set to a valid tag\n").into_response();
    };
    match synth::release_changelog(&fake.scenario, from, to) {
        Ok(body) => axum::Json(body).into_response(),
        Err(reason) => (StatusCode::BAD_REQUEST, format!("{reason}\n")).into_response(),
    }
}
