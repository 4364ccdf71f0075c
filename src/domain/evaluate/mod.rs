//! Evaluation: which groups of runs regressed, decided from exact histograms. Pure.
//!
//! Groups are evaluated at several levels: every cell (backend × every dimension), and coarser
//! groups that merge networks, upgrade types, network stacks, from-releases and the
//! master-nodes flag — never topologies or architectures. Metal cells often have
//! fewer runs than the minimum on their own; together they are decisive.
//!
//! For each group with at least `min_job_runs` runs in the window and each checked percentile
//! with a threshold, a regression needs (1) the observed percentile above
//! `allowed = max(T + min_effect_seconds, T × min_effect_ratio)` and (2) a test that survives
//! Benjamini–Hochberg at `false_discovery_rate` across every test of the cycle that could be a
//! discovery with the runs it has (see [`stats`] and [`Check::counted`]).
//! Overlapping regressed groups are then explained away in order of strength: a group whose
//! regression disappears once the cells of a stronger regressed group are taken out is not
//! reported on its own. Groups already regressed keep priority, so an incident's scope is
//! stable from one cycle to the next.

pub mod changepoint;
pub mod stats;
pub mod thresholds;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

// Maps keyed by groups, built every cycle over tens of thousands of keys: a fast hash.
use foldhash::{HashMap as FastMap, HashMapExt as _, HashSet as FastSet};

use serde::{Deserialize, Serialize};

use self::thresholds::HistoricalTable;
use crate::config::EvaluateSettings;
use crate::model::{
    Dimension, Dimensions, Fixed, GroupKey, Histogram, Percentile, Span, Threshold,
    ThresholdSource, percentiles_of,
};

/// The dimensions each level of groups keeps; the first level is the cell itself.
pub const LEVELS: [&[Dimension]; 5] = [
    &Dimension::ALL,
    &[
        Dimension::Release,
        Dimension::Platform,
        Dimension::Architecture,
        Dimension::Topology,
        Dimension::Network,
    ],
    &[
        Dimension::Release,
        Dimension::Platform,
        Dimension::Architecture,
        Dimension::Topology,
        Dimension::UpgradeType,
    ],
    &[
        Dimension::Release,
        Dimension::Platform,
        Dimension::Architecture,
        Dimension::Topology,
    ],
    &[
        Dimension::Release,
        Dimension::Network,
        Dimension::Architecture,
        Dimension::Topology,
    ],
];

/// A level of groups: which of [`LEVELS`] its groups keep. The first is the cell itself; each
/// later one keeps fewer dimensions, so its groups pool more cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Level(u8);

impl Level {
    /// The cells themselves: the first of [`LEVELS`].
    pub const CELL: Level = Level(0);
    /// The last of the finest groups (the levels after [`Level::CELL`] up to this one): each
    /// keeps what [`Level::LAST_PLATFORM`] keeps and one dimension more, the network or the
    /// upgrade type.
    pub const LAST_FINEST: Level = Level(2);
    /// The last level that keeps the platform: every level up to this one does.
    pub const LAST_PLATFORM: Level = Level(3);

    /// Every level, the cell first.
    pub fn all() -> impl Iterator<Item = Level> {
        (0..LEVELS.len() as u8).map(Level)
    }

    /// Its position in [`LEVELS`].
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// The dimensions its groups keep.
    pub fn dimensions(self) -> &'static [Dimension] {
        LEVELS[self.index()]
    }

    pub fn is_cell(self) -> bool {
        self == Level::CELL
    }

    /// One of the finest groups: above the cell, keeping the platform and one dimension more.
    pub fn is_finest(self) -> bool {
        self > Level::CELL && self <= Level::LAST_FINEST
    }

    /// Its groups keep the platform.
    pub fn keeps_platform(self) -> bool {
        self <= Level::LAST_PLATFORM
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// One cell's runs: the current window and the baseline window before it, and the recent
/// spans (`EvaluateSettings::recent_days`, each ending with the window; empty when none).
#[derive(Debug, Clone, PartialEq)]
pub struct CellHistograms {
    pub backend: usize,
    pub variant: usize,
    pub current: Histogram,
    pub baseline: Histogram,
    pub recent: Vec<Histogram>,
}

/// What a group was at the end of the previous cycle.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupState {
    pub regressed: bool,
    /// Evaluations in a row at or below the threshold while regressed.
    pub clean_streak: u32,
    /// Unix seconds when the group became regressed.
    pub since: Option<i64>,
}

/// Everything an evaluation reads.
pub struct EvalInput<'a> {
    pub backends: &'a [String],
    pub variants: &'a [Dimensions],
    pub cells: &'a [CellHistograms],
    /// Previous states by group label.
    pub prior: &'a HashMap<String, GroupState>,
    /// Unix seconds of the evaluation, recorded as `since` of new regressions.
    pub now: i64,
    /// The releases judged against the previous release at `now`
    /// ([`thresholds::young_releases`]).
    pub young: &'a HashSet<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupStatus {
    Regressed,
    Resolved,
    Healthy,
    InsufficientData,
    /// Enough runs but nothing to compare with (no limit, no history, no baseline).
    NoReference,
}

/// One percentile of one group against its threshold.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// The runs judged: the window's, or a recent span's.
    pub span: Span,
    pub percentile: Percentile,
    pub observed: f64,
    pub threshold: Threshold,
    pub allowed: f64,
    pub p_value: f64,
    pub q_value: f64,
    pub exceeds: bool,
    pub discovery: bool,
    /// Whether the check counts among the cycle's tests: whether its test could give a p-value
    /// within the false discovery rate with the runs it has ([`could_be_discovery`]).
    #[serde(skip)]
    pub counted: bool,
}

/// A cell without runs in a span.
static EMPTY: Histogram = Histogram::new();

/// A cell's runs of a span.
pub fn runs_of(span: Span, cell: &CellHistograms) -> &Histogram {
    match span {
        Span::Window => &cell.current,
        Span::Recent { index, .. } => cell.recent.get(index).unwrap_or(&EMPTY),
    }
}

