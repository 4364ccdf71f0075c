//! The reads of `cell_days` and of a day's samples that the windows kept in memory between
//! cycles make ([`crate::application::warm`]), and the first day changed between two data versions: the
//! rows of whole days (all variants, or some of one day) and the samples of the days at a
//! window's edge.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use super::cells::Cells;
use super::{Result, StoreError, row_by_position, sql};
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
row_by_position!(VariantDay {
    day,
    variant_id,
    cells
});

/// (backend id, variant id).
pub(crate) type CellId = (i64, i64);

/// One sample of a day's runs, as the edges of a window and the recent spans count it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EdgeSample {
    pub backend_id: i64,
    pub variant_id: i64,
    /// The run's start (Unix seconds).
    pub started: i64,
    /// When the run became visible: finished, else started (Unix seconds).
    pub visible: i64,
    pub seconds: i64,
}

/// The whole-day histograms of one UTC day, by cell (every cell with a row that day).
pub(crate) type Day = Arc<Vec<(CellId, Histogram)>>;

/// One cell's histograms: the current window, the baseline, and each recent span.
#[derive(Debug, Default, Clone)]
pub(crate) struct CellWindow {
    pub current: Histogram,
    pub baseline: Histogram,
    pub recent: Vec<Histogram>,
}

/// What a cycle asks of its windows: the whole days of each window and the partial days at their
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
    /// The days of the windows `current` and `baseline` (Unix-second ranges), their edges, and
    /// the recent spans from each start of `recent` to the current window's end.
    pub(crate) fn new(
        current: (i64, i64),
        baseline: (i64, i64),
        recent: &[i64],
        visible_at: i64,
    ) -> WindowDays {
        let (current_days, current_edges) = super::evaluations::split(current.0, current.1);
        let (baseline_days, baseline_edges) = super::evaluations::split(baseline.0, baseline.1);
        // Partial days at the windows' edges: the samples themselves.
        let edges: Vec<((i64, i64), bool)> = current_edges
            .into_iter()
            .map(|e| (e, true))
            .chain(baseline_edges.into_iter().map(|e| (e, false)))
            .collect();
        WindowDays {
            current: current_days,
            baseline: baseline_days,
            edges,
            recent: recent.to_vec(),
            recent_to: current.1,
            visible_at,
        }
    }

    /// The days whose samples the edges and the recent spans need.
    pub(crate) fn sample_days(&self) -> Vec<i64> {
        let mut days: Vec<i64> = self
            .edges
            .iter()
            .map(|((from, _), _)| from.div_euclid(DAY))
            .collect();
        if let Some(first) = self.recent.iter().min() {
            days.extend(first.div_euclid(DAY)..=(self.recent_to - 1).div_euclid(DAY));
        }
        days.sort_unstable();
        days.dedup();
        days
    }
}

