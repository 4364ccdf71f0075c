//! The HTTP edge: one router for every endpoint, built from shared state so a test can call it
//! without a socket (`tower::ServiceExt::oneshot`) or serve it on port 0.

mod auth;
mod conn;
mod error;
pub(crate) mod pages;
pub mod push;
pub mod slack;

use std::sync::Arc;

use anyhow::{Context, Result};
use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

pub use error::ApiError;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

use crate::application::warm::Warm;
use crate::config::Settings;
use crate::store::Store;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<Store>,
    /// The caches questions and cycles read through (shared with the scheduler in `serve`).
    pub warm: Arc<Warm>,
    /// The failed cycles not recorded yet (shared with the scheduler in `serve`, which records
    /// them once the database takes writes again).
    pub unrecorded: Arc<crate::application::cycle::Unrecorded>,
    pub settings: Arc<Settings>,
    /// The process's Prometheus recorder, rendered by `/metrics`.
    pub metrics: Option<metrics_exporter_prometheus::PrometheusHandle>,
    /// The Slack Web API, when a bot token is configured (user groups, dialogs).
    pub slack: Option<Arc<crate::clients::slack::SlackClient>>,
    /// For answers through Slack's `response_url`.
    pub http: reqwest::Client,
    /// One per push read and stored at once (`ingest.push_concurrency`): memory holds that many
    /// bodies, however many arrive together.
    pub push_slots: Arc<tokio::sync::Semaphore>,
}

impl AppState {
    /// The state of an edge whose cycles keep what they cannot record in a keeper of its own
    /// (`serve` hands the same keeper to its scheduler).
    pub fn new(store: Arc<Store>, warm: Arc<Warm>, settings: Arc<Settings>) -> AppState {
        let slack = settings.slack.bot_token.as_ref().and_then(|_| {
            crate::clients::slack::SlackClient::new(&settings.slack)
                .map_err(|e| tracing::error!("{e:#}"))
                .ok()
                .map(Arc::new)
        });
        let http = crate::support::http::client_builder(std::time::Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        let push_slots = Arc::new(tokio::sync::Semaphore::new(
            settings.ingest.push_concurrency.max(1),
        ));
        AppState {
            store,
            warm,
            unrecorded: Arc::default(),
            settings,
            metrics: metrics_handle(),
            slack,
            http,
            push_slots,
        }
    }
}

/// Installs the Prometheus recorder once per process.
pub(crate) fn metrics_handle() -> Option<metrics_exporter_prometheus::PrometheusHandle> {
    static HANDLE: std::sync::OnceLock<Option<metrics_exporter_prometheus::PrometheusHandle>> =
        std::sync::OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
                .install_recorder()
                .ok();
            describe_metrics();
            handle
        })
        .clone()
}

/// The HELP text and unit of every metric sheriff records (Prometheus' conventions: counters
/// end in `_total`, durations are seconds).
fn describe_metrics() {
    describe_counters();
    describe_gauges();
    describe_histograms();
}

fn describe_counters() {
    use metrics::{Unit, describe_counter};
    describe_counter!(
        "sheriff_cycles_total",
        "Evaluation cycles run, by outcome (ok, failed)."
    );

    describe_counter!(
        "sheriff_deliveries_total",
        "Outbox deliveries attempted, by sink (slack, jira; unknown for a kind this version does not know) and outcome."
    );

    describe_counter!(
        "sheriff_evidence_bytes_total",
        Unit::Bytes,
        "Bytes of interval files fetched on demand for attribution."
    );

    describe_counter!(
        "sheriff_evidence_fetches_total",
        "Runs whose interval files attribution fetched on demand, by outcome (fetched, pending)."
    );

    describe_counter!(
        "sheriff_ingest_runs_total",
        "Job runs seen by ingest, by way in (local, gcs, push) and outcome (ingested, skipped, failed: a bad file, storage_failed: sheriff's own storage)."
    );

    describe_counter!(
        "sheriff_jobs_total",
        "Scheduled jobs run, by job and outcome (ok, failed, storage_failed: sheriff's own storage, abandoned at shutdown)."
    );

    describe_counter!(
        "sheriff_ticks_skipped_total",
        "Scheduled ticks skipped because their lease could not be taken (the database failing), by job."
    );

    describe_counter!(
        "sheriff_slack_actions_total",
        "Slack button presses, by action."
    );

    describe_counter!("sheriff_slack_commands_total", "Slash commands received.");
    describe_counter!(
        "sheriff_slack_requests_refused_total",
        "Slack requests refused before any work (bad or stale signature)."
    );
}

