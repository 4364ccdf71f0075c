//! The stored runs held in memory, for `sheriff backtest`: read once, then shown to each
//! replayed cycle as they were at that cycle's time, only the runs that had finished by then.
//!
//! Each cell keeps its runs by start, and per UTC day a histogram with the day's latest finish,
//! so a window is a few day histograms plus the runs of the days not yet wholly finished.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::error::{CycleError, Result};
use super::source::{CellRun, RunSource, weekly_query};
use crate::domain::evaluate::CellHistograms;
use crate::model::{
    DAY, Dimensions, Histogram, HistoricalRow, Percentile, RegressionReport, RunRecord, glob_match,
};
use crate::store::Store;
use crate::store::evaluations::WindowData;
use crate::store::runs::{ReplayRows, ReplayRun};

/// A run as the replay knows it.
#[derive(Debug, Clone)]
struct RunMeta {
    job: Arc<str>,
    build_id: Arc<str>,
    url: Arc<str>,
    started: i64,
    finished: i64,
    variant: usize,
    payload: Arc<str>,
    payload_at: Option<i64>,
}

/// A CI-troubled run: counted as left out, never in a histogram.
#[derive(Debug, Clone, Copy)]
struct Troubled {
    started: i64,
    finished: i64,
    variant: usize,
}

#[derive(Debug, Clone, Copy)]
struct Point {
    started: i64,
    finished: i64,
    seconds: i64,
    run: u32,
}

/// One UTC day of one cell.
#[derive(Debug, Clone, Default)]
struct Day {
    histogram: Histogram,
    /// The latest finish of the day's runs: the day is wholly visible from then on.
    finished_by: i64,
}

/// Several days of one cell merged: replayed cycles a few hours apart share them.
#[derive(Debug, Clone, Default)]
struct WholeDays {
    histogram: Histogram,
    finished_by: i64,
}

/// Day numbers `[first, end)`.
type DaySpan = (i64, i64);

/// The UTC days wholly inside `[from, to)`.
fn whole_days_of(from: i64, to: i64) -> DaySpan {
    ((from + DAY - 1).div_euclid(DAY), to.div_euclid(DAY))
}

#[derive(Debug, Clone, Default)]
struct Series {
    points: Vec<Point>,
    days: BTreeMap<i64, Day>,
}

impl Series {
    /// The histogram of the runs started in `[from, to)` and finished by `visible_at`; `whole`
    /// is [`Series::whole_days`] of the span's whole days, when the caller has it.
    fn histogram(
        &self,
        from: i64,
        to: i64,
        visible_at: i64,
        whole: Option<&WholeDays>,
    ) -> Histogram {
        let mut h = Histogram::new();
        if from >= to {
            return h;
        }
        let (first_whole, end_whole) = whole_days_of(from, to);
        if first_whole >= end_whole {
            self.add_points(&mut h, (from, to), visible_at);
            return h;
        }
        self.add_points(&mut h, (from, first_whole * DAY), visible_at);
        self.add_points(&mut h, (end_whole * DAY, to), visible_at);
        match whole {
            Some(w) if w.finished_by <= visible_at => h.merge(&w.histogram),
            _ => {
                for (day, d) in self.days.range(first_whole..end_whole) {
                    if d.finished_by <= visible_at {
                        h.merge(&d.histogram);
                    } else {
                        self.add_points(&mut h, (day * DAY, (day + 1) * DAY), visible_at);
                    }
                }
            }
        }
        h
    }

    /// [`Series::whole_days`] of `(first, end)` from those of the day before.
    fn slid(&self, before: &WholeDays, (first, end): DaySpan) -> WholeDays {
        let mut w = before.clone();
        if let Some(out) = self.days.get(&(first - 1)) {
            w.histogram.subtract(&out.histogram);
        }
        if let Some(new) = self.days.get(&(end - 1)) {
            w.histogram.merge(&new.histogram);
        }
        w.finished_by = self
            .days
            .range(first..end)
            .map(|(_, d)| d.finished_by)
            .max()
            .unwrap_or(0);
        w
    }

