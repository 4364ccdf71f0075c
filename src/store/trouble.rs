//! `job_runs.ci_trouble` and `classification`: which runs had CI-infrastructure trouble, under
//! which rules. A troubled run keeps its samples (the interval evidence and `sheriff incidents
//! show` still read them) but stays out of `cell_days`, so no percentile, test or reference
//! counts it. A change of rules reclassifies every run, in batches, moving each run whose
//! class changed into or out of the histograms; a batch is one transaction, so a crash part way
//! leaves every run consistent and the next start finishes the job.

use std::collections::BTreeSet;

use super::probes::{self, StoredRun};
use super::runs::note_change;
use super::{Result, Store, StoreError, sql};
use crate::model::TroubleRules;

/// Runs reclassified per transaction.
const BATCH: i64 = 2_000;

/// The CI-trouble rules the runs are classified with, and reclassification when they change.
/// Reached through [`Store::trouble`].
#[derive(Clone, Copy)]
pub struct Trouble<'a> {
    pub(super) store: &'a Store,
}

impl Trouble<'_> {
    /// The rules runs are classified with now.
    pub fn rules(self) -> TroubleRules {
        self.store.trouble.lock().expect("rules lock").clone()
    }

    /// The rules the database was last classified with, if any (read at open).
    pub(super) async fn stored(self) -> Result<Option<TroubleRules>> {
        let row: Option<(String,)> = self
            .store
            .fetch_optional(sql("SELECT rules FROM classification WHERE id = 1"))
            .await?;
        let rules = |(json,): (String,)| {
            serde_json::from_str(&json).map_err(|e| {
                StoreError::corrupt(
                    "classification",
                    "the stored CI-trouble rules do not parse",
                    e,
                )
            })
        };
        row.map(rules).transpose()
    }

    /// Classifies runs with `rules` from now on, and reclassifies the stored ones when the
    /// database was classified otherwise (or never): every job's probes are counted again, its
    /// broken ones worked out, and every run classified with them. Returns how many runs changed
    /// class.
    pub async fn apply(self, rules: &TroubleRules) -> Result<u64> {
        *self.store.trouble.lock().expect("rules lock") = rules.clone();
        if self.stored().await?.as_ref() == Some(rules) {
            return Ok(0);
        }

        let broken = {
            let mut tx = self.store.begin_write().await?;
            let broken = probes::rebuild(&mut tx.conn(), rules).await?;
            tx.commit().await?;
            broken
        };

        let none = BTreeSet::new();
        let mut changed = 0;
        let mut after = i64::MIN;
        loop {
            let runs = self.runs_to_classify(after).await?;
            let Some(last) = runs.last().map(|r| r.id) else {
                break;
            };
            let class_of =
                |r: &StoredRun| probes::classify(rules, r, broken.get(&r.job).unwrap_or(&none));
            changed += self.reclassify(&runs, class_of).await?;
            after = last;
        }

        let fingerprint = rules.fingerprint();
        let mut tx = self.store.begin_write().await?;
        let mut c = tx.conn();
        // an upsert, so replicas opening a fresh database together do not collide on the row
        c.execute(
            sql("INSERT INTO classification (id, rules) VALUES (1, $1) \
                 ON CONFLICT (id) DO UPDATE SET rules = excluded.rules")
            .bind(&fingerprint),
        )
        .await?;

        tx.commit().await?;
        if changed > 0 {
            tracing::info!(
                runs = changed,
                "runs reclassified for CI-infrastructure trouble"
            );
        }

        Ok(changed)
    }

    /// The next batch of runs after id `after`, with their samples.
    async fn runs_to_classify(self, after: i64) -> Result<Vec<StoredRun>> {
        let mut pooled = self.store.acquire().await?;
        let mut c = pooled.conn();
        let runs: Vec<StoredRun> = c
            .fetch_all(
                sql(
                    "SELECT id, job_name, variant_id, started_at, ci_trouble FROM job_runs \
                     WHERE id > $1 ORDER BY id LIMIT $2",
                )
                .bind(after)
                .bind(BATCH),
            )
            .await?;
        probes::with_samples(&mut c, runs).await
    }

    /// Reclassifies one batch in one transaction; the runs whose class changed.
    async fn reclassify(
        self,
        runs: &[StoredRun],
        class_of: impl Fn(&StoredRun) -> Option<String>,
    ) -> Result<u64> {
        let mut tx = self.store.begin_write().await?;
        let mut cells_changed = super::cells::ChangedCells::new();
        let changed =
            probes::reclassify_on(&mut tx.conn(), runs, class_of, &mut cells_changed).await?;
        if let Some(first_day) = cells_changed.iter().map(|(_, day)| *day).min() {
            note_change(&mut tx.conn(), first_day, Some(&cells_changed)).await?;
        }
        tx.commit().await?;
        Ok(changed)
    }
}
