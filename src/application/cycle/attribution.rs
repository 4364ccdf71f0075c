//! Turning reported groups into regressions with an attribution: the scope that explains them,
//! what they do not depend on, the control backend, the components, and the interval evidence
//! of sample runs. The pure reasoning is in `attribute`; this file fetches what it needs.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::DateTime;

use super::error::Result;
use super::scoped::{Judging, ScopeStats};
use super::source::{CellRun, RunSource};
use super::{Attribution, PercentilePair, RegressionReport, SampleJob, Window};
use crate::config::{AttributeSettings, EvaluateSettings, FileAgainst};
use crate::domain::attribute::components::{ComponentTable, control_for};
use crate::domain::attribute::evidence::{self, ConditionEvidence, RunIntervals};
use crate::domain::attribute::facts::{self, Owners, PendingRuns};
use crate::domain::attribute::mechanism::{self, RunTimeline};
use crate::domain::attribute::scope::{self, CellEvidence, ScopeFinding, ValueEvidence, Verdict};
use crate::domain::evaluate::changepoint::{self, Run};
use crate::domain::evaluate::{Check, Evaluation, GroupResult, GroupStatus};
use crate::model::{
    ControlEvidence, Dimension, GroupKey, Mechanism, Onset, Percentile, SampleKind, Scope, Span,
    SpanKind, Status, fingerprint,
};
use crate::store::evaluations::WindowData;
use crate::words::regression as words;

/// The context dimensions every group of one cluster shares: never merged over.
const CONTEXT: [Dimension; 3] = [
    Dimension::Release,
    Dimension::Architecture,
    Dimension::Topology,
];

/// Lookups over one cycle's groups.
pub(super) struct Index<'a> {
    pub evaluation: &'a Evaluation,
    pub data: &'a WindowData,
    /// Made at the first lookup: a cycle with nothing to describe makes none.
    by_key: std::sync::OnceLock<foldhash::HashMap<&'a GroupKey, usize>>,
    /// Groups containing each cell.
    /// (in one flat list: cell `c`'s are `groups[starts[c]..starts[c + 1]]`).
    groups_of_cell: (Vec<usize>, Vec<usize>),
}

impl<'a> Index<'a> {
    pub fn new(evaluation: &'a Evaluation, data: &'a WindowData) -> Index<'a> {
        let mut starts = vec![0; data.cells.len() + 1];
        for g in &evaluation.groups {
            for &c in &g.cells {
                starts[c + 1] += 1;
            }
        }
        for c in 0..data.cells.len() {
            starts[c + 1] += starts[c];
        }
        let mut groups = vec![0; starts[data.cells.len()]];
        let mut next = starts.clone();
        for (gi, g) in evaluation.groups.iter().enumerate() {
            for &c in &g.cells {
                groups[next[c]] = gi;
                next[c] += 1;
            }
        }
        let groups_of_cell = (starts, groups);
        Index {
            evaluation,
            data,
            by_key: std::sync::OnceLock::new(),
            groups_of_cell,
        }
    }

    pub fn group(&self, key: &GroupKey) -> Option<&'a GroupResult> {
        let evaluation = self.evaluation;
        let by_key = self.by_key.get_or_init(|| {
            evaluation
                .groups
                .iter()
                .enumerate()
                .map(|(i, g)| (&g.key, i))
                .collect()
        });
        by_key.get(key).map(|&i| &evaluation.groups[i])
    }

    /// The groups containing a cell.
    fn groups_of(&self, cell: usize) -> impl Iterator<Item = &'a GroupResult> + '_ {
        let (starts, groups) = &self.groups_of_cell;
        groups[starts[cell]..starts[cell + 1]]
            .iter()
            .map(|&gi| &self.evaluation.groups[gi])
    }

    fn enough(&self, g: &GroupResult, settings: &EvaluateSettings) -> bool {
        g.runs >= settings.min_job_runs
    }

    /// Whether any of a cell's window runs is above `bar`: a sign of its own, however thin,
    /// that it shares its group's regression.
    fn shows_any_above(&self, cell: usize, bar: f64) -> bool {
        self.data.cells[cell].current.count_above(bar) > 0
    }

    /// Whether a cell is healthy on evidence of its own: its cell, or a platform-keeping group
    /// around it, had enough runs and did not regress — and holds none of `regressed` cells.
    fn healthy(
        &self,
        cell: usize,
        regressed: &BTreeSet<usize>,
        settings: &EvaluateSettings,
    ) -> bool {
        self.groups_of(cell).any(|g| {
            g.level.keeps_platform()
                && self.enough(g, settings)
                && !g.significant
                && g.cells.iter().all(|c| !regressed.contains(c))
        })
    }
}

