//! The windows' per-day histograms kept in memory between cycles (`sheriff serve`), so that a
//! cycle reads from the database only what changed since the one before.
//!
//! Exact whichever process writes: every transaction that changes stored runs bumps
//! `data_version` last and records the first day it changed and, mostly, the variant-days it
//! changed (`data_changes`, see `runs.rs`). A cycle reads the version first; when the changes
//! since list their variant-days it drops those cells and reads them again, else it drops the
//! days from the first changed one on and reads them again; when the changes since its version
//! are not all on record, it reads everything. The whole days of both windows are kept summed
//! per cell, and cells read again are taken out of the sums and put back, so new runs cost the
//! rows of their variants' days. The partial days at the windows' edges come from that day's
//! samples, read once per version of the day.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use anyhow::Result;
// Keyed by cell, tens of thousands of entries, looked up at every change: a fast hash.
use foldhash::HashMap as FastMap;

use super::{Store, row_by_position, sql};
use crate::model::{DAY, Histogram};

/// Days' rows of `cell_days`, one row per day and variant, its cells joined in the database as
/// `backend/runs/histogram|…` (a row costs the driver far more than its bytes). Read in key
/// order on SQLite (one probe per backend × variant), through the `day` index on PostgreSQL.
const DAYS_SQLITE: &str = "SELECT d.day, d.variant_id, \
    group_concat(d.backend_id || '/' || d.runs || '/' || d.hist, '|') \
    FROM backends b CROSS JOIN variants v CROSS JOIN cell_days d \
    WHERE d.backend_id = b.id AND d.variant_id = v.id AND d.day >= $1 AND d.day < $2 \
    GROUP BY d.day, d.variant_id";
const DAYS_POSTGRES: &str = "SELECT day, variant_id, \
    string_agg(backend_id || '/' || runs || '/' || hist, '|') \
    FROM cell_days WHERE day >= $1 AND day < $2 GROUP BY day, variant_id";
/// The same rows of one day for some variants only: the day, then the variants' list follows.
const VARIANT_DAYS_SQLITE: &str = "SELECT d.day, d.variant_id, \
    group_concat(d.backend_id || '/' || d.runs || '/' || d.hist, '|') \
    FROM backends b CROSS JOIN variants v CROSS JOIN cell_days d \
    WHERE d.backend_id = b.id AND d.variant_id = v.id AND d.day = $1 AND v.id IN (";
const VARIANT_DAYS_POSTGRES: &str = "SELECT day, variant_id, \
    string_agg(backend_id || '/' || runs || '/' || hist, '|') \
    FROM cell_days WHERE day = $1 AND variant_id IN (";
const VARIANT_DAYS_END: &str = ") GROUP BY 1, 2";

/// A day's samples of runs not left out for CI trouble, one row per variant:
/// `backend/started/visible/seconds|…` (visible: finished, else started).
const SAMPLES_SQLITE: &str = "SELECT r.variant_id, group_concat(s.backend_id || '/' || r.started_at || '/' \
    || COALESCE(r.finished_at, r.started_at) || '/' || s.seconds, '|') \
    FROM job_runs r JOIN samples s ON s.run_id = r.id \
    WHERE r.started_at >= $1 AND r.started_at < $2 AND r.ci_trouble IS NULL GROUP BY r.variant_id";
const SAMPLES_POSTGRES: &str = "SELECT r.variant_id, string_agg(s.backend_id || '/' || r.started_at || '/' \
    || COALESCE(r.finished_at, r.started_at) || '/' || s.seconds, '|') \
    FROM job_runs r JOIN samples s ON s.run_id = r.id \
    WHERE r.started_at >= $1 AND r.started_at < $2 AND r.ci_trouble IS NULL GROUP BY r.variant_id";

/// One variant's cells of one UTC day, as [`DAYS_SQLITE`] reads them.
struct VariantDay {
    day: i64,
    variant_id: i64,
    /// `backend_id/runs/histogram` of each backend, joined by `|`.
    cells: String,
}
row_by_position!(VariantDay { day, variant_id, cells });

