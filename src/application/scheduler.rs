//! `sheriff serve`'s scheduled work: evaluation cycles, ingests and the daily prune, beside the HTTP server and
//! the outbox worker ([`crate::edge::serve`] puts them together).
//!
//! Several replicas may run on one PostgreSQL database. Each scheduled tick is claimed through a
//! lease named after the job and the tick (`evaluate@1764374400`), taken by one replica and never
//! released, so exactly one replica runs each tick; a replica that dies mid-cycle holds that
//! tick only, and the next tick is anyone's. Outbox entries are claimed one at a time under a
//! lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL). SQLite serves one replica: a second `serve` on
//! the same file refuses to start and says why.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use chrono::Utc;
use tokio::sync::watch;

use crate::adapters::ingest::{IngestOptions, Source};
use crate::application::cycle::Unrecorded;
use crate::application::warm::Warm;
use crate::config::cron::Schedule;
use crate::config::{Engine, Settings};
use crate::model::HOUR;
use crate::store::Store;
use crate::support::shutdown::{finish_or_abandon, stopping};

/// How long a tick's lease is held (longer than any cycle).
const TICK_LEASE_SECS: i64 = HOUR;
const SQLITE_LEASE: &str = "sqlite-replica";
const SQLITE_LEASE_SECS: i64 = 30;

/// On SQLite, claims the single-replica lease or explains why not. A lease whose holder was a
/// process of this host that is gone (killed, out of memory) is taken over at once: the lease
/// names its holder's host and process id.
pub async fn claim_sqlite(store: &Store, id: &str) -> Result<()> {
    if store.engine() != Engine::Sqlite {
        return Ok(());
    }
    let now = Utc::now().timestamp();
    if store
        .leases()
        .take(SQLITE_LEASE, id, now, SQLITE_LEASE_SECS)
        .await?
    {
        return Ok(());
    }
    let Some((holder, expires_at)) = store.leases().holder(SQLITE_LEASE).await? else {
        bail!("cannot take the SQLite replica lease, and no one holds it; try again");
    };
    let gone = crate::support::process::local_replica_pid(&holder)
        .filter(|pid| !crate::support::process::is_running(*pid));
    if let Some(pid) = gone
        && store
            .leases()
            .take_over(SQLITE_LEASE, &holder, id, now, SQLITE_LEASE_SECS)
            .await?
    {
        tracing::warn!(holder = %holder, "took the SQLite replica lease over from process {pid} of this host, which is gone");
        return Ok(());
    }
    bail!(
        "another `sheriff serve` is running on this SQLite database ({holder}); SQLite supports one replica \
         (use PostgreSQL, SHERIFF__DATABASE__URL=postgres://…, for several). If that process is gone, \
         its lease lapses in {} s",
        (expires_at - now).max(0)
    );
}

/// One scheduled ingest, its source read and checked at build time.
struct IngestJob {
    name: String,
    schedule: Schedule,
    source: Source,
    since_days: u32,
}

/// The schedules of one replica, checked when built: every cron expression and source parses.
pub struct Scheduler {
    shared: Shared,
    evaluate: Schedule,
    prune: Schedule,
    ingests: Vec<IngestJob>,
    /// Run a cycle at start too (`serve --cycle-now`): a new deployment speaks up at once, not
    /// at the first tick, up to six hours later with the default schedule.
    cycle_at_start: bool,
}

/// What each of the scheduler's tasks holds a handle of.
#[derive(Clone)]
struct Shared {
    store: Arc<Store>,
    /// The caches its cycles read through, shared with the HTTP edge's questions.
    warm: Arc<Warm>,
    /// The failed cycles and skipped ticks not recorded yet, shared with the HTTP edge's
    /// cycles.
    unrecorded: Arc<Unrecorded>,
    settings: Arc<Settings>,
    /// This replica's name in tick leases.
    id: String,
}