/// The found scope of one reported group: its cells' verdicts, then the smallest description;
/// and whether the group is regressed only as a whole (no cell of it is regressed: the group
/// regressed now, or is still held regressed from before, and the finding falls back to the
/// group's own key). A cell of the group is regressed when a finer group with enough runs
/// holding it regressed, or when no such group holds it and at least one of its window runs is
/// above the group's lowest bar ([`lowest_bar`]; every such cell when the group has no check);
/// healthy when the finer groups with enough runs that hold it all stayed healthy; otherwise
/// unknown: only the group speaks for it, through its other cells.
pub(super) fn scope_for(
    index: &Index<'_>,
    lead: &GroupResult,
    other_regressed: &BTreeSet<usize>,
    settings: &EvaluateSettings,
) -> (ScopeFinding, BTreeMap<Dimension, String>, bool) {
    let context: BTreeMap<Dimension, String> = CONTEXT
        .iter()
        .filter_map(|d| lead.key.get(*d).map(|v| (*d, v.to_string())))
        .collect();

    let mine: BTreeSet<usize> = lead.cells.iter().copied().collect();
    let bar = lowest_bar(lead);
    let mut cells = Vec::new();
    for g in index
        .evaluation
        .groups
        .iter()
        .filter(|g| g.level.is_cell() && g.key.backend == lead.key.backend)
    {
        let Some(&c) = g.cells.first() else { continue };
        let dims = &index.data.variants[index.data.cells[c].variant];
        if context.iter().any(|(d, v)| dims.get(*d) != v) || index.data.cells[c].current.is_empty()
        {
            continue;
        }
        let verdict = if mine.contains(&c) {
            // A finer group inside this one that stayed healthy on its own says otherwise, unless
            // another finer group holding the cell regressed (a healthy group that merges the
            // cell with healthy ones says nothing of the cell).
            let finer = |f: &&GroupResult| {
                f.level.is_finest()
                    && index.enough(f, settings)
                    && f.cells.iter().all(|x| mine.contains(x))
            };
            let healthy_inside = index.groups_of(c).filter(finer).any(|f| !f.significant);
            let regressed_inside = index.groups_of(c).filter(finer).any(|f| f.significant);
            if healthy_inside && !regressed_inside {
                Verdict::Healthy
            } else if regressed_inside || bar.is_none_or(|b| index.shows_any_above(c, b)) {
                Verdict::Regressed
            } else {
                // too thin for a finer group, and not one of its runs above the bar: only the
                // group says it regressed, through its other cells
                Verdict::Unknown
            }
        } else if other_regressed.contains(&c) {
            Verdict::Unknown
        } else if index.healthy(c, &mine, settings) {
            Verdict::Healthy
        } else {
            Verdict::Unknown
        };
        cells.push(CellEvidence {
            dims: dims.clone(),
            verdict,
        });
    }

    let whole_only = !cells.iter().any(|c| c.verdict == Verdict::Regressed);
    let finding = scope::smallest_scope(&cells, &scope::SEARCHABLE).unwrap_or(ScopeFinding {
        constraints: lead
            .key
            .fixed
            .iter()
            .filter(|(d, _)| !CONTEXT.contains(d))
            .map(|(d, v)| (d, [v.to_string()].into()))
            .collect(),
        spans: BTreeMap::new(),
        separates: false,
    });

    (finding, context, whole_only)
}

/// The lowest allowed level a group is judged above: over its checks above their allowed
/// level, else its leading check's (a group held regressed from before); None without checks.
fn lowest_bar(g: &GroupResult) -> Option<f64> {
    g.checks
        .iter()
        .filter(|c| c.exceeds)
        .map(|c| c.allowed)
        .reduce(f64::min)
        .or_else(|| g.leading_check().map(|c| c.allowed))
}

/// The scope: the context dimensions and the finding's constraints.
pub(super) fn scope_key(context: &BTreeMap<Dimension, String>, finding: &ScopeFinding) -> Scope {
    let mut out: Scope = context
        .iter()
        .map(|(d, v)| (*d, [v.clone()].into()))
        .collect();
    for (d, values) in &finding.constraints {
        out.set(*d, values.iter().cloned());
    }
    out
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// What a cycle's descriptions share.
pub(super) struct Context<'a, S> {
    pub source: &'a S,
    pub settings: &'a EvaluateSettings,
    pub attribute: &'a AttributeSettings,
    pub components: &'a ComponentTable,
    pub index: &'a Index<'a>,
    pub judging: &'a Judging<'a>,
    pub window: Window,
    pub baseline: Window,
    /// The cycle's time: what it sees was finished by then.
    pub now: i64,
    /// Runs read for interval evidence this cycle (a detection and its incident read the same).
    pub records: std::sync::Mutex<HashMap<(String, String), Option<crate::model::RunRecord>>>,
    /// Fetches the interval files of runs ingested with on-demand evidence.
    pub evidence: &'a crate::adapters::ingest::on_demand::EvidenceFetcher<'a>,
}

/// The groups of one backend family in one release whose scopes overlap: one regression.
pub(super) struct Cluster<'a> {
    pub family: String,
    pub scope: Scope,
    pub finding: ScopeFinding,
    pub groups: Vec<&'a GroupResult>,
    /// Pools that regressed only as a whole and hold some of this regression's cells: the same
    /// problem seen through them. Listed with its groups; never its lead, its backends, its
    /// status or its scope.
    pub seen_through: Vec<&'a GroupResult>,
    /// Groups of its family and release whose own tests were discoveries, explained away by a
    /// stronger group holding some of their cells: where the regression may be told when its
    /// own scope cannot be yet ([`Context::describe_elsewhere`]). Never its lead, its backends,
    /// its status or its scope.
    pub explained: Vec<&'a GroupResult>,
}

impl<'a> Cluster<'a> {
    /// Its groups, then the pools it is seen through.
    pub fn all_groups(&self) -> impl Iterator<Item = &'a GroupResult> + '_ {
        self.groups.iter().chain(&self.seen_through).copied()
    }

    /// The labels of [`Cluster::all_groups`].
    fn labels(&self) -> Vec<String> {
        self.all_groups().map(|g| g.key.label()).collect()
    }
}

/// What [`Context::describe`] made of a regression.
pub(super) enum Description {
    /// Its report and numbers.
    Told(Box<Described>),
    /// Its numbers hold over this scope, but its runs there show no change of level.
    HeldBack(Scope),
    /// Its lead has no check, or its numbers hold over no scope they can be told for.
    Untold,
}

/// A described regression: its report and the numbers over its scope.
pub(super) struct Described {
    pub report: RegressionReport,
    pub stats: ScopeStats,
}

/// What the runs themselves say: sample jobs, and the interval evidence of the disrupted ones
/// against healthy ones.
struct RunEvidence {
    sample_jobs: Vec<SampleJob>,
    conditions: Vec<ConditionEvidence>,
    /// How the outages come about, when the runs hold timelines.
    mechanism: Option<Mechanism>,
    /// Runs whose interval files could not be fetched yet, of the disrupted and healthy read.
    pending: PendingRuns,
}

/// What [`Context::intervals_of`] read.
struct ReadIntervals {
    regressed: Vec<RunIntervals>,
    healthy: Vec<RunIntervals>,
    /// The same runs' timelines.
    timelines: (Vec<RunTimeline>, Vec<RunTimeline>),
    /// Runs whose interval files could not be fetched yet, of those read.
    pending: PendingRuns,
}

