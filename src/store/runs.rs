//! `job_runs`, `samples`, `outages`, `condition_spans`, `interval_files`: writing a run once,
//! reading it back, and filling in its intervals when they were left to be fetched.

use super::cells::ChangedCells;
use super::{Conn, Result, Sql, Store, StoreError, from_secs, row_by_position, sql, to_secs};
use crate::model::{
    ConditionSpan, DAY, Dimensions, IntervalFile, IntervalRef, JobRun, Outage, RunRecord, Sample,
    SpanKind, TimelineSpan, TroubleRules,
};

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

pub(super) const SELECT_RUN_ID: &str =
    "SELECT id FROM job_runs WHERE job_name = $1 AND build_id = $2";

const INSERT_RUN: &str = "INSERT INTO job_runs (job_name, build_id, bucket, path, url, job_type, \
    started_at, finished_at, state, variant_id, release, from_release, upgrade_type, platform, \
    architecture, network, network_stack, topology, master_nodes_updated, ingested_at, ci_trouble, \
    payload, payload_at, from_payload) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, \
    $22, $23, $24) \
    RETURNING id";

/// Runs by key: ` OR `-joined `(job_name, build_id) = ($k, $k+1)` follow, one index probe each
/// on both engines.
const SELECT_RUNS: &str = "SELECT id, job_name, build_id, bucket, path, url, job_type, started_at, \
    finished_at, state, release, from_release, upgrade_type, platform, architecture, network, \
    network_stack, topology, master_nodes_updated, payload, from_payload FROM job_runs WHERE ";

// What each run holds, for a list of run ids that follows: `…)` then the order.
const SELECT_SAMPLES: &str = "SELECT s.run_id, b.name, s.connection, s.seconds FROM samples s \
    JOIN backends b ON b.id = s.backend_id WHERE s.run_id IN (";
const SAMPLES_ORDER: &str = ") ORDER BY s.run_id, b.name";
const SELECT_OUTAGES: &str = "SELECT o.run_id, b.name, o.from_at, o.to_at FROM outages o \
    JOIN backends b ON b.id = o.backend_id WHERE o.run_id IN (";
const OUTAGES_ORDER: &str = ") ORDER BY o.run_id, o.from_at, b.name, o.to_at";
const SELECT_CONDITIONS: &str = "SELECT run_id, operator, condition, status, reason, message, from_at, to_at \
    FROM condition_spans WHERE run_id IN (";
const CONDITIONS_ORDER: &str = ") ORDER BY run_id, from_at, operator, condition, to_at";
const SELECT_TIMELINE: &str = "SELECT run_id, kind, subject, node, from_at, to_at, file, item \
    FROM timeline_spans WHERE run_id IN (";
const TIMELINE_ORDER: &str = ") ORDER BY run_id, from_at, kind, subject, to_at";
const SELECT_INTERVAL_FILES: &str =
    "SELECT run_id, location, size FROM interval_files WHERE run_id IN (";
const INTERVAL_FILES_ORDER: &str = ") ORDER BY run_id, location";

/// Runs read by one set of statements: a bound on their placeholders.
const RUNS_PER_READ: usize = 200;

/// Changes kept in `data_changes`; a reader further behind than this re-reads everything.
const KEPT_CHANGES: i64 = 100_000;

/// A change listing more variant-days than this records none (readers re-read from its first
/// day, as they would for most of them anyway): bulk loads touch thousands.
const LISTED_CELLS: usize = 4_096;

/// Bumps `data_version` and records the first day whose cells changed and, when known, which
/// variant-days (`cells`). Run last in a transaction that changed runs, so that the counter row
/// is locked only until the commit (and versions commit in order).
pub(super) async fn note_change(
    c: &mut Conn<'_>,
    first_day: i64,
    cells: Option<&ChangedCells>,
) -> Result<()> {
    let version: i64 = c
        .scalar(sql(
            "UPDATE data_version SET version = version + 1 WHERE id = 1 RETURNING version",
        ))
        .await?;
    let listed = match cells {
        Some(cells) if cells.len() <= LISTED_CELLS => {
            Some(serde_json::to_string(cells).map_err(StoreError::Encode)?)
        }
        _ => None,
    };
    c.execute(
        sql("INSERT INTO data_changes (version, first_day, cells) VALUES ($1, $2, $3)")
            .bind(version)
            .bind(first_day)
            .bind(listed),
    )
    .await?;
    if version % 1_000 == 0 {
        c.execute(sql("DELETE FROM data_changes WHERE version <= $1").bind(version - KEPT_CHANGES))
            .await?;
    }
    Ok(())
}

