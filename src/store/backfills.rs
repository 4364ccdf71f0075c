//! `backfills`: day histograms filled from counts (a push-down backfill), and the days they seal.
//!
//! A push-down backfill reads, for a range of whole UTC days, how many runs of each job and
//! variant had each backend at each second, instead of the runs themselves. Its counts go into
//! the same `cell_days` (and its CI network probes into the same `probe_days`) a run-by-run
//! ingest fills, with no `job_runs` or `samples` rows. Since no run is stored, a run cannot be
//! recognised later as one already counted; so the days are sealed instead: a backfill takes
//! only days on which no run is stored, and no ingest stores a run that started on a sealed
//! day. Whichever way the two are mixed, a run is counted once.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;

use serde::Serialize;

use super::cells::{ChangedCells, RunsAt};
use super::probes::ProbeCount;
use super::runs::Minted;
use super::{Conn, Result, Store, StoreError, sql};
use crate::model::{DAY, Dimensions};

/// One count a push-down backfill read: how many runs of a job, in one variant, that started
/// on one day, had this backend at these seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellCount {
    pub job: String,
    pub dimensions: Dimensions,
    /// The UTC day (Unix seconds / 86400).
    pub day: i64,
    /// The CI network probes down beyond the allowance in these runs: they make the runs
    /// CI-troubled unless broken for the job, which is known only once every count is in.
    pub down_probes: Vec<String>,
    pub backend: String,
    pub seconds: i64,
    pub runs: u64,
    /// The earliest start (Unix seconds) of these runs: a release's first run.
    pub first_start: i64,
}

/// What a backfill stores: the source and days it read, and the counts.
#[derive(Debug, Clone)]
pub struct Backfill<'a> {
    pub source: &'a str,
    /// UTC day numbers, the end exclusive.
    pub days: Range<i64>,
    /// Rows BigQuery returned.
    pub rows_read: u64,
    pub counts: &'a [CellCount],
}

/// What a backfill added.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BackfillReport {
    /// Samples (one run's seconds for one backend) added to the day histograms.
    pub samples: u64,
    /// Samples left out as those of CI-troubled runs, as a run-by-run ingest leaves them out.
    pub troubled_samples: u64,
    /// Variant-days whose histograms were filled.
    pub variant_days: u64,
}

/// Push-down backfills: counted days written whole and sealed.
/// Reached through [`Store::backfills`].
#[derive(Clone, Copy)]
pub struct Backfills<'a> {
    pub(super) store: &'a Store,
}