/// The spans a cycle judges: the window, then each recent span.
pub fn spans(settings: &EvaluateSettings) -> impl Iterator<Item = Span> + '_ {
    std::iter::once(Span::Window).chain(
        settings
            .recent_days
            .iter()
            .enumerate()
            .map(|(index, days)| Span::Recent { index, days: *days }),
    )
}

/// The verdict on one group.
#[derive(Debug, Clone, Serialize)]
pub struct GroupResult {
    pub key: GroupKey,
    pub level: Level,
    pub runs: u64,
    pub baseline_runs: u64,
    /// P50, P75, P95, P99 of the current window.
    pub current: [Option<f64>; 4],
    pub baseline: [Option<f64>; 4],
    pub checks: Vec<Check>,
    pub status: GroupStatus,
    /// Regressed this cycle and not before.
    pub is_new: bool,
    /// Reported on its own (not explained away by a stronger regressed group).
    pub reported: bool,
    /// Its own test regressed this cycle (before explaining away): evidence about its values.
    pub significant: bool,
    pub state: GroupState,
    /// The largest p-value that is a discovery in its family (its backend family and release)
    /// this cycle, 0 when none is: what a narrower or wider judgement of its runs must reach.
    pub cutoff: f64,
    /// Indices into the input cells.
    #[serde(skip)]
    pub cells: Vec<usize>,
}

impl GroupResult {
    /// The check that makes the case: the most significant one that exceeds, else the first.
    pub fn leading_check(&self) -> Option<&Check> {
        self.checks
            .iter()
            .filter(|c| c.exceeds)
            .min_by(|a, b| a.p_value.total_cmp(&b.p_value))
            .or_else(|| {
                self.checks
                    .iter()
                    .find(|c| c.observed > c.threshold.seconds)
            })
            .or(self.checks.first())
    }
}

/// The cycle's verdicts.
#[derive(Debug, Clone, Default)]
pub struct Evaluation {
    pub groups: Vec<GroupResult>,
    pub tests: usize,
}

/// A group's identity and cells, apart from its [`Windows`]: the results take these over
/// while the checks still hold on to the windows.
struct Meta {
    key: GroupKey,
    level: Level,
    cells: Vec<usize>,
    /// The same group one release earlier, when it has runs: its position among the groups.
    previous: Option<usize>,
}

/// A group's two windows: a cell's own (a group of one cell borrows them), or its cells' merged.
struct Windows<'a> {
    current: Cow<'a, Histogram>,
    baseline: Cow<'a, Histogram>,
    /// P50, P75, P95 and P99 of the current window, then of the baseline.
    percentiles: [[Option<f64>; 4]; 2],
}

/// The reference a check compares with: a threshold and, for history-based thresholds, the
/// distribution it came from.
#[derive(Debug, Clone)]
pub struct Reference<'a> {
    pub threshold: Threshold,
    pub against: Option<&'a Histogram>,
}

/// What a group (or a regression's scope) can be judged against.
#[derive(Debug, Clone, Copy)]
pub struct Candidates<'a, 'c> {
    pub key: &'c GroupKey,
    /// Its own runs before the window (an incident's runs left out), and their percentiles.
    pub baseline: &'a Histogram,
    pub baseline_percentiles: &'c [Option<f64>; 4],
    /// The same group one release earlier: that release, and its runs.
    pub previous: Option<(&'c str, &'a Histogram)>,
    /// The dimensions of its cells with runs (for the historical table).
    pub cell_dims: &'c [&'c Dimensions],
    /// Its release is younger than `min_history_days`: its own history is no reference yet.
    pub young: bool,
}

/// The reference of one percentile, most specific source first: a configured limit, the CI
/// suite's historical table, then sheriff's own history — the group's baseline, or the
/// previous release's same group when the release is young or the baseline too thin.
pub fn reference<'a>(
    c: &Candidates<'a, '_>,
    percentile: Percentile,
    settings: &EvaluateSettings,
    historical: &HistoricalTable,
) -> Option<Reference<'a>> {
    if let Some(t) = thresholds::configured(&settings.limits, c.key, percentile) {
        return Some(Reference {
            threshold: t,
            against: None,
        });
    }

    if let Some(t) = historical.threshold(&c.key.backend, c.cell_dims, percentile) {
        return Some(Reference {
            threshold: t,
            against: None,
        });
    }

    let q = percentile.fraction();
    let previous = || {
        let (release, h) = c
            .previous
            .filter(|(_, h)| h.count() >= settings.min_job_runs)?;
        let source = ThresholdSource::PreviousRelease {
            release: release.to_string(),
            runs: h.count(),
        };
        Some(Reference {
            threshold: Threshold {
                percentile,
                seconds: h.percentile(q)?,
                source,
            },
            against: Some(h),
        })
    };

    if c.young
        && let Some(p) = previous()
    {
        return Some(p);
    }

    if c.baseline.count() >= settings.min_job_runs {
        let seconds = c.baseline_percentiles[percentile.index()]?;
        let source = ThresholdSource::Baseline {
            runs: c.baseline.count(),
        };
        return Some(Reference {
            threshold: Threshold {
                percentile,
                seconds,
                source,
            },
            against: Some(c.baseline),
        });
    }

    previous()
}

/// Whether enough runs carry a percentile above `allowed`: at least `min_support_runs` of them
/// beyond it, and at least as many as the percentile's rank implies (`n·(1 − p)`, rounded up).
/// A P95 of 32 runs resting on two wild ones is not a regression; a P50 above the bar always
/// has half its runs there.
pub fn supported(
    current: &Histogram,
    fraction: f64,
    allowed: f64,
    settings: &EvaluateSettings,
) -> bool {
    let above: u64 = current
        .nonzero_bins()
        .iter()
        .filter(|(s, _)| *s as f64 > allowed)
        .map(|(_, n)| n)
        .sum();
    let rank = (current.count() as f64 * (1.0 - fraction)).ceil() as u64;
    above >= settings.min_support_runs.max(rank)
}

fn allowed(threshold: f64, settings: &EvaluateSettings) -> f64 {
    (threshold + settings.min_effect_seconds).max(threshold * settings.min_effect_ratio)
}