/// The first day whose cells a write changed: the run's day, or an earlier one of its job's
/// runs reclassified with it (`changed`); anything for a replaced run (its old day is not
/// known here).
fn first_changed_day(
    record: &RunRecord,
    outcome: WriteOutcome,
    changed: &ChangedCells,
) -> Option<i64> {
    let earliest = changed
        .iter()
        .map(|(_, day)| *day)
        .min()
        .unwrap_or(i64::MAX);
    match outcome {
        WriteOutcome::AlreadyStored => None,
        WriteOutcome::Inserted => Some(
            record
                .run
                .started_at
                .timestamp()
                .div_euclid(DAY)
                .min(earliest),
        ),
        WriteOutcome::Replaced => Some(i64::MIN),
    }
}

/// Rows per multi-row INSERT: far below both engines' bound-parameter limits.
const BATCH: usize = 500;

/// Writes one prepared run inside an open transaction; `None` when it was already stored. The
/// run is classified here, after its probes are counted into its job's days (its job's broken
/// probes, and so the class of its job's other runs, may change with it). The variant-days
/// whose cells it changed go into `changed`.
async fn write_prepared(
    c: &mut Conn<'_>,
    prepared: &mut PreparedRun<'_>,
    force: bool,
    now: i64,
    rules: &TroubleRules,
    changed: &mut ChangedCells,
) -> Result<Option<WriteOutcome>> {
    let run = &prepared.record.run;
    let day = to_secs(run.started_at).div_euclid(DAY);
    if super::backfills::is_sealed(c, day).await? {
        // a backfill counted the day's runs: stored, this one would count twice
        return Ok(None);
    }

    let existing: Option<(i64,)> = c
        .fetch_optional(sql(SELECT_RUN_ID).bind(&run.job_name).bind(&run.build_id))
        .await?;
    let outcome = match existing {
        Some(_) if !force => return Ok(None),
        Some((old_id,)) => {
            super::cells::forget_run(c, old_id, changed).await?;
            super::probes::forget_probes(c, old_id, rules).await?;
            c.execute(sql("DELETE FROM job_runs WHERE id = $1").bind(old_id))
                .await?;
            WriteOutcome::Replaced
        }
        None => WriteOutcome::Inserted,
    };

    let named = || {
        prepared
            .backend_ids
            .iter()
            .zip(&prepared.record.samples)
            .map(|(id, s)| super::probes::NamedSample {
                backend_id: *id,
                backend: s.backend.as_str(),
                seconds: s.seconds,
            })
    };

    let probes = super::probes::probes_of(rules, named());
    let broken = if probes.is_empty() && outcome == WriteOutcome::Inserted {
        std::collections::BTreeSet::new()
    } else {
        super::probes::count_probes(c, &run.job_name, day, &probes, rules, true).await?;
        super::probes::refresh_job(c, &run.job_name, rules, changed).await?
    };

    let ignored: std::collections::BTreeSet<&str> = named()
        .filter(|s| broken.contains(&s.backend_id))
        .map(|s| s.backend)
        .collect();

    prepared.ci_trouble = rules.classify_with(
        prepared
            .record
            .samples
            .iter()
            .map(|s| (s.backend.as_str(), s.seconds)),
        |b| ignored.contains(b),
    );

    let run_id = insert_run(c, prepared, now).await?;
    insert_details(c, run_id, prepared).await?;
    if prepared.ci_trouble.is_some() {
        return Ok(Some(outcome)); // kept, but out of every histogram
    }

    let cells: Vec<(i64, i64)> = prepared
        .backend_ids
        .iter()
        .copied()
        .zip(prepared.record.samples.iter().map(|s| s.seconds))
        .collect();

    super::cells::change_samples(c, day, prepared.variant_id, &cells, true, changed).await?;
    Ok(Some(outcome))
}

async fn insert_run(c: &mut Conn<'_>, prepared: &PreparedRun<'_>, now: i64) -> Result<i64> {
    let (run, variant_id) = (&prepared.record.run, prepared.variant_id);
    let d = &run.dimensions;
    c.scalar(
        sql(INSERT_RUN)
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
            .bind(&prepared.ci_trouble)
            .bind(&run.payload)
            .bind(crate::model::payload_time(&run.payload).map(to_secs))
            .bind(&run.from_payload),
    )
    .await
}

