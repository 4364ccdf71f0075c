//! One evaluation cycle: read the windows from the store, evaluate, attribute and describe the
//! regressions, record the outcome. This is where the store and the pure evaluator meet.

mod attribution;
mod episodes;
mod error;
mod fix_verdict;
mod follow;
pub(crate) mod replay;
mod scoped;
pub mod source;
mod unrecorded;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::config::{EvaluateSettings, Settings};
use crate::domain::attribute::components::ComponentTable;
use crate::domain::attribute::scope::ScopeFinding;
use crate::domain::evaluate::thresholds::HistoricalTable;
use crate::domain::evaluate::{self, EvalInput, GroupResult, GroupStatus};
use crate::domain::incidents::Incident;
use crate::domain::incidents::plan::{self, Known, Policy};
pub use crate::model::{Attribution, PercentilePair, RegressionReport, SampleJob};
use crate::model::{DAY, Dimension, Scope, backend_family};
use crate::store::Store;
use crate::store::evaluations::{CycleOutcome, CycleRecord};
use crate::support::error::with_sources;
use attribution::Description;
pub use error::CycleError;
use error::Result;
use source::RunSource;
pub use unrecorded::Unrecorded;

/// `[from, to)`.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Window {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

impl Window {
    /// A cycle's current window and the baseline before it, at `at`.
    pub(crate) fn of_cycle(at: DateTime<Utc>, es: &EvaluateSettings) -> (Window, Window) {
        let window = Window {
            from: at - Duration::days(i64::from(es.window_days)),
            to: at,
        };
        let baseline = Window {
            from: window.from - Duration::days(i64::from(es.baseline_days)),
            to: window.from,
        };
        (window, baseline)
    }

    /// The starts of a cycle's recent spans at `at` (each ends at `at`), one per
    /// `recent_days`.
    pub(crate) fn recent_starts(at: DateTime<Utc>, es: &EvaluateSettings) -> Vec<i64> {
        es.recent_days
            .iter()
            .map(|d| at.timestamp() - i64::from(*d) * DAY)
            .collect()
    }

    /// `[from, to)` in Unix seconds.
    pub fn secs(self) -> (i64, i64) {
        (self.from.timestamp(), self.to.timestamp())
    }
}

/// The outcome of one cycle: the JSON of `sheriff evaluate --format json` (docs/commands.md documents them).
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
    /// Platforms where CI-infrastructure trouble hit an unusual share of the window's runs: the
    /// CI's problem, said apart, never a regression of a backend.
    pub ci_trouble: Vec<CiTroubleReport>,
    /// What the cycle saw in the data that is not a regression: probes broken on some jobs.
    pub data_quality: crate::model::DataQuality,
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
    /// Incidents whose notifications an accepted level held.
    pub accepted: usize,
    /// Side effects queued in the outbox.
    pub notifications: usize,
    /// Incidents over the per-cycle Jira cap, filed later.
    pub not_filed: usize,
}

