//! One evaluation cycle: read the windows from the store, evaluate, attribute and describe the
//! regressions, record the outcome. This is where the store and the pure evaluator meet.

mod describe;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::time::Instant;

use anyhow::Result;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::attribute::components::ComponentTable;
use crate::attribute::scope::ScopeFinding;
use crate::config::{AttributeSettings, EvaluateSettings, Settings};
use crate::evaluate::thresholds::HistoricalTable;
use crate::evaluate::{self, EvalInput, GroupResult, GroupStatus};
pub use crate::model::{Attribution, PercentilePair, RegressionReport, SampleJob};
use crate::model::{Dimension, Percentile, Scope, backend_family, secs, secs_or_dash};
use crate::store::Store;
use crate::store::evaluations::CycleRecord;

/// `[from, to)`.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Window {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

impl Window {
    /// `[from, to)` in Unix seconds.
    pub fn secs(self) -> (i64, i64) {
        (self.from.timestamp(), self.to.timestamp())
    }
}

/// The outcome of one cycle: the JSON of `sheriff evaluate --format json` (the README documents them).
#[derive(Debug, Clone, Serialize)]
pub struct CycleReport {
    pub evaluated_at: DateTime<Utc>,
    pub window: Window,
    pub baseline: Window,
    /// Cells (backend × every dimension) with runs in the window.
    pub cells_evaluated: usize,
    /// Groups of every level with enough runs to judge.
    pub groups_evaluated: usize,
    pub tests: usize,
    pub regressions: Vec<RegressionReport>,
    /// Variants whose runs no group keeping their platform could judge.
    pub insufficient_data: Vec<InsufficientReport>,
    pub dry_run: bool,
    pub seconds: f64,
    /// What the cycle did to incidents (all zero on a dry run).
    pub incidents: IncidentCounts,
    /// What the outbox delivery after the cycle did (`sheriff evaluate` without `--dry-run`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<crate::store::outbox::DrainReport>,
}

/// Incident changes a cycle recorded.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct IncidentCounts {
    pub opened: usize,
    pub changed: usize,
    pub resolved: usize,
    pub stale: usize,
    /// Changes whose notifications a silence held.
    pub silenced: usize,
    /// Side effects queued in the outbox.
    pub notifications: usize,
    /// Incidents over the per-cycle Jira cap, filed later.
    pub not_filed: usize,
}