/// A run's samples, outages and condition spans.
async fn insert_details(c: &mut Conn<'_>, run_id: i64, prepared: &PreparedRun<'_>) -> Result<()> {
    let record = prepared.record;
    let rows: Vec<(i64, &Sample)> = prepared
        .backend_ids
        .iter()
        .copied()
        .zip(&record.samples)
        .collect();

    for chunk in rows.chunks(BATCH) {
        c.execute(
            sql("INSERT INTO samples (run_id, backend_id, connection, seconds)").values(
                chunk,
                |(b, s)| {
                    vec![
                        run_id.into(),
                        (*b).into(),
                        (&s.connection).into(),
                        s.seconds.into(),
                    ]
                },
            ),
        )
        .await?;
    }

    let intervals = Intervals {
        outages: &record.outages,
        conditions: &record.conditions,
        timeline: &record.timeline,
    };

    insert_intervals(c, run_id, &prepared.outage_backends, intervals).await?;
    for chunk in record.interval_files.chunks(BATCH) {
        c.execute(
            sql("INSERT INTO interval_files (run_id, location, size)").values(chunk, |f| {
                vec![
                    run_id.into(),
                    (&f.location).into(),
                    (f.size.min(i64::MAX as u64) as i64).into(),
                ]
            }),
        )
        .await?;
    }

    Ok(())
}

/// What a run's interval files gave, to be written.
pub(super) struct Intervals<'a> {
    pub outages: &'a [Outage],
    pub conditions: &'a [ConditionSpan],
    pub timeline: &'a [TimelineSpan],
}

/// A run's outages (with their backends' ids), condition spans and timeline.
pub(super) async fn insert_intervals(
    c: &mut Conn<'_>,
    run_id: i64,
    outage_backends: &[i64],
    intervals: Intervals<'_>,
) -> Result<()> {
    let Intervals {
        outages,
        conditions,
        timeline,
    } = intervals;

    let rows: Vec<(i64, &Outage)> = outage_backends.iter().copied().zip(outages).collect();
    for chunk in rows.chunks(BATCH) {
        c.execute(
            sql("INSERT INTO outages (run_id, backend_id, from_at, to_at)").values(
                chunk,
                |(b, o)| {
                    vec![
                        run_id.into(),
                        (*b).into(),
                        to_secs(o.from).into(),
                        to_secs(o.to).into(),
                    ]
                },
            ),
        )
        .await?;
    }

    for chunk in conditions.chunks(BATCH) {
        let q = sql("INSERT INTO condition_spans (run_id, operator, condition, status, reason, message, from_at, to_at)")
            .values(chunk, |s| {
                vec![
                    run_id.into(),
                    (&s.operator).into(),
                    (&s.condition).into(),
                    (&s.status).into(),
                    (&s.reason).into(),
                    (&s.message).into(),
                    to_secs(s.from).into(),
                    to_secs(s.to).into(),
                ]
            });
        c.execute(q).await?;
    }

    for chunk in timeline.chunks(BATCH) {
        let q = sql(
            "INSERT INTO timeline_spans (run_id, kind, subject, node, from_at, to_at, file, item)",
        )
        .values(chunk, |t| {
            vec![
                run_id.into(),
                t.kind.as_str().into(),
                (&t.subject).into(),
                (&t.node).into(),
                to_secs(t.from).into(),
                to_secs(t.to).into(),
                (&t.at.file).into(),
                i64::from(t.at.item).into(),
            ]
        });
        c.execute(q).await?;
    }

    Ok(())
}

/// A run with its backend and variant ids resolved (inside the write transaction).
pub(crate) struct PreparedRun<'a> {
    record: &'a RunRecord,
    variant_id: i64,
    backend_ids: Vec<i64>,
    outage_backends: Vec<i64>,
    /// Why the run had CI-infrastructure trouble, if it had (classified as it is written).
    ci_trouble: Option<String>,
}

/// The stored runs (`job_runs`) and what each carries: samples, outages, conditions, interval
/// files and their evidence, the probes that classify them. Reached through [`Store::runs`].
#[derive(Clone, Copy)]
pub struct Runs<'a> {
    pub(super) store: &'a Store,
}