/// (backend id, variant id).
type CellId = (i64, i64);

/// One sample of a day at a window's edge: backend id, variant id, started, visible, seconds.
type EdgeSample = (i64, i64, i64, i64, i64);

/// The whole-day histograms of one UTC day, by cell (every cell with a row that day).
type Day = Arc<Vec<(CellId, Histogram)>>;

/// One cell's whole days of both windows, and how many day rows it has there.
#[derive(Debug, Default, Clone)]
struct CellSum {
    current: Histogram,
    baseline: Histogram,
    rows: u32,
}

/// The sums of the whole days of a current and a baseline range of days.
#[derive(Debug, Default)]
struct Sums {
    current: Range<i64>,
    baseline: Range<i64>,
    cells: FastMap<CellId, CellSum>,
}

impl Sums {
    fn new(current: Range<i64>, baseline: Range<i64>, days: &BTreeMap<i64, Day>) -> Sums {
        let mut sums = Sums { current, baseline, cells: FastMap::default() };
        for (d, cells) in days {
            sums.change(*d, cells, true);
        }
        sums
    }

    /// Adds (or takes out) one day's histograms, if the day is in one of the ranges.
    fn change(&mut self, day: i64, cells: &[(CellId, Histogram)], add: bool) {
        let current = if self.current.contains(&day) {
            true
        } else if self.baseline.contains(&day) {
            false
        } else {
            return;
        };
        for (id, h) in cells {
            let sum = self.cells.entry(*id).or_default();
            let window = if current { &mut sum.current } else { &mut sum.baseline };
            if add {
                window.merge(h);
                sum.rows += 1;
            } else {
                window.subtract(h);
                sum.rows -= 1;
            }
        }
        if !add {
            self.cells.retain(|_, s| s.rows > 0);
        }
    }
}

/// What the cache holds: the days read at `version` (or later), their sums, the edge days'
/// samples.
#[derive(Debug, Default)]
pub(crate) struct WindowCache {
    version: Option<i64>,
    /// Days (whole, edge, or some variants of one) read from the database so far.
    days_read: u64,
    days: BTreeMap<i64, Day>,
    sums: Option<Sums>,
    edges: BTreeMap<i64, Arc<Vec<EdgeSample>>>,
}

/// What a cycle asks of the cache: the whole days of each window and the partial days at their
/// edges (`[from, to)` Unix seconds, each within one day), counting edge runs visible by
/// `visible_at`; and the recent spans `[start, recent_to)` for each of `recent`, from their
/// days' samples.
pub(crate) struct WindowDays {
    pub current: Range<i64>,
    pub baseline: Range<i64>,
    pub edges: Vec<((i64, i64), bool)>,
    pub recent: Vec<i64>,
    pub recent_to: i64,
    pub visible_at: i64,
}

impl WindowDays {
    /// The days whose samples the edges and the recent spans need.
    fn sample_days(&self) -> Vec<i64> {
        let mut days: Vec<i64> = self.edges.iter().map(|((from, _), _)| from.div_euclid(DAY)).collect();
        if let Some(first) = self.recent.iter().min() {
            days.extend(first.div_euclid(DAY)..=(self.recent_to - 1).div_euclid(DAY));
        }
        days.sort_unstable();
        days.dedup();
        days
    }
}

/// One cell's histograms: the current window, the baseline, and each recent span.
#[derive(Debug, Default, Clone)]
pub(crate) struct CellWindow {
    pub current: Histogram,
    pub baseline: Histogram,
    pub recent: Vec<Histogram>,
}

/// Per cell, its windows' histograms, as read from the cache.
pub(crate) type CellWindows = Vec<(CellId, CellWindow)>;