impl IncidentCounts {
    fn of(plan: &crate::domain::incidents::plan::Plan) -> IncidentCounts {
        use crate::domain::incidents::plan::Action;
        let mut c = IncidentCounts {
            not_filed: plan.not_filed.len(),
            accepted: plan.accepted.len(),
            ..Default::default()
        };
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

/// A platform whose runs CI-infrastructure trouble hit unusually often.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CiTroubleReport {
    pub scope: Scope,
    /// Runs of the window left out for CI trouble, and all its runs.
    pub troubled_runs: u64,
    pub job_runs: u64,
}

/// A platform's CI trouble is unusual from this many troubled runs, making at least this share
/// of its runs and this many times the share of the window as a whole.
const CI_TROUBLE_RUNS: u64 = 3;
const CI_TROUBLE_SHARE: f64 = 0.05;
const CI_TROUBLE_OVER_USUAL: f64 = 3.0;

/// Each release × platform × architecture of the window whose share of CI-troubled runs is
/// unusual (a clean run counted once, by its variant's busiest backend).
fn ci_trouble_of(data: &crate::store::evaluations::WindowData) -> Vec<CiTroubleReport> {
    let mut clean = vec![0u64; data.variants.len()];
    for c in &data.cells {
        clean[c.variant] = clean[c.variant].max(c.current.count());
    }
    let mut by: BTreeMap<(&str, &str, &str), (u64, u64)> = BTreeMap::new();
    for (v, d) in data.variants.iter().enumerate() {
        let e = by
            .entry((&d.release, &d.platform, &d.architecture))
            .or_default();
        e.0 += data.troubled[v];
        e.1 += data.troubled[v] + clean[v];
    }
    let (troubled, runs) = by.values().fold((0, 0), |(t, r), (a, b)| (t + a, r + b));
    let usual = troubled as f64 / runs.max(1) as f64;
    by.into_iter()
        .filter(|(_, (t, r))| {
            let share = *t as f64 / (*r).max(1) as f64;
            *t >= CI_TROUBLE_RUNS
                && share >= CI_TROUBLE_SHARE
                && share >= CI_TROUBLE_OVER_USUAL * usual
        })
        .map(|((release, platform, architecture), (t, r))| {
            let mut scope = Scope::new();
            scope.set(Dimension::Release, [release]);
            scope.set(Dimension::Platform, [platform]);
            scope.set(Dimension::Architecture, [architecture]);
            CiTroubleReport {
                scope,
                troubled_runs: t,
                job_runs: r,
            }
        })
        .collect()
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

/// Runs one evaluation cycle at `options.at` on the store's runs (read through `warm`),
/// recording into it: for a process that runs one cycle and ends, where a failed cycle that
/// cannot be recorded has no later to be recorded in (it is logged).
pub async fn run_cycle(
    store: &Store,
    warm: &crate::application::warm::Warm,
    settings: &Settings,
    options: CycleOptions,
) -> Result<CycleReport> {
    run_cycle_keeping(store, warm, &Unrecorded::default(), settings, options).await
}

/// [`run_cycle`] in a process that goes on (`sheriff serve`): a failed cycle that cannot be
/// recorded is kept in `unrecorded`, to be recorded once the database takes writes again.
pub async fn run_cycle_keeping(
    store: &Store,
    warm: &crate::application::warm::Warm,
    unrecorded: &Unrecorded,
    settings: &Settings,
    options: CycleOptions,
) -> Result<CycleReport> {
    let policy = Policy::from_settings(settings, crate::words::line);
    if !options.dry_run && settings.jira.enabled() {
        // What Jira says of claimed fixes, before the cycle judges them; Jira being away
        // leaves the claims as they were.
        if let Err(e) =
            crate::application::fix_watch::watch(store, settings, options.at.timestamp()).await
        {
            tracing::warn!("reading the incidents' Jira issues: {}", with_sources(&e));
        }
    }
    let report = run_cycle_on(
        &source::Live { store, warm },
        store,
        unrecorded,
        settings,
        &policy,
        options,
    )
    .await?;
    tracing::info!(
        evaluated_at = %options.at,
        groups = report.groups_evaluated,
        regressions = report.regressions.len(),
        seconds = report.seconds,
        dry_run = options.dry_run,
        "evaluation cycle finished"
    );
    Ok(report)
}

/// One cycle reading runs from `source` and recording its outcome (group states, incidents,
/// the outbox) into `state`: the same store, except in a backtest, which replays into a store
/// of its own. A cycle that fails is recorded as failed, or kept in `unrecorded` while the
/// store takes no writes.
pub async fn run_cycle_on<S: RunSource>(
    source: &S,
    state: &Store,
    unrecorded: &Unrecorded,
    settings: &Settings,
    policy: &Policy,
    options: CycleOptions,
) -> Result<CycleReport> {
    let started = Instant::now();
    let started_at = Utc::now().timestamp();
    // Boxed: the evaluation's state machine is large and callers hold it across awaits.
    let result = Box::pin(evaluate_at(source, state, settings, options)).await;
    let seconds = started.elapsed().as_secs_f64();
    let outcome = if result.is_ok() {
        CycleOutcome::Ok
    } else {
        CycleOutcome::Failed
    };
    metrics::histogram!("sheriff_cycle_seconds", "outcome" => outcome.as_str()).record(seconds);
    metrics::counter!("sheriff_cycles_total", "outcome" => outcome.as_str()).increment(1);

    let mut record = CycleRecord {
        started_at,
        finished_at: Utc::now().timestamp(),
        evaluated_at: options.at.timestamp(),
        outcome,
        ..Default::default()
    };
    let evaluated = match result {
        Ok(e) => e,
        Err(e) => {
            record.error = with_sources(&e);
            if !options.dry_run {
                record_failed(state, unrecorded, &record).await;
            }
            return Err(e);
        }
    };

    let Evaluated {
        mut report,
        states,
        merges,
    } = evaluated;
    attach_changes(state, settings, &mut report.regressions, options.dry_run).await;

    let active = report
        .regressions
        .iter()
        .filter(|x| x.status.is_active())
        .count();
    metrics::gauge!("sheriff_groups_evaluated").set(report.groups_evaluated as f64);
    metrics::gauge!("sheriff_regressions").set(active as f64);
    report.seconds = seconds;
    if !options.dry_run {
        record.groups = report.groups_evaluated as i64;
        record.regressions = active as i64;
        let now = options.at.timestamp();
        let regressions = &report.regressions;
        let planner = |known: &Known| plan::plan(now, regressions, &merges, known, policy);
        let finished = state
            .incidents()
            .finish_cycle(&states, &record, planner, crate::words::line)
            .await;
        let plan = applied_or_failed(state, unrecorded, finished, record).await?;
        report.incidents = IncidentCounts::of(&plan);
    }

    // Debug here: a backtest replays dozens of cycles; `run_cycle` logs the live one at info.
    tracing::debug!(
        evaluated_at = %options.at,
        groups = report.groups_evaluated,
        regressions = report.regressions.len(),
        seconds,
        "replayed cycle finished"
    );
    Ok(report)
}

/// The plan a cycle's transaction applied; when the transaction failed, the cycle's own record
/// went with it, and the cycle is recorded as failed instead.
async fn applied_or_failed(
    state: &Store,
    unrecorded: &Unrecorded,
    finished: crate::store::Result<(i64, plan::Plan)>,
    mut record: CycleRecord,
) -> Result<plan::Plan> {
    match finished {
        Ok((_, plan)) => Ok(plan),
        Err(e) => {
            record.outcome = CycleOutcome::Failed;
            record.error = format!("storing the cycle failed: {e:#}");
            record_failed(state, unrecorded, &record).await;
            Err(e.into())
        }
    }
}

/// Records a cycle that failed, or keeps it in `unrecorded` when the store takes no writes.
async fn record_failed(state: &Store, unrecorded: &Unrecorded, record: &CycleRecord) {
    if let Err(e) = unrecorded.record(state, record).await {
        tracing::error!(
            "cannot record the failed cycle; kept, to be recorded once the database takes writes again: {e:#}"
        );
    }
}

/// Attaches to each regression the release controller's changes and the outside changes
/// that may explain it.
async fn attach_changes(
    state: &Store,
    settings: &Settings,
    regressions: &mut [RegressionReport],
    dry_run: bool,
) {
    crate::application::releases::attach_payload_changes(
        state,
        &settings.release_controller,
        regressions,
        dry_run,
    )
    .await;
    crate::application::releases::outside::attach_outside_changes(
        state,
        &settings.github,
        regressions,
        dry_run,
    )
    .await;
}

type States = Vec<(String, evaluate::GroupState)>;

/// What a cycle concluded, before it is recorded.
struct Evaluated {
    report: CycleReport,
    states: States,
    /// Open incidents found to be one problem: (the younger, the older it merges into).
    merges: Vec<(i64, i64)>,
}

/// The label an incident's own state (its clean streak) is kept under among the group states.
fn incident_label(id: i64) -> String {
    format!("incident:{id}")
}

/// What a cycle reads before it judges: the windows (episodes masked), the incidents and
/// group states it continues, the historical table and the releases too young for a baseline.
struct Inputs {
    data: crate::store::evaluations::WindowData,
    incidents: Vec<Incident>,
    prior: HashMap<String, evaluate::GroupState>,
    historical: HistoricalTable,
    young: HashSet<String>,
}

async fn read_inputs<S: RunSource>(
    source: &S,
    state: &Store,
    es: &EvaluateSettings,
    window: Window,
    baseline: Window,
    now: i64,
) -> Result<Inputs> {
    let phase = Instant::now();
    // a cycle in the past knows only the incidents opened by then: a later one's episode and
    // numbers are the future
    let incidents: Vec<Incident> = state
        .incidents()
        .all()
        .await?
        .into_iter()
        .filter(|i| i.opened_at <= now)
        .collect();

    let recent = Window::recent_starts(window.to, es);
    let mut data = source
        .windows(window.secs(), baseline.secs(), &recent, now)
        .await?;

    tracing::debug!(
        seconds = phase.elapsed().as_secs_f64(),
        "cycle: the windows' histograms"
    );

    let masks = episodes::masks(
        &incidents,
        now,
        i64::from(es.window_days + es.baseline_days) * DAY,
    );

    let oldest = now - i64::from(es.reference_lookback_days) * DAY;
    let reference = (i64::from(es.baseline_days) * DAY, oldest);
    episodes::apply(source, &mut data, &masks, window, reference, &recent, now).await?;
    let prior = state.evaluations().group_states().await?;
    let historical = HistoricalTable::new(source.historical().await?, es.historical_min_runs);
    let young = evaluate::thresholds::young_releases(
        &source.first_seen(now).await?,
        now,
        es.min_history_days,
    );

    tracing::debug!(
        seconds = phase.elapsed().as_secs_f64(),
        cells = data.cells.len(),
        "cycle: read the windows"
    );

    Ok(Inputs {
        data,
        incidents,
        prior,
        historical,
        young,
    })
}

async fn evaluate_at<S: RunSource>(
    source: &S,
    state: &Store,
    settings: &Settings,
    options: CycleOptions,
) -> Result<Evaluated> {
    let es = &settings.evaluate;
    let at = options.at;
    let now = at.timestamp();
    let (window, baseline) = Window::of_cycle(at, es);
    let inputs = read_inputs(source, state, es, window, baseline, now).await?;

    let evaluation = evaluate_inputs(&inputs, es, now);

    let found = describe_evaluation(
        source,
        settings,
        options,
        &inputs,
        &evaluation,
        (window, baseline),
    )
    .await?;

    let data_quality = data_quality(source, window).await?;

    let data = &inputs.data;
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
        regressions: found.regressions,
        insufficient_data: found.insufficient_data,
        ci_trouble: ci_trouble_of(data),
        data_quality,
        dry_run: options.dry_run,
        seconds: 0.0,
        incidents: IncidentCounts::default(),
        delivery: None,
    };
    Ok(Evaluated {
        report,
        states: found.states,
        merges: found.merges,
    })
}

/// Judges every group of the cycle's windows.
fn evaluate_inputs(inputs: &Inputs, es: &EvaluateSettings, now: i64) -> evaluate::Evaluation {
    let phase = Instant::now();
    let input = EvalInput {
        backends: &inputs.data.backends,
        variants: &inputs.data.variants,
        cells: &inputs.data.cells,
        prior: &inputs.prior,
        now,
        young: &inputs.young,
    };
    // On a thread of its own, nicer than the requests `serve` answers meanwhile.
    let evaluation = crate::support::process::in_background(|| {
        evaluate::evaluate(&input, es, &inputs.historical)
    });
    tracing::debug!(
        seconds = phase.elapsed().as_secs_f64(),
        groups = evaluation.groups.len(),
        "cycle: evaluated"
    );
    evaluation
}

/// What a cycle found in its evaluation, described.
struct DescribedEvaluation {
    regressions: Vec<RegressionReport>,
    /// Open incidents found to be one problem: (the younger, the older it merges into).
    merges: Vec<(i64, i64)>,
    states: States,
    insufficient_data: Vec<InsufficientReport>,
}

/// Describes the regressions of `evaluation` (matched against the open incidents they
/// continue) and the cells it could not judge for want of runs.
async fn describe_evaluation<S: RunSource>(
    source: &S,
    settings: &Settings,
    options: CycleOptions,
    inputs: &Inputs,
    evaluation: &evaluate::Evaluation,
    (window, baseline): (Window, Window),
) -> Result<DescribedEvaluation> {
    let phase = Instant::now();
    let es = &settings.evaluate;
    let components = ComponentTable::from_settings(&settings.attribute);
    let index = attribution::Index::new(evaluation, &inputs.data);
    let mut states = states_to_keep(&index, &inputs.prior);
    let judging = scoped::Judging {
        data: &inputs.data,
        settings: es,
        historical: &inputs.historical,
        young: &inputs.young,
    };

    // kept where the runs are (a backtest's state is a scratch store)
    let fetcher = crate::adapters::ingest::on_demand::EvidenceFetcher::new(
        source.runs_store(),
        settings,
        !options.dry_run,
    );

    let cx = attribution::Context {
        source,
        settings: es,
        attribute: &settings.attribute,
        components: &components,
        index: &index,
        judging: &judging,
        window,
        baseline,
        now: options.at.timestamp(),
        records: Default::default(),
        evidence: &fetcher,
    };

    let (regressions, merges) = regressions_of(
        &cx,
        evaluation,
        &inputs.incidents,
        &inputs.prior,
        &mut states,
    )
    .await?;

    let insufficient_data = insufficient(source, &inputs.data, &evaluation.groups, window).await?;
    tracing::debug!(
        seconds = phase.elapsed().as_secs_f64(),
        "cycle: described the regressions"
    );

    Ok(DescribedEvaluation {
        regressions,
        merges,
        states,
        insufficient_data,
    })
}

/// The cycle's probes that are broken and its jobs that are new.
async fn data_quality<S: RunSource>(
    source: &S,
    window: Window,
) -> Result<crate::model::DataQuality> {
    let phase = Instant::now();
    let data_quality = crate::model::DataQuality {
        broken_probes: source.broken_probes(window.secs()).await?,
        new_jobs: source.new_jobs(window.secs()).await?,
    };
    tracing::debug!(
        seconds = phase.elapsed().as_secs_f64(),
        "cycle: data quality"
    );
    Ok(data_quality)
}

/// The cycle's regressions, in report order (active first), and the merges it found: every
/// cluster described, then matched against the open incidents it continues.
async fn regressions_of<S: RunSource>(
    cx: &attribution::Context<'_, S>,
    evaluation: &evaluate::Evaluation,
    incidents: &[Incident],
    prior: &HashMap<String, evaluate::GroupState>,
    states: &mut States,
) -> Result<(Vec<RegressionReport>, Vec<(i64, i64)>)> {
    let phase = Instant::now();
    let clusters = clusters(cx.index, evaluation, cx.settings);
    tracing::debug!(
        seconds = phase.elapsed().as_secs_f64(),
        clusters = clusters.len(),
        "cycle: clustered"
    );

    let phase = Instant::now();
    let detections = described(cx, &clusters, incidents, states).await?;
    tracing::debug!(
        seconds = phase.elapsed().as_secs_f64(),
        "cycle: described the clusters"
    );

    let phase = Instant::now();
    let (mut regressions, merges) = follow_all(cx, incidents, detections, prior, states).await?;
    tracing::debug!(
        seconds = phase.elapsed().as_secs_f64(),
        "cycle: followed the open incidents"
    );

    let phase = Instant::now();
    for r in &mut regressions {
        r.weekly = cx
            .source
            .weekly(r, i64::from(cx.settings.window_days), cx.now)
            .await?;
    }

    tracing::debug!(
        seconds = phase.elapsed().as_secs_f64(),
        "cycle: weekly series"
    );

    regressions.sort_by(|a, b| {
        (!a.status.is_active(), &a.family, &a.release).cmp(&(
            !b.status.is_active(),
            &b.family,
            &b.release,
        ))
    });

    Ok((regressions, merges))
}

/// Every cluster described. A held-back regression is then told over another scope on its
/// platform ([`attribution::Context::describe_elsewhere`]) only when no regression told this
/// cycle is the same problem there, so two held back never both take one scope. A regression
/// left untold forgets its new groups' states ([`forget_unreported`]).
async fn described<S: RunSource>(
    cx: &attribution::Context<'_, S>,
    clusters: &[attribution::Cluster<'_>],
    incidents: &[Incident],
    states: &mut States,
) -> Result<Vec<attribution::Described>> {
    let mut detections = Vec::new();
    let mut held = Vec::new();
    for cluster in clusters {
        let from = search_from(&cluster.family, &cluster.scope, incidents, cx);
        match cx.describe(cluster, from).await? {
            Description::Told(d) => detections.push(*d),
            Description::HeldBack(scope) => held.push((cluster, scope)),
            Description::Untold => forget_unreported(cluster, states),
        }
    }
    for (cluster, scope) in held {
        let taken: Vec<&Scope> = detections
            .iter()
            .filter(|d| d.report.family == cluster.family)
            .map(|d| &d.report.scope)
            .collect();
        let from = |s: &Scope| search_from(&cluster.family, s, incidents, cx);
        match cx.describe_elsewhere(cluster, &scope, from, &taken).await? {
            Some(d) => detections.push(d),
            None => forget_unreported(cluster, states),
        }
    }
    Ok(detections)
}

/// A new regression the cycle did not report (no change of level in its runs, or numbers that
/// hold over no scope) leaves no state behind: the next cycle judges its groups as new again,
/// with the same tests. Kept, the state would let the groups stay regressed on their level alone
/// and be reported as ongoing without ever having passed the tests of a new regression.
fn forget_unreported(cluster: &attribution::Cluster<'_>, states: &mut States) {
    let new: HashSet<String> = cluster
        .all_groups()
        .filter(|g| g.is_new)
        .map(|g| g.key.label())
        .collect();
    states.retain(|(label, _)| !new.contains(label));
}

/// Where a detection's onset may be: the windows' span, but after the last recovery of a
/// resolved incident it would reopen (a recurrence has an onset of its own).
fn search_from<S>(
    family: &str,
    scope: &Scope,
    incidents: &[Incident],
    cx: &attribution::Context<'_, S>,
) -> i64 {
    let release = scope.single(Dimension::Release).unwrap_or_default();
    let default = cx.baseline.from.timestamp();
    incidents
        .iter()
        .filter(|i| {
            !i.state.is_open() && i.snapshot.family == family && i.snapshot.release == release
        })
        .filter(|i| i.snapshot.scope.same_problem(scope))
        .filter_map(|i| i.episodes.last()?.recovered_at.map(|t| t.timestamp()))
        .fold(default, i64::max)
}

/// Follows every open incident, oldest first, each taking the cycle's detections that are it;
/// the rest are new (or recurring) regressions. Open incidents whose scopes now overlap are one
/// problem: the younger merges into the older.
async fn follow_all<S: RunSource>(
    cx: &attribution::Context<'_, S>,
    incidents: &[Incident],
    detections: Vec<attribution::Described>,
    prior: &HashMap<String, evaluate::GroupState>,
    states: &mut States,
) -> Result<(Vec<RegressionReport>, Vec<(i64, i64)>)> {
    let mut open: Vec<&Incident> = incidents
        .iter()
        .filter(|i| i.state.is_open() && i.merged_into.is_none())
        .collect();

    open.sort_by_key(|i| (i.opened_at, i.id));
    let mut taken = vec![false; detections.len()];
    let mut reports: Vec<(Option<&Incident>, RegressionReport)> = Vec::new();
    for i in &open {
        let ks: Vec<usize> = (0..detections.len())
            .filter(|&k| !taken[k] && follow::belongs(i, &detections[k].report))
            .collect();
        for &k in &ks {
            taken[k] = true;
        }
        let mine: Vec<&attribution::Described> = ks.iter().map(|&k| &detections[k]).collect();
        let label = incident_label(i.id);
        let streak = prior.get(&label).map_or(0, |s| s.clean_streak);
        let followed = cx.follow(i, &mine, streak).await?;
        if !matches!(followed.verdict, follow::Verdict::Recovered { .. }) {
            states.push((
                label,
                evaluate::GroupState {
                    regressed: true,
                    clean_streak: followed.clean_streak,
                    since: None,
                },
            ));
        }
        if let Some(r) = followed.report {
            reports.push((Some(*i), r));
        }
    }

    let merges = merges_of(&reports);
    reports.retain(|(i, _)| i.is_none_or(|i| !merges.iter().any(|(from, _)| *from == i.id)));
    let mut out: Vec<RegressionReport> = reports.into_iter().map(|(_, r)| r).collect();
    out.extend(
        detections
            .into_iter()
            .zip(taken)
            .filter(|(_, t)| !t)
            .map(|(d, _)| d.report),
    );

    Ok((out, merges))
}

/// Open incidents whose reports now overlap (same family and release): each younger one
/// merges into the oldest it overlaps.
fn merges_of(reports: &[(Option<&Incident>, RegressionReport)]) -> Vec<(i64, i64)> {
    let mut merges = Vec::new();
    for (k, (young, r)) in reports.iter().enumerate() {
        let Some(young) = young else { continue };
        let older = reports[..k].iter().find(|(i, o)| {
            i.is_some_and(|i| !merges.iter().any(|(from, _)| *from == i.id))
                && o.family == r.family
                && o.release == r.release
                && o.scope.same_problem(&r.scope)
        });
        if let Some((Some(old), _)) = older {
            merges.push((young.id, old.id));
        }
    }
    merges
}

/// States to keep: every regressed (or recovering) group, and earlier ones not seen now.
fn states_to_keep(
    index: &attribution::Index<'_>,
    prior: &HashMap<String, evaluate::GroupState>,
) -> States {
    let mut states = Vec::new();
    for g in index
        .evaluation
        .groups
        .iter()
        .filter(|g| g.state.regressed || g.state.clean_streak > 0)
    {
        states.push((g.key.label(), g.state.clone()));
    }
    for (label, state) in prior {
        if !state.regressed || label.starts_with("incident:") {
            continue;
        }
        if crate::model::GroupKey::parse_label(label).is_none_or(|k| index.group(&k).is_none()) {
            states.push((label.clone(), state.clone()));
        }
    }
    states
}

/// A regression's identity within a cycle: the backend family and its found scope.
type ClusterKey = (String, Scope);

/// The reported groups, each with its found scope, grouped into regressions: groups of one
/// family whose scopes overlap in one release are one (new and reused connections, one problem
/// seen at two levels, or a scope the groups see from two sides).
///
/// A group regressed only as a whole (no cell of it regressed: a pool of every platform's ovn
/// runs, say, regressed while finer groups with enough runs show each of its cells healthy, or
/// its thin cells have no run above the bar; see [`attribution::scope_for`]) has no found
/// scope but its own key. When a regression of the same family and release, made of found scopes,
/// holds some of its cells, it is that regression seen through the pool: it is listed with it
/// ([`attribution::Cluster::seen_through`]) and does not widen its scope, lead it, set its
/// status or add to its backends. Otherwise it is a regression of its own, merged like any other.
fn clusters<'a>(
    index: &attribution::Index<'_>,
    evaluation: &'a evaluate::Evaluation,
    settings: &EvaluateSettings,
) -> Vec<attribution::Cluster<'a>> {
    let reported: Vec<&GroupResult> = evaluation
        .groups
        .iter()
        .filter(|g| {
            g.reported && matches!(g.status, GroupStatus::Regressed | GroupStatus::Resolved)
        })
        .collect();