/// The p-value that `cells` are worse than their reference at `allowed`: against a baseline,
/// the stratified exceedance test over the cells with runs in both windows (each cell against
/// its own reference, see [`stats::stratified_greater`]); against the previous release's runs,
/// Fisher's exact test of the share above `allowed`; against a fixed threshold, the exact
/// quantile test that the percentile is above `allowed`. Every source is tested at the level
/// the effect is judged at: runs between the threshold and what is allowed are no evidence, so
/// a P95 of 20 runs that three runs above the bar lift is not significant however many sit
/// just over the threshold.
fn test<'c>(
    cells: impl Iterator<Item = &'c CellHistograms>,
    current: &Histogram,
    check: (Span, Percentile, f64),
    source: &ThresholdSource,
    previous: Option<&Histogram>,
) -> f64 {
    let (span, percentile, allowed) = check;
    match source {
        ThresholdSource::Baseline { .. } => exceedance_test(cells, span, allowed),
        ThresholdSource::PreviousRelease { .. } => previous.map_or(1.0, |p| {
            stats::fisher_greater(
                current.count_above(allowed),
                current.count(),
                p.count_above(allowed),
                p.count(),
            )
        }),
        ThresholdSource::Configured { .. } | ThresholdSource::Historical { .. } => {
            stats::quantile_exceeds(current, percentile.fraction(), allowed)
        }
    }
}

/// Whether more of the cells' window runs are above `level` than of their baseline runs, each
/// cell against its own: a cell that joined or left the group (a new job, a stopped one) or ran
/// more or less often than before is no evidence (see [`stats::stratified_greater`]).
pub fn exceedance_test<'c>(
    cells: impl Iterator<Item = &'c CellHistograms>,
    span: Span,
    level: f64,
) -> f64 {
    let strata: Vec<stats::Stratum> = cells
        .map(|c| stats::Stratum {
            x1: runs_of(span, c).count_above(level),
            n1: runs_of(span, c).count(),
            x2: c.baseline.count_above(level),
            n2: c.baseline.count(),
        })
        .collect();
    stats::stratified_greater(&strata)
}

/// A group's windows over the cells with runs in both: what a baseline reference compares.
/// Borrowed from the group when every cell has both (most groups).
pub struct Common<'a> {
    pub current: Cow<'a, Histogram>,
    pub baseline: Cow<'a, Histogram>,
    /// P50–P99 of each, in that order.
    pub percentiles: [[Option<f64>; 4]; 2],
    /// The cells with runs in both windows.
    pub cells: Vec<usize>,
}

impl<'a> Common<'a> {
    /// The common part of a group of `cells` whose merged runs of `span` are `current` and
    /// whose merged baseline is `baseline`.
    pub fn of(
        cells: &[usize],
        all: &[CellHistograms],
        span: Span,
        (current, baseline): (&'a Histogram, &'a Histogram),
        percentiles: [[Option<f64>; 4]; 2],
    ) -> Common<'a> {
        let both: Vec<usize> = cells
            .iter()
            .copied()
            .filter(|&c| !runs_of(span, &all[c]).is_empty() && !all[c].baseline.is_empty())
            .collect();
        if both.len() == cells.len() {
            return Common {
                current: Cow::Borrowed(current),
                baseline: Cow::Borrowed(baseline),
                percentiles,
                cells: both,
            };
        }
        let mut scratch = Vec::new();
        let current = Histogram::sum_of(both.iter().map(|&c| runs_of(span, &all[c])), &mut scratch);
        let baseline = Histogram::sum_of(both.iter().map(|&c| &all[c].baseline), &mut scratch);
        let percentiles = [percentiles_of(&current), percentiles_of(&baseline)];
        Common {
            current: Cow::Owned(current),
            baseline: Cow::Owned(baseline),
            percentiles,
            cells: both,
        }
    }
}

/// Evaluates every group of the input: group the cells, check every group with enough runs,
/// adjust for the number of tests, judge, explain weaker overlaps away, apply hysteresis.
pub fn evaluate(
    input: &EvalInput<'_>,
    settings: &EvaluateSettings,
    historical: &HistoricalTable,
) -> Evaluation {
    let t0 = std::time::Instant::now();
    let (mut metas, windows) = group(input, settings);
    tracing::debug!(
        seconds = t0.elapsed().as_secs_f64(),
        groups = metas.len(),
        "evaluate: grouped"
    );

    let t0 = std::time::Instant::now();
    let mut checks = check_all(&metas, &windows, input, settings, historical);
    tracing::debug!(seconds = t0.elapsed().as_secs_f64(), "evaluate: tested");
    let (tests, cutoffs) = adjust_for_multiple_tests(&mut checks, &metas, settings);
    let mut results = judge(&mut metas, &windows, &mut checks, input, settings);
    for (r, cutoff) in results.iter_mut().zip(cutoffs) {
        r.cutoff = cutoff;
    }

    tracing::debug!(
        seconds = t0.elapsed().as_secs_f64(),
        "evaluate: tested and judged"
    );

    let t0 = std::time::Instant::now();
    let previous_runs = |gi: usize| {
        metas[gi]
            .previous
            .map(|p| previous_runs(&windows[p], settings))
    };

    explain_away(&mut results, previous_runs, input, settings);
    for r in &mut results {
        apply_hysteresis(r, settings, input.now);
    }

    tracing::debug!(
        seconds = t0.elapsed().as_secs_f64(),
        "evaluate: explained away and hysteresis"
    );

    Evaluation {
        groups: results,
        tests,
    }
}

/// Threads for the CPU-bound phases: the machine's cores, at most 8.
fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
}

/// Per level, each variant's coarse group (interned), the values every coarse group keeps, and
/// each coarse group's previous-release group when one is among them (what
/// `thresholds::previous_release_key` gives its groups).
struct Coarse {
    of: Vec<Vec<usize>>,
    values: Vec<Vec<Fixed>>,
    previous: Vec<Vec<Option<usize>>>,
}