impl Cells<'_> {
    /// The first day changed by the versions after `since` up to `version`, when every one of
    /// them is on record (`Ok(None)` when some are not: read everything again).
    pub(crate) async fn first_change_between(
        self,
        since: i64,
        version: i64,
    ) -> Result<Option<i64>> {
        let (first_day, changes): (Option<i64>, i64) = self
            .store
            .fetch_one(
                sql("SELECT MIN(first_day), COUNT(*) FROM data_changes WHERE version > $1 AND version <= $2")
                    .bind(since)
                    .bind(version),
            )
            .await?;
        Ok(first_day.filter(|_| changes == version - since))
    }

    /// The days of `range` not in `days`, read from `cell_days` (a run of consecutive missing
    /// days in one statement).
    pub(crate) async fn read_missing_days(
        self,
        days: &BTreeMap<i64, Day>,
        range: Range<i64>,
    ) -> Result<Vec<(i64, Day)>> {
        let text = if self.store.engine() == crate::config::Engine::Postgres {
            DAYS_POSTGRES
        } else {
            DAYS_SQLITE
        };
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
            let rows: Vec<VariantDay> = self.store.fetch_all(sql(text).bind(d).bind(end)).await?;
            let mut by_day: BTreeMap<i64, Vec<(CellId, Histogram)>> =
                (d..end).map(|d| (d, Vec::new())).collect();
            for VariantDay {
                day,
                variant_id,
                cells,
            } in rows
            {
                decode_day_row(day, variant_id, &cells, by_day.entry(day).or_default())?;
            }
            out.extend(by_day.into_iter().map(|(d, cells)| (d, Arc::new(cells))));
            d = end;
        }
        Ok(out)
    }

    /// The cells of some variants on one day, read from `cell_days`.
    pub(crate) async fn read_variant_day(
        self,
        day: i64,
        variants: &[i64],
    ) -> Result<Vec<(CellId, Histogram)>> {
        let text = if self.store.engine() == crate::config::Engine::Postgres {
            VARIANT_DAYS_POSTGRES
        } else {
            VARIANT_DAYS_SQLITE
        };
        let q = sql(text)
            .bind(day)
            .list(variants.iter().copied())
            .push(VARIANT_DAYS_END);
        let rows: Vec<VariantDay> = self.store.fetch_all(q).await?;
        let mut out = Vec::new();
        for VariantDay {
            day,
            variant_id,
            cells,
        } in rows
        {
            decode_day_row(day, variant_id, &cells, &mut out)?;
        }
        Ok(out)
    }

    /// The samples of one UTC day's runs (CI-troubled ones aside).
    pub(crate) async fn read_day_samples(self, day: i64) -> Result<Vec<EdgeSample>> {
        let text = if self.store.engine() == crate::config::Engine::Postgres {
            SAMPLES_POSTGRES
        } else {
            SAMPLES_SQLITE
        };
        let rows: Vec<(i64, String)> = self
            .store
            .fetch_all(sql(text).bind(day * DAY).bind((day + 1) * DAY))
            .await?;
        let mut out = Vec::new();
        for (variant_id, samples) in rows {
            for s in samples.split('|') {
                let Some([backend_id, started, visible, seconds]) = four_numbers(s) else {
                    let detail =
                        format!("malformed sample `{s}` of variant {variant_id}, day {day}");
                    return Err(StoreError::malformed("samples", detail));
                };
                out.push(EdgeSample {
                    backend_id,
                    variant_id,
                    started,
                    visible,
                    seconds,
                });
            }
        }
        Ok(out)
    }
}

/// One joined row of a variant's day (`backend/runs/histogram|…`) into its cells.
fn decode_day_row(
    day: i64,
    variant_id: i64,
    cells: &str,
    out: &mut Vec<(CellId, Histogram)>,
) -> Result<()> {
    for cell in cells.split('|') {
        let Some((b, (r, hist))) = cell
            .split_once('/')
            .and_then(|(b, rest)| Some((b, rest.split_once('/')?)))
        else {
            let detail = format!("malformed day row `{cell}` of variant {variant_id}, day {day}");
            return Err(StoreError::malformed("cell_days", detail));
        };
        let (backend_id, runs) = (number(b, cell)?, number(r, cell)?);
        let h = Histogram::decode(hist)?.with_zeros(runs.max(0) as u64);
        out.push(((backend_id, variant_id), h));
    }
    Ok(())
}

/// An integer of a joined row.
fn number(text: &str, within: &str) -> Result<i64> {
    text.parse().map_err(|_| {
        StoreError::malformed(
            "cell_days",
            format!("`{text}` is not a number in `{within}`"),
        )
    })
}

/// `a/b/c/d`, four integers and nothing more.
fn four_numbers(text: &str) -> Option<[i64; 4]> {
    let mut fields = text.split('/').map(|n| n.parse::<i64>().ok());
    let numbers = [
        fields.next()??,
        fields.next()??,
        fields.next()??,
        fields.next()??,
    ];
    fields.next().is_none().then_some(numbers)
}

#[cfg(test)]
mod tests {
    use super::{StoreError, decode_day_row};

    #[test]
    fn a_malformed_day_row_is_corrupt_and_says_which() {
        let mut out = Vec::new();
        let e = decode_day_row(20_000, 7, "3/12", &mut out).unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::Corrupt {
                    table: "cell_days",
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "malformed day row `3/12` of variant 7, day 20000"
        );
        let e = decode_day_row(20_000, 7, "x/1/", &mut out).unwrap_err();
        assert_eq!(e.to_string(), "`x` is not a number in `x/1/`");
        assert!(!e.retryable());
    }
}