    let mut by_scope: BTreeMap<ClusterKey, (ScopeFinding, Vec<&GroupResult>)> = BTreeMap::new();
    let mut pools: Vec<(ClusterKey, ScopeFinding, &GroupResult)> = Vec::new();
    for g in &reported {
        let others: std::collections::BTreeSet<usize> = reported
            .iter()
            .filter(|o| o.key.backend == g.key.backend && o.key != g.key)
            .flat_map(|o| o.cells.iter().copied())
            .filter(|c| !g.cells.contains(c))
            .collect();
        let (finding, context, whole_only) = attribution::scope_for(index, g, &others, settings);
        let key = (
            backend_family(&g.key.backend).to_string(),
            attribution::scope_key(&context, &finding),
        );
        if whole_only {
            pools.push((key, finding, g));
        } else {
            by_scope
                .entry(key)
                .or_insert_with(|| (finding, Vec::new()))
                .1
                .push(g);
        }
    }

    let mut merged: Vec<attribution::Cluster<'a>> = Vec::new();
    for (key, (finding, groups)) in by_scope {
        merge_cluster(&mut merged, key, finding, groups, &index.data.variants);
    }

    let found_scopes = merged.len();
    let data = index.data;
    for (key, finding, pool) in pools {
        let holds_a_cell = |c: &attribution::Cluster<'_>| {
            c.family == key.0
                && c.scope.single(Dimension::Release) == key.1.single(Dimension::Release)
                && pool
                    .cells
                    .iter()
                    .any(|&cell| c.scope.contains(&data.variants[data.cells[cell].variant]))
        };
        let found = merged[..found_scopes].iter().position(holds_a_cell);
        match found {
            Some(k) => merged[k].seen_through.push(pool),
            None => merge_cluster(&mut merged, key, finding, vec![pool], &data.variants),
        }
    }

    for c in &mut merged {
        c.scope = c.scope.simplified(&index.data.variants);
        c.explained = explained_by(c, evaluation);
    }

    merged
}