impl WindowCache {
    /// Forgets the listed variant-days (`(variant, day)`): their cells go out of the days and
    /// the sums, and edge days touched go. The days kept that lost cells, with the variants to
    /// read again.
    fn forget_cells(&mut self, cells: &[(i64, i64)]) -> BTreeMap<i64, Vec<i64>> {
        let mut by_day: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for &(variant, day) in cells {
            by_day.entry(day).or_default().push(variant);
        }
        by_day.retain(|day, variants| {
            self.edges.remove(day);
            let Some(kept) = self.days.get_mut(day) else { return false };
            variants.sort_unstable();
            variants.dedup();
            let (gone, stay): (Vec<_>, Vec<_>) =
                Arc::make_mut(kept).drain(..).partition(|((_, v), _)| variants.binary_search(v).is_ok());
            if let Some(sums) = self.sums.as_mut() {
                sums.change(*day, &gone, false);
            }
            *kept = Arc::new(stay);
            true
        });
        by_day
    }

    /// Forgets what changed from `first` on (everything when `None`).
    fn forget_from(&mut self, first: Option<i64>) {
        let first = first.unwrap_or(i64::MIN);
        let stale: Vec<i64> = self.days.range(first..).map(|(d, _)| *d).collect();
        for d in stale {
            if let (Some(cells), Some(sums)) = (self.days.remove(&d), self.sums.as_mut()) {
                sums.change(d, &cells, false);
            }
        }
        self.edges.retain(|d, _| *d < first);
    }
}

impl Store {
    /// Keeps the windows' day histograms in memory between cycles (what `sheriff serve` does),
    /// and the runs of the scopes the cycles describe: a cycle then reads only what changed
    /// since the last one.
    pub fn keep_windows_in_memory(&self) {
        let mut cache = self.window_cache.lock().expect("cache lock");
        if cache.is_none() {
            *cache = Some(Arc::new(tokio::sync::Mutex::new(WindowCache::default())));
        }
        self.scope_runs.lock().expect("cache lock").get_or_insert_with(Default::default);
    }

    /// Days the windows kept in memory have read from the database so far (0 when not kept, or
    /// while a cycle is reading them).
    pub fn window_days_read(&self) -> u64 {
        self.window_cache().map_or(0, |c| c.try_lock().map_or(0, |c| c.days_read))
    }

    /// The cache, when windows are kept in memory.
    pub(crate) fn window_cache(&self) -> Option<Arc<tokio::sync::Mutex<WindowCache>>> {
        self.window_cache.lock().expect("cache lock").clone()
    }

    /// The first day changed by the versions after `since` up to `version`, when every one of
    /// them is on record (`Ok(None)` when some are not: read everything again).
    pub(crate) async fn first_change_between(&self, since: i64, version: i64) -> Result<Option<i64>> {
        let (first_day, changes): (Option<i64>, i64) = self
            .fetch_one(
                sql("SELECT MIN(first_day), COUNT(*) FROM data_changes WHERE version > $1 AND version <= $2")
                    .bind(since)
                    .bind(version),
            )
            .await?;
        Ok(first_day.filter(|_| changes == version - since))
    }

