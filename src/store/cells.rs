//! `cell_days`: the exact per-day histogram of each cell, kept in step with `samples`.
//!
//! Ingest adds a run's samples in the same transaction that stores the run; a forced re-ingest
//! takes the old run's samples out first. PostgreSQL locks the touched rows (`FOR UPDATE`, in
//! backend order, so concurrent ingests neither lose an update nor deadlock); SQLite holds the
//! database write lock for the whole transaction anyway.

use std::collections::HashMap;

use anyhow::Result;

use super::{Conn, row_by_position, sql};
use crate::model::{DAY, Histogram};

/// The variant-days whose `cell_days` rows a write changed (each for every backend), recorded
/// with its version (`data_changes.cells`) so that readers re-read only those.
pub(crate) type ChangedCells = std::collections::BTreeSet<(i64, i64)>;

/// Adds one run's `(backend_id, seconds)` pairs to the histograms of `day` × `variant_id`
/// (`add`), or takes them out; the variant-day goes into `changed`.
pub(crate) async fn change_samples(
    c: &mut Conn<'_>,
    day: i64,
    variant_id: i64,
    cells: &[(i64, i64)],
    add: bool,
    changed: &mut ChangedCells,
) -> Result<()> {
    if !cells.is_empty() {
        changed.insert((variant_id, day));
    }
    let mut cells: Vec<RunsAt> =
        cells.iter().map(|&(backend_id, seconds)| RunsAt { backend_id, seconds, runs: 1 }).collect();
    cells.sort_unstable();
    if add {
        apply_change(c, day, variant_id, &cells, |h, secs, n| h.add(secs, n)).await
    } else {
        apply_change(c, day, variant_id, &cells, |h, secs, n| h.remove(secs, n)).await
    }
}

/// How many runs had one backend at one number of seconds: a change to a cell's histogram.
/// Ordered by backend, as the rows of a variant-day are locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RunsAt {
    pub backend_id: i64,
    pub seconds: i64,
    pub runs: u64,
}

/// Adds counted runs to the histograms of `day` × `variant_id` (a push-down backfill, which
/// reads counts rather than runs); the variant-day goes into `changed`.
pub(crate) async fn add_counts(
    c: &mut Conn<'_>,
    day: i64,
    variant_id: i64,
    counts: &[RunsAt],
    changed: &mut ChangedCells,
) -> Result<()> {
    if !counts.is_empty() {
        changed.insert((variant_id, day));
    }
    let mut counts = counts.to_vec();
    counts.sort_unstable();
    apply_change(c, day, variant_id, &counts, |h, secs, n| h.add(secs, n)).await
}

/// Removes a stored run's samples from the histograms (before the run is replaced); a
/// CI-troubled run was never in them.
pub(crate) async fn forget_run(c: &mut Conn<'_>, run_id: i64, changed: &mut ChangedCells) -> Result<()> {
    let rows: Vec<CountedSample> = c
        .fetch_all(
            sql("SELECT s.backend_id, s.seconds, r.variant_id, r.started_at FROM samples s \
                 JOIN job_runs r ON r.id = s.run_id WHERE s.run_id = $1 AND r.ci_trouble IS NULL \
                 ORDER BY s.backend_id")
            .bind(run_id),
        )
        .await?;
    if let Some(&CountedSample { variant_id, started_at, .. }) = rows.first() {
        let cells: Vec<(i64, i64)> = rows.iter().map(|r| (r.backend_id, r.seconds)).collect();
        change_samples(c, started_at.div_euclid(DAY), variant_id, &cells, false, changed).await?;
    }
    Ok(())
}

/// One sample of a stored run that counts in the histograms, with its run's cell and start.
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
struct CountedSample {
    backend_id: i64,
    seconds: i64,
    variant_id: i64,
    /// The run's start (Unix seconds): its day is the histogram's.
    started_at: i64,
}

/// One backend's stored histogram of a variant-day: runs, and the non-zero buckets encoded.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct CellDay {
    pub backend_id: i64,
    /// All the runs counted, those at zero seconds included.
    pub runs: i64,
    /// The non-zero buckets, as [`Histogram::encode_nonzero`] writes them.
    pub hist: String,
}