impl Backfills<'_> {
    /// Adds a backfill's counts to the day histograms and seals its days, in one transaction.
    /// Refused when a run that started on one of the days is stored already, or a day was
    /// backfilled already: either would count runs twice.
    pub async fn write_backfill(self, backfill: &Backfill<'_>) -> Result<BackfillReport> {
        let result = async {
            let rules = self.store.trouble().rules();
            if rules.all_backends_share > 0.0 {
                let why = "trouble.all_backends_share is on: it judges each run by all its samples, which a backfill of counts does not read; backfill with it off, or ingest run by run";
                return Err(StoreError::Refused(why.into()));
            }
            let mut tx = self.store.begin_write().await?;
            refuse_counted_days(&mut tx.conn(), &backfill.days).await?;
            let mut minted = Minted::default();
            let mut changed = ChangedCells::new();
            let ids = self.ids_of(&mut tx.conn(), backfill.counts, &mut minted).await?;
            let broken = count_probes(&mut tx.conn(), backfill.counts, &ids, &rules, &mut changed).await?;
            let mut report = BackfillReport::default();
            let cells = clean_counts(backfill.counts, &ids, &broken, &mut report);
            report.variant_days = cells.len() as u64;
            for ((variant_id, day), counts) in &cells {
                super::cells::add_counts(&mut tx.conn(), *day, *variant_id, counts, &mut changed).await?;
            }
            keep_first_seen(&mut tx.conn(), backfill.counts, &ids).await?;
            tx.conn()
                .execute(
                    sql("INSERT INTO backfills (from_day, to_day, source, rows_read, samples, backfilled_at) \
                         VALUES ($1, $2, $3, $4, $5, $6)")
                    .bind(backfill.days.start)
                    .bind(backfill.days.end)
                    .bind(backfill.source)
                    .bind(backfill.rows_read as i64)
                    .bind(report.samples as i64)
                    .bind(chrono::Utc::now().timestamp()),
                )
                .await?;
            super::runs::note_change(&mut tx.conn(), backfill.days.start, Some(&changed)).await?;
            tx.commit().await?;
            self.store.learn(minted);
            Ok(report)
        }
        .await;
        self.store.tracked(result)
    }

    /// `at` (Unix seconds), or the end of the backfilled days it falls in: where a read of runs
    /// should start so that it reads none a backfill counted.
    pub async fn past_backfilled_days(self, at: i64) -> Result<i64> {
        let mut at = at;
        loop {
            let day = at.div_euclid(DAY);
            let end: Option<(i64,)> = self
                .store
                .fetch_optional(
                    sql("SELECT to_day FROM backfills WHERE from_day <= $1 AND to_day > $1")
                        .bind(day),
                )
                .await?;
            match end {
                Some((to_day,)) => at = to_day * DAY,
                None => return Ok(at),
            }
        }
    }

    /// The backfilled day ranges, oldest first.
    pub async fn backfilled_days(self) -> Result<Vec<BackfilledDays>> {
        self.store
            .fetch_all(sql(
                "SELECT from_day, to_day, source FROM backfills ORDER BY from_day",
            ))
            .await
    }

    /// The variant and backend ids of every count, created as needed inside `c`.
    async fn ids_of<'a>(
        self,
        c: &mut Conn<'_>,
        counts: &'a [CellCount],
        minted: &mut Minted,
    ) -> Result<Ids<'a>> {
        let mut ids = Ids::default();
        let names: BTreeSet<&str> = counts
            .iter()
            .flat_map(|n| {
                std::iter::once(n.backend.as_str()).chain(n.down_probes.iter().map(String::as_str))
            })
            .collect();
        for name in names {
            ids.backends
                .insert(name, self.store.backend_id(c, name, minted).await?);
        }
        for count in counts {
            if !ids.variants.contains_key(&count.dimensions) {
                let id = self.store.variant_id(c, &count.dimensions, minted).await?;
                ids.variants.insert(&count.dimensions, id);
            }
        }
        Ok(ids)
    }
}

/// A range of days a backfill filled, and sealed.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct BackfilledDays {
    /// The first UTC day (Unix seconds / 86400).
    pub from_day: i64,
    /// The UTC day after the last.
    pub to_day: i64,
    /// Where the counts came from.
    pub source: String,
}

/// Counted runs by variant-day.
type Cells = BTreeMap<(i64, i64), Vec<RunsAt>>;

/// A job's probe reports by `(backend id, day)`: `(runs, runs down)`.
type ProbeDays = BTreeMap<(i64, i64), (i64, i64)>;

/// The counts of runs that are not CI-troubled, by variant-day, as a run-by-run ingest adds its
/// clean runs: a run is troubled when a probe not broken for its job was down.
fn clean_counts(
    counts: &[CellCount],
    ids: &Ids<'_>,
    broken: &HashMap<&str, BTreeSet<i64>>,
    report: &mut BackfillReport,
) -> Cells {
    let mut cells = Cells::new();
    for count in counts {
        let job_broken = broken.get(count.job.as_str());
        let troubled = count
            .down_probes
            .iter()
            .any(|p| job_broken.is_none_or(|b| !b.contains(&ids.backends[p.as_str()])));
        if troubled {
            report.troubled_samples += count.runs;
            continue;
        }
        report.samples += count.runs;
        let key = (ids.variants[&count.dimensions], count.day);
        let backend_id = ids.backends[count.backend.as_str()];
        cells.entry(key).or_default().push(RunsAt {
            backend_id,
            seconds: count.seconds,
            runs: count.runs,
        });
    }
    cells
}

/// The ids of the names a backfill's counts use.
#[derive(Default)]
struct Ids<'a> {
    backends: HashMap<&'a str, i64>,
    variants: HashMap<&'a Dimensions, i64>,
}

/// Whether runs that started on `day` are sealed by a backfill (counted, never stored).
pub(super) async fn is_sealed(c: &mut Conn<'_>, day: i64) -> Result<bool> {
    let row: Option<(i64,)> = c
        .fetch_optional(
            sql("SELECT from_day FROM backfills WHERE from_day <= $1 AND to_day > $1").bind(day),
        )
        .await?;
    Ok(row.is_some())
}

