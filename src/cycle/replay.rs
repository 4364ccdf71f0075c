//! The stored runs held in memory, for `sheriff backtest`: read once, then shown to each
//! replayed cycle as they were at that cycle's time, only the runs that had finished by then.
//!
//! Each cell keeps its runs by start, and per UTC day a histogram with the day's latest finish,
//! so a window is a few day histograms plus the runs of the days not yet wholly finished.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use anyhow::Result;

use super::source::{CellRun, RunSource, weekly_query};
use crate::evaluate::CellHistograms;
use crate::model::{
    Dimensions, Histogram, HistoricalRow, Percentile, RegressionReport, RunRecord, glob_match,
};
use crate::store::Store;
use crate::store::evaluations::WindowData;

const DAY: i64 = 86_400;

/// A run as the replay knows it.
#[derive(Debug, Clone)]
struct RunMeta {
    job: String,
    build_id: String,
    url: String,
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

#[derive(Debug, Clone, Default)]
struct Series {
    points: Vec<Point>,
    days: BTreeMap<i64, Day>,
}

impl Series {
    /// The histogram of the runs started in `[from, to)` and finished by `visible_at`.
    fn histogram(&self, from: i64, to: i64, visible_at: i64) -> Histogram {
        let mut h = Histogram::new();
        if from >= to {
            return h;
        }
        let (first_whole, end_whole) = ((from + DAY - 1).div_euclid(DAY), to.div_euclid(DAY));
        if first_whole >= end_whole {
            self.add_points(&mut h, (from, to), visible_at);
            return h;
        }
        self.add_points(&mut h, (from, first_whole * DAY), visible_at);
        self.add_points(&mut h, (end_whole * DAY, to), visible_at);
        for (day, d) in self.days.range(first_whole..end_whole) {
            if d.finished_by <= visible_at {
                h.merge(&d.histogram);
            } else {
                self.add_points(&mut h, (day * DAY, (day + 1) * DAY), visible_at);
            }
        }
        h
    }

    /// Adds the runs started in `range` and finished by `visible_at`.
    fn add_points(&self, h: &mut Histogram, range: (i64, i64), visible_at: i64) {
        let start = self.points.partition_point(|p| p.started < range.0);
        for p in self.points[start..].iter().take_while(|p| p.started < range.1) {
            if p.finished <= visible_at {
                h.add(p.seconds, 1);
            }
        }
    }
}

/// The runs of a span of time, in memory.
pub struct Replay {
    store: Arc<Store>,
    backends: Vec<String>,
    variants: Vec<(i64, Dimensions)>,
    runs: Vec<RunMeta>,
    cells: BTreeMap<(usize, usize), Series>,
    historical: Vec<HistoricalRow>,
}

impl Replay {
    /// Reads every run that started in `[from, to)` with its samples.
    pub async fn load(store: Arc<Store>, from: i64, to: i64) -> Result<Replay> {
        let variants: Vec<(i64, Dimensions)> = store.variants().await?.as_ref().clone();
        let variant_index: HashMap<i64, usize> =
            variants.iter().enumerate().map(|(i, (id, _))| (*id, i)).collect();
        let (backend_rows, run_rows, sample_rows) = store.replay_rows(from, to).await?;
        let backend_index: HashMap<i64, usize> =
            backend_rows.iter().enumerate().map(|(i, (id, _))| (*id, i)).collect();
        let mut run_index: HashMap<i64, u32> = HashMap::with_capacity(run_rows.len());
        let mut runs = Vec::with_capacity(run_rows.len());
        for (id, job, build_id, url, started, finished, variant_id) in run_rows {
            let Some(&variant) = variant_index.get(&variant_id) else { continue };
            run_index.insert(id, runs.len() as u32);
            runs.push(RunMeta {
                job,
                build_id,
                url,
                started,
                finished: finished.unwrap_or(started),
                variant,
            });
        }
        let mut cells: BTreeMap<(usize, usize), Series> = BTreeMap::new();
        for (run_id, backend_id, seconds) in sample_rows {
            let (Some(&run), Some(&backend)) = (run_index.get(&run_id), backend_index.get(&backend_id))
            else {
                continue;
            };
            let meta = &runs[run as usize];
            let series = cells.entry((backend, meta.variant)).or_default();
            series.points.push(Point { started: meta.started, finished: meta.finished, seconds, run });
            let day = series.days.entry(meta.started.div_euclid(DAY)).or_default();
            day.histogram.add(seconds, 1);
            day.finished_by = day.finished_by.max(meta.finished);
        }
        for s in cells.values_mut() {
            s.points.sort_by_key(|p| (p.started, p.run));
        }
        let historical = store.historical_thresholds().await?;
        Ok(Replay {
            store,
            backends: backend_rows.into_iter().map(|(_, n)| n).collect(),
            variants,
            runs,
            cells,
            historical,
        })
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
    async fn windows(
        &self,
        current: (i64, i64),
        baseline: (i64, i64),
        visible_at: i64,
    ) -> Result<WindowData> {
        let mut cells = Vec::new();
        for (&(backend, variant), s) in &self.cells {
            let c = s.histogram(current.0, current.1, visible_at);
            let b = s.histogram(baseline.0, baseline.1, visible_at);
            if !c.is_empty() || !b.is_empty() {
                cells.push(CellHistograms { backend, variant, current: c, baseline: b });
            }
        }
        Ok(WindowData {
            backends: self.backends.clone(),
            variants: self.variants.iter().map(|(_, d)| d.clone()).collect(),
            variant_ids: self.variants.iter().map(|(id, _)| *id).collect(),
            cells,
        })
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
            let start = s.points.partition_point(|p| p.started < range.0);
            for p in s.points[start..].iter().take_while(|p| p.started < range.1) {
                if p.finished > visible_at {
                    continue;
                }
                let meta = &self.runs[p.run as usize];
                out.push(CellRun {
                    backend: self.backends[b].clone(),
                    variant_id: self.variants[v].0,
                    started: p.started,
                    seconds: p.seconds,
                    job: meta.job.clone(),
                    build_id: meta.build_id.clone(),
                    url: meta.url.clone(),
                });
            }
        }
        out.sort_by(|a, b| {
            (a.started, &a.job, &a.build_id, &a.backend).cmp(&(b.started, &b.job, &b.build_id, &b.backend))
        });
        Ok(out)
    }