/// Read-modify-write of the histograms of one variant-day, locked on PostgreSQL.
async fn apply_change(
    c: &mut Conn<'_>,
    day: i64,
    variant_id: i64,
    cells: &[RunsAt],
    change: impl Fn(&mut Histogram, i64, u64),
) -> Result<()> {
    if cells.is_empty() {
        return Ok(());
    }
    c.execute(
        sql("INSERT INTO cell_days (day, backend_id, variant_id, runs, hist)")
            .values(cells, |cell| {
                vec![day.into(), cell.backend_id.into(), variant_id.into(), 0i64.into(), "".into()]
            })
            .push(" ON CONFLICT (backend_id, variant_id, day) DO NOTHING"),
    )
    .await?;
    let mut q = sql(
        "SELECT backend_id, runs, hist FROM cell_days WHERE variant_id = $1 AND day = $2 AND backend_id IN (",
    )
    .bind(variant_id)
    .bind(day)
    .list(cells.iter().map(|cell| cell.backend_id))
    .push(") ORDER BY backend_id");
    if c.is_postgres() {
        q = q.push(" FOR UPDATE");
    }
    let rows: Vec<CellDay> = c.fetch_all(q).await?;
    let updated = updated_histograms(rows, cells, change)?;
    c.execute(
        sql("INSERT INTO cell_days (day, backend_id, variant_id, runs, hist)")
            .values(&updated, |(backend_id, hist)| {
                vec![day.into(), (*backend_id).into(), variant_id.into(), (hist.count() as i64).into(), hist.encode_nonzero().into()]
            })
            .push(" ON CONFLICT (backend_id, variant_id, day) DO UPDATE SET runs = excluded.runs, hist = excluded.hist"),
    )
    .await?;
    Ok(())
}

/// The new histograms of the touched backends, from the stored rows and the change.
pub(crate) fn updated_histograms(
    rows: Vec<CellDay>,
    cells: &[RunsAt],
    change: impl Fn(&mut Histogram, i64, u64),
) -> anyhow::Result<Vec<(i64, Histogram)>> {
    let mut current: HashMap<i64, Histogram> = HashMap::with_capacity(rows.len());
    for CellDay { backend_id, runs, hist } in rows {
        current.insert(backend_id, Histogram::decode(&hist)?.with_zeros(runs as u64));
    }
    let mut touched: Vec<(i64, Histogram)> = Vec::with_capacity(cells.len());
    for &RunsAt { backend_id, seconds, runs } in cells {
        let h = current.entry(backend_id).or_default();
        change(h, seconds, runs);
        touched.push((backend_id, h.clone()));
    }
    // A backend listed twice keeps its last (cumulative) state only.
    touched.reverse();
    let mut seen = std::collections::HashSet::new();
    touched.retain(|(b, _)| seen.insert(*b));
    touched.sort_by_key(|(b, _)| *b);
    Ok(touched)
}

impl super::Store {
    /// The merged histogram of one backend over every variant, for UTC days in `days`.
    pub async fn backend_histogram(
        &self,
        backend: &str,
        days: std::ops::Range<i64>,
    ) -> anyhow::Result<Histogram> {
        let rows: Vec<(i64, String)> = self
            .fetch_all(
                sql("SELECT c.runs, c.hist FROM cell_days c JOIN backends b ON b.id = c.backend_id \
                     WHERE b.name = $1 AND c.day >= $2 AND c.day < $3")
                .bind(backend)
                .bind(days.start)
                .bind(days.end),
            )
            .await?;
        let mut total = Histogram::new();
        for (runs, hist) in rows {
            total.merge(&Histogram::decode(&hist)?.with_zeros(runs as u64));
        }
        Ok(total)
    }
}

/// One UTC day of one backend over the chosen variants.
#[derive(Debug)]
struct DayRow {
    /// The UTC day (Unix seconds / 86400).
    day: i64,
    /// The runs of every variant that day.
    runs: i64,
    /// The variants' non-zero histograms joined by spaces; None when all were empty.
    hists: Option<String>,
}
row_by_position!(DayRow { day, runs, hists });

/// Per day, one backend's histograms over a set of variants (a JSON array of ids), joined in
/// the database so that a query reads one row per day whatever the number of variants.
const DAYS_SQLITE: &str = "SELECT day, SUM(runs), group_concat(hist, ' ') FILTER (WHERE hist <> '') \
    FROM cell_days WHERE backend_id = (SELECT id FROM backends WHERE name = $1) \
    AND variant_id IN (SELECT value FROM json_each($4)) AND day >= $2 AND day < $3 GROUP BY day";
const DAYS_POSTGRES: &str = "SELECT day, SUM(runs)::BIGINT, string_agg(hist, ' ') FILTER (WHERE hist <> '') \
    FROM cell_days WHERE backend_id = (SELECT id FROM backends WHERE name = $1) \
    AND variant_id IN (SELECT value::BIGINT FROM json_array_elements_text($4::json)) \
    AND day >= $2 AND day < $3 GROUP BY day";

/// What a query's per-day histograms depend on, besides the stored data.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct DaysKey {
    backend: String,
    variants: Vec<i64>,
    days: (i64, i64),
}

type Days = std::sync::Arc<std::collections::BTreeMap<i64, Histogram>>;