/// Refuses days on which a run is stored, or that a backfill filled already.
async fn refuse_counted_days(c: &mut Conn<'_>, days: &Range<i64>) -> Result<()> {
    if days.is_empty() {
        return Err(StoreError::Refused(format!(
            "no days to backfill: the range {}..{} is empty",
            days.start, days.end
        )));
    }

    let overlapping: Option<BackfilledDays> = c
        .fetch_optional(
            sql("SELECT from_day, to_day, source FROM backfills WHERE from_day < $2 AND to_day > $1 \
                 ORDER BY from_day LIMIT 1")
            .bind(days.start)
            .bind(days.end),
        )
        .await?;

    if let Some(BackfilledDays {
        from_day,
        to_day,
        source,
    }) = overlapping
    {
        return Err(StoreError::Refused(format!(
            "the days {} to {} were backfilled already from {source}: backfill only days outside them",
            day_name(from_day),
            day_name(to_day - 1)
        )));
    }

    let (stored, first): (i64, Option<i64>) = c
        .fetch_one(
            sql("SELECT COUNT(*), MIN(started_at) FROM job_runs WHERE started_at >= $1 AND started_at < $2")
                .bind(days.start * DAY)
                .bind(days.end * DAY),
        )
        .await?;

    if stored > 0 {
        return Err(StoreError::Refused(format!(
            "{stored} runs that started on these days are stored already (the first on {}): a backfill fills only days with no stored run, or it would count them twice; end the backfill before that day",
            day_name(first.unwrap_or_default().div_euclid(DAY))
        )));
    }

    Ok(())
}

/// Counts the probes of every job into its days, then works out each job's broken probes again
/// (classifying its stored runs again when they changed): the broken probes, by job.
async fn count_probes<'a>(
    c: &mut Conn<'_>,
    counts: &'a [CellCount],
    ids: &Ids<'_>,
    rules: &crate::model::TroubleRules,
    changed: &mut ChangedCells,
) -> Result<HashMap<&'a str, BTreeSet<i64>>> {
    let mut by_job: BTreeMap<&str, ProbeDays> = BTreeMap::new();
    for count in counts.iter().filter(|n| rules.is_liveness(&n.backend)) {
        let key = (ids.backends[count.backend.as_str()], count.day);
        let entry = by_job
            .entry(count.job.as_str())
            .or_default()
            .entry(key)
            .or_default();
        entry.0 += count.runs as i64;
        if rules.is_down(count.seconds) {
            entry.1 += count.runs as i64;
        }
    }
    let mut broken = HashMap::with_capacity(by_job.len());
    for (job, days) in by_job {
        let rows: Vec<ProbeCount> = days
            .into_iter()
            .map(|((backend_id, day), (runs, down))| ProbeCount {
                backend_id,
                day,
                runs,
                down,
            })
            .collect();
        super::probes::add_probe_counts(c, job, &rows).await?;
        broken.insert(
            job,
            super::probes::refresh_job(c, job, rules, changed).await?,
        );
    }
    Ok(broken)
}

/// Records each variant's first run when the backfill holds one earlier than any stored, so that
/// a release's age is told as if its runs were stored.
async fn keep_first_seen(c: &mut Conn<'_>, counts: &[CellCount], ids: &Ids<'_>) -> Result<()> {
    let mut first: BTreeMap<i64, i64> = BTreeMap::new();
    for count in counts {
        let e = first
            .entry(ids.variants[&count.dimensions])
            .or_insert(count.first_start);
        *e = (*e).min(count.first_start);
    }
    for (variant_id, start) in first {
        let stored: (Option<i64>,) = c
            .fetch_one(
                sql("SELECT MIN(started_at) FROM job_runs WHERE variant_id = $1").bind(variant_id),
            )
            .await?;
        let start = stored.0.map_or(start, |s| s.min(start));
        c.execute(
            sql(
                "INSERT INTO variant_first_seen (variant_id, started_at) VALUES ($1, $2) \
                 ON CONFLICT (variant_id) DO UPDATE SET started_at = CASE \
                 WHEN excluded.started_at < variant_first_seen.started_at THEN excluded.started_at \
                 ELSE variant_first_seen.started_at END",
            )
            .bind(variant_id)
            .bind(start),
        )
        .await?;
    }
    Ok(())
}

/// A UTC day number as YYYY-MM-DD.
fn day_name(day: i64) -> String {
    chrono::DateTime::from_timestamp(day * DAY, 0)
        .map_or_else(|| day.to_string(), |d| d.format("%Y-%m-%d").to_string())
}
