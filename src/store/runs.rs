//! `job_runs`, `samples`, `outages`, `condition_spans`: writing a run once and reading it back.

use anyhow::{Context, Result};
use sqlx::Row;

use super::{Store, from_secs, to_secs, with_pool};
use crate::model::{ConditionSpan, Dimensions, JobRun, Outage, RunRecord, Sample};

/// What `write_run` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The run was new and is stored.
    Inserted,
    /// The run was already stored and nothing changed.
    AlreadyStored,
    /// The run was stored before and has been replaced (`--force`).
    Replaced,
}

const SELECT_RUN_ID: &str = "SELECT id FROM job_runs WHERE job_name = $1 AND build_id = $2";

const INSERT_RUN: &str = "INSERT INTO job_runs (job_name, build_id, bucket, path, url, job_type, \
    started_at, finished_at, state, variant_id, release, from_release, upgrade_type, platform, \
    architecture, network, network_stack, topology, master_nodes_updated, ingested_at) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20) \
    RETURNING id";

const SELECT_RUN: &str = "SELECT id, job_name, build_id, bucket, path, url, job_type, started_at, \
    finished_at, state, release, from_release, upgrade_type, platform, architecture, network, \
    network_stack, topology, master_nodes_updated FROM job_runs WHERE job_name = $1 AND build_id = $2";

const SELECT_SAMPLES: &str = "SELECT b.name, s.connection, s.seconds FROM samples s \
    JOIN backends b ON b.id = s.backend_id WHERE s.run_id = $1 ORDER BY b.name";

const SELECT_OUTAGES: &str = "SELECT b.name, o.from_at, o.to_at FROM outages o \
    JOIN backends b ON b.id = o.backend_id WHERE o.run_id = $1 ORDER BY o.from_at, b.name, o.to_at";

const SELECT_CONDITIONS: &str = "SELECT operator, condition, status, reason, message, from_at, to_at \
    FROM condition_spans WHERE run_id = $1 ORDER BY from_at, operator, condition, to_at";

/// Changes kept in `data_changes`; a reader further behind than this re-reads everything.
const KEPT_CHANGES: i64 = 100_000;

/// Bumps `data_version` and records the first day whose cells changed. Run last in a
/// transaction that changed runs, so that the counter row is locked only until the commit (and
/// versions commit in order).
macro_rules! note_change {
    ($tx:expr, $first_day:expr) => {{
        let version: i64 = sqlx::query_scalar(
            "UPDATE data_version SET version = version + 1 WHERE id = 1 RETURNING version",
        )
        .fetch_one(&mut *$tx)
        .await?;
        sqlx::query("INSERT INTO data_changes (version, first_day) VALUES ($1, $2)")
            .bind(version)
            .bind($first_day)
            .execute(&mut *$tx)
            .await?;
        if version % 1_000 == 0 {
            sqlx::query("DELETE FROM data_changes WHERE version <= $1")
                .bind(version - KEPT_CHANGES)
                .execute(&mut *$tx)
                .await?;
        }
    }};
}

/// The first day whose cells a write changed: the run's day; anything for a replaced run
/// (its old day is not known here).
fn first_changed_day(record: &RunRecord, outcome: WriteOutcome) -> Option<i64> {
    match outcome {
        WriteOutcome::AlreadyStored => None,
        WriteOutcome::Inserted => Some(record.run.started_at.timestamp().div_euclid(86_400)),
        WriteOutcome::Replaced => Some(i64::MIN),
    }
}

/// Rows per multi-row INSERT: far below both engines' bound-parameter limits.
const BATCH: usize = 500;