fn describe_gauges() {
    use metrics::{Unit, describe_gauge};
    describe_gauge!(
        "sheriff_data_age_seconds",
        Unit::Seconds,
        "Seconds since the newest stored run of each job started."
    );
    describe_gauge!(
        "sheriff_groups_evaluated",
        "Groups with enough runs to judge in the last cycle."
    );
    describe_gauge!("sheriff_incidents", "Incidents, by state.");
    describe_gauge!(
        "sheriff_outbox_entries",
        "Outbox entries, by state (pending, retrying, dead)."
    );
    describe_gauge!(
        "sheriff_outbox_oldest_pending_seconds",
        Unit::Seconds,
        "Age of the oldest pending outbox entry, 0 when none is pending."
    );
    describe_gauge!(
        "sheriff_regressions",
        "Active regressions found by the last cycle."
    );
}

fn describe_histograms() {
    use metrics::{Unit, describe_histogram};
    describe_histogram!(
        "sheriff_cycle_seconds",
        Unit::Seconds,
        "Duration of evaluation cycles, by outcome."
    );
    describe_histogram!(
        "sheriff_delivery_seconds",
        Unit::Seconds,
        "Duration of outbox deliveries, by sink and outcome."
    );
    describe_histogram!(
        "sheriff_jira_request_seconds",
        Unit::Seconds,
        "Duration of Jira REST calls, by call and status."
    );
    describe_histogram!(
        "sheriff_job_seconds",
        Unit::Seconds,
        "Duration of scheduled jobs, by job."
    );
    describe_histogram!(
        "sheriff_slack_request_seconds",
        Unit::Seconds,
        "Duration of Slack Web API calls, by method and status."
    );
}

/// The largest body of a route that takes none worth speaking of (the pages, health, metrics).
const SMALL_BODY_BYTES: usize = 64 * 1024;

/// A body limit for some routes: a body that says it is longer is refused (413) before any of
/// it is read, one that does not is cut off there, and extractors buffer no more.
fn body_limit<S: Clone + Send + Sync + 'static>(routes: Router<S>, bytes: usize) -> Router<S> {
    routes
        .route_layer(DefaultBodyLimit::max(bytes))
        .route_layer(tower_http::limit::RequestBodyLimitLayer::new(bytes))
}

/// `routes` refused without the push token (`ingest.push_token`): every route here needs it.
fn push_token_required(routes: Router<AppState>, state: &AppState) -> Router<AppState> {
    routes.route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        auth::require_push_token,
    ))
}

/// `routes` refused without Slack's signature (`slack.signing_secret`): every route here needs
/// it, whether or not its handler takes the signed body.
fn slack_signature_required(routes: Router<AppState>, state: &AppState) -> Router<AppState> {
    routes.route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        auth::require_slack_signature,
    ))
}

/// Every route sheriff serves.
pub fn router(state: AppState) -> Router {
    let body_limit_push = state.settings.server.max_body_bytes;
    let body_limit_slack = state.settings.server.slack_max_body_bytes;
    let request_timeout =
        std::time::Duration::from_secs(state.settings.server.request_timeout_secs.max(1));

    let pages = Router::new()
        .route("/", get(pages::index))
        .route("/incidents", get(pages::index))
        .route("/incidents/{id}", get(pages::incident))
        .route("/explore", get(pages::explore))
        .route("/api/v1/incidents", get(pages::index_json))
        .route("/api/v1/incidents/{id}", get(pages::incident_json))
        .route("/api/v1/series", get(pages::series_json))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_pages_token,
        ))
        .route_layer(axum::middleware::from_fn(pages::secure_headers));

    let small = Router::new()
        .merge(pages)
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz));

    // The signature is checked once the body is read, so the body is kept small
    let slack = slack_signature_required(
        Router::new()
            .route("/slack/commands", post(slack::commands))
            .route("/slack/interactions", post(slack::interactions)),
        &state,
    );

    let push = push_token_required(
        Router::new().route("/api/v1/runs", post(push::push_run)),
        &state,
    );

    Router::new()
        .merge(body_limit(small, SMALL_BODY_BYTES))
        .merge(body_limit(slack, body_limit_slack))
        .merge(body_limit(push, body_limit_push))
        // A request and its body are answered within the limit, or get 408: a body sent a byte
        // at a time holds nothing for long.
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            request_timeout,
        ))
        .with_state(state)
        .layer(
            tower::ServiceBuilder::new()
                .layer(SetRequestIdLayer::x_request_id(RequestIds::default()))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(request_span)
                        .on_response(
                            |response: &Response,
                             latency: std::time::Duration,
                             _: &tracing::Span| {
                                tracing::info!(
                                    status = response.status().as_u16(),
                                    ms = latency.as_millis() as u64,
                                    "answered"
                                );
                            },
                        ),
                )
                .layer(PropagateRequestIdLayer::x_request_id()),
        )
}