    /// The days `[first, end)` merged, and when their last run finished.
    fn whole_days(&self, (first, end): DaySpan) -> WholeDays {
        let mut w = WholeDays::default();
        for d in self.days.range(first..end).map(|(_, d)| d) {
            w.histogram.merge(&d.histogram);
            w.finished_by = w.finished_by.max(d.finished_by);
        }
        w
    }

    /// Adds the runs started in `range` and finished by `visible_at`.
    fn add_points(&self, h: &mut Histogram, range: (i64, i64), visible_at: i64) {
        let start = self.points.partition_point(|p| p.started < range.0);
        for p in self.points[start..]
            .iter()
            .take_while(|p| p.started < range.1)
        {
            if p.finished <= visible_at {
                h.add(p.seconds, 1);
            }
        }
    }
}

/// `backend:seconds` pairs as the store joins a run's samples.
fn parse_pairs(text: &str) -> Result<Vec<(i64, i64)>> {
    text.split_ascii_whitespace()
        .map(|pair| {
            let (b, s) = pair
                .split_once(':')
                .ok_or_else(|| CycleError::SampleWithoutColon { pair: pair.into() })?;
            Ok((b.parse()?, s.parse()?))
        })
        .collect()
}

/// The runs of a span of time, in memory.
pub struct Replay {
    store: Arc<Store>,
    backends: Vec<String>,
    variants: Vec<(i64, Dimensions)>,
    runs: Vec<RunMeta>,
    cells: BTreeMap<(usize, usize), Series>,
    historical: Vec<HistoricalRow>,
    whole_days: std::sync::Mutex<Vec<(DaySpan, Arc<Vec<WholeDays>>)>>,
    /// Per release, its runs' (finish, earliest start of the runs finished by then), by finish.
    first_starts: HashMap<String, Vec<(i64, i64)>>,
    /// Each variant's runs (positions in `runs`), by start.
    runs_of_variant: Vec<Vec<u32>>,
    /// The CI-troubled runs, by start.
    troubled: Vec<Troubled>,
    /// The windows of the next cycle, being computed.
    prefetched: std::sync::Mutex<Vec<(WindowKey, std::thread::JoinHandle<WindowData>)>>,
}

/// The spans and time a cycle's windows are for: current, baseline, the recent spans' starts,
/// visible by.
type WindowKey = ((i64, i64), (i64, i64), Vec<i64>, i64);

fn first_starts(
    runs: &[RunMeta],
    variants: &[(i64, Dimensions)],
) -> HashMap<String, Vec<(i64, i64)>> {
    let mut by_release: HashMap<String, Vec<(i64, i64)>> = HashMap::new();
    for r in runs {
        by_release
            .entry(variants[r.variant].1.release.clone())
            .or_default()
            .push((r.finished, r.started));
    }
    for list in by_release.values_mut() {
        list.sort_unstable();
        let mut earliest = i64::MAX;
        for (_, started) in list.iter_mut() {
            earliest = earliest.min(*started);
            *started = earliest;
        }
    }
    by_release
}

/// Each row's position in `rows`, by its id.
fn positions<T>(rows: &[(i64, T)]) -> HashMap<i64, usize> {
    rows.iter()
        .enumerate()
        .map(|(i, (id, _))| (*id, i))
        .collect()
}

/// The stored runs a backtest replays, and where each went.
struct KnownRuns {
    /// Each kept run's position in `runs`, by its id.
    position: HashMap<i64, u32>,
    runs: Vec<RunMeta>,
    troubled: Vec<Troubled>,
}