impl Runs<'_> {
    /// Stores a run with its samples and intervals in one transaction. A run already stored
    /// (same job name and build id) is left alone unless `force`, which replaces it; either
    /// way the per-day cell histograms stay exact.
    pub async fn write_run(self, record: &RunRecord, force: bool) -> Result<WriteOutcome> {
        let now = chrono::Utc::now().timestamp();
        let rules = self.store.trouble().rules();
        let mut tx = self.store.begin_write().await?;
        let mut minted = Minted::default();
        let mut prepared = self.prepare(&mut tx.conn(), record, &mut minted).await?;
        let mut changed = ChangedCells::new();
        let outcome = write_prepared(
            &mut tx.conn(),
            &mut prepared,
            force,
            now,
            &rules,
            &mut changed,
        )
        .await?;
        match outcome.and_then(|o| first_changed_day(record, o, &changed)) {
            Some(first_day) => {
                note_change(&mut tx.conn(), first_day, Some(&changed)).await?;
                tx.commit().await?;
                self.store.learn(minted);
            }
            // Nothing changed, so the ids this write minted are not needed (and not kept).
            None => tx.rollback().await?,
        }
        Ok(outcome.unwrap_or(WriteOutcome::AlreadyStored))
    }

    /// Stores many runs in one transaction (bulk loads: benchmarks, backfills). Same rules
    /// as [`Runs::write_run`].
    pub async fn write_runs(self, records: &[RunRecord], force: bool) -> Result<Vec<WriteOutcome>> {
        let result: Result<Vec<WriteOutcome>> = async {
            let now = chrono::Utc::now().timestamp();
            let rules = self.store.trouble().rules();
            let mut tx = self.store.begin_write().await?;
            let mut minted = Minted::default();
            let mut outcomes = Vec::with_capacity(records.len());
            let mut changed = ChangedCells::new();
            for r in records {
                let mut p = self.prepare(&mut tx.conn(), r, &mut minted).await?;
                outcomes.push(
                    write_prepared(&mut tx.conn(), &mut p, force, now, &rules, &mut changed)
                        .await?
                        .unwrap_or(WriteOutcome::AlreadyStored),
                );
            }
            if let Some(first_day) = records
                .iter()
                .zip(&outcomes)
                .filter_map(|(r, o)| first_changed_day(r, *o, &changed))
                .min()
            {
                note_change(&mut tx.conn(), first_day, Some(&changed)).await?;
            }
            tx.commit().await?;
            self.store.learn(minted);
            Ok(outcomes)
        }
        .await;
        self.store.tracked(result)
    }

    /// Resolves a run's variant and backend ids inside the write transaction `c`, so that a
    /// write that fails leaves no rows of its own behind. New names are created in sorted
    /// order (two writers creating the same names never wait on each other crosswise).
    async fn prepare<'a>(
        self,
        c: &mut Conn<'_>,
        record: &'a RunRecord,
        minted: &mut Minted,
    ) -> Result<PreparedRun<'a>> {
        let variant_id = self
            .store
            .variant_id(c, &record.run.dimensions, minted)
            .await?;
        let names: std::collections::BTreeSet<&str> = record
            .samples
            .iter()
            .map(|s| s.backend.as_str())
            .chain(record.outages.iter().map(|o| o.backend.as_str()))
            .collect();
        let mut ids = std::collections::HashMap::with_capacity(names.len());
        for name in names {
            ids.insert(name, self.store.backend_id(c, name, minted).await?);
        }
        let backend_ids = record
            .samples
            .iter()
            .map(|s| ids[s.backend.as_str()])
            .collect();
        let outage_backends = record
            .outages
            .iter()
            .map(|o| ids[o.backend.as_str()])
            .collect();
        Ok(PreparedRun {
            record,
            variant_id,
            backend_ids,
            outage_backends,
            ci_trouble: None,
        })
    }

    /// Whether a run is stored (ingest uses it to skip runs before reading their files).
    pub async fn has_run(self, job_name: &str, build_id: &str) -> Result<bool> {
        let id: Option<(i64,)> = self
            .store
            .fetch_optional(sql(SELECT_RUN_ID).bind(job_name).bind(build_id))
            .await?;
        Ok(id.is_some())
    }

    /// Deletes stored runs, taking their samples out of the day histograms first, in one
    /// transaction (`sheriff bench` takes away the runs it added, so a kept file stays as loaded).
    pub async fn remove_runs(self, runs: &[(String, String)]) -> Result<()> {
        let result: Result<()> = async {
            let rules = self.store.trouble().rules();
            let mut tx = self.store.begin_write().await?;
            let mut first_day = None::<i64>;
            let mut changed = ChangedCells::new();
            for (job, build) in runs {
                let row: Option<(i64, i64)> = tx
                    .conn()
                    .fetch_optional(
                        sql("SELECT id, started_at FROM job_runs WHERE job_name = $1 AND build_id = $2")
                            .bind(job)
                            .bind(build),
                    )
                    .await?;
                let Some((id, started)) = row else { continue };
                super::cells::forget_run(&mut tx.conn(), id, &mut changed).await?;
                let job = super::probes::forget_probes(&mut tx.conn(), id, &rules).await?;
                tx.conn().execute(sql("DELETE FROM job_runs WHERE id = $1").bind(id)).await?;
                if let Some(job) = job {
                    super::probes::refresh_job(&mut tx.conn(), &job, &rules, &mut changed).await?;
                }
                let day = started.div_euclid(DAY);
                first_day = Some(first_day.map_or(day, |d| d.min(day)));
            }
            let reclassified = changed.iter().map(|(_, day)| *day).min();
            if let Some(day) = first_day.into_iter().chain(reclassified).min() {
                note_change(&mut tx.conn(), day, Some(&changed)).await?;
            }
            tx.commit().await
        }
        .await;
        self.store.tracked(result)
    }

    /// Reads a stored run back with its samples and intervals.
    pub async fn run(self, job_name: &str, build_id: &str) -> Result<Option<RunRecord>> {
        Ok(self.find(&[(job_name, build_id)]).await?.pop())
    }

    /// The stored runs among `keys` (job, build id), each with its samples and intervals, in
    /// no particular order: a few statements for all of them, not a few for each.
    pub async fn find(self, keys: &[(&str, &str)]) -> Result<Vec<RunRecord>> {
        let mut pooled = self.store.acquire().await?;
        let mut c = pooled.conn();
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(RUNS_PER_READ) {
            let mut q = sql(SELECT_RUNS);
            for (i, (job, build)) in chunk.iter().enumerate() {
                q = q.push(if i == 0 {
                    "(job_name, build_id) = ("
                } else {
                    " OR (job_name, build_id) = ("
                });
                q = q.list([*job, *build]).push(")");
            }
            let rows = c.fetch_all::<RunRow>(q).await?;
            let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
            let mut records: Vec<RunRecord> = rows
                .into_iter()
                .map(|row| RunRecord {
                    run: row.into_run(),
                    samples: Vec::new(),
                    outages: Vec::new(),
                    conditions: Vec::new(),
                    interval_files: Vec::new(),
                    timeline: Vec::new(),
                })
                .collect();
            read_run_contents(&mut c, &ids, &mut records).await?;
            out.append(&mut records);
        }
        Ok(out)
    }

    /// The start of each job's newest stored run (data freshness).
    pub(crate) async fn newest_run_per_job(self) -> Result<Vec<(String, i64)>> {
        self.store
            .fetch_all(sql(
                "SELECT job_name, MAX(started_at) FROM job_runs GROUP BY job_name",
            ))
            .await
    }

    /// The payloads of a release built in `[from, to]` that some run tested, in build order.
    pub(crate) async fn payloads_between(
        self,
        release: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<String>> {
        Ok(self
            .payloads_built(release, from, to)
            .await?
            .into_iter()
            .map(|(p, _)| p)
            .collect())
    }

    /// [`Runs::payloads_between`] with each payload's build time.
    pub(crate) async fn payloads_built(
        self,
        release: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<(String, i64)>> {
        self.store
            .fetch_all(
                sql(
                    "SELECT DISTINCT payload, payload_at FROM job_runs WHERE release = $1 \
                     AND payload_at >= $2 AND payload_at <= $3 ORDER BY payload_at, payload",
                )
                .bind(release)
                .bind(from)
                .bind(to),
            )
            .await
    }

    /// Number of stored runs.
    pub async fn count_runs(self) -> Result<i64> {
        self.store
            .scalar(sql("SELECT COUNT(*) FROM job_runs"))
            .await
    }

    /// Number of stored samples.
    pub async fn count_samples(self) -> Result<i64> {
        self.store.scalar(sql("SELECT COUNT(*) FROM samples")).await
    }

    /// Every backend, every run that started in `[from, to)`, and their samples: what a
    /// backtest holds in memory.
    pub(crate) async fn replay_rows(self, from: i64, to: i64) -> Result<ReplayRows> {
        let backends = self
            .store
            .fetch_all(sql("SELECT id, name FROM backends ORDER BY id"))
            .await?;
        let runs = self.store
            .fetch_all(
                sql("SELECT id, job_name, build_id, url, started_at, finished_at, variant_id, \
                     CAST(CASE WHEN ci_trouble IS NULL THEN 0 ELSE 1 END AS BIGINT), payload FROM job_runs WHERE started_at >= $1 AND started_at < $2 ORDER BY started_at, id")
                .bind(from)
                .bind(to),
            )
            .await?;
        // One row a run, `backend:seconds` pairs joined by the engine: a thirtieth of the rows.
        let pairs = if self.store.engine() == crate::config::Engine::Postgres {
            "string_agg(s.backend_id::text || ':' || s.seconds::text, ' ')"
        } else {
            "group_concat(s.backend_id || ':' || s.seconds, ' ')"
        };
        let samples = self.store
            .fetch_all(
                Sql::built(format!(
                    "SELECT s.run_id, {pairs} FROM samples s JOIN job_runs r ON r.id = s.run_id \
                     WHERE r.started_at >= $1 AND r.started_at < $2 AND r.ci_trouble IS NULL GROUP BY s.run_id"
                ))
                .bind(from)
                .bind(to),
            )
            .await?;
        Ok(ReplayRows {
            backends,
            runs,
            samples,
        })
    }
}

impl Store {
    /// Caches the ids a committed write created.
    pub(super) fn learn(&self, minted: Minted) {
        self.backend_ids
            .lock()
            .expect("cache lock")
            .extend(minted.backends);
        self.variant_ids
            .lock()
            .expect("cache lock")
            .extend(minted.variants);
    }

    /// The id of a backend name, created on first sight inside the write transaction `c`.
    pub(super) async fn backend_id(
        &self,
        c: &mut Conn<'_>,
        name: &str,
        minted: &mut Minted,
    ) -> Result<i64> {
        if let Some(id) = self.backend_ids.lock().expect("cache lock").get(name) {
            return Ok(*id);
        }
        if let Some(id) = minted.backends.get(name) {
            return Ok(*id);
        }
        let id = c
            .scalar(
                sql("INSERT INTO backends (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET name = excluded.name \
                     RETURNING id")
                .bind(name),
            )
            .await?;
        minted.backends.insert(name.to_string(), id);
        Ok(id)
    }

    /// The id of a combination of dimensions, created on first sight inside `c`.
    pub(super) async fn variant_id(
        &self,
        c: &mut Conn<'_>,
        d: &Dimensions,
        minted: &mut Minted,
    ) -> Result<i64> {
        if let Some(id) = self.variant_ids.lock().expect("cache lock").get(d) {
            return Ok(*id);
        }
        if let Some(id) = minted.variants.get(d) {
            return Ok(*id);
        }
        // One statement gets or creates the id; the no-op update makes RETURNING answer for an
        // existing row too (SQLite and PostgreSQL alike).
        let q = sql("INSERT INTO variants (release, from_release, upgrade_type, platform, architecture, network, \
                 network_stack, topology, master_nodes_updated) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
                 ON CONFLICT (release, from_release, upgrade_type, platform, architecture, network, network_stack, \
                 topology, master_nodes_updated) DO UPDATE SET release = excluded.release RETURNING id")
        .bind(&d.release)
        .bind(&d.from_release)
        .bind(&d.upgrade_type)
        .bind(&d.platform)
        .bind(&d.architecture)
        .bind(&d.network)
        .bind(&d.network_stack)
        .bind(&d.topology)
        .bind(&d.master_nodes_updated);
        let id = c.scalar(q).await?;
        minted.variants.insert(d.clone(), id);
        Ok(id)
    }
}

/// Ids a write transaction created, cached only once it has committed: an id whose row a
/// failed or rolled-back write never stored must not be remembered.
#[derive(Default)]
pub(crate) struct Minted {
    backends: std::collections::HashMap<String, i64>,
    variants: std::collections::HashMap<Dimensions, i64>,
}

/// Samples, outages, conditions and interval files of the runs `ids` (`records` in the same
/// order), each list in the order a run is written with.
async fn read_run_contents(c: &mut Conn<'_>, ids: &[i64], records: &mut [RunRecord]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let at: std::collections::HashMap<i64, usize> =
        ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let of = |id: i64| {
        let stray =
            || StoreError::malformed("job_runs", format!("a row of run {id}, not asked for"));
        at.get(&id).copied().ok_or_else(stray)
    };
    let listed = |text: &'static str, order: &str| sql(text).list(ids.iter().copied()).push(order);

    for row in c
        .fetch_all::<SampleRow>(listed(SELECT_SAMPLES, SAMPLES_ORDER))
        .await?
    {
        records[of(row.run_id)?].samples.push(row.into_sample());
    }
    for row in c
        .fetch_all::<OutageRow>(listed(SELECT_OUTAGES, OUTAGES_ORDER))
        .await?
    {
        records[of(row.run_id)?].outages.push(row.into_outage());
    }
    for row in c
        .fetch_all::<ConditionRow>(listed(SELECT_CONDITIONS, CONDITIONS_ORDER))
        .await?
    {
        records[of(row.run_id)?].conditions.push(row.into_span());
    }
    for row in c
        .fetch_all::<TimelineRow>(listed(SELECT_TIMELINE, TIMELINE_ORDER))
        .await?
    {
        let id = row.run_id;
        // a kind this sheriff does not know is left out
        let Some(span) = row.into_span() else {
            continue;
        };
        records[of(id)?].timeline.push(span);
    }
    for row in c
        .fetch_all::<IntervalFileRow>(listed(SELECT_INTERVAL_FILES, INTERVAL_FILES_ORDER))
        .await?
    {
        records[of(row.run_id)?]
            .interval_files
            .push(row.into_file());
    }
    Ok(())
}

/// What a backtest holds in memory, as `Runs::replay_rows` reads it.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReplayRows {
    /// Every backend: `(id, name)`.
    pub backends: Vec<(i64, String)>,
    /// The runs, by start then id.
    pub runs: Vec<ReplayRun>,
    /// The samples of each clean run: `(run id, "backend_id:seconds …")`.
    pub samples: Vec<(i64, String)>,
}

/// A stored run as a backtest replays it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReplayRun {
    pub id: i64,
    pub job_name: String,
    pub build_id: String,
    pub url: String,
    /// Unix seconds.
    pub started_at: i64,
    /// Unix seconds; None when the run never finished.
    pub finished_at: Option<i64>,
    pub variant_id: i64,
    /// 1 when the run was CI-troubled, else 0.
    pub ci_troubled: i64,
    pub payload: String,
}
row_by_position!(ReplayRun {
    id,
    job_name,
    build_id,
    url,
    started_at,
    finished_at,
    variant_id,
    ci_troubled,
    payload
});