/// Request ids: the caller's `x-request-id` when it sends one, else this process's name and a
/// counter; sent back in the answer and carried by every log line of the request.
#[derive(Clone, Default)]
struct RequestIds {
    next: Arc<std::sync::atomic::AtomicU64>,
}

impl MakeRequestId for RequestIds {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        let prefix = PREFIX.get_or_init(crate::support::process::replica_id);
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        axum::http::HeaderValue::from_str(&format!("{prefix}-{n}"))
            .ok()
            .map(RequestId::new)
    }
}

/// The request's span; a caller's id is logged only as far as it is a plain token (at most 64
/// letters, digits, `-`, `_`, `.`, `:`), so a header cannot forge log lines.
fn request_span<B>(request: &axum::http::Request<B>) -> tracing::Span {
    let id: String = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
        .take(64)
        .collect();
    tracing::info_span!("request", request_id = %id, method = %request.method(), path = %request.uri().path())
}

async fn healthz() -> &'static str {
    "ok"
}

/// A replica whose writes failed for storage reasons stays unready at least this long, and
/// until a write (its own or a probe) succeeds.
const UNREADY_AFTER_WRITE_FAILURE_SECS: i64 = 30;

/// Ready when the database answers and takes writes.
async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let ping = tokio::time::timeout(std::time::Duration::from_secs(2), state.store.ping()).await;
    match ping {
        Ok(Ok(())) => match state.store.writes_failing_since() {
            None => (StatusCode::OK, "ready\n"),
            Some(since) => {
                let now = chrono::Utc::now().timestamp();
                // writes that failed a moment ago are not tried again yet
                let probe = async {
                    let write = state.store.probe_write();
                    matches!(
                        tokio::time::timeout(std::time::Duration::from_secs(2), write).await,
                        Ok(Ok(()))
                    )
                };
                if now - since >= UNREADY_AFTER_WRITE_FAILURE_SECS && probe.await {
                    (StatusCode::OK, "ready\n")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "database writes failing\n")
                }
            }
        },
        Ok(Err(e)) => {
            tracing::warn!("not ready: {e:#}");
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n")
        }
        Err(_) => {
            tracing::warn!("not ready: the database did not answer within 2 s");
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n")
        }
    }
}

/// Prometheus text: counters and histograms as recorded, gauges read from the store now.
async fn metrics_text(State(state): State<AppState>) -> Response {
    let now = chrono::Utc::now().timestamp();
    if let Ok(o) = state.store.outbox().counts(now).await {
        metrics::gauge!("sheriff_outbox_entries", "state" => "pending").set(o.pending as f64);
        metrics::gauge!("sheriff_outbox_entries", "state" => "retrying").set(o.retrying as f64);
        metrics::gauge!("sheriff_outbox_entries", "state" => "dead").set(o.dead as f64);
        metrics::gauge!("sheriff_outbox_oldest_pending_seconds")
            .set(o.oldest_pending_age_secs.unwrap_or(0) as f64);
    }
    if let Ok(incidents) = state.store.incidents().all().await {
        for s in crate::domain::incidents::State::ALL {
            let n = incidents.iter().filter(|i| i.state == s).count();
            metrics::gauge!("sheriff_incidents", "state" => s.as_str()).set(n as f64);
        }
    }
    if let Ok(newest) = state.store.runs().newest_run_per_job().await {
        for (job, started) in newest {
            metrics::gauge!("sheriff_data_age_seconds", "job" => job)
                .set((now - started).max(0) as f64);
        }
    }
    match &state.metrics {
        Some(h) => ([("content-type", "text/plain; version=0.0.4")], h.render()).into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            "metrics recorder not installed\n",
        )
            .into_response(),
    }
}

/// Serves until `shutdown` resolves, then finishes in-flight requests.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let addr = listener
        .local_addr()
        .context("reading the listening address")?;
    tracing::info!(%addr, "sheriff is listening");
    let s = &state.settings.server;
    let limits = conn::Limits {
        header: std::time::Duration::from_secs(s.header_timeout_secs.max(1)),
        idle: std::time::Duration::from_secs(s.idle_timeout_secs.max(1)),
        max_age: std::time::Duration::from_secs(s.max_connection_secs.max(1)),
        max_connections: s.max_connections.max(1),
    };
    conn::serve(
        listener,
        router(state),
        limits,
        shutdown,
        crate::support::shutdown::SHUTDOWN_GRACE,
    )
    .await;
    Ok(())
}
