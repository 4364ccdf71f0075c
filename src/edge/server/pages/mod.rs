//! The pages people look at, and their JSON twins: `GET /` (incidents), `GET /incidents/{id}`
//! (one incident with its trend charts and evidence), `GET /explore` (any backend over any
//! variants), and `GET /api/v1/incidents`, `/api/v1/incidents/{id}`, `/api/v1/series`.
//!
//! Read-only. With `server.pages_token` set every one of them asks for it (bearer, or the
//! password of basic auth); otherwise they are open, for running behind an authenticating
//! proxy. A failure is logged with a reference and the page says only that and the reference.

mod chart;
mod html;

use std::collections::{BTreeMap, BTreeSet, HashSet};

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use serde::{Deserialize, Serialize};

pub use chart::Marks;

use super::AppState;
use super::auth::PagesAllowed;
use crate::application::series::{self, Series};
use crate::domain::incidents::Incident;
use crate::model::{DAY, Dimension};
/// Days a chart shows.
const CHART_DAYS: i64 = 56;
/// Charts per dimension an incident is not specific to, at most.
const PART_CHARTS: usize = 6;
/// How long a resolved incident stays on `/`.
const RECENT_SECS: i64 = 14 * DAY;

/// An incident with the links the pages give it.
pub struct IncidentRow {
    pub incident: Incident,
    pub jira_url: Option<String>,
    pub slack_url: Option<String>,
}

impl IncidentRow {
    fn new(state: &AppState, incident: Incident) -> IncidentRow {
        let jira = &state.settings.jira.url;
        let jira_url = incident
            .jira_key
            .as_ref()
            .filter(|_| !jira.is_empty())
            .map(|k| format!("{}/browse/{k}", jira.trim_end_matches('/')));
        let workspace = &state.settings.slack.workspace_url;
        let channel = incident.slack_channel.as_ref().filter(|c| !c.is_empty());
        let slack_url = channel.map(|c| match (&incident.slack_ts, workspace.is_empty()) {
            (Some(ts), false) => {
                format!(
                    "{}/archives/{c}/p{}",
                    workspace.trim_end_matches('/'),
                    ts.replace('.', "")
                )
            }
            _ => format!("https://slack.com/app_redirect?channel={c}"),
        });
        IncidentRow {
            incident,
            jira_url,
            slack_url,
        }
    }
}

/// One chart's data, as the page draws it and the JSON gives it.
#[derive(Debug, Clone, Serialize)]
pub struct ChartData {
    pub title: String,
    /// The backend the chart is of, or the first of the incident's backends.
    pub series: Series,
    /// The incident's other backends, drawn on the same chart.
    pub other_backends: Vec<Series>,
    pub control: Option<Series>,
    pub marks: Marks,
}

/// `/`'s filters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct IndexFilter {
    pub component: Option<String>,
    pub release: Option<String>,
    /// `open`, `resolved` or `all` (default: open and recently resolved).
    pub state: Option<String>,
}

impl IndexFilter {
    fn tidy(mut self) -> IndexFilter {
        for f in [&mut self.component, &mut self.release, &mut self.state] {
            *f = f
                .take()
                .map(|v| v.trim().chars().take(100).collect::<String>())
                .filter(|v| !v.is_empty());
        }
        self
    }

    fn keeps(&self, i: &Incident, now: i64) -> bool {
        let recent = i.state.is_open() || i.resolved_at.is_some_and(|t| now - t <= RECENT_SECS);
        let state = match self.state.as_deref() {
            Some("open") => i.state.is_open(),
            Some("resolved") => !i.state.is_open(),
            Some("all") => true,
            Some(s) => i.state.as_str() == s,
            None => recent,
        };
        state
            && i.merged_into.is_none()
            && self
                .component
                .as_ref()
                .is_none_or(|c| *c == i.snapshot.component)
            && self
                .release
                .as_ref()
                .is_none_or(|r| *r == i.snapshot.release)
    }
}

/// Headers every page and JSON answer carries: no sniffing, no framing, no referrer, and a
/// content policy that allows only the page's own inline style (no script at all).
pub async fn secure_headers(request: Request, next: Next) -> Response {
    let mut r = next.run(request).await;
    let h = r.headers_mut();
    let set = |h: &mut HeaderMap, k: &'static str, v: &'static str| {
        h.insert(k, axum::http::HeaderValue::from_static(v));
    };
    set(h, "x-content-type-options", "nosniff");
    set(h, "x-frame-options", "DENY");
    set(h, "referrer-policy", "no-referrer");
    set(
        h,
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'",
    );
    set(h, "cache-control", "no-store");
    r
}