/// One scheduled job as `serve` announces it at start.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Planned {
    /// `evaluate`, `prune` or `ingest:<source>`.
    pub job: String,
    pub cron: String,
    /// The expression in words, e.g. "At minute 0 past every 6th hour".
    pub in_words: String,
    /// The first tick after the start; None for an expression that never fires again.
    pub next: Option<chrono::DateTime<Utc>>,
}

/// Every job `serve` schedules with its cron expression and its first tick after `now`:
/// evaluation, each ingest, pruning.
pub fn plan(
    settings: &Settings,
    now: chrono::DateTime<Utc>,
) -> Result<Vec<Planned>, crate::config::cron::CronError> {
    let zone = &settings.schedule.timezone;
    let planned = |job: &str, cron: &str| -> Result<Planned, crate::config::cron::CronError> {
        let schedule = Schedule::parse(cron, zone)?;
        Ok(Planned {
            job: job.to_string(),
            cron: cron.to_string(),
            in_words: schedule.describe(),
            next: schedule.next_after(now),
        })
    };
    let mut plan = vec![planned("evaluate", &settings.schedule.evaluate)?];
    for i in &settings.schedule.ingest {
        plan.push(planned(&format!("ingest:{}", i.source), &i.cron)?);
    }
    plan.push(planned("prune", &settings.retention.schedule)?);
    Ok(plan)
}

/// How long the start cycle's lease is held: replicas started together run one start cycle.
const START_LEASE_SECS: i64 = 300;

impl Scheduler {
    pub fn new(
        store: Arc<Store>,
        warm: Arc<Warm>,
        unrecorded: Arc<Unrecorded>,
        settings: Arc<Settings>,
        id: String,
    ) -> Result<Scheduler> {
        let zone = &settings.schedule.timezone;
        let evaluate = Schedule::parse(&settings.schedule.evaluate, zone)?;
        let mut ingests = Vec::new();
        for job in &settings.schedule.ingest {
            ingests.push(IngestJob {
                name: format!("ingest:{}", job.source),
                schedule: Schedule::parse(&job.cron, zone)?,
                source: Source::parse(&job.source, &settings)?,
                since_days: job.since_days,
            });
        }
        let prune = Schedule::parse(&settings.retention.schedule, zone)?;
        let shared = Shared {
            store,
            warm,
            unrecorded,
            settings,
            id,
        };
        Ok(Scheduler {
            shared,
            evaluate,
            prune,
            ingests,
            cycle_at_start: false,
        })
    }

    /// Runs an evaluation cycle as soon as it starts, besides its schedule.
    pub(crate) fn cycle_at_start(&mut self) {
        self.cycle_at_start = true;
    }

    /// Whether a cycle runs at start.
    pub(crate) fn cycles_at_start(&self) -> bool {
        self.cycle_at_start
    }

    /// Runs every schedule (and, on SQLite, keeps the single-replica lease) until `shutdown`
    /// turns true; a job in progress gets the grace period.
    pub async fn run(self, shutdown: watch::Receiver<bool>) {
        let mut tasks = tokio::task::JoinSet::new();
        if self.cycle_at_start {
            let (shared, shutdown) = (self.shared.clone(), shutdown.clone());
            tasks.spawn(async move { cycle_at_start(&shared, shutdown).await });
        }
        tasks.spawn(evaluate_on_schedule(
            self.shared.clone(),
            self.evaluate,
            shutdown.clone(),
        ));
        tasks.spawn(prune_on_schedule(
            self.shared.clone(),
            self.prune,
            shutdown.clone(),
        ));
        for job in self.ingests {
            tasks.spawn(ingest_on_schedule(
                self.shared.clone(),
                job,
                shutdown.clone(),
            ));
        }

        let Shared {
            store,
            unrecorded,
            id,
            ..
        } = self.shared;
        if store.engine() == Engine::Sqlite {
            tasks.spawn(keep_sqlite_lease(store.clone(), id, shutdown.clone()));
        }
        tasks.spawn(record_unrecorded_cycles(
            store,
            unrecorded,
            shutdown.clone(),
        ));
        while tasks.join_next().await.is_some() {}
    }
}