/// The group that makes a cluster's case (the most significant), its leading check, and the
/// cluster's backends.
fn lead_of<'a>(cluster: &Cluster<'a>) -> (&'a GroupResult, Option<Check>, Vec<String>) {
    let lead = *cluster
        .groups
        .iter()
        .min_by(|a, b| by_significance(a, b))
        .expect("a cluster has a group");
    (lead, lead.leading_check().cloned(), backends_of(cluster))
}

/// Groups by their leading check's p-value (none last), then by backend.
fn by_significance(a: &GroupResult, b: &GroupResult) -> std::cmp::Ordering {
    let p = |g: &GroupResult| g.leading_check().map_or(1.0, |c| c.p_value);
    p(a).total_cmp(&p(b))
        .then(a.key.backend.cmp(&b.key.backend))
}

/// A cluster's backends, sorted, each once.
fn backends_of(cluster: &Cluster<'_>) -> Vec<String> {
    let mut backends: Vec<String> = cluster
        .groups
        .iter()
        .map(|g| g.key.backend.to_string())
        .collect();
    backends.sort();
    backends.dedup();
    backends
}

fn status_of(cluster: &Cluster<'_>) -> Status {
    if cluster
        .groups
        .iter()
        .all(|g| g.status == GroupStatus::Resolved)
    {
        Status::Resolved
    } else if cluster.groups.iter().any(|g| g.is_new) {
        Status::New
    } else {
        Status::Ongoing
    }
}

/// The scope of a group itself: every dimension it keeps.
fn group_scope(key: &GroupKey) -> Scope {
    key.fixed
        .iter()
        .map(|(d, v)| (d, [v.to_string()].into()))
        .collect()
}

/// The variant ids inside a scope.
pub(super) fn variants_in(data: &WindowData, scope: &Scope) -> Vec<i64> {
    data.variants
        .iter()
        .zip(&data.variant_ids)
        .filter(|(d, _)| scope.contains(d))
        .map(|(_, id)| *id)
        .collect()
}

/// Whether a series of runs (by start) turned worse at some point, beyond what a scan of a
/// healthy series finds ([`changepoint::SCAN_LEVEL`]); None when there are too few runs to
/// scan (a store holding only a backfill's day counts has none: the counts decide). A new
/// regression needs it: a few days in which a heavy tail's chance runs gather pass a span's test
/// now and then across a cycle's thousands of tests and a week of cycles, but they are no change
/// of level.
fn changed(runs: &[CellRun]) -> Option<bool> {
    let series = by_start(runs);
    changepoint::most_likely_change(&series, 3, 3).map(|c| c.worse_after && c.is_real())
}

/// A scope's runs as the change-point series: by start, with their seconds.
fn by_start(runs: &[CellRun]) -> Vec<Run> {
    runs.iter()
        .map(|r| Run {
            at: r.started,
            seconds: r.seconds,
        })
        .collect()
}

/// Whether a scope's runs sat above `allowed` from the first stored on (at their median): a
/// regression as old as the data (a new release judged against the previous one, a store that
/// began after the onset) has no change of level in them to find, and its own test decides.
fn regressed_throughout(runs: &[CellRun], allowed: f64) -> bool {
    let mut seconds: Vec<i64> = runs.iter().map(|r| r.seconds).collect();
    seconds.sort_unstable();
    seconds
        .get(seconds.len() / 2)
        .is_some_and(|&median| median as f64 > allowed)
}

/// When a series of runs (by start) turned worse: the most likely change point for the worse
/// (read on the runs before its fix, when they show one) and its interval; the series' start
/// when it was regressed from its first run on.
pub(super) fn onset_of(runs: &[CellRun]) -> Option<Onset> {
    let series = by_start(runs);
    let first = series.first()?.at;
    match changepoint::onset_before_fix(&series, 3, 3) {
        Some(c) => {
            let (at, earliest, latest) = c.times(&series);
            Onset::from_secs(at, earliest, latest)
        }
        None => Onset::from_secs(first, first, first),
    }
}

/// Whether a new regression is held back: its runs show no change of level, and they were
/// not regressed as far back as they go either.
fn held_back(cluster: &Cluster<'_>, scope: &Scope, runs: &[CellRun], stats: &ScopeStats) -> bool {
    let as_old_as_the_data = regressed_throughout(runs, stats.check.allowed);
    if status_of(cluster) == Status::New && !changed(runs).unwrap_or(true) && !as_old_as_the_data {
        tracing::debug!(
            family = %cluster.family,
            scope = %scope.describe(),
            runs = runs.len(),
            q = stats.check.q_value,
            "held back: its runs show no change of level"
        );
        return true;
    }
    false
}