/// The groups a cluster's groups explained away: of its family and release, their own tests
/// discoveries, not reported, holding a cell of the cluster's groups.
fn explained_by<'a>(
    cluster: &attribution::Cluster<'a>,
    evaluation: &'a evaluate::Evaluation,
) -> Vec<&'a GroupResult> {
    let release = cluster.scope.single(Dimension::Release);
    let cells: HashSet<usize> = cluster
        .groups
        .iter()
        .flat_map(|g| g.cells.iter().copied())
        .collect();
    evaluation
        .groups
        .iter()
        .filter(|g| g.significant && !g.reported)
        .filter(|g| backend_family(&g.key.backend) == cluster.family)
        .filter(|g| g.key.get(Dimension::Release) == release)
        .filter(|g| g.cells.iter().any(|c| cells.contains(c)))
        .collect()
}

/// Adds groups that share one scope to the regression whose scope overlaps it (joining the two
/// scopes), or as a regression of its own.
fn merge_cluster<'a>(
    merged: &mut Vec<attribution::Cluster<'a>>,
    (family, scope): ClusterKey,
    finding: ScopeFinding,
    groups: Vec<&'a GroupResult>,
    variants: &[crate::model::Dimensions],
) {
    let release = scope.single(Dimension::Release);
    let same = merged.iter().position(|c| {
        c.family == family
            && c.scope.single(Dimension::Release) == release
            && c.scope.same_problem(&scope)
    });
    let Some(k) = same else {
        merged.push(attribution::Cluster {
            family,
            scope,
            finding,
            groups,
            seen_through: Vec::new(),
            explained: Vec::new(),
        });
        return;
    };
    let c = &mut merged[k];
    c.scope = c.scope.joined_over(&scope, variants);
    let kept = c.scope.clone();
    c.finding.constraints.retain(|d, _| kept.get(*d).is_some());
    for (d, values) in c.finding.constraints.iter_mut() {
        values.extend(scope.get(*d).into_iter().flatten().cloned());
    }
    for (d, values) in finding.spans {
        c.finding.spans.entry(d).or_default().extend(values);
    }
    c.finding.separates &= finding.separates;
    c.groups.extend(groups);
}