    /// Each cell's histograms of the windows in `want`, from the cache brought up to date.
    pub(crate) async fn cached_windows(
        &self,
        cache: &tokio::sync::Mutex<WindowCache>,
        want: &WindowDays,
    ) -> Result<CellWindows> {
        let mut cache = cache.lock().await;
        // The version before the rows: what is read is at least as new as the version kept.
        let version = self.data_version().await?;
        // Days kept but for some variants, whose rows are read again.
        let mut partial = BTreeMap::new();
        match cache.version {
            Some(v) if v == version => {}
            Some(v) => match self.changes_listed(v, version).await? {
                (_, Some(cells)) => partial = cache.forget_cells(&cells),
                (first, None) => cache.forget_from(first),
            },
            None => cache.forget_from(None),
        }
        // Only the days asked for are kept.
        let ranges = [&want.current, &want.baseline];
        let asked = ranges.iter().filter(|r| !r.is_empty());
        let lo = asked.clone().map(|r| r.start).min().unwrap_or(0);
        let hi = asked.map(|r| r.end).max().unwrap_or(0);
        cache.days.retain(|d, _| (lo..hi).contains(d));
        let edge_days = want.sample_days();
        cache.edges.retain(|d, _| edge_days.contains(d));
        let sums_fit =
            cache.sums.as_ref().is_some_and(|s| s.current == want.current && s.baseline == want.baseline);
        if !sums_fit {
            cache.sums = None;
        }
        for (day, cells) in self.read_missing_days(&cache.days, lo..hi).await? {
            cache.days_read += 1;
            if let Some(sums) = cache.sums.as_mut() {
                sums.change(day, &cells, true);
            }
            cache.days.insert(day, cells);
        }
        for (day, variants) in partial {
            if !cache.days.contains_key(&day) {
                continue;
            }
            let fresh = self.read_variant_day(day, &variants).await?;
            cache.days_read += 1;
            if let Some(sums) = cache.sums.as_mut() {
                sums.change(day, &fresh, true);
            }
            if let Some(kept) = cache.days.get_mut(&day) {
                Arc::make_mut(kept).extend(fresh);
            }
        }
        if cache.sums.is_none() {
            cache.sums = Some(Sums::new(want.current.clone(), want.baseline.clone(), &cache.days));
        }
        for day in edge_days {
            if let std::collections::btree_map::Entry::Vacant(slot) = cache.edges.entry(day) {
                slot.insert(Arc::new(self.read_day_samples(day).await?));
                cache.days_read += 1;
            }
        }
        cache.version = Some(version);
        Ok(windows_of(&cache, want))
    }

    /// The days of `range` not in `days`, read from `cell_days` (a run of consecutive missing
    /// days in one statement).
    async fn read_missing_days(
        &self,
        days: &BTreeMap<i64, Day>,
        range: Range<i64>,
    ) -> Result<Vec<(i64, Day)>> {
        let text = if self.engine() == crate::config::Engine::Postgres { DAYS_POSTGRES } else { DAYS_SQLITE };
        let mut out = Vec::new();
        let mut d = range.start;
        while d < range.end {
            if days.contains_key(&d) {
                d += 1;
                continue;
            }
            let mut end = d + 1;
            while end < range.end && !days.contains_key(&end) {
                end += 1;
            }
            let rows: Vec<VariantDay> = self.fetch_all(sql(text).bind(d).bind(end)).await?;
            let mut by_day: BTreeMap<i64, Vec<(CellId, Histogram)>> =
                (d..end).map(|d| (d, Vec::new())).collect();
            for VariantDay { day, variant_id, cells } in rows {
                decode_day_row(day, variant_id, &cells, by_day.entry(day).or_default())?;
            }
            out.extend(by_day.into_iter().map(|(d, cells)| (d, Arc::new(cells))));
            d = end;
        }
        Ok(out)
    }

    /// The cells of some variants on one day, read from `cell_days`.
    async fn read_variant_day(&self, day: i64, variants: &[i64]) -> Result<Vec<(CellId, Histogram)>> {
        let text = if self.engine() == crate::config::Engine::Postgres {
            VARIANT_DAYS_POSTGRES
        } else {
            VARIANT_DAYS_SQLITE
        };
        let q = sql(text).bind(day).list(variants.iter().copied()).push(VARIANT_DAYS_END);
        let rows: Vec<VariantDay> = self.fetch_all(q).await?;
        let mut out = Vec::new();
        for VariantDay { day, variant_id, cells } in rows {
            decode_day_row(day, variant_id, &cells, &mut out)?;
        }
        Ok(out)
    }

    /// The samples of one UTC day's runs (CI-troubled ones aside).
    async fn read_day_samples(&self, day: i64) -> Result<Vec<EdgeSample>> {
        let text =
            if self.engine() == crate::config::Engine::Postgres { SAMPLES_POSTGRES } else { SAMPLES_SQLITE };
        let rows: Vec<(i64, String)> =
            self.fetch_all(sql(text).bind(day * DAY).bind((day + 1) * DAY)).await?;
        let mut out = Vec::new();
        for (variant_id, samples) in rows {
            for s in samples.split('|') {
                let Some([backend_id, started, visible, seconds]) = four_numbers(s) else {
                    anyhow::bail!("malformed sample `{s}` of variant {variant_id}, day {day}")
                };
                out.push((backend_id, variant_id, started, visible, seconds));
            }
        }
        Ok(out)
    }
}