impl<S: RunSource> Context<'_, S> {
    /// The onset with its payload window: the same runs read on payload order, and every payload
    /// of the release from the last good to the first bad.
    pub(super) async fn with_payloads(
        &self,
        onset: Option<Onset>,
        runs: &[CellRun],
        (release, allowed): (&str, f64),
    ) -> Result<Option<Onset>> {
        let Some(mut onset) = onset else {
            return Ok(None);
        };

        let tested: Vec<changepoint::Tested<'_>> = runs
            .iter()
            .filter_map(|r| {
                Some(changepoint::Tested {
                    payload: &r.payload,
                    built: r.payload_at?,
                    started: r.started,
                    seconds: r.seconds,
                })
            })
            .collect();

        if let Some(w) = changepoint::payload_change(
            &tested,
            allowed,
            Some((onset.earliest.timestamp(), onset.latest.timestamp())),
        ) {
            let from = w.last_good.as_ref().map_or(w.first_bad.1, |g| g.1);
            // every payload of the release built in the window, and which of them this scope ran
            onset.payloads = self
                .source
                .payloads_between(release, from, w.first_bad.1)
                .await?;
            if onset.payloads.is_empty() {
                onset.payloads.clone_from(&w.tested);
            }
            onset.untested_payloads = onset
                .payloads
                .iter()
                .filter(|p| !w.tested.contains(p))
                .cloned()
                .collect();
            onset.last_good_payload = w.last_good.map(|g| g.0);
            onset.first_bad_payload = Some(w.first_bad.0);
        }

        Ok(Some(onset))
    }

    /// The numbers over a cluster's scope; when the found scope does not carry the regression
    /// on its own runs (a finer scope than the data allow), the lead group's own scope; None
    /// when neither does.
    fn judged_scope(
        &self,
        cluster: &Cluster<'_>,
        lead: &GroupResult,
        (percentile, span): (Percentile, Span),
    ) -> Option<(Scope, ScopeStats, bool)> {
        let (settings, cutoff) = (self.settings, lead.cutoff);
        let backend = &lead.key.backend;
        let holds = |s: &ScopeStats| s.holds(settings, cutoff);
        if let Some(s) = self
            .judging
            .stats(backend, &cluster.scope, percentile, span)
            .filter(holds)
        {
            let (scope, s) =
                self.judging
                    .without_healthy_parts(backend, (cluster.scope.clone(), s), holds);
            return Some((scope, s, false));
        }
        let (scope, s) = self.judged_over(lead, group_scope(&lead.key), (percentile, span))?;
        Some((scope, s, true))
    }

    /// The numbers of a group's backend over `own`, without its healthy parts; None when they
    /// do not hold there.
    fn judged_over(
        &self,
        group: &GroupResult,
        own: Scope,
        (percentile, span): (Percentile, Span),
    ) -> Option<(Scope, ScopeStats)> {
        let (settings, cutoff) = (self.settings, group.cutoff);
        let backend = &group.key.backend;
        let holds = |s: &ScopeStats| s.holds(settings, cutoff);
        let s = self
            .judging
            .stats(backend, &own, percentile, span)
            .filter(holds)?;
        Some(self.judging.without_healthy_parts(backend, (own, s), holds))
    }

    /// Runs with their intervals (None for one no longer stored), each read once a cycle: those
    /// not read yet are read together.
    async fn records(&self, runs: &[&CellRun]) -> Result<Vec<Option<crate::model::RunRecord>>> {
        let key = |r: &CellRun| (r.job.to_string(), r.build_id.to_string());
        let missing: Vec<(&str, &str)> = {
            let cache = self.records.lock().expect("cache lock");
            let mut seen = std::collections::HashSet::new();
            runs.iter()
                .filter(|r| !cache.contains_key(&key(r)) && seen.insert(key(r)))
                .map(|r| (&*r.job, &*r.build_id))
                .collect()
        };
        if !missing.is_empty() {
            let mut read: HashMap<(String, String), crate::model::RunRecord> = HashMap::new();
            for mut record in self.source.runs(&missing).await? {
                // on-demand evidence: fetched now, or left pending (tried once a cycle)
                self.evidence.fill(&mut record).await;
                read.insert(
                    (record.run.job_name.clone(), record.run.build_id.clone()),
                    record,
                );
            }
            let mut cache = self.records.lock().expect("cache lock");
            for (job, build) in missing {
                let k = (job.to_string(), build.to_string());
                let record = read.remove(&k);
                cache.insert(k, record);
            }
        }
        let cache = self.records.lock().expect("cache lock");
        Ok(runs
            .iter()
            .map(|r| cache.get(&key(r)).cloned().flatten())
            .collect())
    }

    /// The runs of `backend` in `scope` from `from` to the cycle, by start.
    pub async fn runs_of(&self, backend: &str, scope: &Scope, from: i64) -> Result<Vec<CellRun>> {
        self.runs_of_many(&[backend.to_string()], scope, from).await
    }

    /// The runs of some backends in `scope` from `from` to the cycle, by start.
    pub async fn runs_of_many(
        &self,
        backends: &[String],
        scope: &Scope,
        from: i64,
    ) -> Result<Vec<CellRun>> {
        let variants = variants_in(self.index.data, scope);
        self.source
            .cell_runs(backends, &variants, (from, self.now), self.now)
            .await
    }

    /// Everything one regression says; held back when its runs show no change of level; not
    /// told when its numbers do not hold over any scope they can be told for. `search_from` is
    /// where its onset may be looked for.
    pub async fn describe(&self, cluster: &Cluster<'_>, search_from: i64) -> Result<Description> {
        let (lead, check, _) = lead_of(cluster);
        let Some(check) = check else {
            return Ok(Description::Untold);
        };
        let Some((scope, stats, narrowed)) =
            self.judged_scope(cluster, lead, (check.percentile, check.span))
        else {
            return Ok(Description::Untold);
        };
        self.describe_over(
            cluster,
            (lead, &check),
            (scope, stats, narrowed),
            search_from,
        )
        .await
    }

    /// A regression held back over `held` told over another scope on the same platform: the
    /// own scope of one of its groups (or of those it explained away) that keeps that platform,
    /// when its numbers hold there, its runs show the change, and no regression in `taken`
    /// (those this cycle already tells) is the same problem. The scopes covering `held` come
    /// first, the smallest first: a finer group that regressed too must not hide a change the
    /// wider scope shows (with it, the found scope narrows to its part, metal's minor upgrades,
    /// whose runs alone may not show the change yet). Then the others, the most significant
    /// first: a pool can be the strongest discovery before its runs show the change (metal's
    /// minor upgrades, half of them not regressed yet), while a part it explained away already
    /// does (metal ovn, where the regression began). `search_from` gives where a scope's onset
    /// may be looked for.
    pub async fn describe_elsewhere(
        &self,
        cluster: &Cluster<'_>,
        held: &Scope,
        search_from: impl Fn(&Scope) -> i64,
        taken: &[&Scope],
    ) -> Result<Option<Described>> {
        let Some(platform) = held.single(Dimension::Platform) else {
            return Ok(None);
        };
        struct Candidate<'g> {
            wider: bool,
            variants: usize,
            group: &'g GroupResult,
            check: &'g Check,
            scope: Scope,
            stats: ScopeStats,
        }
        let data = self.index.data;
        let mut candidates: Vec<Candidate<'_>> = Vec::new();
        for group in cluster.groups.iter().chain(&cluster.explained).copied() {
            let Some(check) = group.leading_check() else {
                continue;
            };
            if group.key.get(Dimension::Platform) != Some(platform) {
                continue;
            }
            let own = group_scope(&group.key).simplified(&data.variants);
            let Some((scope, stats)) = self.judged_over(group, own, (check.percentile, check.span))
            else {
                continue;
            };
            let seen = candidates.iter().any(|c| c.scope == scope);
            if scope == *held || seen || taken.iter().any(|t| t.same_problem(&scope)) {
                continue;
            }
            candidates.push(Candidate {
                wider: scope.covers(held),
                variants: variants_in(data, &scope).len(),
                group,
                check,
                scope,
                stats,
            });
        }
        candidates.sort_by(|a, b| {
            let order = if a.wider {
                (a.variants.cmp(&b.variants)).then(by_significance(a.group, b.group))
            } else {
                by_significance(a.group, b.group).then(a.variants.cmp(&b.variants))
            };
            b.wider.cmp(&a.wider).then(order)
        });
        for c in candidates {
            let from = search_from(&c.scope);
            let told = self
                .describe_over(cluster, (c.group, c.check), (c.scope, c.stats, true), from)
                .await?;
            if let Description::Told(d) = told {
                return Ok(Some(*d));
            }
        }
        Ok(None)
    }

    /// [`Context::describe`] over a judged scope, with `lead` making the case.
    async fn describe_over(
        &self,
        cluster: &Cluster<'_>,
        (lead, check): (&GroupResult, &Check),
        (scope, mut stats, narrowed): (Scope, ScopeStats, bool),
        search_from: i64,
    ) -> Result<Description> {
        let backends = backends_of(cluster);
        // The cycle's adjustment for many tests, carried over to the scope's own test.
        if check.p_value > 0.0 {
            stats.check.q_value = (stats.check.p_value * check.q_value / check.p_value).min(1.0);
        }
        stats.check.discovery = true;

        let runs = self
            .runs_of(
                &lead.key.backend,
                &scope,
                search_from.max(self.baseline.from.timestamp()),
            )
            .await?;
        if held_back(cluster, &scope, &runs, &stats) {
            return Ok(Description::HeldBack(scope));
        }

        let release = scope
            .single(Dimension::Release)
            .unwrap_or_default()
            .to_string();
        let onset = self
            .with_payloads(onset_of(&runs), &runs, (&release, stats.check.allowed))
            .await?;

        let finding = if narrowed {
            finding_of(&scope)
        } else {
            cluster.finding.narrowed_to(&scope)
        };
        let (independence, thin) = if narrowed {
            (Vec::new(), Vec::new())
        } else {
            independence(self, lead, &finding)
        };
        let evidence = self
            .run_evidence(&runs, onset.as_ref(), &backends, stats.check.allowed)
            .await?;
        let groups = cluster.labels();
        let facts = FactsOf {
            family: &cluster.family,
            scope: &scope,
            finding: &finding,
            stats: &stats,
            backends: &backends,
            groups: &groups,
        };

        let judged = (stats.check.percentile, stats.check.allowed);
        let contrast = self
            .contrast(&lead.key.backend, &scope, &runs, onset.as_ref(), judged)
            .await?;
        let mut report = self.report(
            &facts,
            lead,
            (independence, thin),
            evidence,
            status_of(cluster),
            onset,
        );
        if !contrast.is_empty() {
            report.attribution.contrast = contrast;
            words::said(&mut report);
        }
        Ok(Description::Told(Box::new(Described { report, stats })))
    }

    /// For a platform-specific regression: the release's other platforms whose runs of the
    /// same payloads as the regressed runs since the onset (else of the same days) stayed
    /// within what is allowed, at least 5 runs each.
    async fn contrast(
        &self,
        backend: &str,
        scope: &Scope,
        mine: &[CellRun],
        onset: Option<&Onset>,
        (percentile, allowed): (Percentile, f64),
    ) -> Result<Vec<crate::model::PlatformContrast>> {
        let Some(platform) = scope.single(Dimension::Platform) else {
            return Ok(Vec::new());
        };

        let after = onset.map_or(self.window.from.timestamp(), |o| o.at.timestamp());
        let payloads: BTreeSet<&str> = mine
            .iter()
            .filter(|r| r.started >= after && !r.payload.is_empty())
            .map(|r| &*r.payload)
            .collect();

        let mut others = scope.clone();
        others.remove(Dimension::Platform);
        let runs = self
            .runs_of_many(&[backend.to_string()], &others, after)
            .await?;

        let data = self.index.data;
        let platform_of: HashMap<i64, &str> = data
            .variant_ids
            .iter()
            .zip(&data.variants)
            .map(|(id, d)| (*id, d.platform.as_str()))
            .collect();

        let mut by: BTreeMap<&str, (Vec<i64>, Vec<i64>)> = BTreeMap::new();
        for r in &runs {
            let Some(p) = platform_of
                .get(&r.variant_id)
                .copied()
                .filter(|p| *p != platform)
            else {
                continue;
            };
            let slot = by.entry(p).or_default();
            slot.1.push(r.seconds);
            if payloads.contains(&*r.payload) {
                slot.0.push(r.seconds);
            }
        }

        let percentile = |xs: &[i64]| {
            let mut h = crate::model::Histogram::new();
            for x in xs {
                h.add(*x, 1);
            }
            h.percentile(percentile.fraction()).unwrap_or(0.0)
        };

        Ok(by
            .into_iter()
            .filter_map(|(p, (same, all))| {
                let (xs, same_payloads) = if same.len() >= 5 {
                    (same, true)
                } else {
                    (all, false)
                };
                let seconds = percentile(&xs);
                (xs.len() >= 5 && seconds <= allowed).then(|| crate::model::PlatformContrast {
                    platform: p.to_string(),
                    seconds,
                    runs: xs.len(),
                    same_payloads,
                })
            })
            .collect())
    }

    /// A report from the facts gathered.
    fn report(
        &self,
        f: &FactsOf<'_>,
        lead: &GroupResult,
        found: (Vec<String>, Vec<String>),
        evidence: RunEvidence,
        status: Status,
        onset: Option<Onset>,
    ) -> RegressionReport {
        let release = f
            .scope
            .single(Dimension::Release)
            .unwrap_or_default()
            .to_string();

        let attribution = self.attribution(f, lead, found, &evidence);
        let mut r = RegressionReport {
            fingerprint: fingerprint(f.family, &release, &f.scope.joined()),
            backend: (f.backends.len() == 1).then(|| f.backends[0].clone()),
            backends: f.backends.to_vec(),
            family: f.family.to_string(),
            component: attribution.component.clone(),
            release,
            scope: f.scope.clone(),
            not_specific_to: f
                .finding
                .spans
                .iter()
                .filter(|(_, v)| v.len() > 1)
                .map(|(d, _)| d.as_str().to_string())
                .collect(),
            percentile: f.stats.check.percentile,
            observed_seconds: 0.0,
            threshold_seconds: 0.0,
            threshold_source: String::new(),
            allowed_seconds: 0.0,
            baseline_seconds: None,
            job_runs: 0,
            span_days: None,
            ci_troubled_runs: 0,
            suspect_changes: Vec::new(),
            changes_pending: false,
            outside_pending: false,
            verification: None,
            baseline_runs: 0,
            p_value: 1.0,
            q_value: 1.0,
            percentiles: BTreeMap::new(),
            attribution,
            sample_jobs: evidence.sample_jobs,
            status,
            since: lead
                .state
                .since
                .and_then(|s| DateTime::from_timestamp(s, 0)),
            groups: f.groups.to_vec(),
            weekly: Vec::new(),
            onset,
            recovered_at: None,
            no_data_since: None,
            no_data_runs: 0,
        };

        set_numbers(&mut r, f.stats);
        words::said(&mut r);
        r
    }

    /// Whom it belongs to and why: the attribution's typed parts, and its confidence in them
    /// (the report's words are said once its numbers are set).
    fn attribution(
        &self,
        f: &FactsOf<'_>,
        lead: &GroupResult,
        (independence, thin): (Vec<String>, Vec<String>),
        evidence: &RunEvidence,
    ) -> Attribution {
        let release = f
            .scope
            .single(Dimension::Release)
            .unwrap_or_default()
            .to_string();

        let platform = f.scope.single(Dimension::Platform).map(str::to_string);
        let owners = owners(self, &f.stats.backend, platform.as_deref());
        let percentile = f.stats.check.percentile;
        let control = control(self, lead, percentile, percentile.index());
        let scope_words = words::scope(f.scope, platform.as_deref(), &release, &CONTEXT);

        let mut a = Attribution {
            component: owners.component.clone(),
            platform,
            platform_component: owners.platform_component.clone(),
            owners: std::iter::once(owners.backend_component.clone())
                .chain(owners.platform_component.clone())
                .collect(),
            file_against: owners.file_against,
            scope: scope_words,
            summary: String::new(),
            independence,
            thin_evidence: thin,
            control,
            conditions: evidence.conditions.clone(),
            confidence: crate::model::Confidence::Low,
            separates: Some(f.finding.separates),
            evidence: Vec::new(),
            evidence_pending: evidence.pending.unfetched,
            evidence_read: evidence.pending.read,
            mechanism: None,
            harness: None,
            contrast: Vec::new(),
        };
        a.confidence = facts::confidence(&a, f.stats.check.p_value);

        with_mechanism(
            &mut a,
            evidence.mechanism.clone(),
            &self.attribute.harnesses,
        );

        a
    }

    /// Sample jobs from the regression's own runs (in the window, after its onset), and the
    /// interval evidence of the disrupted ones against healthy runs from before the onset.
    async fn run_evidence(
        &self,
        runs: &[CellRun],
        onset: Option<&Onset>,
        backends: &[String],
        allowed: f64,
    ) -> Result<RunEvidence> {
        let (settings, window_from) = (self.settings, self.window.from.timestamp());
        let after = onset.map_or(window_from, |o| o.at.timestamp());
        let before = onset.map_or(window_from, |o| o.earliest.timestamp());
        let mut mine: Vec<&CellRun> = runs
            .iter()
            .filter(|r| r.started >= window_from.max(after))
            .collect();
        mine.sort_by(|a, b| b.seconds.cmp(&a.seconds).then(b.started.cmp(&a.started)));
        let data = self.index.data;
        let variant = |id: i64| {
            let n = data.variant_ids.iter().position(|v| *v == id)?;
            let d = &data.variants[n];
            let words: Vec<&str> = [d.network.as_str(), d.upgrade_type.as_str()]
                .into_iter()
                .filter(|w| !w.is_empty())
                .collect();
            Some(words.join(" · "))
        };

        let sample = |r: &CellRun, kind| SampleJob {
            url: r.url.to_string(),
            job: r.job.to_string(),
            build_id: r.build_id.to_string(),
            seconds: r.seconds,
            kind,
            ci_infrastructure_trouble: false,
            variant: variant(r.variant_id).unwrap_or_default(),
        };

        let mut sample_jobs: Vec<SampleJob> = mine
            .iter()
            .filter(|r| r.seconds > 0)
            .take(settings.sample_worst)
            .map(|r| sample(r, SampleKind::Worst))
            .collect();

        // typical of the regression: the middle of the runs above the allowed level (a run the
        // regression spared is no example of it)
        let above: Vec<&&CellRun> = mine.iter().filter(|r| r.seconds as f64 > allowed).collect();
        let start = (above.len() / 2).saturating_sub(settings.sample_typical / 2);
        for r in above.into_iter().skip(start).take(settings.sample_typical) {
            if !sample_jobs.iter().any(|s| *s.build_id == *r.build_id) {
                sample_jobs.push(sample(r, SampleKind::Typical));
            }
        }
        let disrupted: Vec<&&CellRun> = mine
            .iter()
            .filter(|r| r.seconds > 0)
            .take(self.attribute.evidence_runs)
            .collect();

        let healthy: Vec<&CellRun> = runs
            .iter()
            .rev()
            .filter(|r| r.started < before)
            .take(self.attribute.evidence_runs)
            .collect();

        let read = self.intervals_of(&disrupted, &healthy, backends).await?;
        let conditions = evidence::correlate(&read.regressed, &read.healthy)
            .into_iter()
            .filter(|e| e.score > 0.0)
            .take(3)
            .collect();

        let mechanism = self.mechanism_of(backends, &read.timelines);
        Ok(RunEvidence {
            sample_jobs,
            conditions,
            mechanism,
            pending: read.pending,
        })
    }

    /// The mechanism the timelines show, when any run read has one.
    fn mechanism_of(
        &self,
        backends: &[String],
        (regressed, healthy): &(Vec<RunTimeline>, Vec<RunTimeline>),
    ) -> Option<Mechanism> {
        if regressed.iter().all(|r| r.spans.is_empty()) {
            return None;
        }
        let family = backends
            .first()
            .map_or("", |b| crate::model::backend_family(b));
        let probes: Vec<String> = regressed
            .iter()
            .chain(healthy)
            .flat_map(|r| &r.spans)
            .filter(|s| s.kind == SpanKind::Outage && s.subject.contains("network-liveness"))
            .map(|s| s.subject.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let case = mechanism::Case {
            family,
            backends,
            probes: &probes,
            regressed,
            healthy,
        };
        Some(mechanism::explain(&case, crate::words::mechanism::WORDING))
    }

    /// The intervals of the disrupted runs (the family's outages) and of the healthy ones (their
    /// conditions); and how many runs' interval
    /// files could not be fetched yet (left out of both, rather than counted as having none).
    async fn intervals_of(
        &self,
        disrupted: &[&&CellRun],
        healthy: &[&CellRun],
        backends: &[String],
    ) -> Result<ReadIntervals> {
        let family: BTreeSet<&str> = backends.iter().map(String::as_str).collect();
        let mut regressed = Vec::new();
        let mut timelines = (Vec::new(), Vec::new());
        let mut pending = PendingRuns::default();
        let wanted: Vec<&CellRun> = disrupted
            .iter()
            .map(|r| **r)
            .chain(healthy.iter().copied())
            .collect();

        let mut records = self.records(&wanted).await?.into_iter();
        for _ in disrupted {
            if let Some(record) = records.next().flatten() {
                pending.read += 1;
                if !record.interval_files.is_empty() {
                    pending.unfetched += 1;
                    continue;
                }
                let outages = record
                    .outages
                    .into_iter()
                    .filter(|o| family.contains(o.backend.as_str()))
                    .collect();
                regressed.push(RunIntervals {
                    outages,
                    conditions: record.conditions,
                });
                let run = format!("{}/{}", record.run.job_name, record.run.build_id);
                timelines.0.push(RunTimeline {
                    run,
                    spans: record.timeline,
                });
            }
        }

        let mut healthy_intervals = Vec::new();
        for record in records.flatten() {
            pending.read += 1;
            if !record.interval_files.is_empty() {
                pending.unfetched += 1;
                continue;
            }
            healthy_intervals.push(RunIntervals {
                outages: Vec::new(),
                conditions: record.conditions,
            });
            let run = format!("{}/{}", record.run.job_name, record.run.build_id);
            timelines.1.push(RunTimeline {
                run,
                spans: record.timeline,
            });
        }

        Ok(ReadIntervals {
            regressed,
            healthy: healthy_intervals,
            timelines,
            pending,
        })
    }

    /// An incident's report brought up to date without a fresh detection: the numbers over its
    /// scope now, its onset, samples from its own runs; the attribution it had. Its words are
    /// the caller's to say ([`words::said`]) once its scope and backends are final.
    pub async fn refreshed(
        &self,
        old: &RegressionReport,
        stats: &ScopeStats,
        runs: &[CellRun],
        onset: Option<Onset>,
        status: Status,
    ) -> Result<RegressionReport> {
        let mut r = old.clone();
        set_numbers(&mut r, stats);
        r.status = status;
        let evidence = self
            .run_evidence(runs, onset.as_ref(), &r.backends, stats.check.allowed)
            .await?;

        r.onset = onset;
        if r.attribution.evidence_pending > 0 {
            // detected while some interval files could not be fetched: filled in as they come
            let a = &mut r.attribution;
            a.conditions = evidence.conditions;
            a.evidence_pending = evidence.pending.unfetched;
            a.evidence_read = evidence.pending.read;
            a.confidence = facts::with_conditions(a, stats.check.p_value);
        }

        r.sample_jobs = evidence.sample_jobs;
        if evidence.mechanism.is_some() {
            with_mechanism(
                &mut r.attribution,
                evidence.mechanism,
                &self.attribute.harnesses,
            );
        }

        Ok(r)
    }
}