/// Evaluation cycles, on their schedule.
async fn evaluate_on_schedule(shared: Shared, schedule: Schedule, shutdown: watch::Receiver<bool>) {
    let Shared {
        store,
        warm,
        unrecorded,
        settings,
        ..
    } = &shared;
    on_schedule(&schedule, "evaluate", &shared, shutdown, || async {
        let options = crate::application::cycle::CycleOptions {
            at: Utc::now(),
            dry_run: false,
        };
        crate::application::cycle::run_cycle_keeping(store, warm, unrecorded, settings, options)
            .await?;
        Ok(())
    })
    .await;
}

/// Pruning, on its schedule.
async fn prune_on_schedule(shared: Shared, schedule: Schedule, shutdown: watch::Receiver<bool>) {
    let Shared {
        store, settings, ..
    } = &shared;
    on_schedule(&schedule, "prune", &shared, shutdown, || async {
        Box::pin(prune(store, settings, Utc::now().timestamp(), false))
            .await
            .map(|_| ())
    })
    .await;
}

/// One ingest `job`, on its schedule.
async fn ingest_on_schedule(shared: Shared, job: IngestJob, shutdown: watch::Receiver<bool>) {
    let Shared {
        store, settings, ..
    } = &shared;
    on_schedule(&job.schedule, &job.name, &shared, shutdown, || async {
        let since = Utc::now() - chrono::Duration::days(i64::from(job.since_days));
        let options = IngestOptions {
            since: Some(since),
            ..Default::default()
        };
        let summary =
            crate::adapters::ingest::ingest(store, &settings.ingest, &job.source, &options).await?;
        summary.count("schedule");
        // runs sheriff could not store make the job a failure, as they make
        // `sheriff ingest` exit 2; the next tick stores them
        if summary.storage_failed > 0 {
            return Err(RunsNotStored(summary.storage_failed).into());
        }
        Ok(())
    })
    .await;
}

/// The cycle `serve --cycle-now` runs at start, under a lease so that replicas started
/// together (a rollout) run one between them. It is named apart from the ticks' leases
/// (`evaluate@<tick>`): a tick that comes while it runs is still taken.
async fn cycle_at_start(shared: &Shared, mut shutdown: watch::Receiver<bool>) {
    let Shared {
        store,
        warm,
        unrecorded,
        settings,
        id,
    } = shared;

    let now = Utc::now();
    match store
        .leases()
        .take("start-cycle", id, now.timestamp(), START_LEASE_SECS)
        .await
    {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!(
                "no cycle at start: another replica started one in the last {START_LEASE_SECS} s"
            );
            return;
        }
        Err(e) => {
            tracing::error!("no cycle at start: cannot take its lease: {e:#}");
            return;
        }
    }

    tracing::info!("running a first cycle at start (--cycle-now)");
    let started = std::time::Instant::now();
    let options = crate::application::cycle::CycleOptions {
        at: now,
        dry_run: false,
    };

    let outcome = match finish_or_abandon(
        crate::application::cycle::run_cycle_keeping(store, warm, unrecorded, settings, options),
        &mut shutdown,
    )
    .await
    {
        Some(Ok(report)) => {
            tracing::info!(
                regressions = report.regressions.len(),
                seconds = started.elapsed().as_secs_f64(),
                "the cycle at start finished"
            );
            "ok"
        }
        Some(Err(e)) => {
            let e = anyhow::Error::from(e);
            tracing::error!(job = "evaluate", "the cycle at start failed: {e:#}");
            failed(&e)
        }
        None => "abandoned",
    };

    metrics::counter!("sheriff_jobs_total", "job" => "evaluate", "outcome" => outcome).increment(1);
}

