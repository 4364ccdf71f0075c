//! Keeping regressions out of references: the runs of an incident's episodes (from its onset
//! to its recovery, or to now while it is open) never count in the baseline of any cell they
//! cover, and a recovered episode's runs no longer count in the current window either.
//!
//! A covered cell's baseline is then the `baseline_days` before its window that are free of
//! episodes, walking back past them: for a regression that is still open, the days before its
//! onset, however long it lasts (up to `reference_lookback_days`). Its current window is the
//! usual one, less any recovered episode, so a fixed regression's old runs neither reopen it
//! nor raise the bar for the next one. Covered cells are few (an incident's scope), so their
//! histograms are rebuilt from their runs, to the second.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::Window;
use super::error::Result;
use super::source::{CellRun, RunSource};
use crate::domain::evaluate::CellHistograms;
use crate::domain::incidents::Incident;
use crate::model::{Dimensions, Histogram, Scope, backend_family};
use crate::store::evaluations::WindowData;

/// A period whose runs a cycle treats apart: one episode of one incident, over the cells of its
/// family's backends inside its scope.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Mask {
    pub incident: i64,
    pub family: String,
    pub scope: Scope,
    /// The onset interval's start: the reference ends before any candidate onset.
    pub from: i64,
    /// The recovery; None while the episode goes on.
    pub to: Option<i64>,
}

impl Mask {
    fn covers(&self, backend: &str, dims: &Dimensions) -> bool {
        backend_family(backend) == self.family && self.scope.contains(dims)
    }
}

/// The episodes that matter to a cycle at `now`: every open one, and the recovered ones that
/// ended within `horizon` seconds.
pub(super) fn masks(incidents: &[Incident], now: i64, horizon: i64) -> Vec<Mask> {
    let mut out = Vec::new();
    for i in incidents.iter().filter(|i| i.merged_into.is_none()) {
        let last = i.episodes.len().saturating_sub(1);
        for (n, e) in i.episodes.iter().enumerate() {
            let to = e.recovered_at.map(|t| t.timestamp()).or_else(|| {
                // An episode without a recovery is over when its incident was resolved by hand.
                (n < last || !i.state.is_open()).then(|| i.resolved_at.unwrap_or(now))
            });
            if to.is_some_and(|t| t < now - horizon) {
                continue;
            }
            out.push(Mask {
                incident: i.id,
                family: i.snapshot.family.clone(),
                scope: i.snapshot.scope.clone(),
                from: e.onset.earliest.timestamp(),
                to,
            });
        }
    }
    out
}

/// `[from, to)` less `holes` (sorted, may overlap), in order.
fn subtract(from: i64, to: i64, holes: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut start = from;
    for &(a, b) in holes {
        if b <= start || a >= to {
            continue;
        }
        if a > start {
            out.push((start, a.min(to)));
        }
        start = start.max(b);
    }
    if start < to {
        out.push((start, to));
    }
    out
}

/// The periods a covered cell's windows take their runs from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Periods {
    pub current: Vec<(i64, i64)>,
    pub baseline: Vec<(i64, i64)>,
}

impl Periods {
    pub fn earliest(&self) -> i64 {
        self.baseline
            .iter()
            .chain(&self.current)
            .map(|p| p.0)
            .min()
            .unwrap_or(i64::MAX)
    }
}

/// A covered cell's periods: the window less recovered episodes, and the `baseline_secs` free
/// of any episode just before the window, reaching back no further than `oldest`.
pub(super) fn periods(masks: &[&Mask], window: Window, baseline_secs: i64, oldest: i64) -> Periods {
    let (from, to) = window.secs();
    let mut closed: Vec<(i64, i64)> = masks
        .iter()
        .filter_map(|m| m.to.map(|t| (m.from, t)))
        .collect();
    closed.sort_unstable();
    let mut all: Vec<(i64, i64)> = masks
        .iter()
        .map(|m| (m.from, m.to.unwrap_or(i64::MAX)))
        .collect();
    all.sort_unstable();
    let current = subtract(from, to, &closed);
    let mut baseline = Vec::new();
    let mut needed = baseline_secs;
    for (a, b) in subtract(oldest, from, &all).into_iter().rev() {
        if needed <= 0 {
            break;
        }
        let take = (b - a).min(needed);
        baseline.push((b - take, b));
        needed -= take;
    }
    baseline.reverse();
    Periods { current, baseline }
}

/// The runs of the covered cells, by cell (backend, variant id), in start order.
pub(super) type CoveredRuns = HashMap<(String, i64), Vec<CellRun>>;

