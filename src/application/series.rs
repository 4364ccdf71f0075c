//! Day-by-day series of one backend over a set of variants, from the per-day histograms: what
//! the pages chart (P50, P95 and the share of runs disrupted each UTC day), and their JSON.

use std::collections::HashSet;

use crate::store::Result;
use serde::Serialize;

use crate::application::warm::Queries;
use crate::model::{DAY, Histogram};
use crate::store::Store;

/// One UTC day of a series.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DayPoint {
    /// The day's start, Unix seconds.
    pub day: i64,
    pub runs: u64,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    /// Share of the day's runs with any disruption (0–1).
    pub disrupted: Option<f64>,
}

/// A backend's days over some variants.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Series {
    pub backend: String,
    /// What the variants are, in words (`platform=metal network=ovn`).
    pub label: String,
    pub variants: usize,
    pub days: Vec<DayPoint>,
}

/// `backend` over `variants`, one point per UTC day of the `days` days up to `now`'s day.
pub async fn daily(
    store: &Store,
    kept: &Queries,
    backend: &str,
    label: &str,
    variants: &HashSet<i64>,
    days: i64,
    now: i64,
) -> Result<Series> {
    let today = now.div_euclid(DAY) + 1;
    let first = today - days.max(1);
    let stored = kept
        .daily_histograms(store, backend, variants, first..today)
        .await?;
    let empty = Histogram::new();
    let points = (first..today)
        .map(|d| {
            let h = stored.get(&d).unwrap_or(&empty);
            let runs = h.count();
            DayPoint {
                day: d * DAY,
                runs,
                p50: h.percentile(0.5),
                p95: h.percentile(0.95),
                disrupted: (runs > 0).then(|| h.disrupted() as f64 / runs as f64),
            }
        })
        .collect();
    Ok(Series {
        backend: backend.to_string(),
        label: label.to_string(),
        variants: variants.len(),
        days: points,
    })
}
