//! Pruning what is older than the retention settings keep: runs with their samples (and the
//! per-day cell histograms of their days), and interval evidence sooner. The runs an open
//! incident names as its sample runs are kept whatever their age. Deletes go in bounded
//! batches, each its own short transaction, so a cycle or an ingest waits at most one batch.

use std::collections::HashSet;

use super::{Result, Store, sql};
use crate::domain::incidents::State;
use crate::model::DAY;

/// What to prune, as of when.
#[derive(Debug, Clone, Copy)]
pub struct Cutoffs {
    /// Runs (and their samples and day histograms) that started before this UTC day go.
    pub runs_before_day: i64,
    /// Interval evidence (outages, condition spans) of runs that started before this UTC day goes.
    pub intervals_before_day: i64,
    /// Runs per delete transaction.
    pub batch: usize,
    /// How far before an open regression's onset its reference may reach (seconds): the runs of
    /// its scope from then on are kept, so its frozen reference stays whole.
    pub reference_lookback: i64,
    /// Incidents resolved within this many seconds still shape references (their episodes).
    pub horizon: i64,
    /// The time the cutoffs are taken at (Unix seconds).
    pub now: i64,
}

impl Cutoffs {
    /// Keeping `[retention]`'s days up to `now` (Unix seconds), and what `[evaluate]`'s
    /// references of incidents need.
    pub fn new(
        now: i64,
        r: &crate::config::RetentionSettings,
        e: &crate::config::EvaluateSettings,
    ) -> Cutoffs {
        let today = now.div_euclid(DAY);
        Cutoffs {
            runs_before_day: today - i64::from(r.samples_days),
            intervals_before_day: today - i64::from(r.intervals_days),
            batch: r.batch_runs.max(1),
            reference_lookback: i64::from(e.reference_lookback_days) * DAY,
            horizon: i64::from(e.window_days + e.baseline_days) * DAY,
            now,
        }
    }
}

/// What a prune deleted (or, dry, would delete).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PruneReport {
    pub runs: u64,
    pub samples: u64,
    pub cell_days: u64,
    /// Runs whose outages and condition spans went (the runs themselves stay).
    pub interval_runs: u64,
    /// Old runs kept because an open incident names them as sample runs.
    pub kept_for_incidents: u64,
    pub batches: u64,
}

/// Pruning old rows in bounded batches. Reached through [`Store::retention`].
#[derive(Clone, Copy)]
pub struct Retention<'a> {
    pub(super) store: &'a Store,
}