/// A failure of sheriff's own: logged in full with a reference; the answer names only that.
fn internal(e: &anyhow::Error, json: bool) -> Response {
    let reference = crate::support::process::random_suffix();
    tracing::error!(reference, "a page failed: {e:#}");
    let reason = format!("Something went wrong on sheriff's side (reference {reference}).");
    if json {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(serde_json::json!({ "error": reason })),
        )
            .into_response()
    } else {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            Html(html::problem("Sorry", &reason).into_string()),
        )
            .into_response()
    }
}

fn not_found(what: &str, json: bool) -> Response {
    if json {
        (
            StatusCode::NOT_FOUND,
            axum::Json(serde_json::json!({ "error": format!("no {what}") })),
        )
            .into_response()
    } else {
        let page = html::problem("Not found", &format!("There is no {what}."));
        (StatusCode::NOT_FOUND, Html(page.into_string())).into_response()
    }
}

async fn rows(
    state: &AppState,
    filter: &IndexFilter,
    now: i64,
) -> anyhow::Result<(Vec<IncidentRow>, Vec<String>, Vec<String>)> {
    let all = state.store.incidents().all().await?;
    let components: BTreeSet<String> = all.iter().map(|i| i.snapshot.component.clone()).collect();
    let releases: BTreeSet<String> = all.iter().map(|i| i.snapshot.release.clone()).collect();
    let mut kept: Vec<Incident> = all.into_iter().filter(|i| filter.keeps(i, now)).collect();
    kept.sort_by_key(|i| (!i.state.is_open(), std::cmp::Reverse(i.opened_at)));
    let rows = kept
        .into_iter()
        .map(|i| IncidentRow::new(state, i))
        .collect();
    Ok((
        rows,
        components.into_iter().collect(),
        releases.into_iter().collect(),
    ))
}

/// `GET /`.
pub async fn index(
    _: PagesAllowed,
    State(state): State<AppState>,
    Query(filter): Query<IndexFilter>,
) -> Response {
    let now = chrono::Utc::now().timestamp();
    let filter = filter.tidy();
    match rows(&state, &filter, now).await {
        Ok((rows, components, releases)) => {
            Html(html::index(&rows, &filter, &components, &releases, now).into_string())
                .into_response()
        }
        Err(e) => internal(&e, false),
    }
}

/// `GET /api/v1/incidents`: the same list, in the `incidents list` JSON contract.
pub async fn index_json(
    _: PagesAllowed,
    State(state): State<AppState>,
    Query(filter): Query<IndexFilter>,
) -> Response {
    let now = chrono::Utc::now().timestamp();
    match rows(&state, &filter.tidy(), now).await {
        Ok((rows, _, _)) => {
            let list: Vec<serde_json::Value> = rows
                .iter()
                .map(|r| crate::application::board::incident_json(&r.incident))
                .collect();
            axum::Json(serde_json::json!({ "incidents": list })).into_response()
        }
        Err(e) => internal(&e, true),
    }
}

/// The marks of an incident's charts.
fn marks_of(state: &AppState, i: &Incident, now: i64) -> Marks {
    let es = &state.settings.evaluate;
    let (window, baseline) = (
        i64::from(es.window_days) * DAY,
        i64::from(es.baseline_days) * DAY,
    );
    let onset = i.onset().or_else(|| i.snapshot.report.onset.clone());
    let end = if i.state.is_open() {
        now
    } else {
        i.resolved_at.unwrap_or(now)
    };
    let reference_end = onset
        .as_ref()
        .map_or(end - window, |o| o.earliest.timestamp());
    Marks {
        window: Some((end - window, end)),
        reference: Some((reference_end - baseline, reference_end)),
        onset: onset.map(|o| {
            (
                o.earliest.timestamp(),
                o.at.timestamp(),
                o.latest.timestamp(),
            )
        }),
        fix: i.fix.as_ref().and_then(|c| {
            let label = c.payload.as_ref().map_or_else(
                || format!("fix claimed in {}", c.key),
                |p| format!("fix payload {p}"),
            );
            Some((c.fix_point()?, label))
        }),
        accepted: i
            .allowance
            .as_ref()
            .map(|a| (a.seconds, format!("accepted {}", a.level()))),
    }
}

