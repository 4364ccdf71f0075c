//! The windows' per-day histograms kept in memory between cycles (`sheriff serve`), so that a
//! cycle reads from the database only what changed since the one before. The whole days of
//! both windows are kept summed per cell, and cells read again are taken out of the sums and
//! put back, so new runs cost the rows of their variants' days. The partial days at the
//! windows' edges come from that day's samples, read once per version of the day. How they
//! stay exact: [`super`].

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use crate::store::Result;
// Keyed by cell, tens of thousands of entries, looked up at every change: a fast hash.
use foldhash::HashMap as FastMap;

use crate::model::{DAY, Histogram};
use crate::store::Store;
use crate::store::evaluations::WindowData;
use crate::store::window_reads::{CellId, CellWindow, Day, EdgeSample, WindowDays};

/// The windows' day histograms, kept from one cycle to the next.
#[derive(Debug, Default)]
pub struct Windows {
    /// Held by the cycle that brings it up to date and reads it.
    cache: tokio::sync::Mutex<WindowCache>,
}

/// Per cell, its windows' histograms, as read from the cache.
type CellWindows = Vec<(CellId, CellWindow)>;

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
        let mut sums = Sums {
            current,
            baseline,
            cells: FastMap::default(),
        };
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
            let window = if current {
                &mut sum.current
            } else {
                &mut sum.baseline
            };
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
struct WindowCache {
    version: Option<i64>,
    /// Days (whole, edge, or some variants of one) read from the database so far.
    days_read: u64,
    days: BTreeMap<i64, Day>,
    sums: Option<Sums>,
    edges: BTreeMap<i64, Arc<Vec<EdgeSample>>>,
}

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
            let Some(kept) = self.days.get_mut(day) else {
                return false;
            };
            variants.sort_unstable();
            variants.dedup();
            let (gone, stay): (Vec<_>, Vec<_>) = Arc::make_mut(kept)
                .drain(..)
                .partition(|((_, v), _)| variants.binary_search(v).is_ok());
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

impl Windows {
    /// Days read from the database so far (0 while a cycle is reading them).
    pub fn days_read(&self) -> u64 {
        self.cache.try_lock().map_or(0, |c| c.days_read)
    }

    /// What `store.evaluations().window_data(…)` reads, from the days kept
    /// here brought up to date.
    pub async fn window_data(
        &self,
        store: &Store,
        current: (i64, i64),
        baseline: (i64, i64),
        recent: &[i64],
        visible_at: i64,
    ) -> Result<WindowData> {
        let frame = store.evaluations().window_frame().await?;
        let want = WindowDays::new(current, baseline, recent, visible_at);
        let by_id = self.cell_windows(store, &want).await?;
        let list = by_id
            .into_iter()
            .filter_map(|((b, v), h)| Some((frame.cell(b, v)?, h)))
            .collect();
        store
            .evaluations()
            .window_data_of(frame, list, current, visible_at)
            .await
    }