/// Sets the attribution's mechanism, and files a cause in the test environment against the
/// platform's harness, naming the product's component to consult (the report's words say them
/// once said anew).
fn with_mechanism(
    a: &mut Attribution,
    mechanism: Option<Mechanism>,
    harnesses: &std::collections::BTreeMap<String, String>,
) {
    let Some(m) = mechanism else { return };

    let harness = a
        .platform
        .as_ref()
        .and_then(|p| harnesses.get(p))
        .filter(|_| m.kind.is_test_environment());

    if let Some(h) = harness {
        a.file_against = FileAgainst::TestEnvironment;
        a.harness = Some(h.clone());
    } else if a.file_against == FileAgainst::TestEnvironment {
        // back to the owner it was filed against before: the backend's, or the platform's
        a.file_against = if a.owners.first() == Some(&a.component) {
            FileAgainst::Backend
        } else {
            FileAgainst::Platform
        };
        a.harness = None;
    }

    a.mechanism = Some(m);
}

/// What a report is made of besides the context.
struct FactsOf<'a> {
    family: &'a str,
    scope: &'a Scope,
    finding: &'a ScopeFinding,
    stats: &'a ScopeStats,
    backends: &'a [String],
    groups: &'a [String],
}

/// A report's numbers: those of its scope's runs.
fn set_numbers(r: &mut RegressionReport, stats: &ScopeStats) {
    let c = &stats.check;
    let pi = c.percentile.index();
    r.percentile = c.percentile;
    r.observed_seconds = round(c.observed);
    r.threshold_seconds = round(c.threshold.seconds);
    r.threshold_source = crate::words::regression::threshold_source(&c.threshold.source);
    r.allowed_seconds = round(c.allowed);
    r.baseline_seconds = stats.reference[pi].map(round);
    r.job_runs = stats.runs;
    r.span_days = c.span.days();
    r.ci_troubled_runs = stats.troubled;
    r.baseline_runs = stats.reference_runs;
    r.p_value = c.p_value;
    r.q_value = c.q_value;
    r.percentiles = Percentile::ALL
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                *p,
                PercentilePair {
                    now: stats.current[i].map(round),
                    baseline: stats.reference[i].map(round),
                },
            )
        })
        .collect();
}

