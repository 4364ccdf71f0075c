//! `job_runs.ci_trouble` and `classification`: which runs had CI-infrastructure trouble, under
//! which rules. A troubled run keeps its samples (the interval evidence and `sheriff incidents
//! show` still read them) but stays out of `cell_days`, so no percentile, test or reference
//! counts it. A change of rules reclassifies every run, in batches, moving each run whose
//! class changed into or out of the histograms; a batch is one transaction, so a crash part way
//! leaves every run consistent and the next start finishes the job.

use anyhow::{Context, Result};

use super::runs::note_change;
use super::{Store, sql};
use crate::model::TroubleRules;

/// Runs reclassified per transaction.
const BATCH: i64 = 2_000;

/// One stored run's samples, for reclassifying: id, variant, start, class, `(backend id,
/// backend, seconds)`.
type RunSamples = (i64, i64, i64, Option<String>, Vec<(i64, String, i64)>);

impl Store {
    /// The rules the database was last classified with, if any (read at open).
    pub(super) async fn stored_trouble_rules(&self) -> Result<Option<TroubleRules>> {
        let row: Option<(String,)> =
            self.fetch_optional(sql("SELECT rules FROM classification WHERE id = 1")).await?;
        row.map(|(json,)| serde_json::from_str(&json).context("the stored CI-trouble rules do not parse"))
            .transpose()
    }

    /// Classifies runs with `rules` from now on, and reclassifies the stored ones when the
    /// database was classified otherwise (or never). Returns how many runs changed class.
    pub async fn apply_trouble_rules(&self, rules: &TroubleRules) -> Result<u64> {
        *self.trouble.lock().expect("rules lock") = rules.clone();
        if self.stored_trouble_rules().await?.as_ref() == Some(rules) {
            return Ok(0);
        }
        let mut changed = 0;
        let mut after = i64::MIN;
        loop {
            let runs = self.runs_to_classify(after).await?;
            let Some(last) = runs.last().map(|r| r.0) else { break };
            changed += self.reclassify(&runs, rules).await?;
            after = last;
        }
        let fingerprint = rules.fingerprint();
        let mut tx = self.begin_write().await?;
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
            tracing::info!(runs = changed, "runs reclassified for CI-infrastructure trouble");
        }
        Ok(changed)
    }

    /// The next batch of runs after id `after`, with their samples.
    async fn runs_to_classify(&self, after: i64) -> Result<Vec<RunSamples>> {
        let runs: Vec<(i64, i64, i64, Option<String>)> = self
            .fetch_all(
                sql("SELECT id, variant_id, started_at, ci_trouble FROM job_runs WHERE id > $1 ORDER BY id LIMIT $2")
                    .bind(after)
                    .bind(BATCH),
            )
            .await?;
        let (Some(first), Some(last)) = (runs.first(), runs.last()) else { return Ok(Vec::new()) };
        let samples: Vec<(i64, i64, String, i64)> = self
            .fetch_all(
                sql("SELECT s.run_id, s.backend_id, b.name, s.seconds FROM samples s \
                     JOIN backends b ON b.id = s.backend_id WHERE s.run_id >= $1 AND s.run_id <= $2 \
                     ORDER BY s.run_id, s.backend_id")
                .bind(first.0)
                .bind(last.0),
            )
            .await?;
        let mut out: Vec<RunSamples> =
            runs.into_iter().map(|(i, v, s, t)| (i, v, s, t, Vec::new())).collect();
        let mut k = 0;
        for (run_id, backend_id, name, seconds) in samples {
            while k < out.len() && out[k].0 < run_id {
                k += 1;
            }
            if k < out.len() && out[k].0 == run_id {
                out[k].4.push((backend_id, name, seconds));
            }
        }
        Ok(out)
    }

    /// Reclassifies one batch in one transaction; the runs whose class changed.
    async fn reclassify(&self, runs: &[RunSamples], rules: &TroubleRules) -> Result<u64> {
        let mut tx = self.begin_write().await?;
        let mut c = tx.conn();
        let mut changed = 0;
        let mut first_day = i64::MAX;
        let mut cells_changed = super::cells::ChangedCells::new();
        for (id, variant_id, started, old, samples) in runs {
            let new = rules.classify(samples.iter().map(|(_, b, s)| (b.as_str(), *s)));
            if new == *old {
                continue;
            }
            // Only if nobody reclassified it meanwhile (another replica opening the same
            // database with the same new rules): the histograms move once, not twice.
            let moved = c
                .execute(
                    sql("UPDATE job_runs SET ci_trouble = $1 WHERE id = $2 \
                         AND (ci_trouble = $3 OR (ci_trouble IS NULL AND $4 = 1))")
                    .bind(&new)
                    .bind(*id)
                    .bind(old)
                    .bind(old.is_none()),
                )
                .await?;
            if moved == 0 {
                continue;
            }
            if old.is_none() != new.is_none() {
                // into the histograms when it became clean, out of them when it became troubled
                let cells: Vec<(i64, i64)> = samples.iter().map(|(b, _, s)| (*b, *s)).collect();
                let day = started.div_euclid(86_400);
                super::cells::change_samples(
                    &mut c,
                    day,
                    *variant_id,
                    &cells,
                    new.is_none(),
                    &mut cells_changed,
                )
                .await?;
                first_day = first_day.min(day);
            }
            changed += 1;
        }
        if first_day < i64::MAX {
            note_change(&mut c, first_day, Some(&cells_changed)).await?;
        }
        tx.commit().await?;
        Ok(changed)
    }
}