/// The incident's charts: its scope with every backend of the incident, then one per value of
/// each dimension it is not specific to (at most [`PART_CHARTS`] each), of its first backend.
/// Values that select the same variants share one chart: within a release, `from_release` and
/// `upgrade_type` split the runs alike (an upgrade from the release before is a minor one), and
/// a value that selects the whole scope would repeat the main chart.
async fn charts_of(state: &AppState, i: &Incident, now: i64) -> anyhow::Result<Vec<ChartData>> {
    let s = &i.snapshot;
    let r = &s.report;
    let mut backends = backends_of(i);
    if backends.is_empty() {
        return Ok(Vec::new());
    }
    let backend = backends.remove(0);
    let variants = state.store.variants().await?;
    let in_scope: Vec<&(i64, crate::model::Dimensions)> = variants
        .iter()
        .filter(|(_, d)| s.scope.contains(d))
        .collect();
    let ids: HashSet<i64> = in_scope.iter().map(|(id, _)| *id).collect();

    // A chart's series: one backend's days over some variants.
    let daily = async |backend: &str, label: &str, ids: &HashSet<i64>| {
        let kept = &state.warm.queries;
        series::daily(&state.store, kept, backend, label, ids, CHART_DAYS, now).await
    };
    let label = format!("{} {}", s.release, s.scope.describe());
    let main = daily(&backend, &label, &ids).await?;
    let mut other_backends = Vec::new();
    for b in &backends {
        other_backends.push(daily(b, &label, &ids).await?);
    }
    let control = match &r.attribution.control {
        Some(c) => Some(daily(&c.backend, &label, &ids).await?),
        None => None,
    };
    let marks = marks_of(state, i, now);
    let title = std::iter::once(&backend)
        .chain(&backends)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = vec![ChartData {
        title: format!("{title} — {label}"),
        series: main,
        other_backends,
        control,
        marks: marks.clone(),
    }];
    for (ids, titles) in part_variants(&r.not_specific_to, &in_scope, &ids) {
        let part = titles.join(", ");
        let series = daily(&backend, &part, &ids).await?;
        out.push(ChartData {
            title: part,
            series,
            other_backends: Vec::new(),
            control: None,
            marks: marks.clone(),
        });
    }
    Ok(out)
}

/// The incident's backends, the report's first, each once.
fn backends_of(i: &Incident) -> Vec<String> {
    let s = &i.snapshot;
    s.report
        .backend
        .iter()
        .chain(&s.backends)
        .fold(Vec::new(), |mut seen, b| {
            if !seen.contains(b) {
                seen.push(b.clone());
            }
            seen
        })
}

/// The variants of each small chart and its titles (`network=ovn`), one chart per distinct set
/// of variants, in the order of the dimensions and their values; none for the whole scope.
fn part_variants(
    not_specific_to: &[String],
    in_scope: &[&(i64, crate::model::Dimensions)],
    scope: &HashSet<i64>,
) -> Vec<(HashSet<i64>, Vec<String>)> {
    let mut parts: Vec<(HashSet<i64>, Vec<String>)> = Vec::new();
    for d in not_specific_to.iter().filter_map(|d| Dimension::parse(d)) {
        let mut by: BTreeMap<String, HashSet<i64>> = BTreeMap::new();
        for (id, dims) in in_scope {
            by.entry(dims.get(d).to_string()).or_default().insert(*id);
        }
        for (value, ids) in by
            .into_iter()
            .take(PART_CHARTS)
            .filter(|(_, ids)| ids != scope)
        {
            let title = format!("{d}={value}");
            match parts.iter_mut().find(|(seen, _)| *seen == ids) {
                Some((_, titles)) => titles.push(title),
                None => parts.push((ids, vec![title])),
            }
        }
    }
    parts
}

async fn one(
    state: &AppState,
    id: &str,
    now: i64,
) -> anyhow::Result<
    Option<(
        IncidentRow,
        Vec<crate::domain::incidents::Event>,
        Vec<ChartData>,
    )>,
> {
    let Ok(n) = id.trim_start_matches('#').parse::<i64>() else {
        return Ok(None);
    };
    let Some(i) = state.store.incidents().find(&n.to_string()).await? else {
        return Ok(None);
    };
    let events = state.store.incidents().events(i.id).await?;
    let charts = charts_of(state, &i, now).await?;
    Ok(Some((IncidentRow::new(state, i), events, charts)))
}