/// A sample of a run, as [`SELECT_SAMPLES`] reads it.
#[derive(sqlx::FromRow)]
struct SampleRow {
    run_id: i64,
    #[sqlx(rename = "name")]
    backend: String,
    connection: String,
    seconds: i64,
}

impl SampleRow {
    fn into_sample(self) -> Sample {
        Sample {
            backend: self.backend,
            connection: self.connection,
            seconds: self.seconds,
        }
    }
}

/// An outage of a run, as [`SELECT_OUTAGES`] reads it (Unix seconds).
#[derive(sqlx::FromRow)]
struct OutageRow {
    run_id: i64,
    #[sqlx(rename = "name")]
    backend: String,
    from_at: i64,
    to_at: i64,
}

impl OutageRow {
    fn into_outage(self) -> Outage {
        Outage {
            backend: self.backend,
            from: from_secs(self.from_at),
            to: from_secs(self.to_at),
        }
    }
}

/// A row of `condition_spans` (Unix seconds).
#[derive(sqlx::FromRow)]
struct ConditionRow {
    run_id: i64,
    operator: String,
    condition: String,
    status: String,
    reason: String,
    message: String,
    from_at: i64,
    to_at: i64,
}

impl ConditionRow {
    fn into_span(self) -> ConditionSpan {
        ConditionSpan {
            operator: self.operator,
            condition: self.condition,
            status: self.status,
            reason: self.reason,
            message: self.message,
            from: from_secs(self.from_at),
            to: from_secs(self.to_at),
        }
    }
}