/// The runs of `run_rows` whose variant is known (by `variant_index`), the CI-troubled ones
/// among them apart too.
fn keep_known_runs(run_rows: Vec<ReplayRun>, variant_index: &HashMap<i64, usize>) -> KnownRuns {
    let mut position: HashMap<i64, u32> = HashMap::with_capacity(run_rows.len());
    let mut runs = Vec::with_capacity(run_rows.len());
    let mut troubled = Vec::new();
    for ReplayRun {
        id,
        job_name: job,
        build_id,
        url,
        started_at: started,
        finished_at: finished,
        variant_id,
        ci_troubled: ci_trouble,
        payload,
    } in run_rows
    {
        let Some(&variant) = variant_index.get(&variant_id) else {
            continue;
        };
        if ci_trouble != 0 {
            troubled.push(Troubled {
                started,
                finished: finished.unwrap_or(started),
                variant,
            });
        }
        position.insert(id, runs.len() as u32);
        runs.push(RunMeta {
            job: job.into(),
            build_id: build_id.into(),
            url: url.into(),
            started,
            finished: finished.unwrap_or(started),
            variant,
            payload_at: crate::model::payload_time(&payload).map(|t| t.timestamp()),
            payload: payload.into(),
        });
    }

    KnownRuns {
        position,
        runs,
        troubled,
    }
}

/// Each cell's series of samples (by start) and its days, from the samples of the runs read.
fn cells_of(
    sample_rows: Vec<(i64, String)>,
    run_index: &HashMap<i64, u32>,
    runs: &[RunMeta],
    backend_index: &HashMap<i64, usize>,
) -> Result<BTreeMap<(usize, usize), Series>> {
    let mut cells: BTreeMap<(usize, usize), Series> = BTreeMap::new();
    for (run_id, pairs) in sample_rows {
        let Some(&run) = run_index.get(&run_id) else {
            continue;
        };
        let meta = &runs[run as usize];
        for (backend_id, seconds) in parse_pairs(&pairs)? {
            let Some(&backend) = backend_index.get(&backend_id) else {
                continue;
            };
            let series = cells.entry((backend, meta.variant)).or_default();
            series.points.push(Point {
                started: meta.started,
                finished: meta.finished,
                seconds,
                run,
            });
            let day = series.days.entry(meta.started.div_euclid(DAY)).or_default();
            day.histogram.add(seconds, 1);
            day.finished_by = day.finished_by.max(meta.finished);
        }
    }
    for s in cells.values_mut() {
        s.points.sort_by_key(|p| (p.started, p.run));
    }
    Ok(cells)
}

impl Replay {
    /// Reads every run that started in `[from, to)` with its samples.
    pub async fn load(store: Arc<Store>, from: i64, to: i64) -> Result<Replay> {
        let variants: Vec<(i64, Dimensions)> = store.variants().await?.as_ref().clone();
        let ReplayRows {
            backends: backend_rows,
            runs: run_rows,
            samples: sample_rows,
        } = store.runs().replay_rows(from, to).await?;

        let KnownRuns {
            position,
            runs,
            troubled,
        } = keep_known_runs(run_rows, &positions(&variants));
        let cells = cells_of(sample_rows, &position, &runs, &positions(&backend_rows))?;

        let historical = store.evaluations().historical_thresholds().await?;
        let first_starts = first_starts(&runs, &variants);
        let mut runs_of_variant = vec![Vec::new(); variants.len()];
        for (i, r) in runs.iter().enumerate() {
            runs_of_variant[r.variant].push(i as u32); // the runs are read in start order
        }
        Ok(Replay {
            store,
            backends: backend_rows.into_iter().map(|(_, n)| n).collect(),
            variants,
            runs,
            cells,
            historical,
            whole_days: Default::default(),
            first_starts,
            runs_of_variant,
            troubled,
            prefetched: Default::default(),
        })
    }

    /// Each cell's whole days of `span`, merged once for every cycle of the day that needs
    /// them (in cell order); the spans last asked for are kept, and a span a day later is
    /// slid from its day before.
    fn whole(&self, span: (i64, i64)) -> Arc<Vec<WholeDays>> {
        let days = whole_days_of(span.0, span.1);
        let mut cache = self.whole_days.lock().expect("whole-days cache lock");
        if let Some((_, w)) = cache.iter().find(|(d, _)| *d == days) {
            return w.clone();
        }
        // A day later than one held: one day out, one day in.
        let merged: Arc<Vec<WholeDays>> =
            match cache.iter().find(|(d, _)| *d == (days.0 - 1, days.1 - 1)) {
                Some((_, before)) => Arc::new(
                    self.cells
                        .values()
                        .zip(before.iter())
                        .map(|(s, w)| s.slid(w, days))
                        .collect(),
                ),
                None => Arc::new(self.cells.values().map(|s| s.whole_days(days)).collect()),
            };
        if cache.len() >= 4 {
            cache.remove(0);
        }
        cache.push((days, merged.clone()));
        merged
    }