/// The coarse groups of `variants` at every level, linked to their previous release's.
fn coarse_groups(variants: &[Dimensions]) -> Coarse {
    let (of, values) = coarse_ids(variants);
    let previous = values
        .iter()
        .map(|level_values| {
            let id: FastMap<&Fixed, usize> = level_values
                .iter()
                .enumerate()
                .map(|(i, v)| (v, i))
                .collect();
            level_values
                .iter()
                .map(|v| thresholds::previous_release_values(v).and_then(|p| id.get(&p).copied()))
                .collect()
        })
        .collect();
    Coarse {
        of,
        values,
        previous,
    }
}

/// Per level, each variant's coarse group (interned) and the values every coarse group keeps,
/// each distinct value one shared string.
fn coarse_ids(variants: &[Dimensions]) -> (Vec<Vec<usize>>, Vec<Vec<Fixed>>) {
    let mut strings: FastMap<&str, Arc<str>> = FastMap::new();
    let mut coarse_of: Vec<Vec<usize>> = Vec::with_capacity(LEVELS.len());
    let mut coarse_values: Vec<Vec<Fixed>> = Vec::with_capacity(LEVELS.len());
    for level in Level::all() {
        let dims = level.dimensions();
        let mut intern: FastMap<Fixed, usize> = FastMap::new();
        let mut values = Vec::new();
        let ids = variants
            .iter()
            .map(|v| {
                let key: Fixed = dims
                    .iter()
                    .map(|d| {
                        let text = v.get(*d);
                        (
                            *d,
                            strings.entry(text).or_insert_with(|| text.into()).clone(),
                        )
                    })
                    .collect();
                *intern.entry(key).or_insert_with_key(|key| {
                    values.push(key.clone());
                    values.len() - 1
                })
            })
            .collect();
        coarse_of.push(ids);
        coarse_values.push(values);
    }
    (coarse_of, coarse_values)
}

/// What building the groups of a share of the backends needs: each (backend, level, coarse
/// group) has a slot, the position of its draft once made.
struct GroupSlots<'i> {
    coarse: Coarse,
    /// Where each level's slots start within a backend's.
    offsets: Vec<usize>,
    per_backend: usize,
    backends: Vec<Arc<str>>,
    excluded: Vec<bool>,
    threads: usize,
    cells: &'i [CellHistograms],
}

impl<'i> GroupSlots<'i> {
    fn new(input: &EvalInput<'i>, settings: &EvaluateSettings) -> GroupSlots<'i> {
        let coarse = coarse_groups(input.variants);
        let mut offsets = vec![0; LEVELS.len() + 1];
        for level in 0..LEVELS.len() {
            offsets[level + 1] = offsets[level] + coarse.values[level].len();
        }
        GroupSlots {
            per_backend: offsets[LEVELS.len()],
            offsets,
            coarse,
            backends: input
                .backends
                .iter()
                .map(|b| Arc::from(b.as_str()))
                .collect(),
            excluded: input
                .backends
                .iter()
                .map(|b| {
                    settings
                        .exclude
                        .iter()
                        .any(|x| !x.is_empty() && b.contains(x.as_str()))
                })
                .collect(),
            threads: threads(),
            cells: input.cells,
        }
    }

    fn slot(&self, cell: &CellHistograms, level: Level, coarse_id: usize) -> usize {
        cell.backend * self.per_backend + self.offsets[level.index()] + coarse_id
    }

    /// The cells one share groups: those of its backends, with runs, not excluded.
    fn cells_of(&self, share: usize) -> impl Iterator<Item = (usize, &'i CellHistograms)> + '_ {
        self.cells.iter().enumerate().filter(move |(_, cell)| {
            cell.backend % self.threads == share
                && !self.excluded[cell.backend]
                && !(cell.current.is_empty() && cell.baseline.is_empty())
        })
    }

    /// The groups of one share of the backends, in the order their first cells come.
    fn share(&self, share: usize) -> (Vec<Meta>, Vec<Windows<'i>>) {
        let slots = self.per_backend * self.backends.len();
        // The cells of each slot, counted first so that each group's list is made once.
        let mut sizes: Vec<usize> = vec![0; slots];
        for (_, cell) in self.cells_of(share) {
            for level in Level::all() {
                sizes[self.slot(cell, level, self.coarse.of[level.index()][cell.variant])] += 1;
            }
        }

        let groups = sizes.iter().filter(|n| **n > 0).count();
        let mut index: Vec<usize> = vec![usize::MAX; slots];
        let (mut metas, mut windows) = (Vec::with_capacity(groups), Vec::with_capacity(groups));
        for (ci, cell) in self.cells_of(share) {
            for level in Level::all() {
                let coarse_id = self.coarse.of[level.index()][cell.variant];
                let at = self.slot(cell, level, coarse_id);
                if index[at] == usize::MAX {
                    index[at] = metas.len();
                    metas.push(Meta {
                        key: GroupKey {
                            backend: self.backends[cell.backend].clone(),
                            fixed: self.coarse.values[level.index()][coarse_id].clone(),
                        },
                        level,
                        cells: Vec::with_capacity(sizes[at]),
                        // its slot for now: its group may come later
                        previous: self.coarse.previous[level.index()][coarse_id]
                            .map(|p| self.slot(cell, level, p)),
                    });
                    windows.push(Windows {
                        current: Cow::Borrowed(&cell.current),
                        baseline: Cow::Borrowed(&cell.baseline),
                        percentiles: [[None; 4]; 2],
                    });
                }
                metas[index[at]].cells.push(ci);
            }
        }

        let mut scratch = Vec::new();
        for (m, w) in metas.iter_mut().zip(&mut windows) {
            m.previous = m.previous.map(|at| index[at]).filter(|&i| i != usize::MAX);
            if m.cells.len() > 1 {
                let mut of = |window: fn(&CellHistograms) -> &Histogram| {
                    Histogram::sum_of(
                        m.cells.iter().map(|&c| window(&self.cells[c])),
                        &mut scratch,
                    )
                };
                let (current, baseline) = (of(|c| &c.current), of(|c| &c.baseline));
                (w.current, w.baseline) = (Cow::Owned(current), Cow::Owned(baseline));
            }
            w.percentiles = [percentiles_of(&w.current), percentiles_of(&w.baseline)];
        }

        (metas, windows)
    }
}

/// Every group of every level, with the cells' histograms merged (a group of one cell borrows
/// its cell's). Groups never span backends, so they are built on every core, a share of the
/// backends each.
fn group<'a>(input: &EvalInput<'a>, settings: &EvaluateSettings) -> (Vec<Meta>, Vec<Windows<'a>>) {
    let slots = &GroupSlots::new(input, settings);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..slots.threads)
            .map(|share| scope.spawn(move || slots.share(share)))
            .collect();
        // A group and its previous release's share a backend, so a share: positions move by
        // the shares before.
        let (mut metas, mut windows) = (Vec::new(), Vec::new());
        for h in handles {
            let (mut share, mut share_windows) = h.join().expect("a grouping thread panicked");
            let before = metas.len();
            for p in share.iter_mut().filter_map(|m| m.previous.as_mut()) {
                *p += before;
            }
            metas.append(&mut share);
            windows.append(&mut share_windows);
        }
        (metas, windows)
    })
}