/// A row of `timeline_spans` (Unix seconds).
#[derive(sqlx::FromRow)]
struct TimelineRow {
    run_id: i64,
    /// A [`SpanKind`], as stored.
    kind: String,
    subject: String,
    node: String,
    from_at: i64,
    to_at: i64,
    /// Where the interval came from: its file and item there.
    file: String,
    item: i64,
}

impl TimelineRow {
    /// The span, or None when its kind is not one this sheriff knows.
    fn into_span(self) -> Option<TimelineSpan> {
        let kind = SpanKind::parse(&self.kind)?;
        let at = IntervalRef {
            file: self.file,
            item: self.item.clamp(0, i64::from(u32::MAX)) as u32,
        };
        Some(TimelineSpan {
            kind,
            subject: self.subject,
            node: self.node,
            from: from_secs(self.from_at),
            to: from_secs(self.to_at),
            at,
        })
    }
}

/// A row of `interval_files`.
#[derive(sqlx::FromRow)]
struct IntervalFileRow {
    run_id: i64,
    location: String,
    /// Bytes.
    size: i64,
}

impl IntervalFileRow {
    fn into_file(self) -> IntervalFile {
        IntervalFile {
            location: self.location,
            size: self.size.max(0) as u64,
        }
    }
}

/// A row of `job_runs`, as [`SELECT_RUNS`] reads it.
#[derive(sqlx::FromRow)]
struct RunRow {
    id: i64,
    job_name: String,
    build_id: String,
    bucket: String,
    path: String,
    url: String,
    job_type: String,
    started_at: i64,
    finished_at: Option<i64>,
    state: String,
    release: String,
    from_release: String,
    upgrade_type: String,
    platform: String,
    architecture: String,
    network: String,
    network_stack: String,
    topology: String,
    master_nodes_updated: String,
    payload: String,
    from_payload: String,
}