/// One joined row of a variant's day (`backend/runs/histogram|…`) into its cells.
fn decode_day_row(day: i64, variant_id: i64, cells: &str, out: &mut Vec<(CellId, Histogram)>) -> Result<()> {
    for cell in cells.split('|') {
        let Some((b, (r, hist))) =
            cell.split_once('/').and_then(|(b, rest)| Some((b, rest.split_once('/')?)))
        else {
            anyhow::bail!("malformed day row `{cell}` of variant {variant_id}, day {day}")
        };
        let (backend_id, runs) = (number(b, cell)?, number(r, cell)?);
        let h = Histogram::decode(hist)?.with_zeros(runs.max(0) as u64);
        out.push(((backend_id, variant_id), h));
    }
    Ok(())
}

/// An integer of a joined row.
fn number(text: &str, within: &str) -> Result<i64> {
    text.parse().map_err(|_| anyhow::anyhow!("`{text}` is not a number in `{within}`"))
}

/// `a/b/c/d`, four integers and nothing more.
fn four_numbers(text: &str) -> Option<[i64; 4]> {
    let mut fields = text.split('/').map(|n| n.parse::<i64>().ok());
    let numbers = [fields.next()??, fields.next()??, fields.next()??, fields.next()??];
    fields.next().is_none().then_some(numbers)
}

/// The windows' histograms of every cell: the sums of the whole days, and the edge samples;
/// the recent spans from their days' samples.
fn windows_of(cache: &WindowCache, want: &WindowDays) -> CellWindows {
    let sums = cache.sums.iter().flat_map(|s| s.cells.iter());
    let mut out: CellWindows = Vec::with_capacity(cache.sums.as_ref().map_or(0, |s| s.cells.len()));
    let spans = want.recent.len();
    out.extend(sums.map(|(id, s)| {
        let recent = vec![Histogram::new(); spans];
        (*id, CellWindow { current: s.current.clone(), baseline: s.baseline.clone(), recent })
    }));
    let mut at: Option<FastMap<CellId, usize>> = None;
    let mut slot = |out: &mut CellWindows, id: CellId| -> usize {
        let at = at.get_or_insert_with(|| out.iter().enumerate().map(|(i, (id, _))| (*id, i)).collect());
        *at.entry(id).or_insert_with(|| {
            out.push((id, CellWindow { recent: vec![Histogram::new(); spans], ..Default::default() }));
            out.len() - 1
        })
    };
    for &((from, to), is_current) in &want.edges {
        let Some(samples) = cache.edges.get(&from.div_euclid(DAY)) else { continue };
        for &(backend_id, variant_id, started, visible, seconds) in samples.iter() {
            if started < from || started >= to || visible > want.visible_at {
                continue;
            }
            let i = slot(&mut out, (backend_id, variant_id));
            let entry = &mut out[i].1;
            if is_current { entry.current.add(seconds, 1) } else { entry.baseline.add(seconds, 1) }
        }
    }
    let Some(&first) = want.recent.iter().min() else { return out };
    for day in first.div_euclid(DAY)..=(want.recent_to - 1).div_euclid(DAY) {
        let Some(samples) = cache.edges.get(&day) else { continue };
        for &(backend_id, variant_id, started, visible, seconds) in samples.iter() {
            if started < first || started >= want.recent_to || visible > want.visible_at {
                continue;
            }
            let i = slot(&mut out, (backend_id, variant_id));
            let entry = &mut out[i].1;
            for (k, start) in want.recent.iter().enumerate() {
                if started >= *start {
                    entry.recent[k].add(seconds, 1);
                }
            }
        }
    }
    out
}