/// The checks of one group with enough runs: one per checked percentile with a reference, for
/// the window and for each recent span with enough runs of its own. A check against the
/// group's own baseline judges the cells with runs in both: a change of membership is never a
/// regression.
fn check_group(
    d: &Meta,
    w: &Windows<'_>,
    previous: Option<(&str, &Histogram)>,
    input: &EvalInput<'_>,
    settings: &EvaluateSettings,
    historical: &HistoricalTable,
    scratch: &mut Vec<u64>,
) -> Vec<Check> {
    if w.current.count() < settings.min_job_runs {
        return Vec::new();
    }

    // Only the historical table reads them; most installations have none.
    let cell_dims: Vec<&Dimensions> = if historical.is_empty() {
        Vec::new()
    } else {
        d.cells
            .iter()
            .filter(|&&c| !input.cells[c].current.is_empty())
            .map(|&c| &input.variants[input.cells[c].variant])
            .collect()
    };

    let group = GroupChecks {
        meta: d,
        windows: w,
        previous,
        cell_dims: &cell_dims,
        young: d
            .key
            .get(Dimension::Release)
            .is_some_and(|r| input.young.contains(r)),
        input,
        settings,
        historical,
    };

    let mut checks = group.of_span(Span::Window, &[], scratch);
    let window = checks.clone();
    for span in spans(settings).skip(1) {
        checks.extend(group.of_span(span, &window, scratch));
    }

    checks
}

/// What checking one group's spans needs.
struct GroupChecks<'g, 'a> {
    meta: &'g Meta,
    windows: &'g Windows<'a>,
    previous: Option<(&'g str, &'g Histogram)>,
    cell_dims: &'g [&'g Dimensions],
    young: bool,
    input: &'g EvalInput<'a>,
    settings: &'g EvaluateSettings,
    historical: &'g HistoricalTable,
}

impl<'a> GroupChecks<'_, 'a> {
    /// The group's runs of recent span `index`, when it has at least the runs a recent span is
    /// judged from and a window check to hold them to (without one, a recent span has none).
    fn recent_runs(
        &self,
        index: usize,
        window: &[Check],
        scratch: &mut Vec<u64>,
    ) -> Option<Cow<'a, Histogram>> {
        let cells: &'a [CellHistograms] = self.input.cells;
        // a group has as many recent spans as its first cell (a cycle gives every cell them all)
        let first = &cells[*self.meta.cells.first()?];
        if window.is_empty() || first.recent.len() <= index {
            return None;
        }
        let parts = || {
            self.meta
                .cells
                .iter()
                .filter_map(move |&c| cells[c].recent.get(index))
        };
        let runs: u64 = parts().map(Histogram::count).sum();
        if runs < self.settings.min_recent_runs {
            return None;
        }
        Some(match self.meta.cells[..] {
            [_] => Cow::Borrowed(&first.recent[index]),
            _ => Cow::Owned(Histogram::sum_of(parts(), scratch)),
        })
    }

    /// A recent span's check of `runs` left untested, its percentile (`observed`) within the
    /// window's threshold (`window`, the window's check). It still counts among the cycle's
    /// tests when its test could be a discovery with the runs it has: judged on all the group's
    /// runs, a bound on the common cells' that the test would read.
    fn untested(&self, span: Span, observed: f64, runs: &Histogram, window: &Check) -> Check {
        let counted = could_be_discovery(
            runs,
            &window.threshold.source,
            (&self.windows.baseline, self.previous.map(|p| p.1)),
            (window.percentile, window.allowed),
            self.settings,
        );
        Check {
            span,
            observed,
            p_value: 1.0,
            q_value: 1.0,
            exceeds: false,
            discovery: false,
            counted,
            ..window.clone()
        }
    }

    /// The checks of one span. A recent span is tested only where its percentile is above the
    /// window's threshold (`window`, the window's checks): elsewhere it cannot regress, and most
    /// groups are there. Such a check may still count, untested, among the cycle's tests. A recent
    /// span's runs are merged here (a group of one cell borrows its cell's), only for the groups
    /// that have a window check to hold them to and enough runs in the span (`scratch` as
    /// [`Histogram::sum_of`] keeps it).
    fn of_span(&self, span: Span, window: &[Check], scratch: &mut Vec<u64>) -> Vec<Check> {
        let (w, settings) = (self.windows, self.settings);
        let recent;
        let runs = match span {
            Span::Window => &*w.current,
            Span::Recent { index, .. } => {
                let Some(h) = self.recent_runs(index, window, scratch) else {
                    return Vec::new();
                };
                recent = h;
                &*recent
            }
        };

        let whole = if span == Span::Window {
            w.percentiles[0]
        } else {
            percentiles_of(runs)
        };

        let mut out = Vec::with_capacity(settings.percentiles.len());
        let mut tested = Vec::with_capacity(settings.percentiles.len());
        for &p in &settings.percentiles {
            let observed = whole[p.index()].unwrap_or(0.0);
            match window.iter().find(|c| c.percentile == p) {
                Some(c) if observed <= c.threshold.seconds => {
                    out.push(self.untested(span, observed, runs, c));
                }
                None if span != Span::Window => {}
                _ => tested.push(p),
            }
        }

        if tested.is_empty() {
            return out;
        }

        let cells = self.input.cells;
        let common = Common::of(
            &self.meta.cells,
            cells,
            span,
            (runs, &w.baseline),
            [whole, w.percentiles[1]],
        );

        let candidates = Candidates {
            key: &self.meta.key,
            baseline: &common.baseline,
            baseline_percentiles: &common.percentiles[1],
            previous: self.previous,
            cell_dims: self.cell_dims,
            young: self.young,
        };

        let previous = self.previous.map(|p| p.1);
        out.extend(tested.into_iter().filter_map(|p| {
            let r = reference(&candidates, p, settings, self.historical)?;
            Some(judge_check(
                &common,
                (runs, &whole),
                (span, p),
                r,
                previous,
                cells,
                settings,
            ))
        }));

        out
    }
}

