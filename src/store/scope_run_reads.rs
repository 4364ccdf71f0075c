//! The runs of a few cells one by one (a regression's backend over its scope's variants): what
//! a cycle describes every regression and follows every open incident from. `sheriff serve`
//! keeps them in memory from one cycle to the next (`crate::application::warm`).

use std::collections::HashMap;
use std::sync::Arc;

use super::cells::Cells;
use super::{Result, row_by_position, sql};
use crate::model::CellRun;

/// A stored run of a cell, with its id and when it became visible.
#[derive(Debug, Clone)]
pub(crate) struct StoredCellRun {
    pub id: i64,
    /// When the run became visible: finished, else started (Unix seconds).
    pub visible: i64,
    pub run: CellRun,
}

/// The runs of some backends in some variants started in `[from, to)` (and, with `visible_at`,
/// finished by then): `SELECT`, the placeholders' values, then the order.
const SELECT_RUNS: &str = "SELECT r.id, COALESCE(r.finished_at, r.started_at), b.name, r.variant_id, \
    r.started_at, s.seconds, r.job_name, r.build_id, r.url, r.payload \
    FROM samples s JOIN job_runs r ON r.id = s.run_id JOIN backends b ON b.id = s.backend_id \
    WHERE r.started_at >= $1 AND r.started_at < $2 AND r.ci_trouble IS NULL AND b.name IN (";

/// One sample of a run, as [`SELECT_RUNS`] reads it.
struct RunRow {
    id: i64,
    /// When the run became visible: finished, else started (Unix seconds).
    visible: i64,
    backend: String,
    variant_id: i64,
    /// Unix seconds.
    started: i64,
    seconds: i64,
    job: String,
    build_id: String,
    url: String,
    payload: String,
}
row_by_position!(RunRow {
    id,
    visible,
    backend,
    variant_id,
    started,
    seconds,
    job,
    build_id,
    url,
    payload
});

impl Cells<'_> {
    /// The runs of some backends in some variants that started in `range` and finished by
    /// `visible_at`, by start (then run, then backend).
    pub async fn cell_runs(
        self,
        backends: &[String],
        variant_ids: &[i64],
        range: (i64, i64),
        visible_at: i64,
    ) -> Result<Vec<CellRun>> {
        if backends.is_empty() || variant_ids.is_empty() || range.0 >= range.1 {
            return Ok(Vec::new());
        }
        let rows = self
            .read_cell_runs(backends, variant_ids, range, Some(visible_at))
            .await?;
        Ok(rows.into_iter().map(|r| r.run).collect())
    }

    /// The runs of `backends` in `variants` started in `range` (and finished by `visible_at`,
    /// when given), with their ids and visible times, by start, then run, then backend.
    pub(crate) async fn read_cell_runs(
        self,
        backends: &[String],
        variants: &[i64],
        range: (i64, i64),
        visible_at: Option<i64>,
    ) -> Result<Vec<StoredCellRun>> {
        let mut q = sql(SELECT_RUNS)
            .bind(range.0)
            .bind(range.1)
            .list(backends.iter().map(String::as_str))
            .push(") AND r.variant_id IN (")
            .list(variants.iter().copied())
            .push(")");

        if let Some(visible_at) = visible_at {
            q = q
                .push(" AND COALESCE(r.finished_at, r.started_at) <= ")
                .list([visible_at]);
        }

        let rows: Vec<RunRow> = self.store.fetch_all(q).await?;
        // Backend names are few: each one string, shared by its rows.
        let mut names: HashMap<String, Arc<str>> = HashMap::new();
        let mut runs: Vec<StoredCellRun> = rows
            .into_iter()
            .map(|row: RunRow| {
                let backend = names
                    .entry(row.backend)
                    .or_insert_with_key(|b| Arc::from(b.as_str()))
                    .clone();
                let run = CellRun {
                    backend,
                    variant_id: row.variant_id,
                    started: row.started,
                    seconds: row.seconds,
                    job: row.job.into(),
                    build_id: row.build_id.into(),
                    url: row.url.into(),
                    payload_at: crate::model::payload_time(&row.payload).map(|t| t.timestamp()),
                    payload: row.payload.into(),
                };
                StoredCellRun {
                    id: row.id,
                    visible: row.visible,
                    run,
                }
            })
            .collect();

        by_start(&mut runs);
        Ok(runs)
    }
}

/// By start, then run, then backend name (ordered here, the same on both engines whatever
/// their collation).
pub(crate) fn by_start(rows: &mut [StoredCellRun]) {
    rows.sort_unstable_by(|a, b| {
        (a.run.started, a.id, &a.run.backend).cmp(&(b.run.started, b.id, &b.run.backend))
    });
}