/// Recent per-day answers, valid for one `data_version`; bounded, emptied when full. Each key
/// has one slot, so a question asked by many at once after a change is read once. The answers
/// of the version before are kept too, so that a change re-reads only the days it touched.
#[derive(Debug, Default)]
pub(crate) struct DayCache {
    version: i64,
    entries: HashMap<DaysKey, std::sync::Arc<tokio::sync::OnceCell<Days>>>,
    previous_version: i64,
    previous: HashMap<DaysKey, Days>,
    /// What changed from the previous version to this one: read once for every answer brought
    /// up to date (all of them at once, after a write).
    changes: std::sync::Arc<tokio::sync::OnceCell<Changes>>,
    /// Whether the answers to bring up to date are many enough to read every cell's recent
    /// days at once ([`SHARED_FROM_ANSWERS`]).
    share_rows: bool,
    /// The newest every-cell rows of recent days, brought up to date from change to change.
    rows: Option<std::sync::Arc<RecentRows>>,
}

/// The answer for a key at an older version, and what changed since.
struct Older {
    version: i64,
    days: Days,
    changes: std::sync::Arc<tokio::sync::OnceCell<Changes>>,
    share_rows: bool,
    rows: Option<std::sync::Arc<RecentRows>>,
}

/// Recent days whose rows are read for every cell at once: the newest changed day and the ones
/// before it. An answer that needs other days reads its own.
const SHARED_DAYS: i64 = 3;

/// From how many answers kept at the version before every cell's recent days are read at once
/// (one statement over the days) rather than for each answer (one per backend): a cycle's few
/// series read their own, the many answers of a busy channel share one read (on PostgreSQL;
/// measured with `bench query`, SQLite's own reads cost less than one for all). Once read, the
/// rows are kept and each later change re-reads only the variant-days it lists.
const SHARED_FROM_ANSWERS: usize = 8;

/// Changes further apart than this are not read one by one: a reader that far behind re-reads
/// every day from the first one changed.
const LISTED_VERSIONS: i64 = 256;

/// What changed between two versions: the first day changed (None: not all on record), the
/// variant-days changed when every change listed them, and every cell's rows of recent days at
/// the newer version when they are kept.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    first_day: Option<i64>,
    cells: Option<Vec<(i64, i64)>>,
    rows: Option<std::sync::Arc<RecentRows>>,
}

/// A stored `cell_days` row with its backend's name.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
struct CellRow {
    #[sqlx(rename = "name")]
    backend: String,
    day: i64,
    variant_id: i64,
    runs: i64,
    /// The non-zero buckets, as stored.
    hist: String,
}

/// One variant's row of a backend's day: its id, runs and non-zero histogram as stored.
type StoredCell = (i64, i64, std::sync::Arc<str>);

/// Every cell's rows of some days, by backend name, then day; each day's rows by variant id.
type SharedRows = HashMap<String, std::collections::BTreeMap<i64, std::sync::Arc<Vec<StoredCell>>>>;

/// Every cell's rows of the days in `days`, as of `version` (or newer, cell by cell).
#[derive(Debug)]
pub(crate) struct RecentRows {
    version: i64,
    days: (i64, i64),
    by_backend: SharedRows,
}

impl RecentRows {
    fn from_rows(version: i64, days: (i64, i64), rows: Vec<CellRow>) -> RecentRows {
        let mut by_day: HashMap<String, std::collections::BTreeMap<i64, Vec<StoredCell>>> = HashMap::new();
        for CellRow { backend, day, variant_id, runs, hist } in rows {
            by_day.entry(backend).or_default().entry(day).or_default().push((variant_id, runs, hist.into()));
        }
        let by_backend = by_day
            .into_iter()
            .map(|(b, days)| {
                let days = days
                    .into_iter()
                    .map(|(d, mut rows)| {
                        rows.sort_unstable_by_key(|r| r.0);
                        (d, std::sync::Arc::new(rows))
                    })
                    .collect();
                (b, days)
            })
            .collect();
        RecentRows { version, days, by_backend }
    }

    /// These rows at `version`, with the variant-days `cells` replaced by `fresh` (every row
    /// now stored for them, read after `version`).
    fn patched(&self, version: i64, cells: &[(i64, i64)], fresh: Vec<CellRow>) -> RecentRows {
        let mut by_backend = self.by_backend.clone();
        for days in by_backend.values_mut() {
            for (day, rows) in days.iter_mut() {
                let gone = |v: i64| cells.binary_search(&(v, *day)).is_ok();
                if rows.iter().any(|r| gone(r.0)) {
                    std::sync::Arc::make_mut(rows).retain(|r| !gone(r.0));
                }
            }
        }
        for CellRow { backend, day, variant_id, runs, hist } in fresh {
            let rows =
                std::sync::Arc::make_mut(by_backend.entry(backend).or_default().entry(day).or_default());
            let at = rows.partition_point(|r| r.0 < variant_id);
            rows.insert(at, (variant_id, runs, hist.into()));
        }
        RecentRows { version, days: self.days, by_backend }
    }