    async fn run(&self, job: &str, build_id: &str) -> Result<Option<RunRecord>> {
        self.store.run(job, build_id).await
    }

    async fn historical(&self) -> Result<Vec<HistoricalRow>> {
        Ok(self.historical.clone())
    }

    async fn first_seen(&self, visible_at: i64) -> Result<HashMap<String, i64>> {
        let mut first: HashMap<String, i64> = HashMap::new();
        for r in self.runs.iter().filter(|r| r.finished <= visible_at) {
            let e = first.entry(self.variants[r.variant].1.release.clone()).or_insert(r.started);
            *e = (*e).min(r.started);
        }
        Ok(first)
    }

    async fn jobs_of_variants(&self, variant_ids: &[i64], window: (i64, i64)) -> Result<Vec<(String, i64)>> {
        let mut jobs: BTreeMap<String, i64> = BTreeMap::new();
        for r in self.runs.iter().filter(|r| r.started >= window.0 && r.started < window.1) {
            if variant_ids.contains(&self.variants[r.variant].0) {
                *jobs.entry(r.job.clone()).or_default() += 1;
            }
        }
        Ok(jobs.into_iter().collect())
    }

    async fn weekly(&self, report: &RegressionReport, window_days: i64, at: i64) -> Result<Vec<Option<f64>>> {
        let Some(q) = weekly_query(report, window_days) else { return Ok(Vec::new()) };
        let p = if matches!(report.percentile, Percentile::P50 | Percentile::P75) { 0.5 } else { 0.95 };
        let today = at.div_euclid(DAY) + 1;
        let series: Vec<&Series> = self
            .cells
            .iter()
            .filter(|((b, v), _)| {
                self.backends[*b] == q.backend
                    && q.filters.iter().all(|(d, glob)| glob_match(glob, self.variants[*v].1.get(*d)))
            })
            .map(|(_, s)| s)
            .collect();
        Ok((0..8)
            .rev()
            .map(|w| {
                let end = (today - w * 7) * DAY;
                let mut h = Histogram::new();
                for s in &series {
                    h.merge(&s.histogram(end - 7 * DAY, end, at));
                }
                h.percentile(p)
            })
            .collect())
    }
}
