//! `interval_files`: the interval evidence of runs ingested on demand, where it is until
//! attribution fetches it, and filling it in once fetched.

use super::runs::Runs;
use super::runs::{Intervals, Minted, SELECT_RUN_ID, insert_intervals};
use super::{Result, sql};
use crate::model::{ConditionSpan, Outage, TimelineSpan};

impl Runs<'_> {
    /// Stores a run's intervals fetched on demand and forgets where its files were, in one
    /// transaction. False when there was nothing left to fill: the run is gone, or another
    /// process filled it first (its intervals are then the ones kept).
    pub async fn fill_intervals(
        self,
        job_name: &str,
        build_id: &str,
        outages: &[Outage],
        conditions: &[ConditionSpan],
        timeline: &[TimelineSpan],
    ) -> Result<bool> {
        let result: Result<bool> = async {
            let mut tx = self.store.begin_write().await?;
            let mut c = tx.conn();
            let Some((run_id,)) = c
                .fetch_optional::<(i64,)>(sql(SELECT_RUN_ID).bind(job_name).bind(build_id))
                .await?
            else {
                tx.rollback().await?;
                return Ok(false);
            };
            if c.execute(sql("DELETE FROM interval_files WHERE run_id = $1").bind(run_id))
                .await?
                == 0
            {
                tx.rollback().await?;
                return Ok(false);
            }
            let mut minted = Minted::default();
            let mut backends = Vec::with_capacity(outages.len());
            for o in outages {
                backends.push(
                    self.store
                        .backend_id(&mut c, &o.backend, &mut minted)
                        .await?,
                );
            }
            insert_intervals(
                &mut c,
                run_id,
                &backends,
                Intervals {
                    outages,
                    conditions,
                    timeline,
                },
            )
            .await?;
            tx.commit().await?;
            self.store.learn(minted);
            Ok(true)
        }
        .await;
        self.store.tracked(result)
    }

    /// Notes a fetch of a run's interval files that failed for a reason that may pass (the
    /// bucket unreachable): the run stays pending, and a later cycle tries again.
    pub async fn interval_fetch_failed(
        self,
        job_name: &str,
        build_id: &str,
        error: &str,
    ) -> Result<()> {
        let q = sql("UPDATE interval_files SET attempts = attempts + 1, last_error = $3 \
                     WHERE run_id = (SELECT id FROM job_runs WHERE job_name = $1 AND build_id = $2)")
        .bind(job_name)
        .bind(build_id)
        .bind(error);
        let result = async {
            let mut tx = self.store.begin_write().await?;
            tx.conn().execute(q).await?;
            tx.commit().await
        }
        .await;
        self.store.tracked(result)
    }

    /// Runs whose interval files wait to be fetched, and how many of those a fetch has failed for.
    pub async fn pending_interval_runs(self) -> Result<(u64, u64)> {
        let (pending, failed): (i64, i64) = self
            .store
            .fetch_one(sql(
                "SELECT COUNT(DISTINCT run_id), COUNT(DISTINCT CASE WHEN attempts > 0 THEN run_id END) \
                            FROM interval_files",
            ))
            .await?;
        Ok((pending as u64, failed as u64))
    }
}