    fn holds(&self, day: i64) -> bool {
        (self.days.0..self.days.1).contains(&day)
    }

    /// `key`'s histogram of `day` (held here), as [`super::Store::read_days`] reads it: None when
    /// no row of the key's variants is stored for it.
    fn day_of(&self, key: &DaysKey, day: i64) -> Result<Option<Histogram>> {
        let Some(rows) = self.by_backend.get(key.backend.as_str()).and_then(|d| d.get(&day)) else {
            return Ok(None);
        };
        let mut runs = 0;
        let mut joined = String::new();
        let mut any = false;
        for (variant, n, hist) in rows.iter() {
            if key.variants.binary_search(variant).is_err() {
                continue;
            }
            any = true;
            runs += n;
            if !hist.is_empty() {
                if !joined.is_empty() {
                    joined.push(' ');
                }
                joined.push_str(hist);
            }
        }
        if !any {
            return Ok(None);
        }
        Ok(Some(Histogram::decode_concatenated(&joined)?.with_zeros(runs as u64)))
    }
}

/// One recorded change, as `data_changes` holds it.
#[derive(Debug, sqlx::FromRow)]
struct ChangeRow {
    version: i64,
    first_day: i64,
    /// The variant-days it changed, a JSON array of `[variant id, day]`; None: not listed.
    cells: Option<String>,
}

/// One recorded change: its version, first day and the variant-days it listed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LoggedChange {
    version: i64,
    /// The first UTC day it changed.
    first_day: i64,
    /// The `(variant id, day)` pairs it changed, when it listed them.
    cells: Option<Vec<(i64, i64)>>,
}

/// The first day and the variant-days (sorted, when all listed) of the changes in `log` after
/// `since`, when all of them up to `version` are there.
fn summary(log: &[LoggedChange], since: i64, version: i64) -> (Option<i64>, Option<Vec<(i64, i64)>>) {
    let after: Vec<&LoggedChange> =
        log.iter().filter(|c| c.version > since && c.version <= version).collect();
    if after.len() as i64 != version - since {
        return (None, None);
    }
    let first_day = after.iter().map(|c| c.first_day).min();
    let mut cells = Some(Vec::new());
    for c in &after {
        match (&mut cells, &c.cells) {
            (Some(all), Some(listed)) => all.extend_from_slice(listed),
            _ => cells = None,
        }
    }
    if let Some(all) = &mut cells {
        all.sort_unstable();
        all.dedup();
    }
    (first_day, cells)
}

impl DayCache {
    const MAX_ENTRIES: usize = 512;

    /// The slot for `key` at `version` (a fresh one, not kept, for a reader behind the times),
    /// and the answer for `key` at an older version when there is one.
    fn slot(
        &mut self,
        version: i64,
        key: &DaysKey,
    ) -> (std::sync::Arc<tokio::sync::OnceCell<Days>>, Option<Older>) {
        if version < self.version {
            return (Default::default(), None);
        }
        if version > self.version {
            self.previous =
                self.entries.drain().filter_map(|(k, slot)| slot.get().cloned().map(|d| (k, d))).collect();
            self.previous_version = self.version;
            self.version = version;
            self.changes = Default::default();
            self.share_rows = self.previous.len() >= SHARED_FROM_ANSWERS;
        }
        if self.entries.len() >= Self::MAX_ENTRIES && !self.entries.contains_key(key) {
            self.entries.clear();
            self.previous.clear();
        }
        let older = self.previous.get(key).map(|d| Older {
            version: self.previous_version,
            days: d.clone(),
            changes: self.changes.clone(),
            share_rows: self.share_rows,
            rows: self.rows.clone(),
        });
        (self.entries.entry(key.clone()).or_default().clone(), older)
    }

    /// Keeps `rows` when they are newer than the ones kept.
    fn keep_rows(&mut self, rows: &std::sync::Arc<RecentRows>) {
        if self.rows.as_ref().is_none_or(|r| r.version < rows.version) {
            self.rows = Some(rows.clone());
        }
    }
}

/// What a question reads besides its days, as of one data version: every variant and every
/// backend name. Both only grow, and only in a write that bumps the version, so a question
/// asked again between two writes reads nothing but the version.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub version: i64,
    pub variants: std::sync::Arc<Vec<(i64, crate::model::Dimensions)>>,
    pub backend_names: std::sync::Arc<Vec<String>>,
}