/// Variants with runs in the window that no group keeping their platform could judge.
async fn insufficient<S: RunSource>(
    store: &S,
    data: &crate::store::evaluations::WindowData,
    groups: &[GroupResult],
    window: Window,
) -> Result<Vec<InsufficientReport>> {
    let mut judged = vec![false; data.cells.len()];
    for g in groups
        .iter()
        .filter(|g| g.level.keeps_platform() && g.status != GroupStatus::InsufficientData)
    {
        for &c in &g.cells {
            judged[c] = true;
        }
    }

    // Per variant with runs: its busiest cell's runs, and whether any of its cells was judged.
    let mut by_variant: Vec<Option<(u64, bool)>> = vec![None; data.variants.len()];
    for g in groups.iter().filter(|g| g.level.is_cell()) {
        for &c in &g.cells {
            let cell = &data.cells[c];
            if cell.current.is_empty() {
                continue;
            }
            let e = by_variant[cell.variant].get_or_insert((0, false));
            e.0 = e.0.max(cell.current.count());
            e.1 |= judged[c];
        }
    }

    let mut out = Vec::new();
    let mut list: Vec<_> = by_variant
        .into_iter()
        .enumerate()
        .filter_map(|(v, e)| e.filter(|(_, judged)| !judged).map(|e| (v, e)))
        .collect();

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
        out.push(InsufficientReport {
            scope,
            job_runs: runs,
            jobs,
        });
    }

    Ok(out)
}