/// Renews the single-replica lease every 10 s until shutdown, then gives it up.
async fn keep_sqlite_lease(store: Arc<Store>, id: String, mut shutdown: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            biased;
            () = stopping(&mut shutdown) => break,
            _ = tokio::time::sleep(Duration::from_secs(10)) => {}
        }
        if let Err(e) = store
            .leases()
            .take(SQLITE_LEASE, &id, Utc::now().timestamp(), SQLITE_LEASE_SECS)
            .await
        {
            tracing::warn!("cannot renew the SQLite replica lease: {e:#}");
        }
    }
    let _ = store.leases().release(SQLITE_LEASE, &id).await;
}

/// Every 10 s, records the failed cycles and skipped ticks kept while the database was down,
/// once it takes writes again.
async fn record_unrecorded_cycles(
    store: Arc<Store>,
    unrecorded: Arc<Unrecorded>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            biased;
            () = stopping(&mut shutdown) => return,
            _ = tokio::time::sleep(Duration::from_secs(10)) => {}
        }
        match unrecorded.record_kept(&store).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(
                    cycles = n,
                    "recorded the cycles that failed while the database was down"
                )
            }
            Err(e) => tracing::debug!("cannot record the cycles that failed yet: {e:#}"),
        }
    }
}

/// An ingest tick that could not store some runs: sheriff's own storage failed them.
#[derive(Debug, thiserror::Error)]
#[error("{0} run(s) could not be stored (sheriff's own storage failed)")]
struct RunsNotStored(u64);

/// A failed job's outcome in `sheriff_jobs_total`: `storage_failed` when the storage itself
/// failed it (a lost connection, a full disk, runs an ingest could not store: the next tick may
/// succeed), `failed` for anything else.
fn failed(e: &anyhow::Error) -> &'static str {
    if crate::store::is_storage_error(e) || e.downcast_ref::<RunsNotStored>().is_some() {
        "storage_failed"
    } else {
        "failed"
    }
}

/// The job a schedule's name stands for, in metrics.
fn job_kind(name: &str) -> &'static str {
    match name {
        n if n.starts_with("ingest") => "ingest",
        "prune" => "prune",
        _ => "evaluate",
    }
}

/// Runs `job` at each tick of `schedule` that this replica wins, until shutdown.
async fn on_schedule<F, Fut>(
    schedule: &Schedule,
    name: &str,
    shared: &Shared,
    mut shutdown: watch::Receiver<bool>,
    job: F,
) where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    loop {
        let Some(next) = schedule.next_after(Utc::now()) else {
            return;
        };
        let wait = (next - Utc::now()).to_std().unwrap_or_default();
        tokio::select! {
            biased;
            () = stopping(&mut shutdown) => return,
            _ = tokio::time::sleep(wait) => {}
        }
        let lease = format!("{name}@{}", next.timestamp());
        match shared
            .store
            .leases()
            .take(&lease, &shared.id, Utc::now().timestamp(), TICK_LEASE_SECS)
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                tracing::debug!(job = name, tick = %next, "another replica has this tick");
                continue;
            }
            Err(e) => {
                // the tick is skipped: counted, logged, and for a cycle recorded as failed once
                // the database takes writes again
                tracing::error!(job = name, tick = %next, "tick skipped: cannot take its lease: {e:#}");
                metrics::counter!("sheriff_ticks_skipped_total", "job" => job_kind(name))
                    .increment(1);
                if job_kind(name) == "evaluate" {
                    let now = Utc::now().timestamp();
                    shared.unrecorded.keep(crate::store::CycleRecord {
                        started_at: now,
                        finished_at: now,
                        evaluated_at: next.timestamp(),
                        outcome: crate::store::CycleOutcome::Failed,
                        error: format!("tick skipped: cannot take its lease: {e:#}"),
                        ..Default::default()
                    });
                }
                continue;
            }
        }

        let started = std::time::Instant::now();
        let outcome = match finish_or_abandon(job(), &mut shutdown).await {
            Some(Ok(())) => "ok",
            Some(Err(e)) => {
                tracing::error!(job = name, "scheduled job failed: {e:#}");
                failed(&e)
            }
            None => {
                tracing::warn!(job = name, tick = %next, "stopping: the job did not finish in time and wrote nothing");
                "abandoned"
            }
        };
        let kind = job_kind(name);
        metrics::histogram!("sheriff_job_seconds", "job" => kind, "outcome" => outcome)
            .record(started.elapsed().as_secs_f64());
        metrics::counter!("sheriff_jobs_total", "job" => kind, "outcome" => outcome).increment(1);
    }
}