/// Reads of the data version that many questions share: a question waits for a read that
/// started after it was asked (so it sees every write committed before), and every question
/// waiting when a read starts takes its answer. Under load this is one statement per round
/// trip instead of one per question (on PostgreSQL a round trip to the server each).
#[derive(Debug, Default)]
pub(crate) struct VersionReads {
    /// How many reads have started.
    started: std::sync::atomic::AtomicU64,
    /// The last read: its place in that count and the version it read. Held while reading.
    last: tokio::sync::Mutex<(u64, i64)>,
}

/// A row of `variants`.
#[derive(sqlx::FromRow)]
struct VariantRow {
    id: i64,
    release: String,
    from_release: String,
    upgrade_type: String,
    platform: String,
    architecture: String,
    network: String,
    network_stack: String,
    topology: String,
    master_nodes_updated: String,
}

impl super::Store {
    /// Every backend name any stored run has recorded, sorted.
    pub async fn backend_names(&self) -> anyhow::Result<Vec<String>> {
        let rows: Vec<(String,)> = self.fetch_all(sql("SELECT name FROM backends ORDER BY name")).await?;
        Ok(rows.into_iter().map(|(n,)| n).collect())
    }

    /// Every variant and its id, by id. Variants are only ever added, so the list is kept in
    /// memory and read again only when the table's count or newest id moved (by any process;
    /// the count catches an id that committed after a higher one).
    pub async fn variants(&self) -> anyhow::Result<std::sync::Arc<Vec<(i64, crate::model::Dimensions)>>> {
        let (count, newest): (i64, i64) =
            self.fetch_one(sql("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM variants")).await?;
        let known = self.variant_list.lock().expect("cache lock").clone();
        if known.len() as i64 == count && known.last().map_or(0, |v| v.0) == newest {
            return Ok(known);
        }
        let rows: Vec<VariantRow> = self
            .fetch_all(sql(
                "SELECT id, release, from_release, upgrade_type, platform, architecture, network, \
                 network_stack, topology, master_nodes_updated FROM variants ORDER BY id",
            ))
            .await?;
        let list: Vec<(i64, crate::model::Dimensions)> = rows
            .into_iter()
            .map(|v| {
                let d = crate::model::Dimensions {
                    release: v.release,
                    from_release: v.from_release,
                    upgrade_type: v.upgrade_type,
                    platform: v.platform,
                    architecture: v.architecture,
                    network: v.network,
                    network_stack: v.network_stack,
                    topology: v.topology,
                    master_nodes_updated: v.master_nodes_updated,
                };
                (v.id, d)
            })
            .collect();
        let list = std::sync::Arc::new(list);
        let mut cache = self.variant_list.lock().expect("cache lock");
        if cache.len() < list.len() {
            *cache = list.clone();
        }
        Ok(list)
    }

    /// The version of the stored runs, bumped by every write that changes them (in any process).
    pub async fn data_version(&self) -> anyhow::Result<i64> {
        self.scalar(sql("SELECT version FROM data_version WHERE id = 1")).await
    }

    /// The data version for a question: read after it was asked, the read shared with the
    /// questions asked at once.
    pub async fn data_version_shared(&self) -> anyhow::Result<i64> {
        use std::sync::atomic::Ordering::SeqCst;
        let reads = &self.version_reads;
        let asked = reads.started.load(SeqCst);
        let mut last = reads.last.lock().await;
        if last.0 > asked {
            return Ok(last.1);
        }
        let place = reads.started.fetch_add(1, SeqCst) + 1;
        let version = self.data_version().await?;
        *last = (place, version);
        Ok(version)
    }