    /// Each cell's histograms of the windows in `want`, from the cache brought up to date.
    async fn cell_windows(&self, store: &Store, want: &WindowDays) -> Result<CellWindows> {
        let mut cache = self.cache.lock().await;
        // The version before the rows: what is read is at least as new as the version kept.
        let version = store.cells().data_version().await?;
        // Days kept but for some variants, whose rows are read again.
        let mut partial = BTreeMap::new();
        match cache.version {
            Some(v) if v == version => {}
            Some(v) => match store.cells().changes_listed(v, version).await? {
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
        let sums_fit = cache
            .sums
            .as_ref()
            .is_some_and(|s| s.current == want.current && s.baseline == want.baseline);

        if !sums_fit {
            cache.sums = None;
        }

        for (day, cells) in store.cells().read_missing_days(&cache.days, lo..hi).await? {
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
            let fresh = store.cells().read_variant_day(day, &variants).await?;
            cache.days_read += 1;
            if let Some(sums) = cache.sums.as_mut() {
                sums.change(day, &fresh, true);
            }
            if let Some(kept) = cache.days.get_mut(&day) {
                Arc::make_mut(kept).extend(fresh);
            }
        }

        if cache.sums.is_none() {
            cache.sums = Some(Sums::new(
                want.current.clone(),
                want.baseline.clone(),
                &cache.days,
            ));
        }

        for day in edge_days {
            if let std::collections::btree_map::Entry::Vacant(slot) = cache.edges.entry(day) {
                slot.insert(Arc::new(store.cells().read_day_samples(day).await?));
                cache.days_read += 1;
            }
        }

        cache.version = Some(version);
        Ok(windows_of(&cache, want))
    }
}

/// The windows' histograms of every cell: the sums of the whole days, and the edge samples;
/// the recent spans from their days' samples.
fn windows_of(cache: &WindowCache, want: &WindowDays) -> CellWindows {
    let sums = cache.sums.iter().flat_map(|s| s.cells.iter());
    let mut out: CellWindows = Vec::with_capacity(cache.sums.as_ref().map_or(0, |s| s.cells.len()));
    let spans = want.recent.len();
    out.extend(sums.map(|(id, s)| {
        let recent = vec![Histogram::new(); spans];
        (
            *id,
            CellWindow {
                current: s.current.clone(),
                baseline: s.baseline.clone(),
                recent,
            },
        )
    }));

    let mut cells = WindowSlots {
        out,
        at: None,
        spans,
    };
    add_edge_samples(&mut cells, cache, want);
    add_recent_samples(&mut cells, cache, want);
    cells.out
}

/// The cells' windows being built, each found by its id.
struct WindowSlots {
    out: CellWindows,
    /// Each cell's position in `out`, made when first needed.
    at: Option<FastMap<CellId, usize>>,
    /// How many recent spans a window has.
    spans: usize,
}

impl WindowSlots {
    /// The window of cell `id`, added empty when it has none yet.
    fn of(&mut self, id: CellId) -> &mut CellWindow {
        let out = &mut self.out;
        let at = self.at.get_or_insert_with(|| {
            out.iter()
                .enumerate()
                .map(|(i, (id, _))| (*id, i))
                .collect()
        });
        let spans = self.spans;
        let i = *at.entry(id).or_insert_with(|| {
            out.push((
                id,
                CellWindow {
                    recent: vec![Histogram::new(); spans],
                    ..Default::default()
                },
            ));
            out.len() - 1
        });
        &mut out[i].1
    }
}

/// Adds the samples of the windows' partial edge days to the current or the baseline window.
fn add_edge_samples(cells: &mut WindowSlots, cache: &WindowCache, want: &WindowDays) {
    for &(span, is_current) in &want.edges {
        for s in samples_seen(cache, span, want.visible_at) {
            let entry = cells.of((s.backend_id, s.variant_id));
            if is_current {
                entry.current.add(s.seconds, 1)
            } else {
                entry.baseline.add(s.seconds, 1)
            }
        }
    }
}

/// Adds the samples of the recent spans' days to each span they started in.
fn add_recent_samples(cells: &mut WindowSlots, cache: &WindowCache, want: &WindowDays) {
    let Some(&first) = want.recent.iter().min() else {
        return;
    };
    for s in samples_seen(cache, (first, want.recent_to), want.visible_at) {
        let entry = cells.of((s.backend_id, s.variant_id));
        for (k, start) in want.recent.iter().enumerate() {
            if s.started >= *start {
                entry.recent[k].add(s.seconds, 1);
            }
        }
    }
}

/// The cached samples of runs started in `[from, to)` and visible by `visible_at`, from the
/// days of that span (an edge's is one: [`WindowDays`] keeps each within its day).
fn samples_seen(
    cache: &WindowCache,
    (from, to): (i64, i64),
    visible_at: i64,
) -> impl Iterator<Item = &EdgeSample> {
    (from.div_euclid(DAY)..=(to - 1).div_euclid(DAY))
        .filter_map(|day| cache.edges.get(&day))
        .flat_map(|samples| samples.iter())
        .filter(move |s| s.started >= from && s.started < to && s.visible <= visible_at)
}