/// Prunes what `[retention]` no longer keeps, as of `now` (Unix seconds): the daily job, and
/// `sheriff prune` by hand.
pub async fn prune(
    store: &Store,
    settings: &Settings,
    now: i64,
    dry_run: bool,
) -> Result<crate::store::retention::PruneReport> {
    let r = &settings.retention;
    let cutoffs = crate::store::retention::Cutoffs::new(now, r, &settings.evaluate);
    let started = std::time::Instant::now();
    let report = store.retention().prune(cutoffs, dry_run).await?;
    tracing::info!(
        runs = report.runs,
        samples = report.samples,
        cell_days = report.cell_days,
        interval_runs = report.interval_runs,
        kept_for_incidents = report.kept_for_incidents,
        batches = report.batches,
        dry_run,
        seconds = started.elapsed().as_secs_f64(),
        "pruned"
    );
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_job_failed_by_the_store_is_counted_apart() {
        let lost = crate::store::StoreError::Connection(sqlx::Error::PoolTimedOut);
        let cycle = crate::application::cycle::CycleError::from(lost);
        assert_eq!(failed(&anyhow::Error::from(cycle)), "storage_failed");
        // a row that does not decode fails every time: no retry helps, it is no outage
        let corrupt = crate::store::StoreError::malformed("incidents", "snapshot: not JSON");
        assert_eq!(failed(&anyhow::Error::from(corrupt)), "failed");
        assert_eq!(failed(&anyhow::anyhow!("no such bucket")), "failed");
        let ingest = anyhow::Error::from(RunsNotStored(3));
        assert_eq!(failed(&ingest), "storage_failed");
        assert_eq!(
            ingest.to_string(),
            "3 run(s) could not be stored (sheriff's own storage failed)"
        );
    }

    #[test]
    fn the_plan_names_every_job_with_its_next_tick_from_a_fixed_instant() {
        let mut settings = Settings::default();
        settings
            .schedule
            .ingest
            .push(crate::config::IngestSchedule {
                source: "gs://test-platform-results/logs".into(),
                // every hour at minute 20
                cron: "20 * * * *".into(),
                since_days: 2,
            });
        let now = Utc.with_ymd_and_hms(2026, 12, 3, 16, 40, 5).unwrap();
        let plan = plan(&settings, now).unwrap();
        let ticks: Vec<(&str, &str, Option<String>)> = plan
            .iter()
            .map(|p| {
                (
                    p.job.as_str(),
                    p.cron.as_str(),
                    p.next.map(|t| t.to_rfc3339()),
                )
            })
            .collect();
        assert_eq!(
            ticks,
            [
                // the default: every 6 hours on the hour
                (
                    "evaluate",
                    "0 */6 * * *",
                    Some("2026-12-03T18:00:00+00:00".to_string())
                ),
                (
                    "ingest:gs://test-platform-results/logs",
                    "20 * * * *",
                    Some("2026-12-03T17:20:00+00:00".into())
                ),
                // daily at 03:30
                (
                    "prune",
                    "30 3 * * *",
                    Some("2026-12-04T03:30:00+00:00".into())
                ),
            ]
        );
        assert!(plan[0].in_words.contains('6'), "{}", plan[0].in_words);
        settings.schedule.timezone = "Europe/Berlin".into();
        let berlin = super::plan(&settings, now).unwrap();
        // 18:00 in Berlin is 17:00 UTC
        assert_eq!(
            berlin[0].next.unwrap().to_rfc3339(),
            "2026-12-03T17:00:00+00:00"
        );
    }
}