    /// How many reads of the data version questions have made ([`super::Store::data_version_shared`]).
    pub fn version_reads_started(&self) -> u64 {
        self.version_reads.started.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The variants and backend names at the current data version: one small read (shared by
    /// the questions asked at once) when the version has not moved since the last call.
    pub async fn catalog(&self) -> anyhow::Result<Catalog> {
        let version = self.data_version_shared().await?;
        let known = self.catalog.lock().expect("cache lock").clone();
        if let Some(c) = known.filter(|c| c.version == version) {
            return Ok(c);
        }
        // Read after the version: they hold at least what it counts.
        let variants = self.variants().await?;
        let backend_names = std::sync::Arc::new(self.backend_names().await?);
        let c = Catalog { version, variants, backend_names };
        let mut cache = self.catalog.lock().expect("cache lock");
        if cache.as_ref().is_none_or(|k| k.version < version) {
            *cache = Some(c.clone());
        }
        Ok(c)
    }

    /// Per UTC day in `days`, the merged histogram of `backend` over the variants in `variants`.
    /// Answers are kept in memory until any process changes the stored runs (`data_version`),
    /// so repeated questions between two ingests cost one small read.
    pub async fn daily_histograms(
        &self,
        backend: &str,
        variants: &std::collections::HashSet<i64>,
        days: std::ops::Range<i64>,
    ) -> anyhow::Result<Days> {
        let version = self.data_version_shared().await?;
        self.daily_histograms_at(version, backend, variants, days).await
    }

    /// [`super::Store::daily_histograms`] at `version`, read by the caller (from [`super::Store::catalog`]).
    pub async fn daily_histograms_at(
        &self,
        version: i64,
        backend: &str,
        variants: &std::collections::HashSet<i64>,
        days: std::ops::Range<i64>,
    ) -> anyhow::Result<Days> {
        if variants.is_empty() {
            return Ok(Default::default());
        }
        let mut ids: Vec<i64> = variants.iter().copied().collect();
        ids.sort_unstable();
        let key = DaysKey { backend: backend.to_string(), variants: ids, days: (days.start, days.end) };
        let (slot, older) = self.day_cache.lock().expect("cache lock").slot(version, &key);
        slot.get_or_try_init(|| self.refresh_days(&key, version, older)).await.cloned()
    }

    /// `key`'s days at `version`: the older answer when no change since touched its variants,
    /// else the older answer with the touched days read again (from the kept recent rows when
    /// they hold them); all read afresh when the changes are not on record.
    async fn refresh_days(&self, key: &DaysKey, version: i64, older: Option<Older>) -> anyhow::Result<Days> {
        let Some(Older { version: since, days: older, changes, share_rows, rows }) = older else {
            return self.read_days(key, key.days.0, key.days.1).await;
        };
        let changes =
            changes.get_or_try_init(|| self.changes_between(since, version, share_rows, rows)).await?;
        // The first and last of the key's days touched.
        let touched = match (&changes.cells, changes.first_day) {
            (Some(cells), _) => cells
                .iter()
                .filter(|(v, d)| {
                    key.variants.binary_search(v).is_ok() && (key.days.0..key.days.1).contains(d)
                })
                .fold(None, |span: Option<(i64, i64)>, &(_, d)| {
                    Some(span.map_or((d, d), |(low, high)| (low.min(d), high.max(d))))
                }),
            // Not listed: every day from the first changed on.
            (None, Some(first_day)) => {
                Some((first_day.max(key.days.0), key.days.1 - 1)).filter(|(low, high)| low <= high)
            }
            (None, None) => return self.read_days(key, key.days.0, key.days.1).await,
        };
        let Some((low, high)) = touched else { return Ok(older) };
        let mut days: std::collections::BTreeMap<i64, Histogram> =
            older.iter().filter(|(d, _)| !(low..=high).contains(*d)).map(|(d, h)| (*d, h.clone())).collect();
        match &changes.rows {
            Some(rows) if rows.holds(low) && rows.holds(high) => {
                for day in low..=high {
                    if let Some(h) = rows.day_of(key, day)? {
                        days.insert(day, h);
                    }
                }
            }
            _ => days.extend(self.read_days(key, low, high + 1).await?.iter().map(|(d, h)| (*d, h.clone()))),
        }
        Ok(std::sync::Arc::new(days))
    }

    /// What changed from `since` to `version`, and every cell's recent rows at `version` when
    /// kept: `rows` (kept before) brought up to date by re-reading the variant-days listed since,
    /// or (`share_rows`, on PostgreSQL) every cell's rows of the [`SHARED_DAYS`] to the newest
    /// changed day read afresh when those do not hold it; the day cache keeps them for the next
    /// change. SQLite reads a backend's days
    /// in-process at little cost; PostgreSQL's per-answer statement probes the key once per
    /// variant, and one statement for all is cheaper.
    async fn changes_between(
        &self,
        since: i64,
        version: i64,
        share_rows: bool,
        rows: Option<std::sync::Arc<RecentRows>>,
    ) -> anyhow::Result<Changes> {
        let rows = rows.filter(|r| r.version <= version && version - r.version <= LISTED_VERSIONS);
        let from = rows.as_ref().map_or(since, |r| r.version.min(since));
        let (log, (first_day, cells)) = if version - from <= LISTED_VERSIONS {
            let log = self.change_log(from, version).await?;
            let changed = summary(&log, since, version);
            (log, changed)
        } else {
            (Vec::new(), (self.first_change_between(since, version).await?, None))
        };
        let mut kept = match rows {
            Some(r) if r.version == version => Some(r),
            Some(r) => match summary(&log, r.version, version).1 {
                Some(listed) => {
                    let listed: Vec<(i64, i64)> = listed.into_iter().filter(|c| r.holds(c.1)).collect();
                    let fresh = self.read_cells(&listed).await?;
                    Some(std::sync::Arc::new(r.patched(version, &listed, fresh)))
                }
                None => None,
            },
            None => None,
        };
        // The span to hold: to the newest day changed, or from the first when not listed. Kept
        // rows move only to a newer day: a late run's older day is read by the answers it
        // touches (moving back and forth would read every cell at each turn).
        let span = match (&cells, first_day) {
            (Some(listed), _) => listed.iter().map(|c| c.1).max().map(|d| (d + 1 - SHARED_DAYS, d + 1)),
            (None, first) => first.map(|d| (d, d.saturating_add(SHARED_DAYS))),
        };
        let share_rows = share_rows && self.engine() == crate::config::Engine::Postgres;
        if let Some(span) = span.filter(|s| share_rows && kept.as_ref().is_none_or(|r| s.1 > r.days.1)) {
            let rows: Vec<CellRow> = self
                .fetch_all(
                    sql("SELECT b.name, c.day, c.variant_id, c.runs, c.hist FROM cell_days c \
                         JOIN backends b ON b.id = c.backend_id WHERE c.day >= $1 AND c.day < $2")
                    .bind(span.0)
                    .bind(span.1),
                )
                .await?;
            kept = Some(std::sync::Arc::new(RecentRows::from_rows(version, span, rows)));
        }
        if let Some(rows) = &kept {
            self.day_cache.lock().expect("cache lock").keep_rows(rows);
        }
        Ok(Changes { first_day, cells, rows: kept })
    }

    /// The first day and the variant-days (sorted, when every change listed them) changed after
    /// `since` up to `version`; the first day is None when some of those changes are not on
    /// record. Changes more than [`LISTED_VERSIONS`] apart give the first day alone.
    pub(crate) async fn changes_listed(
        &self,
        since: i64,
        version: i64,
    ) -> anyhow::Result<(Option<i64>, Option<Vec<(i64, i64)>>)> {
        if version - since > LISTED_VERSIONS {
            return Ok((self.first_change_between(since, version).await?, None));
        }
        let log = self.change_log(since, version).await?;
        Ok(summary(&log, since, version))
    }

    /// The changes recorded after `since` up to `version`, oldest first.
    async fn change_log(&self, since: i64, version: i64) -> anyhow::Result<Vec<LoggedChange>> {
        let rows: Vec<ChangeRow> = self
            .fetch_all(
                sql(
                    "SELECT version, first_day, cells FROM data_changes WHERE version > $1 AND version <= $2 \
                     ORDER BY version",
                )
                .bind(since)
                .bind(version),
            )
            .await?;
        rows.into_iter()
            .map(|ChangeRow { version, first_day, cells }| {
                let cells = cells.map(|c| serde_json::from_str(&c)).transpose()?;
                Ok(LoggedChange { version, first_day, cells })
            })
            .collect()
    }

    /// Every backend's row of the variant-days `cells`, as stored now.
    async fn read_cells(&self, cells: &[(i64, i64)]) -> anyhow::Result<Vec<CellRow>> {
        if cells.is_empty() {
            return Ok(Vec::new());
        }
        // One key probe per backend and pair (the planner, left to itself, scans a whole day).
        let q = if self.engine() == crate::config::Engine::Postgres {
            let variants: Vec<i64> = cells.iter().map(|c| c.0).collect();
            let days: Vec<i64> = cells.iter().map(|c| c.1).collect();
            sql("SELECT b.name, p.day, p.variant_id, c.runs, c.hist \
                 FROM unnest(CAST($1 AS BIGINT[]), CAST($2 AS BIGINT[])) AS p (variant_id, day) \
                 CROSS JOIN backends b CROSS JOIN LATERAL (SELECT runs, hist FROM cell_days c \
                 WHERE c.backend_id = b.id AND c.variant_id = p.variant_id AND c.day = p.day OFFSET 0) c")
            .bind(pg_array(&variants))
            .bind(pg_array(&days))
        } else {
            sql("SELECT b.name, c.day, c.variant_id, c.runs, c.hist FROM json_each($1) p \
                 CROSS JOIN backends b CROSS JOIN cell_days c WHERE c.backend_id = b.id \
                 AND c.variant_id = json_extract(p.value, '$[0]') AND c.day = json_extract(p.value, '$[1]')")
            .bind(serde_json::to_string(cells)?)
        };
        let rows: Vec<CellRow> = self.fetch_all(q).await?;
        Ok(rows)
    }

    /// Reads `key`'s days in `from..until` (within its own).
    async fn read_days(&self, key: &DaysKey, from: i64, until: i64) -> anyhow::Result<Days> {
        let ids = serde_json::to_string(&key.variants)?;
        let text = if self.engine() == crate::config::Engine::Postgres { DAYS_POSTGRES } else { DAYS_SQLITE };
        let (from, until) = (from.max(key.days.0), until.min(key.days.1));
        let rows: Vec<DayRow> =
            self.fetch_all(sql(text).bind(&key.backend).bind(from).bind(until).bind(ids)).await?;
        let mut out = std::collections::BTreeMap::new();
        for DayRow { day, runs, hists } in rows {
            let h = Histogram::decode_concatenated(hists.as_deref().unwrap_or_default())?;
            out.insert(day, h.with_zeros(runs as u64));
        }
        Ok(std::sync::Arc::new(out))
    }
}

/// `values` as a PostgreSQL array literal, for `CAST($n AS BIGINT[])`.
fn pg_array(values: &[i64]) -> String {
    let items: Vec<String> = values.iter().map(i64::to_string).collect();
    format!("{{{}}}", items.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(backend: &str, day: i64, variant_id: i64, runs: i64, hist: &str) -> CellRow {
        CellRow { backend: backend.to_string(), day, variant_id, runs, hist: hist.to_string() }
    }

    fn change(version: i64, first_day: i64, cells: Option<Vec<(i64, i64)>>) -> LoggedChange {
        LoggedChange { version, first_day, cells }
    }

    fn key(backend: &str, variants: &[i64]) -> DaysKey {
        DaysKey { backend: backend.to_string(), variants: variants.to_vec(), days: (0, 100) }
    }

    #[test]
    fn a_summary_lists_cells_only_when_every_change_did_and_all_are_on_record() {
        let log: Vec<LoggedChange> = vec![
            change(4, 10, Some(vec![(1, 10)])),
            change(5, 12, Some(vec![(2, 12), (1, 13), (1, 10)])),
            change(6, 9, None),
            change(7, 11, Some(vec![(3, 11)])),
        ];
        assert_eq!(
            summary(&log, 3, 5),
            (Some(10), Some(vec![(1, 10), (1, 13), (2, 12)])),
            "sorted, once each"
        );
        assert_eq!(summary(&log, 4, 5), (Some(12), Some(vec![(1, 10), (1, 13), (2, 12)])));
        assert_eq!(summary(&log, 5, 7), (Some(9), None), "a change that listed none");
        assert_eq!(summary(&log, 6, 7), (Some(11), Some(vec![(3, 11)])));
        assert_eq!(summary(&log, 2, 5), (None, None), "version 3 is not on record");
        assert_eq!(summary(&log, 3, 8), (None, None), "version 8 is not on record");
    }

    #[test]
    fn patched_rows_replace_the_listed_variant_days_in_every_backend_and_keep_the_rest() {
        let kept = RecentRows::from_rows(
            1,
            (10, 13),
            vec![
                row("api", 11, 2, 3, "5:1"),
                row("api", 11, 1, 2, ""),
                row("api", 12, 1, 1, "7:1"),
                row("console", 11, 1, 4, "2:2"),
                row("console", 11, 3, 1, ""),
            ],
        );
        assert!(kept.holds(10) && kept.holds(12) && !kept.holds(13) && !kept.holds(9));
        let api = key("api", &[1, 2]);
        assert_eq!(kept.day_of(&api, 11).unwrap(), Some(Histogram::decode("5:1").unwrap().with_zeros(5)));
        assert_eq!(kept.day_of(&key("api", &[3]), 11).unwrap(), None, "no row of the key's variants");

        // Variant 1 of day 11 changed: the api row is rewritten, the console row went away (a
        // row not read back is gone), a new backend has one; day 12 is untouched.
        let patched =
            kept.patched(2, &[(1, 11)], vec![row("api", 11, 1, 3, "9:1"), row("etcd", 11, 1, 1, "")]);
        assert_eq!(patched.version, 2);
        let api_11 = &patched.by_backend["api"][&11];
        assert_eq!(
            api_11.iter().map(|r| (r.0, r.1, r.2.to_string())).collect::<Vec<_>>(),
            vec![(1, 3, "9:1".to_string()), (2, 3, "5:1".to_string())],
            "sorted by variant"
        );
        assert_eq!(
            patched.day_of(&api, 11).unwrap(),
            Some(Histogram::decode("5:1 9:1").unwrap().with_zeros(6))
        );
        assert_eq!(patched.day_of(&api, 12).unwrap(), kept.day_of(&api, 12).unwrap());
        assert_eq!(patched.day_of(&key("console", &[1]), 11).unwrap(), None);
        assert_eq!(
            patched.day_of(&key("console", &[1, 3]), 11).unwrap(),
            Some(Histogram::new().with_zeros(1))
        );
        assert_eq!(patched.day_of(&key("etcd", &[1]), 11).unwrap(), Some(Histogram::new().with_zeros(1)));
        // The rows kept before are left as they were (answers at the older version use them).
        assert_eq!(
            kept.day_of(&key("console", &[1]), 11).unwrap(),
            Some(Histogram::decode("2:2").unwrap().with_zeros(4))
        );
    }

    #[test]
    fn a_postgres_array_literal_lists_the_values() {
        assert_eq!(pg_array(&[3, -1, 20]), "{3,-1,20}");
        assert_eq!(pg_array(&[]), "{}");
    }
}