impl RunRow {
    fn into_run(self) -> JobRun {
        JobRun {
            job_name: self.job_name,
            build_id: self.build_id,
            bucket: self.bucket,
            path: self.path,
            url: self.url,
            job_type: self.job_type,
            started_at: from_secs(self.started_at),
            finished_at: self.finished_at.map(from_secs),
            state: self.state,
            dimensions: Dimensions {
                release: self.release,
                from_release: self.from_release,
                upgrade_type: self.upgrade_type,
                platform: self.platform,
                architecture: self.architecture,
                network: self.network,
                network_stack: self.network_stack,
                topology: self.topology,
                master_nodes_updated: self.master_nodes_updated,
            },
            payload: self.payload,
            from_payload: self.from_payload,
        }
    }
}

#[cfg(test)]
mod tests {
    /// Runs added and removed again leave the samples and the (kept) windows as they were.
    #[tokio::test]
    async fn removed_runs_leave_the_histograms_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let settings = crate::config::DatabaseSettings {
            url: format!("sqlite://{}", dir.path().join("remove.db").display())
                .parse()
                .unwrap(),
            ..Default::default()
        };
        let store = crate::store::Store::open(&settings).await.unwrap();
        let warm = crate::application::warm::Warm::kept();
        let kept = warm.windows.as_ref().unwrap();
        let end = crate::synth::day(2026, 11, 29);
        let records = crate::synth::run_records(&crate::synth::Scenario::month(7, end));
        store.runs().write_runs(&records, false).await.unwrap();
        let t = end.timestamp() - 5 * 3600;
        let windows = ((t - 7 * 86_400, t), (t - 28 * 86_400, t - 7 * 86_400));
        let before = kept
            .window_data(&store, windows.0, windows.1, &[], t)
            .await
            .unwrap();
        let samples = store.runs().count_samples().await.unwrap();
        let copies: Vec<_> = records[records.len() - 40..]
            .iter()
            .cloned()
            .map(|mut r| {
                r.run.build_id.push_str("-copy");
                r
            })
            .collect();
        store.runs().write_runs(&copies, false).await.unwrap();
        assert_ne!(
            kept.window_data(&store, windows.0, windows.1, &[], t)
                .await
                .unwrap(),
            before
        );
        let ids: Vec<_> = copies
            .iter()
            .map(|r| (r.run.job_name.clone(), r.run.build_id.clone()))
            .collect();
        store.runs().remove_runs(&ids).await.unwrap();
        assert_eq!(store.runs().count_samples().await.unwrap(), samples);
        assert_eq!(
            kept.window_data(&store, windows.0, windows.1, &[], t)
                .await
                .unwrap(),
            before
        );
    }
}