/// Writes one prepared run inside an open transaction; `None` when it was already stored.
macro_rules! write_prepared {
    ($tx:ident, $dialect:ident, $prepared:expr, $force:expr, $now:expr) => {{
        let prepared: &PreparedRun<'_> = $prepared;
        let (force, now) = ($force, $now);
        let record = prepared.record;
        let run = &record.run;
        let d = &run.dimensions;
        let (variant_id, backend_ids, outage_backends) = (prepared.variant_id, &prepared.backend_ids, &prepared.outage_backends);
        let dialect = $dialect;
        let existing: Option<i64> = sqlx::query_scalar(SELECT_RUN_ID)
            .bind(&run.job_name)
            .bind(&run.build_id)
            .fetch_optional(&mut *$tx)
            .await?;
        let outcome = match existing {
            Some(_) if !force => None,
            Some(old_id) => {
                super::cells::forget_run!($tx, dialect, old_id);
                sqlx::query("DELETE FROM job_runs WHERE id = $1").bind(old_id).execute(&mut *$tx).await?;
                Some(WriteOutcome::Replaced)
            }
            None => Some(WriteOutcome::Inserted),
        };
        if outcome.is_some() {
            let run_id: i64 = sqlx::query_scalar(INSERT_RUN)
                .bind(&run.job_name)
                .bind(&run.build_id)
                .bind(&run.bucket)
                .bind(&run.path)
                .bind(&run.url)
                .bind(&run.job_type)
                .bind(to_secs(run.started_at))
                .bind(run.finished_at.map(to_secs))
                .bind(&run.state)
                .bind(variant_id)
                .bind(&d.release)
                .bind(&d.from_release)
                .bind(&d.upgrade_type)
                .bind(&d.platform)
                .bind(&d.architecture)
                .bind(&d.network)
                .bind(&d.network_stack)
                .bind(&d.topology)
                .bind(&d.master_nodes_updated)
                .bind(now)
                .fetch_one(&mut *$tx)
                .await?;
            let rows: Vec<(i64, &Sample)> = backend_ids.iter().copied().zip(&record.samples).collect();
            for chunk in rows.chunks(BATCH) {
                let mut q = sqlx::QueryBuilder::new("INSERT INTO samples (run_id, backend_id, connection, seconds) ");
                q.push_values(chunk, |mut b, (backend_id, s)| {
                    b.push_bind(run_id).push_bind(*backend_id).push_bind(&s.connection).push_bind(s.seconds);
                });
                q.build().execute(&mut *$tx).await?;
            }
            let rows: Vec<(i64, &Outage)> = outage_backends.iter().copied().zip(&record.outages).collect();
            for chunk in rows.chunks(BATCH) {
                let mut q = sqlx::QueryBuilder::new("INSERT INTO outages (run_id, backend_id, from_at, to_at) ");
                q.push_values(chunk, |mut b, (backend_id, o)| {
                    b.push_bind(run_id).push_bind(*backend_id).push_bind(to_secs(o.from)).push_bind(to_secs(o.to));
                });
                q.build().execute(&mut *$tx).await?;
            }
            for chunk in record.conditions.chunks(BATCH) {
                let mut q = sqlx::QueryBuilder::new(
                    "INSERT INTO condition_spans (run_id, operator, condition, status, reason, message, from_at, to_at) ",
                );
                q.push_values(chunk, |mut b, c| {
                    b.push_bind(run_id)
                        .push_bind(&c.operator)
                        .push_bind(&c.condition)
                        .push_bind(&c.status)
                        .push_bind(&c.reason)
                        .push_bind(&c.message)
                        .push_bind(to_secs(c.from))
                        .push_bind(to_secs(c.to));
                });
                q.build().execute(&mut *$tx).await?;
            }
            let day = to_secs(run.started_at).div_euclid(86_400);
            let cells: Vec<(i64, i64)> = backend_ids.iter().copied().zip(record.samples.iter().map(|s| s.seconds)).collect();
            super::cells::add_samples!($tx, dialect, day, variant_id, &cells);
        }
        outcome
    }};
}

/// A run with its backend and variant ids resolved (outside the write transaction).
pub(crate) struct PreparedRun<'a> {
    record: &'a RunRecord,
    variant_id: i64,
    backend_ids: Vec<i64>,
    outage_backends: Vec<i64>,
}