/// One percentile of a group (or a scope) against its reference: the common cells' runs
/// against a baseline, all of them (`whole`: their window and its percentiles) otherwise.
pub fn judge_check(
    common: &Common<'_>,
    whole: (&Histogram, &[Option<f64>; 4]),
    (span, p): (Span, Percentile),
    r: Reference<'_>,
    previous: Option<&Histogram>,
    cells: &[CellHistograms],
    settings: &EvaluateSettings,
) -> Check {
    let own_baseline = matches!(r.threshold.source, ThresholdSource::Baseline { .. });
    let (current, observed) = if own_baseline {
        (&*common.current, common.percentiles[0][p.index()])
    } else {
        (whole.0, whole.1[p.index()])
    };

    let observed = observed.unwrap_or(0.0);
    let allowed = allowed(r.threshold.seconds, settings);
    let counted = could_be_discovery(
        current,
        &r.threshold.source,
        (&common.baseline, previous),
        (p, allowed),
        settings,
    );
    let exceeds = observed > allowed && supported(current, p.fraction(), allowed, settings);
    // a test only where it can matter: most groups are far within what is allowed
    let p_value = if exceeds {
        let strata = common.cells.iter().map(|&c| &cells[c]);
        test(
            strata,
            current,
            (span, p, allowed),
            &r.threshold.source,
            previous,
        )
    } else {
        1.0
    };

    Check {
        span,
        percentile: p,
        observed,
        threshold: r.threshold,
        allowed,
        p_value,
        q_value: 1.0,
        exceeds,
        discovery: false,
        counted,
    }
}

/// Whether a test of `current` at `allowed` against `source` could give a p-value within the
/// false discovery rate with the runs it has, however they fall (Tarone's argument for discrete
/// tests): a comparison with the `baseline`'s or the `previous` release's runs only when a run
/// of either side is above `allowed` (else its exact test gives 1); a percentile's test against
/// a fixed threshold only when all its runs above `allowed` would be that unlikely. A check
/// that could not be a discovery does not count among the cycle's tests, so that it does not
/// raise the bar for those that could.
fn could_be_discovery(
    current: &Histogram,
    source: &ThresholdSource,
    (baseline, previous): (&Histogram, Option<&Histogram>),
    (p, allowed): (Percentile, f64),
    settings: &EvaluateSettings,
) -> bool {
    let above = |h: &Histogram| h.max().is_some_and(|m| m as f64 > allowed);
    let against = |r: &Histogram| !r.is_empty() && (above(current) || above(r));
    match source {
        ThresholdSource::Baseline { .. } => against(baseline),
        ThresholdSource::PreviousRelease { .. } => previous.is_some_and(against),
        ThresholdSource::Configured { .. } | ThresholdSource::Historical { .. } => {
            let runs = i32::try_from(current.count()).unwrap_or(i32::MAX);
            (1.0 - p.fraction()).powi(runs) <= settings.false_discovery_rate
        }
    }
}

/// The previous release's runs a group is compared with: its baseline (where known regressions
/// are left out) when it has enough runs, else its current window.
fn previous_runs<'a>(p: &'a Windows<'_>, settings: &EvaluateSettings) -> &'a Histogram {
    if p.baseline.count() >= settings.min_job_runs {
        &p.baseline
    } else {
        &p.current
    }
}