/// A finding that says exactly a scope: its constraints, nothing known of the rest.
fn finding_of(scope: &Scope) -> ScopeFinding {
    ScopeFinding {
        constraints: scope
            .iter()
            .filter(|(d, _)| !CONTEXT.contains(d))
            .map(|(d, v)| (d, v.clone()))
            .collect(),
        spans: BTreeMap::new(),
        separates: true,
    }
}

/// The backend's component and, for a platform-specific regression, the platform's.
fn owners<S>(cx: &Context<'_, S>, backend: &str, platform: Option<&str>) -> Owners {
    let backend_component = cx.components.component(backend);
    let platform_component = platform
        .and_then(|p| cx.components.platform_component(p))
        .map(str::to_string);
    let component = match (cx.attribute.file_against, &platform_component) {
        (FileAgainst::Platform, Some(pc)) => pc.clone(),
        _ => backend_component.clone(),
    };
    Owners {
        component,
        backend_component,
        platform_component,
        file_against: cx.attribute.file_against,
    }
}

/// What it does not depend on, value by value from the finer groups, and the values whose own
/// runs were too few to tell.
fn independence<S>(
    cx: &Context<'_, S>,
    lead: &GroupResult,
    finding: &ScopeFinding,
) -> (Vec<String>, Vec<String>) {
    let mut independence = Vec::new();
    let mut thin = Vec::new();
    for d in [
        Dimension::Platform,
        Dimension::Network,
        Dimension::UpgradeType,
    ] {
        let Some(values) = finding.spans.get(&d) else {
            continue;
        };
        let mut evidence = BTreeMap::new();
        for v in values {
            let mut key = lead.key.clone();
            key.fixed.insert(d, v.as_str());
            let e = match cx.index.group(&key) {
                Some(g) if g.significant => ValueEvidence::Regressed,
                Some(g) if g.runs >= cx.settings.min_job_runs => ValueEvidence::Healthy,
                _ => ValueEvidence::Thin,
            };
            if e == ValueEvidence::Thin {
                thin.push(format!("{d}={v}"));
            }
            evidence.insert(v.clone(), e);
        }
        independence.extend(words::independence(d, &evidence));
    }
    (independence, thin)
}