    /// Every cell's histograms of the two windows and the recent spans, as a cycle at
    /// `visible_at` sees them.
    fn window_data(&self, key: &WindowKey) -> WindowData {
        let (current, baseline, recent, visible_at) = (key.0, key.1, &key.2, key.3);
        let (wc, wb) = (self.whole(current), self.whole(baseline));
        let mut cells = Vec::new();
        for (k, (&(backend, variant), s)) in self.cells.iter().enumerate() {
            let c = s.histogram(current.0, current.1, visible_at, wc.get(k));
            let b = s.histogram(baseline.0, baseline.1, visible_at, wb.get(k));
            if !c.is_empty() || !b.is_empty() {
                let recent = recent
                    .iter()
                    .map(|from| s.histogram(*from, current.1, visible_at, None))
                    .collect();
                cells.push(CellHistograms {
                    backend,
                    variant,
                    current: c,
                    baseline: b,
                    recent,
                });
            }
        }
        let mut troubled = vec![0; self.variants.len()];
        let first = self.troubled.partition_point(|t| t.started < current.0);
        for t in self.troubled[first..]
            .iter()
            .take_while(|t| t.started < current.1)
        {
            if t.finished <= visible_at {
                troubled[t.variant] += 1;
            }
        }
        WindowData {
            troubled,
            backends: self.backends.clone(),
            variants: self.variants.iter().map(|(_, d)| d.clone()).collect(),
            variant_ids: self.variants.iter().map(|(id, _)| *id).collect(),
            cells,
        }
    }

    /// Starts computing the windows of a coming cycle on a thread of its own, so that they are
    /// ready when it asks (the cycle before it runs meanwhile).
    pub fn prefetch(
        self: &Arc<Self>,
        current: (i64, i64),
        baseline: (i64, i64),
        recent: Vec<i64>,
        visible_at: i64,
    ) {
        let me = self.clone();
        let key: WindowKey = (current, baseline, recent, visible_at);
        let asked = key.clone();
        let handle = std::thread::spawn(move || me.window_data(&asked));
        let mut pending = self.prefetched.lock().expect("prefetch lock");
        if pending.len() >= 2 {
            pending.remove(0); // never asked for: its thread finishes on its own
        }
        pending.push((key, handle));
    }

    /// Runs held.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Samples held.
    pub fn samples(&self) -> usize {
        self.cells.values().map(|s| s.points.len()).sum()
    }
}

impl RunSource for Replay {
    fn runs_store(&self) -> &Store {
        &self.store
    }

    async fn windows(
        &self,
        current: (i64, i64),
        baseline: (i64, i64),
        recent: &[i64],
        visible_at: i64,
    ) -> Result<WindowData> {
        let key: WindowKey = (current, baseline, recent.to_vec(), visible_at);
        let ready = {
            let mut pending = self.prefetched.lock().expect("prefetch lock");
            let at = pending.iter().position(|(k, _)| *k == key);
            at.map(|i| pending.remove(i).1)
        };
        match ready {
            Some(handle) => handle.join().map_err(|_| CycleError::WindowsPanicked),
            None => Ok(self.window_data(&key)),
        }
    }