/// The checks of every group, on every core.
fn check_all(
    metas: &[Meta],
    windows: &[Windows<'_>],
    input: &EvalInput<'_>,
    settings: &EvaluateSettings,
    historical: &HistoricalTable,
) -> Vec<Vec<Check>> {
    let one = |i: usize, scratch: &mut Vec<u64>| {
        let previous = metas[i].previous.map(|p| {
            (
                metas[p].key.get(Dimension::Release).unwrap_or_default(),
                previous_runs(&windows[p], settings),
            )
        });
        check_group(
            &metas[i],
            &windows[i],
            previous,
            input,
            settings,
            historical,
            scratch,
        )
    };

    let threads = threads();
    let chunk = metas.len().div_ceil(threads).max(1);
    let total = metas.len();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..total)
            .step_by(chunk)
            .map(|start| {
                let one = &one;
                scope.spawn(move || {
                    let mut scratch = Vec::new();
                    (start..(start + chunk).min(total))
                        .map(|i| one(i, &mut scratch))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all = Vec::with_capacity(total);
        for h in handles {
            all.extend(h.join().expect("a check thread panicked"));
        }
        all
    })
}

/// The false discovery rate across every test of the cycle, in two stages (Benjamini and
/// Bogomolov's selective procedure): the tests fall into families, one per backend family and
/// release; a family is selected when its Simes combination passes Benjamini–Hochberg among
/// the families, and within each of the `R` selected of `M` families the tests pass
/// Benjamini–Hochberg at `rate × R / M`. One regression makes many discoveries (each level, each
/// span, each percentile, new and reused connections); in a single stage they would lower the
/// bar for every other backend's tests, here they lower it only within their own family.
/// Only the checks that could be discoveries with the runs they have count ([`Check::counted`]);
/// the rest keep a q-value of 1, and a family with none is not among the `M`.
/// Marks the discoveries and sets the q-values (a discovery has one within the rate); the
/// number of tests, and each group's family cutoff (its largest discovered p-value).
fn adjust_for_multiple_tests(
    checks: &mut [Vec<Check>],
    metas: &[Meta],
    settings: &EvaluateSettings,
) -> (usize, Vec<f64>) {
    let mut family_of: FastMap<(&str, Option<&str>), usize> = FastMap::new();
    let group_family: Vec<usize> = metas
        .iter()
        .map(|m| {
            let key = (
                crate::model::backend_family(&m.key.backend),
                m.key.get(Dimension::Release),
            );
            let next = family_of.len();
            *family_of.entry(key).or_insert(next)
        })
        .collect();

    let mut p_of: Vec<Vec<f64>> = vec![Vec::new(); family_of.len()];
    for (gi, group_checks) in checks.iter().enumerate() {
        let counted = group_checks.iter().filter(|c| c.counted);
        p_of[group_family[gi]].extend(counted.map(|c| c.p_value));
    }

    // a family without a check that could be a discovery is not among those selected from
    let tested: Vec<usize> = (0..p_of.len()).filter(|&f| !p_of[f].is_empty()).collect();
    let simes: Vec<f64> = tested.iter().map(|&f| stats::simes(&p_of[f])).collect();
    let mut selected = vec![1.0; p_of.len()];
    for (&f, q) in tested.iter().zip(stats::bh_adjusted(&simes)) {
        selected[f] = q;
    }
    let rate = settings.false_discovery_rate;
    let chosen = selected.iter().filter(|q| **q <= rate).count().max(1);
    // within-family adjusted p-values, scaled so that a discovery has one within the rate
    let scale = tested.len() as f64 / chosen as f64;
    let within: Vec<Vec<f64>> = p_of.iter().map(|ps| stats::bh_adjusted(ps)).collect();
    let mut next = vec![0usize; p_of.len()];
    let mut cutoffs = vec![0.0f64; p_of.len()];
    for (gi, group_checks) in checks.iter_mut().enumerate() {
        let f = group_family[gi];
        for c in group_checks.iter_mut() {
            let q = if c.counted {
                let within = within[f][next[f]];
                next[f] += 1;
                (within * scale).min(1.0)
            } else {
                1.0
            };
            c.q_value = q;
            c.discovery = c.counted && selected[f] <= rate && q <= rate;
            if c.discovery {
                cutoffs[f] = cutoffs[f].max(c.p_value);
            }
        }
    }

    let tests = p_of.iter().map(Vec::len).sum();
    (
        tests,
        group_family.into_iter().map(|f| cutoffs[f]).collect(),
    )
}

/// Each group's status: regressed now, or regressed before and still above the threshold. The
/// results take the groups' cells and checks over.
fn judge(
    metas: &mut [Meta],
    windows: &[Windows<'_>],
    checks: &mut [Vec<Check>],
    input: &EvalInput<'_>,
    settings: &EvaluateSettings,
) -> Vec<GroupResult> {
    let prior_by_key: FastMap<GroupKey, &GroupState> = input
        .prior
        .iter()
        .filter_map(|(label, s)| GroupKey::parse_label(label).map(|k| (k, s)))
        .collect();

    let one = |d: &mut Meta, w: &Windows, checks: Vec<Check>| {
        let prior = prior_by_key
            .get(&d.key)
            .map(|s| (*s).clone())
            .unwrap_or_default();
        let enough = w.current.count() >= settings.min_job_runs;
        let regressed_now = checks.iter().any(|c| c.exceeds && c.discovery);
        let above = checks.iter().any(|c| c.observed > c.threshold.seconds);
        let status = if !enough {
            GroupStatus::InsufficientData
        } else if checks.is_empty() {
            GroupStatus::NoReference
        } else if regressed_now || (prior.regressed && above) {
            GroupStatus::Regressed
        } else {
            GroupStatus::Healthy
        };
        GroupResult {
            key: d.key.clone(),
            level: d.level,
            runs: w.current.count(),
            baseline_runs: w.baseline.count(),
            current: w.percentiles[0],
            baseline: w.percentiles[1],
            checks,
            status,
            is_new: false,
            reported: false,
            significant: regressed_now,
            state: prior,
            cutoff: 0.0,
            cells: std::mem::take(&mut d.cells),
        }
    };

    // On every core, a share of the groups each.
    let total = metas.len();
    let chunk = total.div_ceil(threads()).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = metas
            .chunks_mut(chunk)
            .zip(checks.chunks_mut(chunk))
            .zip(windows.chunks(chunk))
            .map(|((metas, checks), windows)| {
                let one = &one;
                scope.spawn(move || {
                    metas
                        .iter_mut()
                        .zip(checks)
                        .zip(windows)
                        .map(|((d, checks), w)| one(d, w, std::mem::take(checks)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all = Vec::with_capacity(total);
        for h in handles {
            all.extend(h.join().expect("a judging thread panicked"));
        }
        all
    })
}

/// Whether a group's regression survives once the cells of stronger regressed groups are
/// taken out: the rest still has enough runs, exceeds, and passes the cycle's cutoff.
fn holds_without(
    remaining: &[usize],
    checks: &[Check],
    previous_runs: Option<&Histogram>,
    input: &EvalInput<'_>,
    settings: &EvaluateSettings,
    cutoff: f64,
) -> bool {
    let mut window = Histogram::new();
    for &c in remaining {
        window.merge(&input.cells[c].current);
    }

    window.count() >= settings.min_job_runs
        && checks.iter().filter(|c| c.exceeds).any(|c| {
            let (mut current, mut baseline) = (Histogram::new(), Histogram::new());
            for &k in remaining {
                current.merge(runs_of(c.span, &input.cells[k]));
                baseline.merge(&input.cells[k].baseline);
            }
            let percentiles = [percentiles_of(&current), percentiles_of(&baseline)];
            let common = Common::of(
                remaining,
                input.cells,
                c.span,
                (&current, &baseline),
                percentiles,
            );
            let least = if c.span == Span::Window {
                settings.min_job_runs
            } else {
                settings.min_recent_runs
            };
            let own_baseline = matches!(c.threshold.source, ThresholdSource::Baseline { .. });
            if own_baseline && common.baseline.count() < settings.min_job_runs {
                return false;
            }
            let judged = if own_baseline {
                &*common.current
            } else {
                &current
            };
            if judged.count() < least {
                return false;
            }
            let observed = judged.percentile(c.percentile.fraction()).unwrap_or(0.0);
            let cells = common.cells.iter().map(|&k| &input.cells[k]);
            let check = (c.span, c.percentile, c.allowed);
            observed > c.allowed
                && supported(judged, c.percentile.fraction(), c.allowed, settings)
                && test(cells, judged, check, &c.threshold.source, previous_runs) <= cutoff
        })
}

/// Explains overlapping regressed groups away, strongest first (groups regressed before go
/// first): a group whose regression disappears without a stronger group's cells is not
/// reported on its own.
fn explain_away<'w>(
    results: &mut [GroupResult],
    previous_runs: impl Fn(usize) -> Option<&'w Histogram>,
    input: &EvalInput<'_>,
    settings: &EvaluateSettings,
) {
    let mut order: Vec<usize> = (0..results.len())
        .filter(|&i| results[i].status == GroupStatus::Regressed)
        .collect();

    // Groups that hold a healthy part of their own come after those that do not: pooling a
    // regression with healthy cells can make a test more significant than the regression's
    // own, but never a better explanation of it.
    let mixed = mixed_groups(results, &order, settings);
    let strength = |r: &GroupResult| r.leading_check().map_or(1.0, |c| c.p_value);
    order.sort_by(|&a, &b| {
        let (ra, rb) = (&results[a], &results[b]);
        rb.state
            .regressed
            .cmp(&ra.state.regressed)
            .then(mixed.contains(&a).cmp(&mixed.contains(&b)))
            .then(strength(ra).total_cmp(&strength(rb)))
            .then(rb.runs.cmp(&ra.runs))
            .then(ra.level.cmp(&rb.level))
            .then(ra.key.cmp(&rb.key))
    });

    let mut covered: FastSet<usize> = FastSet::default();
    for gi in order {
        let r = &results[gi];
        let remaining: Vec<usize> = r
            .cells
            .iter()
            .copied()
            .filter(|c| !covered.contains(c))
            .collect();
        let keep = if r.state.regressed || remaining.len() == r.cells.len() {
            true
        } else if remaining.is_empty() {
            false
        } else {
            holds_without(
                &remaining,
                &r.checks,
                previous_runs(gi),
                input,
                settings,
                r.cutoff,
            )
        };
        if keep {
            covered.extend(results[gi].cells.iter().copied());
            results[gi].reported = true;
        } else {
            // Explained by a stronger group: not a regression of its own.
            results[gi].status = GroupStatus::Healthy;
        }
    }
}

/// The regressed groups (of `regressed`) holding a healthy group of their own: a smaller group
/// within their cells with enough runs whose every percentile stayed within what is allowed.
/// Only the cells of regressed groups are indexed: a healthy group with any other cell lies
/// within none of them, and the regressed are few while the groups are many.
fn mixed_groups(
    results: &[GroupResult],
    regressed: &[usize],
    settings: &EvaluateSettings,
) -> FastSet<usize> {
    let mut out = FastSet::default();
    if regressed.is_empty() {
        return out;
    }

    let regressed_cells: FastSet<usize> = regressed
        .iter()
        .flat_map(|&gi| results[gi].cells.iter().copied())
        .collect();

    let mut groups_of_cell: FastMap<usize, Vec<usize>> = FastMap::new();
    for (gi, g) in results.iter().enumerate() {
        let healthy = g.runs >= settings.min_job_runs
            && !g.checks.is_empty()
            && g.checks.iter().all(|c| c.observed <= c.allowed)
            && g.cells.iter().all(|c| regressed_cells.contains(c));
        if healthy {
            for &c in &g.cells {
                groups_of_cell.entry(c).or_default().push(gi);
            }
        }
    }

    for &gi in regressed {
        let g = &results[gi];
        let cells: FastSet<usize> = g.cells.iter().copied().collect();
        let holds_healthy = g
            .cells
            .iter()
            .filter_map(|c| groups_of_cell.get(c))
            .flatten()
            .any(|&fi| {
                let f = &results[fi];
                fi != gi
                    && f.cells.len() < g.cells.len()
                    && f.cells.iter().all(|c| cells.contains(c))
            });
        if holds_healthy {
            out.insert(gi);
        }
    }

    out
}

/// A group regressed before stays regressed until `clear_after` evaluations in a row at or
/// below its threshold; its new state.
fn apply_hysteresis(r: &mut GroupResult, settings: &EvaluateSettings, now: i64) {
    let prior = r.state.clone();
    match r.status {
        GroupStatus::InsufficientData | GroupStatus::NoReference => {}
        GroupStatus::Regressed => {
            let regressed_now = r.checks.iter().any(|c| c.exceeds && c.discovery);
            let above = r.checks.iter().any(|c| c.observed > c.threshold.seconds);
            r.is_new = !prior.regressed;
            r.state = GroupState {
                regressed: true,
                clean_streak: if regressed_now || above {
                    0
                } else {
                    prior.clean_streak
                },
                since: prior.since.or(Some(now)),
            };
        }
        GroupStatus::Healthy | GroupStatus::Resolved => {
            if !prior.regressed {
                r.state = GroupState::default();
                return;
            }
            let streak = prior.clean_streak + 1;
            r.reported = true;
            if streak >= settings.clear_after {
                r.status = GroupStatus::Resolved;
                r.state = GroupState::default();
            } else {
                // Not clearly back yet: still regressed until enough clean evaluations.
                r.status = GroupStatus::Regressed;
                r.state = GroupState {
                    regressed: true,
                    clean_streak: streak,
                    since: prior.since,
                };
            }
        }
    }
}

#[cfg(test)]
mod tests;
