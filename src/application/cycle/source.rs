//! What a cycle reads of the stored runs, as they were at the cycle's time: the windows'
//! histograms, the runs of a few cells one by one, a run's interval evidence, the historical
//! table, and when each release was first seen.
//!
//! Two sources implement it: the store read through the process's caches ([`Live`]: a live
//! cycle, or `evaluate --at` in the past), and a replay held in memory (`super::replay`),
//! which `sheriff backtest` moves through time, showing each cycle only the runs that had
//! finished by then. Both fail with the cycle's error ([`super::CycleError`]): the store's, or
//! the replay's own.

use std::collections::HashMap;
use std::future::Future;

use futures::TryFutureExt as _;

use super::error::Result;
use crate::application::warm::Warm;
pub use crate::model::CellRun;
use crate::model::{HistoricalRow, Percentile, RegressionReport, RunRecord};
use crate::store::Store;
use crate::store::evaluations::WindowData;

/// The stored runs as a cycle at `visible_at` may see them.
pub trait RunSource: Sync {
    /// Every cell's histograms of the two windows (`[from, to)` Unix seconds), and of the
    /// recent spans from each start of `recent` to the current window's end.
    fn windows(
        &self,
        current: (i64, i64),
        baseline: (i64, i64),
        recent: &[i64],
        visible_at: i64,
    ) -> impl Future<Output = Result<WindowData>> + Send;

    /// The runs of `backends` in the variants `variant_ids` that started in `range`, by start.
    fn cell_runs(
        &self,
        backends: &[String],
        variant_ids: &[i64],
        range: (i64, i64),
        visible_at: i64,
    ) -> impl Future<Output = Result<Vec<CellRun>>> + Send;

    /// The stored runs among `keys` (job, build id), with their samples and intervals, in no
    /// particular order.
    fn runs(&self, keys: &[(&str, &str)]) -> impl Future<Output = Result<Vec<RunRecord>>> + Send;

    /// The store the runs live in, where interval evidence fetched on demand is kept.
    fn runs_store(&self) -> &Store;

    /// The CI suite's historical table.
    fn historical(&self) -> impl Future<Output = Result<Vec<HistoricalRow>>> + Send;

    /// Each release's first run (Unix seconds).
    fn first_seen(
        &self,
        visible_at: i64,
    ) -> impl Future<Output = Result<HashMap<String, i64>>> + Send;

    /// A report's percentile week by week over its first backend and single-valued scope, the
    /// last eight weeks to `at`, oldest first.
    fn weekly(
        &self,
        report: &RegressionReport,
        window_days: i64,
        at: i64,
    ) -> impl Future<Output = Result<Vec<Option<f64>>>> + Send;

    /// The payloads of a release built in `[from, to]` (Unix seconds) that some run tested, in
    /// build order.
    fn payloads_between(
        &self,
        release: &str,
        from: i64,
        to: i64,
    ) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// The CI network probes broken for the jobs with runs in `window` (each run's class was
    /// worked out with its job's broken probes when it was stored).
    fn broken_probes(
        &self,
        window: (i64, i64),
    ) -> impl Future<Output = Result<Vec<crate::model::BrokenProbe>>> + Send {
        self.runs_store().runs().broken_probes_in(window).err_into()
    }

    /// Jobs whose first stored run falls in `window`: no reference of their own yet.
    fn new_jobs(
        &self,
        window: (i64, i64),
    ) -> impl Future<Output = Result<Vec<crate::model::NewJob>>> + Send {
        self.runs_store().runs().new_jobs_in(window).err_into()
    }

    /// Job names that ran in some variants during a window, with their runs.
    fn jobs_of_variants(
        &self,
        variant_ids: &[i64],
        window: (i64, i64),
    ) -> impl Future<Output = Result<Vec<(String, i64)>>> + Send;
}

/// The stored runs as they are, read through the caches this process keeps: a live cycle, or
/// `evaluate --at` in the past.
pub struct Live<'a> {
    pub store: &'a Store,
    /// The windows, the scopes' runs and the questions' answers kept between cycles.
    pub warm: &'a Warm,
}

impl RunSource for Live<'_> {
    fn runs_store(&self) -> &Store {
        self.store
    }

    async fn windows(
        &self,
        current: (i64, i64),
        baseline: (i64, i64),
        recent: &[i64],
        visible_at: i64,
    ) -> Result<WindowData> {
        match &self.warm.windows {
            Some(kept) => Ok(kept
                .window_data(self.store, current, baseline, recent, visible_at)
                .await?),
            None => Ok(self
                .store
                .evaluations()
                .window_data(current, baseline, recent, visible_at)
                .await?),
        }
    }

    async fn cell_runs(
        &self,
        backends: &[String],
        variant_ids: &[i64],
        range: (i64, i64),
        visible_at: i64,
    ) -> Result<Vec<CellRun>> {
        match &self.warm.scope_runs {
            Some(kept) => Ok(kept
                .cell_runs(self.store, backends, variant_ids, range, visible_at)
                .await?),
            None => Ok(self
                .store
                .cells()
                .cell_runs(backends, variant_ids, range, visible_at)
                .await?),
        }
    }

    async fn runs(&self, keys: &[(&str, &str)]) -> Result<Vec<RunRecord>> {
        Ok(self.store.runs().find(keys).await?)
    }

    async fn historical(&self) -> Result<Vec<HistoricalRow>> {
        Ok(self.store.evaluations().historical_thresholds().await?)
    }

    async fn first_seen(&self, visible_at: i64) -> Result<HashMap<String, i64>> {
        Ok(self
            .store
            .evaluations()
            .release_first_seen(visible_at)
            .await?)
    }

    async fn jobs_of_variants(
        &self,
        variant_ids: &[i64],
        window: (i64, i64),
    ) -> Result<Vec<(String, i64)>> {
        Ok(self
            .store
            .evaluations()
            .jobs_of_variants(variant_ids, window)
            .await?)
    }

    async fn payloads_between(&self, release: &str, from: i64, to: i64) -> Result<Vec<String>> {
        Ok(self
            .store
            .runs()
            .payloads_between(release, from, to)
            .await?)
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
        let settings = crate::config::EvaluateSettings::default();
        let a =
            crate::application::query::answer(self.store, &self.warm.queries, &settings, &q, at)
                .await?;
        Ok(
            if matches!(report.percentile, Percentile::P50 | Percentile::P75) {
                a.weekly_p50
            } else {
                a.weekly_p95
            },
        )
    }
}

/// The question behind a report's weekly trend: its first backend, its single-valued scope.
pub(super) fn weekly_query(
    report: &RegressionReport,
    window_days: i64,
) -> Option<crate::application::query::Query> {
    let backend = report.backends.first()?;
    let filters = report
        .scope
        .iter()
        .filter(|(_, v)| v.len() == 1)
        .filter_map(|(d, v)| Some((d, v.iter().next()?.clone())))
        .collect();
    Some(crate::application::query::Query {
        backend: backend.clone(),
        filters,
        window_days,
    })
}