impl Store {
    /// Stores a run with its samples and intervals in one transaction. A run already stored
    /// (same job name and build id) is left alone unless `force`, which replaces it; either
    /// way the per-day cell histograms stay exact.
    pub async fn write_run(&self, record: &RunRecord, force: bool) -> Result<WriteOutcome> {
        let prepared = self.prepare(record).await?;
        let now = chrono::Utc::now().timestamp();
        let outcome = with_pool!(self, pool, dialect => {
            let mut tx = pool.begin_with(dialect.begin_write).await?;
            let outcome = write_prepared!(tx, dialect, &prepared, force, now);
            if let Some(first_day) = outcome.and_then(|o| first_changed_day(record, o)) {
                note_change!(tx, first_day);
                tx.commit().await?;
            }
            outcome
        });
        Ok(outcome.unwrap_or(WriteOutcome::AlreadyStored))
    }

    /// Stores many runs in one transaction (bulk loads: benchmarks, backfills). Same rules
    /// as [`Store::write_run`].
    pub async fn write_runs(&self, records: &[RunRecord], force: bool) -> Result<Vec<WriteOutcome>> {
        let mut prepared = Vec::with_capacity(records.len());
        for r in records {
            prepared.push(self.prepare(r).await?);
        }
        let now = chrono::Utc::now().timestamp();
        let outcomes = with_pool!(self, pool, dialect => {
            let mut tx = pool.begin_with(dialect.begin_write).await?;
            let mut outcomes = Vec::with_capacity(prepared.len());
            for p in &prepared {
                outcomes.push(write_prepared!(tx, dialect, p, force, now).unwrap_or(WriteOutcome::AlreadyStored));
            }
            if let Some(first_day) = records.iter().zip(&outcomes).filter_map(|(r, o)| first_changed_day(r, *o)).min() {
                note_change!(tx, first_day);
            }
            tx.commit().await?;
            outcomes
        });
        Ok(outcomes)
    }