/// Rebuilds the windows of every cell an episode covers, adding covered cells that had runs
/// only before the usual windows; the covered cells' runs, for the incidents' series.
/// `reference` is how long a baseline is and how far back it may reach (seconds, Unix
/// seconds); `recent` the recent spans' starts.
pub(super) async fn apply(
    source: &impl RunSource,
    data: &mut WindowData,
    masks: &[Mask],
    window: Window,
    reference: (i64, i64),
    recent: &[i64],
    visible_at: i64,
) -> Result<CoveredRuns> {
    let (baseline_secs, oldest) = reference;
    let mut periods_of: BTreeMap<(usize, usize), Periods> = BTreeMap::new();
    let (mut backends, mut variant_ids) = (BTreeSet::new(), BTreeSet::new());
    for (b, backend) in data.backends.iter().enumerate() {
        for (v, dims) in data.variants.iter().enumerate() {
            let covering: Vec<&Mask> = masks.iter().filter(|m| m.covers(backend, dims)).collect();
            if covering.is_empty() {
                continue;
            }
            periods_of.insert((b, v), periods(&covering, window, baseline_secs, oldest));
            backends.insert(backend.clone());
            variant_ids.insert(data.variant_ids[v]);
        }
    }

    let Some(start) = periods_of.values().map(Periods::earliest).min() else {
        return Ok(HashMap::new());
    };

    let backends: Vec<String> = backends.into_iter().collect();
    let variant_ids: Vec<i64> = variant_ids.into_iter().collect();
    let runs = source
        .cell_runs(
            &backends,
            &variant_ids,
            (start, window.to.timestamp()),
            visible_at,
        )
        .await?;

    let mut covered: CoveredRuns = HashMap::new();
    for r in runs {
        covered
            .entry((r.backend.to_string(), r.variant_id))
            .or_default()
            .push(r);
    }

    rebuild(data, &periods_of, &covered, recent);
    Ok(covered)
}

/// Replaces (or adds) each covered cell's histograms with its runs in its periods.
fn rebuild(
    data: &mut WindowData,
    periods_of: &BTreeMap<(usize, usize), Periods>,
    covered: &CoveredRuns,
    recent: &[i64],
) {
    let position: HashMap<(usize, usize), usize> = data
        .cells
        .iter()
        .enumerate()
        .map(|(i, c)| ((c.backend, c.variant), i))
        .collect();

    let inside = |t: i64, ps: &[(i64, i64)]| ps.iter().any(|&(a, b)| a <= t && t < b);
    for (&(b, v), p) in periods_of {
        let runs = covered
            .get(&(data.backends[b].clone(), data.variant_ids[v]))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let (mut current, mut baseline) = (Histogram::new(), Histogram::new());
        let mut spans = vec![Histogram::new(); recent.len()];
        for r in runs {
            if inside(r.started, &p.current) {
                current.add(r.seconds, 1);
                for (k, start) in recent.iter().enumerate() {
                    if r.started >= *start {
                        spans[k].add(r.seconds, 1);
                    }
                }
            } else if inside(r.started, &p.baseline) {
                baseline.add(r.seconds, 1);
            }
        }
        match position.get(&(b, v)) {
            Some(&i) => {
                data.cells[i].current = current;
                data.cells[i].baseline = baseline;
                data.cells[i].recent = spans;
            }
            None if !current.is_empty() || !baseline.is_empty() => {
                data.cells.push(CellHistograms {
                    backend: b,
                    variant: v,
                    current,
                    baseline,
                    recent: spans,
                });
            }
            None => {}
        }
    }

    data.cells.sort_by_key(|c| (c.backend, c.variant));
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::model::DAY;

    fn mask(from: i64, to: Option<i64>) -> Mask {
        Mask {
            incident: 1,
            family: "image-registry".into(),
            scope: Scope::new(),
            from,
            to,
        }
    }

    fn window(to_day: i64) -> Window {
        let t = |d: i64| chrono::DateTime::from_timestamp(d * DAY, 0).unwrap();
        Window {
            from: t(to_day - 7),
            to: t(to_day),
        }
    }

    #[test]
    fn an_open_episode_keeps_the_reference_before_its_onset_however_long_it_lasts() {
        let m = mask(30 * DAY, None);
        let p = periods(&[&m], window(90), 21 * DAY, 0);
        assert_eq!(
            p.current,
            vec![(83 * DAY, 90 * DAY)],
            "the regression is in the current window"
        );
        assert_eq!(
            p.baseline,
            vec![(9 * DAY, 30 * DAY)],
            "the 21 days before the onset"
        );
        // a young regression: the baseline skips its days and reaches back before them
        let m = mask(80 * DAY, None);
        assert_eq!(
            periods(&[&m], window(90), 21 * DAY, 0).baseline,
            vec![(59 * DAY, 80 * DAY)]
        );
        // and never further back than the lookback
        assert_eq!(
            periods(&[&mask(30 * DAY, None)], window(90), 21 * DAY, 20 * DAY).baseline,
            vec![(20 * DAY, 30 * DAY)]
        );
    }

    #[test]
    fn a_recovered_episode_leaves_both_windows() {
        let m = mask(80 * DAY, Some(85 * DAY));
        let p = periods(&[&m], window(90), 21 * DAY, 0);
        assert_eq!(p.current, vec![(85 * DAY, 90 * DAY)]);
        assert_eq!(
            p.baseline,
            vec![(59 * DAY, 80 * DAY)],
            "the regressed days are no reference"
        );
        assert_eq!(
            subtract(0, 10, &[(2, 4), (3, 6), (8, 20)]),
            vec![(0, 2), (6, 8)]
        );
    }
}