    async fn cell_runs(
        &self,
        backends: &[String],
        variant_ids: &[i64],
        range: (i64, i64),
        visible_at: i64,
    ) -> Result<Vec<CellRun>> {
        let mut out = Vec::new();
        for (&(b, v), s) in &self.cells {
            if !backends.contains(&self.backends[b]) || !variant_ids.contains(&self.variants[v].0) {
                continue;
            }
            let backend: Arc<str> = self.backends[b].as_str().into();
            let start = s.points.partition_point(|p| p.started < range.0);
            for p in s.points[start..].iter().take_while(|p| p.started < range.1) {
                if p.finished > visible_at {
                    continue;
                }
                let meta = &self.runs[p.run as usize];
                out.push(CellRun {
                    backend: backend.clone(),
                    variant_id: self.variants[v].0,
                    started: p.started,
                    seconds: p.seconds,
                    job: meta.job.clone(),
                    build_id: meta.build_id.clone(),
                    payload: meta.payload.clone(),
                    payload_at: meta.payload_at,
                    url: meta.url.clone(),
                });
            }
        }

        out.sort_by(|a, b| {
            (a.started, &a.job, &a.build_id, &a.backend).cmp(&(
                b.started,
                &b.job,
                &b.build_id,
                &b.backend,
            ))
        });

        Ok(out)
    }

    async fn runs(&self, keys: &[(&str, &str)]) -> Result<Vec<RunRecord>> {
        Ok(self.store.runs().find(keys).await?)
    }

    async fn historical(&self) -> Result<Vec<HistoricalRow>> {
        Ok(self.historical.clone())
    }

    async fn first_seen(&self, visible_at: i64) -> Result<HashMap<String, i64>> {
        let mut first = HashMap::new();
        for (release, by_finish) in &self.first_starts {
            let n = by_finish.partition_point(|(finished, _)| *finished <= visible_at);
            if let Some((_, started)) = n.checked_sub(1).map(|i| by_finish[i]) {
                first.insert(release.clone(), started);
            }
        }
        Ok(first)
    }

    async fn payloads_between(&self, release: &str, from: i64, to: i64) -> Result<Vec<String>> {
        let mut seen: Vec<(i64, &str)> = self
            .runs
            .iter()
            .filter(|r| r.payload_at.is_some_and(|t| t >= from && t <= to))
            .filter(|r| self.variants[r.variant].1.release == release)
            .map(|r| (r.payload_at.unwrap_or_default(), &*r.payload))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        Ok(seen.into_iter().map(|(_, p)| p.to_string()).collect())
    }

    async fn jobs_of_variants(
        &self,
        variant_ids: &[i64],
        window: (i64, i64),
    ) -> Result<Vec<(String, i64)>> {
        let mut jobs: BTreeMap<String, i64> = BTreeMap::new();
        for (v, _) in self
            .variants
            .iter()
            .enumerate()
            .filter(|(_, (id, _))| variant_ids.contains(id))
        {
            let runs = &self.runs_of_variant[v];
            let start = runs.partition_point(|&r| self.runs[r as usize].started < window.0);
            for &r in runs[start..]
                .iter()
                .take_while(|&&r| self.runs[r as usize].started < window.1)
            {
                *jobs
                    .entry(self.runs[r as usize].job.to_string())
                    .or_default() += 1;
            }
        }
        Ok(jobs.into_iter().collect())
    }

    async fn weekly(
        &self,
        report: &RegressionReport,
        window_days: i64,
        at: i64,
    ) -> Result<Vec<Option<f64>>> {
        let Some(q) = weekly_query(report, window_days) else {
            return Ok(Vec::new());
        };
        let p = if matches!(report.percentile, Percentile::P50 | Percentile::P75) {
            0.5
        } else {
            0.95
        };
        let today = at.div_euclid(DAY) + 1;
        let series: Vec<&Series> = self
            .cells
            .iter()
            .filter(|((b, v), _)| {
                self.backends[*b] == q.backend
                    && q.filters
                        .iter()
                        .all(|(d, glob)| glob_match(glob, self.variants[*v].1.get(*d)))
            })
            .map(|(_, s)| s)
            .collect();
        Ok((0..8)
            .rev()
            .map(|w| {
                let end = (today - w * 7) * DAY;
                let mut h = Histogram::new();
                for s in &series {
                    h.merge(&s.histogram(end - 7 * DAY, end, at, None));
                }
                h.percentile(p)
            })
            .collect())
    }
}