/// The control backend on the same cells.
fn control<S>(
    cx: &Context<'_, S>,
    lead: &GroupResult,
    percentile: Percentile,
    pi: usize,
) -> Option<ControlEvidence> {
    let name = control_for(&cx.attribute.controls, &lead.key.backend)?;
    let mut key = lead.key.clone();
    key.backend = name.as_str().into();
    cx.index.group(&key).map(|g| ControlEvidence {
        backend: name,
        percentile,
        now: g.current[pi].map(round),
        baseline: g.baseline[pi].map(round),
        runs: g.runs,
        healthy: !g.significant && g.status != GroupStatus::Regressed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::Rng;

    fn run(i: usize, seconds: i64) -> CellRun {
        CellRun {
            backend: "cache-oauth-api-new-connections".into(),
            variant_id: 1,
            started: i as i64 * 7_200,
            seconds,
            job: "j".into(),
            build_id: format!("{i}").into(),
            url: "u".into(),
            payload: "".into(),
            payload_at: None,
        }
    }

    #[test]
    fn a_change_of_level_is_a_change_and_a_heavy_tail_is_none() {
        for seed in 0..20 {
            let mut rng = Rng::new(seed);
            // a backend whose runs are mostly 0-4 s with 4% of them 15-150 s
            let noise = |rng: &mut Rng| {
                if rng.chance(0.04) {
                    rng.between(15, 150)
                } else {
                    rng.between(0, 4)
                }
            };
            let healthy: Vec<CellRun> = (0..300).map(|i| run(i, noise(&mut rng))).collect();
            assert_eq!(
                changed(&healthy),
                Some(false),
                "seed {seed}: a heavy tail alone"
            );
            let mut onset = healthy[..250].to_vec();
            onset.extend((250..262).map(|i| {
                run(
                    i,
                    if rng.chance(0.85) {
                        rng.between(12, 45)
                    } else {
                        0
                    },
                )
            }));
            assert_eq!(
                changed(&onset),
                Some(true),
                "seed {seed}: twelve runs of a new level"
            );
        }
        assert_eq!(changed(&[]), None, "no runs stored: nothing to scan");
    }

    #[test]
    fn a_mechanism_outside_the_test_environment_files_it_back_against_its_owner() {
        let mut scope = crate::model::Scope::new();
        scope.set(Dimension::Platform, ["metal"]);
        let harnesses: BTreeMap<String, String> =
            [("metal".into(), "openshift-metal3/dev-scripts".into())].into();
        let mechanism = crate::synth::example_mechanism;
        let drained = crate::model::MechanismKind::SingleReplicaDrained;
        let leader = crate::model::MechanismKind::EtcdLeaderChange;
        assert!(drained.is_test_environment() && !leader.is_test_environment());

        for filed in [FileAgainst::Backend, FileAgainst::Platform] {
            let mut a = crate::synth::example_report(scope.clone(), 30.0, 0.0).attribution;
            a.platform_component = Some("Bare Metal Hardware Provisioning".into());
            a.owners.push("Bare Metal Hardware Provisioning".into());
            a.file_against = filed;
            if filed == FileAgainst::Platform {
                a.component = "Bare Metal Hardware Provisioning".into();
            }

            with_mechanism(&mut a, Some(mechanism(drained)), &harnesses);
            assert_eq!(a.file_against, FileAgainst::TestEnvironment);
            assert_eq!(a.harness.as_deref(), Some("openshift-metal3/dev-scripts"));

            with_mechanism(&mut a, Some(mechanism(leader)), &harnesses);
            assert_eq!(a.file_against, filed, "back to whom it was filed against");
            assert_eq!(a.harness, None);
        }
    }
}