/// `GET /incidents/{id}`.
pub async fn incident(
    _: PagesAllowed,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Response {
    let now = chrono::Utc::now().timestamp();
    match one(&state, &id, now).await {
        Ok(Some((row, events, charts))) => {
            Html(html::incident(&row, &events, &charts).into_string()).into_response()
        }
        Ok(None) => not_found("such incident", false),
        Err(e) => internal(&e, false),
    }
}

/// `GET /api/v1/incidents/{id}`: the incident, its history and its charts' data.
pub async fn incident_json(
    _: PagesAllowed,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Response {
    let now = chrono::Utc::now().timestamp();
    match one(&state, &id, now).await {
        Ok(Some((row, events, charts))) => {
            let mut v = crate::application::board::incident_json(&row.incident);
            v["report"] = serde_json::to_value(&row.incident.snapshot.report).unwrap_or_default();
            v["events"] = serde_json::to_value(&events).unwrap_or_default();
            v["charts"] = serde_json::to_value(&charts).unwrap_or_default();
            v["links"] = serde_json::json!({ "jira": row.jira_url, "slack": row.slack_url });
            axum::Json(v).into_response()
        }
        Ok(None) => not_found("such incident", true),
        Err(e) => internal(&e, true),
    }
}

/// The `query` words of `/explore`'s form: the backend, then `key=value` for each filled field.
fn query_words(form: &[(String, String)]) -> Option<Vec<String>> {
    let backend = form
        .iter()
        .find(|(k, _)| k == "backend")
        .map(|(_, v)| v.trim().to_string())
        .filter(|b| !b.is_empty())?;
    let mut words = vec![backend];
    for (k, v) in form
        .iter()
        .filter(|(k, v)| k != "backend" && !v.trim().is_empty())
    {
        words.push(format!("{k}={}", v.trim()));
    }
    Some(words)
}

/// What `/explore` and `/api/v1/series` answer, or the reason the question is not one.
async fn explored(
    state: &AppState,
    form: &[(String, String)],
    now: i64,
) -> anyhow::Result<Result<Option<(crate::application::query::QueryAnswer, ChartData)>, String>> {
    let Some(words) = query_words(form) else {
        return Ok(Ok(None));
    };

    let owned: Vec<String> = words
        .iter()
        .map(|w| w.chars().take(200).collect())
        .collect();

    let words: Vec<&str> = owned.iter().map(String::as_str).collect();
    let q = match crate::edge::server::slack::command::parse_query(&words) {
        Ok(q) => q,
        Err(e) => return Ok(Err(e.to_string())),
    };

    let answer = crate::application::query::answer(
        &state.store,
        &state.warm.queries,
        &state.settings.evaluate,
        &q,
        now,
    )
    .await?;

    let ids = crate::application::query::variants_of(&state.store, &q).await?;
    let label: Vec<String> = q.filters.iter().map(|(d, v)| format!("{d}={v}")).collect();
    let series = series::daily(
        &state.store,
        &state.warm.queries,
        &q.backend,
        &label.join(" "),
        &ids,
        CHART_DAYS,
        now,
    )
    .await?;

    let window = q.window_days * DAY;
    let marks = Marks {
        window: Some((now - window, now)),
        reference: Some((
            now - window - i64::from(state.settings.evaluate.baseline_days) * DAY,
            now - window,
        )),
        ..Marks::default()
    };

    let title = format!("{} {}", q.backend, label.join(" "));
    Ok(Ok(Some((
        answer,
        ChartData {
            title,
            series,
            other_backends: Vec::new(),
            control: None,
            marks,
        },
    ))))
}

/// `GET /explore?backend=…&release=…&platform=…`.
pub async fn explore(
    _: PagesAllowed,
    State(state): State<AppState>,
    Query(form): Query<Vec<(String, String)>>,
) -> Response {
    let now = chrono::Utc::now().timestamp();
    match explored(&state, &form, now).await {
        Ok(Ok(Some((answer, chart)))) => {
            Html(html::explore(&form, Some(&answer), Some(&chart), None).into_string())
                .into_response()
        }
        Ok(Ok(None)) => Html(html::explore(&form, None, None, None).into_string()).into_response(),
        Ok(Err(reason)) => (
            StatusCode::BAD_REQUEST,
            Html(html::explore(&form, None, None, Some(&reason)).into_string()),
        )
            .into_response(),
        Err(e) => internal(&e, false),
    }
}

/// `GET /api/v1/series?backend=…&…`: the answer and the daily series.
pub async fn series_json(
    _: PagesAllowed,
    State(state): State<AppState>,
    Query(form): Query<Vec<(String, String)>>,
) -> Response {
    let now = chrono::Utc::now().timestamp();
    match explored(&state, &form, now).await {
        Ok(Ok(Some((answer, chart)))) => {
            axum::Json(serde_json::json!({ "answer": answer, "chart": chart })).into_response()
        }
        Ok(Ok(None)) => (
            StatusCode::BAD_REQUEST,
            axum::Json(serde_json::json!({ "error": "backend= is needed" })),
        )
            .into_response(),
        Ok(Err(reason)) => (
            StatusCode::BAD_REQUEST,
            axum::Json(serde_json::json!({ "error": reason })),
        )
            .into_response(),
        Err(e) => internal(&e, true),
    }
}