    async fn prepare<'a>(&self, record: &'a RunRecord) -> Result<PreparedRun<'a>> {
        let variant_id = self.variant_id(&record.run.dimensions).await?;
        let mut backend_ids = Vec::with_capacity(record.samples.len());
        for s in &record.samples {
            backend_ids.push(self.backend_id(&s.backend).await?);
        }
        let mut outage_backends = Vec::with_capacity(record.outages.len());
        for o in &record.outages {
            outage_backends.push(self.backend_id(&o.backend).await?);
        }
        Ok(PreparedRun { record, variant_id, backend_ids, outage_backends })
    }

    /// Whether a run is stored (ingest uses it to skip runs before reading their files).
    pub async fn has_run(&self, job_name: &str, build_id: &str) -> Result<bool> {
        let id: Option<i64> = with_pool!(self, pool => {
            sqlx::query_scalar(SELECT_RUN_ID).bind(job_name).bind(build_id).fetch_optional(pool).await?
        });
        Ok(id.is_some())
    }

    /// Reads a stored run back with its samples and intervals.
    pub async fn run(&self, job_name: &str, build_id: &str) -> Result<Option<RunRecord>> {
        let record = with_pool!(self, pool => {
            let Some(row) = sqlx::query(SELECT_RUN).bind(job_name).bind(build_id).fetch_optional(pool).await? else {
                return Ok(None);
            };
            let id: i64 = row.try_get("id")?;
            let run = JobRun {
                job_name: row.try_get("job_name")?,
                build_id: row.try_get("build_id")?,
                bucket: row.try_get("bucket")?,
                path: row.try_get("path")?,
                url: row.try_get("url")?,
                job_type: row.try_get("job_type")?,
                started_at: from_secs(row.try_get("started_at")?),
                finished_at: row.try_get::<Option<i64>, _>("finished_at")?.map(from_secs),
                state: row.try_get("state")?,
                dimensions: Dimensions {
                    release: row.try_get("release")?,
                    from_release: row.try_get("from_release")?,
                    upgrade_type: row.try_get("upgrade_type")?,
                    platform: row.try_get("platform")?,
                    architecture: row.try_get("architecture")?,
                    network: row.try_get("network")?,
                    network_stack: row.try_get("network_stack")?,
                    topology: row.try_get("topology")?,
                    master_nodes_updated: row.try_get("master_nodes_updated")?,
                },
            };
            let samples = sqlx::query_as::<_, (String, String, i64)>(SELECT_SAMPLES)
                .bind(id)
                .fetch_all(pool)
                .await?
                .into_iter()
                .map(|(backend, connection, seconds)| Sample { backend, connection, seconds })
                .collect();
            let outages = sqlx::query_as::<_, (String, i64, i64)>(SELECT_OUTAGES)
                .bind(id)
                .fetch_all(pool)
                .await?
                .into_iter()
                .map(|(backend, from, to)| Outage { backend, from: from_secs(from), to: from_secs(to) })
                .collect();
            let conditions = sqlx::query_as::<_, (String, String, String, String, String, i64, i64)>(SELECT_CONDITIONS)
                .bind(id)
                .fetch_all(pool)
                .await?
                .into_iter()
                .map(|(operator, condition, status, reason, message, from, to)| ConditionSpan {
                    operator,
                    condition,
                    status,
                    reason,
                    message,
                    from: from_secs(from),
                    to: from_secs(to),
                })
                .collect();
            RunRecord { run, samples, outages, conditions }
        });
        Ok(Some(record))
    }

    /// Number of stored runs.
    /// The start of each job's newest stored run (data freshness).
    pub async fn newest_run_per_job(&self) -> Result<Vec<(String, i64)>> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as("SELECT job_name, MAX(started_at) FROM job_runs GROUP BY job_name").fetch_all(pool).await?
        }))
    }

    pub async fn count_runs(&self) -> Result<i64> {
        Ok(with_pool!(self, pool => {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM job_runs").fetch_one(pool).await?
        }))
    }

    /// Number of stored samples.
    pub async fn count_samples(&self) -> Result<i64> {
        Ok(with_pool!(self, pool => {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM samples").fetch_one(pool).await?
        }))
    }

    /// The id of a backend name, created on first sight.
    pub(crate) async fn backend_id(&self, name: &str) -> Result<i64> {
        if let Some(id) = self.backend_ids.lock().expect("cache lock").get(name) {
            return Ok(*id);
        }
        let id: i64 = with_pool!(self, pool => {
            sqlx::query_scalar(
                "INSERT INTO backends (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING id",
            )
            .bind(name)
            .fetch_one(pool)
            .await?
        });
        self.backend_ids.lock().expect("cache lock").insert(name.to_string(), id);
        Ok(id)
    }

    /// The id of a combination of dimensions, created on first sight.
    pub(crate) async fn variant_id(&self, d: &Dimensions) -> Result<i64> {
        if let Some(id) = self.variant_ids.lock().expect("cache lock").get(d) {
            return Ok(*id);
        }
        let id: i64 = with_pool!(self, pool => {
            // One statement gets or creates the id; the no-op update makes RETURNING answer
            // for an existing row too (SQLite and PostgreSQL alike).
            sqlx::query_scalar(
                "INSERT INTO variants (release, from_release, upgrade_type, platform, architecture, network, \
                 network_stack, topology, master_nodes_updated) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
                 ON CONFLICT (release, from_release, upgrade_type, platform, architecture, network, network_stack, \
                 topology, master_nodes_updated) DO UPDATE SET release = excluded.release RETURNING id",
            )
            .bind(&d.release)
            .bind(&d.from_release)
            .bind(&d.upgrade_type)
            .bind(&d.platform)
            .bind(&d.architecture)
            .bind(&d.network)
            .bind(&d.network_stack)
            .bind(&d.topology)
            .bind(&d.master_nodes_updated)
            .fetch_one(pool)
            .await
            .context("getting a variant id")?
        });
        self.variant_ids.lock().expect("cache lock").insert(d.clone(), id);
        Ok(id)
    }
}