impl IncidentCounts {
    fn of(plan: &crate::incidents::plan::Plan) -> IncidentCounts {
        use crate::incidents::plan::Action;
        let mut c = IncidentCounts { not_filed: plan.not_filed.len(), ..Default::default() };
        for step in &plan.steps {
            match &step.action {
                Action::Open { .. } => c.opened += 1,
                Action::Update { changes, .. } if !changes.is_empty() => c.changed += 1,
                Action::Resolve { .. } => c.resolved += 1,
                Action::Stale { .. } => c.stale += 1,
                _ => {}
            }
            c.silenced += usize::from(step.silenced_by.is_some());
            c.notifications += step.effects.len();
        }
        c.notifications += plan.summaries.len();
        c
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct InsufficientReport {
    pub scope: Scope,
    pub job_runs: u64,
    pub jobs: Vec<String>,
}

/// How a cycle is run.
#[derive(Debug, Clone, Copy)]
pub struct CycleOptions {
    pub at: DateTime<Utc>,
    /// Evaluate and report, but record nothing.
    pub dry_run: bool,
}

/// Runs one evaluation cycle at `options.at`.
pub async fn run_cycle(store: &Store, settings: &Settings, options: CycleOptions) -> Result<CycleReport> {
    let started = Instant::now();
    let started_at = Utc::now().timestamp();
    let result = evaluate_at(store, &settings.evaluate, &settings.attribute, options).await;
    let seconds = started.elapsed().as_secs_f64();
    let outcome = if result.is_ok() { "ok" } else { "failed" };
    metrics::histogram!("sheriff_cycle_seconds", "outcome" => outcome).record(seconds);
    metrics::counter!("sheriff_cycles_total", "outcome" => outcome).increment(1);
    if let Ok((r, _)) = &result {
        metrics::gauge!("sheriff_groups_evaluated").set(r.groups_evaluated as f64);
        metrics::gauge!("sheriff_regressions")
            .set(r.regressions.iter().filter(|x| x.status.is_active()).count() as f64);
    }
    match result {
        Ok((mut report, states)) => {
            report.seconds = seconds;
            if !options.dry_run {
                let record = CycleRecord {
                    started_at,
                    finished_at: Utc::now().timestamp(),
                    evaluated_at: options.at.timestamp(),
                    groups: report.groups_evaluated as i64,
                    regressions: report.regressions.iter().filter(|r| r.status.is_active()).count() as i64,
                    outcome: "ok".into(),
                    error: String::new(),
                };
                let policy = crate::incidents::plan::Policy::from_settings(settings);
                let now = options.at.timestamp();
                let regressions = &report.regressions;
                let planner = |known: &crate::incidents::plan::Known| {
                    crate::incidents::plan::plan(now, regressions, known, &policy)
                };
                let (_, plan) = store.finish_cycle(&states, &record, planner).await?;
                report.incidents = IncidentCounts::of(&plan);
            }
            tracing::info!(
                evaluated_at = %options.at,
                groups = report.groups_evaluated,
                regressions = report.regressions.len(),
                seconds,
                dry_run = options.dry_run,
                "evaluation cycle finished"
            );
            Ok(report)
        }
        Err(e) => {
            if !options.dry_run {
                let record = CycleRecord {
                    started_at,
                    finished_at: Utc::now().timestamp(),
                    evaluated_at: options.at.timestamp(),
                    outcome: "failed".into(),
                    error: format!("{e:#}"),
                    ..Default::default()
                };
                if let Err(log_error) = store.record_failed_cycle(&record).await {
                    tracing::error!("cannot record the failed cycle: {log_error:#}");
                }
            }
            Err(e)
        }
    }
}

type States = Vec<(String, evaluate::GroupState)>;

/// A regression's identity within a cycle: the backend family and its found scope.
type ClusterKey = (String, Scope);

async fn evaluate_at(
    store: &Store,
    settings: &EvaluateSettings,
    attribute: &AttributeSettings,
    options: CycleOptions,
) -> Result<(CycleReport, States)> {
    let at = options.at;
    let window = Window { from: at - Duration::days(i64::from(settings.window_days)), to: at };
    let baseline =
        Window { from: window.from - Duration::days(i64::from(settings.baseline_days)), to: window.from };
    let phase = Instant::now();
    let data = store.window_data(window.secs(), baseline.secs()).await?;
    let prior = store.group_states().await?;
    let historical = HistoricalTable::new(store.historical_thresholds().await?, settings.historical_min_runs);
    tracing::debug!(
        seconds = phase.elapsed().as_secs_f64(),
        cells = data.cells.len(),
        "cycle: read the windows"
    );
    let phase = Instant::now();
    let input = EvalInput {
        backends: &data.backends,
        variants: &data.variants,
        cells: &data.cells,
        prior: &prior,
        now: at.timestamp(),
    };
    let evaluation = evaluate::evaluate(&input, settings, &historical);
    tracing::debug!(
        seconds = phase.elapsed().as_secs_f64(),
        groups = evaluation.groups.len(),
        "cycle: evaluated"
    );
    let phase = Instant::now();
    let states = states_to_keep(&evaluation, &prior);
    let components = ComponentTable::from_settings(attribute);
    let index = describe::Index::new(&evaluation, &data);
    let cx = describe::Context {
        store,
        settings,
        attribute,
        components: &components,
        index: &index,
        window,
        baseline,
    };
    let mut regressions = Vec::new();
    for ((family, scope), (finding, groups)) in &clusters(&index, &evaluation, settings) {
        let cluster = describe::Cluster { family, scope, finding, groups };
        regressions.push(describe::describe(&cx, &cluster).await?);
    }
    for r in &mut regressions {
        r.weekly = weekly_trend(store, settings, r, at).await?;
    }
    regressions.sort_by(|a, b| {
        (!a.status.is_active(), &a.family, &a.release).cmp(&(!b.status.is_active(), &b.family, &b.release))
    });
    let insufficient_data = insufficient(store, &data, &evaluation.groups, window).await?;
    tracing::debug!(seconds = phase.elapsed().as_secs_f64(), "cycle: described the regressions");
    let report = CycleReport {
        evaluated_at: at,
        window,
        baseline,
        cells_evaluated: data.cells.iter().filter(|c| !c.current.is_empty()).count(),
        groups_evaluated: evaluation
            .groups
            .iter()
            .filter(|g| g.status != GroupStatus::InsufficientData)
            .count(),
        tests: evaluation.tests,
        regressions,
        insufficient_data,
        dry_run: options.dry_run,
        seconds: 0.0,
        incidents: IncidentCounts::default(),
        delivery: None,
    };
    Ok((report, states))
}

/// States to keep: every regressed (or recovering) group, and earlier ones not seen now.
fn states_to_keep(
    evaluation: &evaluate::Evaluation,
    prior: &HashMap<String, evaluate::GroupState>,
) -> States {
    let mut states = Vec::new();
    let mut seen = HashSet::new();
    for g in &evaluation.groups {
        let label = g.key.label();
        if g.state.regressed || g.state.clean_streak > 0 {
            states.push((label.clone(), g.state.clone()));
        }
        seen.insert(label);
    }
    for (label, state) in prior {
        if !seen.contains(label) && state.regressed {
            states.push((label.clone(), state.clone()));
        }
    }
    states
}

/// The reported groups, each with its found scope, grouped into regressions: groups of one
/// family with one scope are one (new and reused connections, or one problem seen at two
/// levels).
fn clusters<'a>(
    index: &describe::Index<'a>,
    evaluation: &'a evaluate::Evaluation,
    settings: &EvaluateSettings,
) -> BTreeMap<ClusterKey, (ScopeFinding, Vec<&'a GroupResult>)> {
    let reported: Vec<&GroupResult> = evaluation
        .groups
        .iter()
        .filter(|g| g.reported && matches!(g.status, GroupStatus::Regressed | GroupStatus::Resolved))
        .collect();
    let mut clusters: BTreeMap<ClusterKey, (ScopeFinding, Vec<&GroupResult>)> = BTreeMap::new();
    for g in &reported {
        let others: std::collections::BTreeSet<usize> = reported
            .iter()
            .filter(|o| o.key.backend == g.key.backend && o.key != g.key)
            .flat_map(|o| o.cells.iter().copied())
            .filter(|c| !g.cells.contains(c))
            .collect();
        let (finding, context) = describe::scope_for(index, g, &others, settings);
        let key = describe::scope_key(&context, &finding);
        clusters
            .entry((backend_family(&g.key.backend).to_string(), key))
            .or_insert_with(|| (finding, Vec::new()))
            .1
            .push(g);
    }
    clusters
}

/// The regression's percentile by week over its first backend and single-valued scope.
async fn weekly_trend(
    store: &Store,
    settings: &EvaluateSettings,
    r: &RegressionReport,
    at: DateTime<Utc>,
) -> Result<Vec<Option<f64>>> {
    let Some(backend) = r.backends.first() else { return Ok(Vec::new()) };
    let filters = r
        .scope
        .iter()
        .filter(|(_, v)| v.len() == 1)
        .filter_map(|(d, v)| Some((d, v.iter().next()?.clone())))
        .collect();
    let q = crate::notify::slack::command::Query {
        backend: backend.clone(),
        filters,
        window_days: i64::from(settings.window_days),
    };
    let a = crate::query::answer(store, settings, &q, at.timestamp()).await?;
    Ok(if matches!(r.percentile, Percentile::P50 | Percentile::P75) { a.weekly_p50 } else { a.weekly_p95 })
}

/// Variants with runs in the window that no group keeping their platform could judge.
async fn insufficient(
    store: &Store,
    data: &crate::store::evaluations::WindowData,
    groups: &[GroupResult],
    window: Window,
) -> Result<Vec<InsufficientReport>> {
    let mut judged: HashSet<usize> = HashSet::new();
    for g in groups.iter().filter(|g| g.level <= 3 && g.status != GroupStatus::InsufficientData) {
        judged.extend(g.cells.iter().copied());
    }
    let mut by_variant: HashMap<usize, (u64, bool)> = HashMap::new();
    for g in groups.iter().filter(|g| g.level == 0) {
        for &c in &g.cells {
            let cell = &data.cells[c];
            if cell.current.is_empty() {
                continue;
            }
            let e = by_variant.entry(cell.variant).or_insert((0, false));
            e.0 = e.0.max(cell.current.count());
            e.1 |= judged.contains(&c);
        }
    }
    let mut out = Vec::new();
    let mut list: Vec<_> = by_variant.into_iter().filter(|(_, (_, judged))| !judged).collect();
    list.sort_by_key(|(v, (runs, _))| (std::cmp::Reverse(*runs), *v));
    for (v, (runs, _)) in list.into_iter().take(50) {
        let dims = &data.variants[v];
        let scope = Scope::of_cell(dims);
        let jobs = store
            .jobs_of_variants(&[data.variant_ids[v]], window.secs())
            .await?
            .into_iter()
            .map(|(j, _)| j)
            .collect();
        out.push(InsufficientReport { scope, job_runs: runs, jobs });
    }
    Ok(out)
}

/// The readable form of a report.
pub fn render_text(report: &CycleReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "evaluated at {} — window {} → {}, baseline from {}",
        report.evaluated_at.format("%Y-%m-%d %H:%M UTC"),
        report.window.from.format("%Y-%m-%d %H:%M"),
        report.window.to.format("%Y-%m-%d %H:%M"),
        report.baseline.from.format("%Y-%m-%d %H:%M"),
    );
    let _ = writeln!(
        s,
        "{} cells with runs, {} groups judged, {} tests{}",
        report.cells_evaluated,
        report.groups_evaluated,
        report.tests,
        if report.dry_run { " (dry run: nothing recorded)" } else { "" }
    );
    let active: Vec<&RegressionReport> = report.regressions.iter().filter(|r| r.status.is_active()).collect();
    if active.is_empty() {
        let _ = writeln!(s, "\nno regressions");
    } else {
        render_table(&mut s, &active);
        for r in &active {
            render_regression(&mut s, r);
        }
    }
    let resolved: Vec<&RegressionReport> =
        report.regressions.iter().filter(|r| !r.status.is_active()).collect();
    if !resolved.is_empty() {
        let _ = writeln!(s, "\nresolved:");
        for r in resolved {
            let _ = writeln!(s, "  {} [{}]", r.attribution.summary, r.fingerprint);
        }
    }
    render_outcome(&mut s, report);
    s
}