impl Retention<'_> {
    /// Prunes to `cutoffs`; with `dry_run`, only counts. See the module's comment.
    pub async fn prune(self, cutoffs: Cutoffs, dry_run: bool) -> Result<PruneReport> {
        let keep = self.incident_runs(&cutoffs).await?;
        let mut report = PruneReport::default();
        if !dry_run {
            self.remember_first_seen().await?;
        }

        // Runs that started before the cutoff, oldest first, but those incidents need.
        let q = sql("SELECT id FROM job_runs WHERE started_at < $1 ORDER BY started_at, id")
            .bind(cutoffs.runs_before_day * DAY);

        let (old_runs, kept) = self.unkept(q, &keep).await?;
        report.kept_for_incidents = kept;
        for batch in old_runs.chunks(cutoffs.batch) {
            report.samples += self.count_in("samples", batch).await?;
            if !dry_run {
                self.delete_runs(batch).await?;
            }
            report.runs += batch.len() as u64;
            report.batches += 1;
            tokio::task::yield_now().await;
        }

        let cutoff_day = cutoffs.runs_before_day;
        let (old_days,): (i64,) = self
            .store
            .fetch_one(sql("SELECT COUNT(*) FROM cell_days WHERE day < $1").bind(cutoff_day))
            .await?;

        report.cell_days = old_days as u64;
        if !dry_run && old_days > 0 {
            self.delete_old_days(cutoff_day, cutoffs.batch).await?;
        }

        if !dry_run {
            // a job's probes are judged on its recent days only: older counts say nothing
            self.store
                .execute(sql("DELETE FROM probe_days WHERE day < $1").bind(cutoff_day))
                .await?;
        }

        let evidence = self
            .runs_with_intervals_before(cutoffs.intervals_before_day * DAY, &keep)
            .await?;

        for batch in evidence.chunks(cutoffs.batch) {
            if !dry_run {
                self.delete_intervals(batch).await?;
            }
            report.interval_runs += batch.len() as u64;
            report.batches += 1;
            tokio::task::yield_now().await;
        }

        if !dry_run && self.store.engine() == crate::config::Engine::Sqlite {
            // Hands the freed pages back to the file system a bounded step at a time (the
            // database is created with auto_vacuum = INCREMENTAL); PostgreSQL's autovacuum
            // does the same on its own.
            self.store
                .execute(sql("PRAGMA incremental_vacuum(10000)"))
                .await?;
        }

        Ok(report)
    }

    /// Records each variant's first run before any is deleted: how old a release is must not
    /// change because its first runs were pruned.
    async fn remember_first_seen(self) -> Result<()> {
        let result: Result<()> = async {
            let mut tx = self.store.begin_write().await?;
            tx.conn()
                .execute(sql(
                    "INSERT INTO variant_first_seen (variant_id, started_at) \
                     SELECT v.id, (SELECT MIN(r.started_at) FROM job_runs r WHERE r.variant_id = v.id) FROM variants v \
                     WHERE NOT EXISTS (SELECT 1 FROM variant_first_seen f WHERE f.variant_id = v.id) \
                     AND EXISTS (SELECT 1 FROM job_runs r WHERE r.variant_id = v.id)",
                ))
                .await?;
            tx.commit().await
        }
        .await;
        self.store.tracked(result)
    }

    /// Ids of the runs incidents still need: an open incident's sample runs, and the runs of
    /// its scope since `reference_lookback` before its onset (the days its frozen reference is
    /// read from); likewise for an incident resolved within `horizon`, whose episodes still
    /// shape references.
    async fn incident_runs(self, cutoffs: &Cutoffs) -> Result<HashSet<i64>> {
        let mut keep = HashSet::new();
        // Only runs older than one of the cutoffs can be pruned, so only those are looked up.
        let until = cutoffs.runs_before_day.max(cutoffs.intervals_before_day) * DAY;
        let variants = self.store.variants().await?;
        for i in self.store.incidents().all().await? {
            let live = i.state != State::Resolved
                || i.resolved_at
                    .is_some_and(|t| t >= cutoffs.now - cutoffs.horizon);
            if !live || i.merged_into.is_some() {
                continue;
            }
            for s in &i.snapshot.report.sample_jobs {
                let id: Option<(i64,)> = self
                    .store
                    .fetch_optional(
                        sql(super::runs::SELECT_RUN_ID)
                            .bind(&s.job)
                            .bind(&s.build_id),
                    )
                    .await?;
                keep.extend(id.map(|(id,)| id));
            }
            let Some(onset) = i
                .episodes
                .iter()
                .map(|e| e.onset.earliest.timestamp())
                .min()
            else {
                continue;
            };
            let scope: Vec<i64> = variants
                .iter()
                .filter(|(_, d)| i.snapshot.scope.contains(d))
                .map(|(id, _)| *id)
                .collect();
            if scope.is_empty() {
                continue;
            }
            let q =
                sql("SELECT id FROM job_runs WHERE started_at >= $1 AND started_at < $2 AND variant_id IN (")
                    .bind(onset - cutoffs.reference_lookback)
                    .bind(until)
                    .list(scope)
                    .push(")");
            let ids: Vec<(i64,)> = self.store.fetch_all(q).await?;
            keep.extend(ids.into_iter().map(|(id,)| id));
        }

        Ok(keep)
    }

    /// The run ids `q` selects, less those in `keep`; and how many were kept.
    async fn unkept(self, q: super::Sql, keep: &HashSet<i64>) -> Result<(Vec<i64>, u64)> {
        let ids: Vec<(i64,)> = self.store.fetch_all(q).await?;
        let (kept, gone): (Vec<i64>, Vec<i64>) = ids
            .into_iter()
            .map(|(id,)| id)
            .partition(|id| keep.contains(id));
        Ok((gone, kept.len() as u64))
    }

    /// Runs that started before `before` and still hold interval evidence (or the place of
    /// files not fetched yet), but those in `keep`.
    async fn runs_with_intervals_before(
        self,
        before: i64,
        keep: &HashSet<i64>,
    ) -> Result<Vec<i64>> {
        let q = sql("SELECT r.id FROM job_runs r WHERE r.started_at < $1 AND (\
                     EXISTS (SELECT 1 FROM outages o WHERE o.run_id = r.id) OR \
                     EXISTS (SELECT 1 FROM condition_spans c WHERE c.run_id = r.id) OR \
                     EXISTS (SELECT 1 FROM timeline_spans t WHERE t.run_id = r.id) OR \
                     EXISTS (SELECT 1 FROM interval_files f WHERE f.run_id = r.id)) ORDER BY r.started_at, r.id")
        .bind(before);
        Ok(self.unkept(q, keep).await?.0)
    }

    async fn count_in(self, table: &str, runs: &[i64]) -> Result<u64> {
        let q = super::Sql::built(format!("SELECT COUNT(*) FROM {table} WHERE run_id IN ("))
            .list(runs.iter().copied())
            .push(")");
        let (n,): (i64,) = self.store.fetch_one(q).await?;
        Ok(n as u64)
    }

    /// Deletes runs (their samples, outages and spans go with them) in one transaction. Their
    /// days are older than any window, so the day histograms are dropped by day instead.
    async fn delete_runs(self, runs: &[i64]) -> Result<()> {
        let result: Result<()> = async {
            let mut tx = self.store.begin_write().await?;
            tx.conn()
                .execute(
                    sql("DELETE FROM job_runs WHERE id IN (")
                        .list(runs.iter().copied())
                        .push(")"),
                )
                .await?;
            super::runs::note_change(&mut tx.conn(), i64::MIN, None).await?;
            tx.commit().await
        }
        .await;
        self.store.tracked(result)
    }

    /// Deletes the day histograms of days before `day`, `batch` cells' worth at a time.
    async fn delete_old_days(self, day: i64, batch: usize) -> Result<()> {
        loop {
            let result: Result<u64> = async {
                let mut tx = self.store.begin_write().await?;
                let q = sql("DELETE FROM cell_days WHERE (backend_id, variant_id, day) IN (\
                             SELECT backend_id, variant_id, day FROM cell_days WHERE day < $1 LIMIT $2)")
                .bind(day)
                .bind(batch as i64);
                let n = tx.conn().execute(q).await?;
                if n > 0 {
                    super::runs::note_change(&mut tx.conn(), i64::MIN, None).await?;
                }
                tx.commit().await?;
                Ok(n)
            }
            .await;
            if self.store.tracked(result)? == 0 {
                return Ok(());
            }
            tokio::task::yield_now().await;
        }
    }

    async fn delete_intervals(self, runs: &[i64]) -> Result<()> {
        let result: Result<()> = async {
            let mut tx = self.store.begin_write().await?;
            // the files not fetched yet go too: old runs' evidence is not fetched any more
            for table in [
                "outages",
                "condition_spans",
                "timeline_spans",
                "interval_files",
            ] {
                let q = super::Sql::built(format!("DELETE FROM {table} WHERE run_id IN ("))
                    .list(runs.iter().copied())
                    .push(")");
                tx.conn().execute(q).await?;
            }
            tx.commit().await
        }
        .await;
        self.store.tracked(result)
    }
}
