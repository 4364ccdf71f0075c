//! The HTTP edge: one router for every endpoint, built from shared state so a test can call it
//! without a socket (`tower::ServiceExt::oneshot`) or serve it on port 0.

mod error;
mod push;

use std::sync::Arc;

use anyhow::{Context, Result};
use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};

pub use error::ApiError;

use crate::config::Settings;
use crate::store::Store;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<Store>,
    pub settings: Arc<Settings>,
}

/// Every route sheriff serves.
pub fn router(state: AppState) -> Router {
    let body_limit = state.settings.server.max_body_bytes;
    Router::new()
        .route("/api/v1/runs", post(push::push_run))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(body_limit))
        .with_state(state)
}

async fn healthz() -> &'static str {
    "ok"
}

/// Ready when the database answers.
async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    match state.store.ping().await {
        Ok(()) => (StatusCode::OK, "ready".to_string()),
        Err(e) => {
            tracing::warn!("not ready: {e:#}");
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable".to_string())
        }
    }
}

/// Serves until `shutdown` resolves, then finishes in-flight requests.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let addr = listener.local_addr().context("reading the listening address")?;
    tracing::info!(%addr, "sheriff is listening");
    axum::serve(listener, router(state)).with_graceful_shutdown(shutdown).await.context("serving HTTP")
}

/// Resolves on ctrl-c or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}