/// One line per active regression.
fn render_table(s: &mut String, active: &[&RegressionReport]) {
    let _ = writeln!(s, "\n{} regression(s):", active.len());
    let _ = writeln!(
        s,
        "  {:<8} {:<22} {:<7} {:<24} {:>5} {:>9} {:>9} {:>9}  scope",
        "status", "family", "release", "component", "runs", "pct", "now", "threshold"
    );
    for r in active {
        let scope: Vec<String> = r
            .scope
            .iter()
            .filter(|(d, _)| *d != Dimension::Release)
            .map(|(d, v)| format!("{d}={}", v.iter().cloned().collect::<Vec<_>>().join(",")))
            .collect();
        let _ = writeln!(
            s,
            "  {:<8} {:<22} {:<7} {:<24} {:>5} {:>9} {:>9} {:>9}  {}",
            r.status,
            r.family,
            r.release,
            r.component,
            r.job_runs,
            r.percentile.to_string(),
            secs(r.observed_seconds),
            secs(r.threshold_seconds),
            scope.join(" ")
        );
    }
}

/// One regression's account: summary, evidence, percentiles, sample jobs.
fn render_regression(s: &mut String, r: &RegressionReport) {
    let _ = writeln!(
        s,
        "\n  [{}] {} — confidence {}",
        r.fingerprint, r.attribution.scope, r.attribution.confidence
    );
    let _ = writeln!(s, "  {}", r.attribution.summary);
    for e in &r.attribution.evidence {
        let _ = writeln!(s, "    - {e}");
    }
    let _ = writeln!(s, "    percentiles now / baseline:");
    for (p, pair) in &r.percentiles {
        let _ = writeln!(s, "      {p}: {} / {}", secs_or_dash(pair.now), secs_or_dash(pair.baseline));
    }
    for j in &r.sample_jobs {
        let ci = if j.ci_infrastructure_trouble { "  (CI liveness lost too)" } else { "" };
        let _ = writeln!(s, "    {:<7} {:>4}s  {}{ci}", j.kind.as_str(), j.seconds, j.url);
    }
}

/// What the cycle did to incidents and the outbox, and what it could not judge.
fn render_outcome(s: &mut String, report: &CycleReport) {
    let c = &report.incidents;
    if !report.dry_run {
        let _ = writeln!(
            s,
            "\nincidents: {} opened, {} changed, {} resolved, {} stale, {} held by silences; {} notification(s) queued{}",
            c.opened,
            c.changed,
            c.resolved,
            c.stale,
            c.silenced,
            c.notifications,
            if c.not_filed > 0 {
                format!(", {} not filed in Jira (cap)", c.not_filed)
            } else {
                String::new()
            }
        );
    }
    if let Some(d) = &report.delivery {
        let _ = writeln!(s, "delivered {}, retrying {}, dead {}", d.delivered, d.retrying, d.dead);
    }
    if !report.insufficient_data.is_empty() {
        let _ = writeln!(
            s,
            "\ninsufficient data (fewer runs than the minimum, even with networks and upgrade types merged):"
        );
        for i in report.insufficient_data.iter().take(10) {
            let _ = writeln!(s, "  {} runs  {}", i.job_runs, i.jobs.join(", "));
        }
    }
}
