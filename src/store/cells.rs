//! `cell_days`: the exact per-day histogram of each cell, kept in step with `samples`.
//!
//! Ingest adds a run's samples in the same transaction that stores the run; a forced re-ingest
//! takes the old run's samples out first. PostgreSQL locks the touched rows (`FOR UPDATE`, in
//! backend order, so concurrent ingests neither lose an update nor deadlock); SQLite holds the
//! database write lock for the whole transaction anyway.

use std::collections::HashMap;

use anyhow::Result;

use super::{Conn, sql};
use crate::model::Histogram;

/// Adds one run's `(backend_id, seconds)` pairs to the histograms of `day` × `variant_id`
/// (`add`), or takes them out.
pub(crate) async fn change_samples(
    c: &mut Conn<'_>,
    day: i64,
    variant_id: i64,
    cells: &[(i64, i64)],
    add: bool,
) -> Result<()> {
    let mut cells = cells.to_vec();
    cells.sort_unstable();
    if add {
        apply_change(c, day, variant_id, &cells, |h, secs| h.add(secs, 1)).await
    } else {
        apply_change(c, day, variant_id, &cells, |h, secs| h.remove(secs, 1)).await
    }
}

/// Removes a stored run's samples from the histograms (before the run is replaced); a
/// CI-troubled run was never in them.
pub(crate) async fn forget_run(c: &mut Conn<'_>, run_id: i64) -> Result<()> {
    let rows: Vec<(i64, i64, i64, i64)> = c
        .fetch_all(
            sql("SELECT s.backend_id, s.seconds, r.variant_id, r.started_at FROM samples s \
                 JOIN job_runs r ON r.id = s.run_id WHERE s.run_id = $1 AND r.ci_trouble IS NULL \
                 ORDER BY s.backend_id")
            .bind(run_id),
        )
        .await?;
    if let Some(&(_, _, variant_id, started_at)) = rows.first() {
        let cells: Vec<(i64, i64)> = rows.iter().map(|r| (r.0, r.1)).collect();
        change_samples(c, started_at.div_euclid(86_400), variant_id, &cells, false).await?;
    }
    Ok(())
}

/// Read-modify-write of the histograms of one variant-day, locked on PostgreSQL.
async fn apply_change(
    c: &mut Conn<'_>,
    day: i64,
    variant_id: i64,
    cells: &[(i64, i64)],
    change: impl Fn(&mut Histogram, i64),
) -> Result<()> {
    if cells.is_empty() {
        return Ok(());
    }
    c.execute(
        sql("INSERT INTO cell_days (day, backend_id, variant_id, runs, hist)")
            .values(cells, |(backend_id, _)| {
                vec![day.into(), (*backend_id).into(), variant_id.into(), 0i64.into(), "".into()]
            })
            .push(" ON CONFLICT (backend_id, variant_id, day) DO NOTHING"),
    )
    .await?;
    let mut q = sql(
        "SELECT backend_id, runs, hist FROM cell_days WHERE variant_id = $1 AND day = $2 AND backend_id IN (",
    )
    .bind(variant_id)
    .bind(day)
    .list(cells.iter().map(|(b, _)| *b))
    .push(") ORDER BY backend_id");
    if c.is_postgres() {
        q = q.push(" FOR UPDATE");
    }
    let rows: Vec<(i64, i64, String)> = c.fetch_all(q).await?;
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
    rows: Vec<(i64, i64, String)>,
    cells: &[(i64, i64)],
    change: impl Fn(&mut Histogram, i64),
) -> anyhow::Result<Vec<(i64, Histogram)>> {
    let mut current: HashMap<i64, Histogram> = HashMap::with_capacity(rows.len());
    for (backend_id, runs, hist) in rows {
        current.insert(backend_id, Histogram::decode(&hist)?.with_zeros(runs as u64));
    }
    let mut touched: Vec<(i64, Histogram)> = Vec::with_capacity(cells.len());
    for &(backend_id, seconds) in cells {
        let h = current.entry(backend_id).or_default();
        change(h, seconds);
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

/// One UTC day of one backend over the chosen variants: day number, runs, the non-zero
/// histograms joined by spaces.
type DayRow = (i64, i64, Option<String>);

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
    /// Whether the answers to bring up to date are many enough to read every cell's changed
    /// days at once ([`SHARED_FROM_ANSWERS`]).
    share_rows: bool,
}

/// The answer for a key at an older version, and what changed since.
struct Older {
    version: i64,
    days: Days,
    changes: std::sync::Arc<tokio::sync::OnceCell<Changes>>,
    share_rows: bool,
}

/// Days from the first changed one that are read for every cell at once; an answer that needs
/// later days (or a change further back) reads its own.
const SHARED_DAYS: i64 = 3;

/// From how many answers kept at the version before the changed days are read for every cell
/// at once (one statement over the days) rather than for each answer (one per backend): a
/// cycle's few series read their own, the many answers of a busy channel share one read (on
/// PostgreSQL; measured with `bench query`, SQLite's own reads cost less than one for all).
const SHARED_FROM_ANSWERS: usize = 8;

/// What changed between two versions: the first day changed (None: not all on record), and,
/// when read, the rows of every cell for the [`SHARED_DAYS`] from it.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    first_day: Option<i64>,
    rows: Option<SharedRows>,
}

/// One variant's row of a backend's day: its id, runs and non-zero histogram as stored.
type StoredCell = (i64, i64, String);

/// Every cell's rows of some days, by backend name, then day.
type SharedRows = HashMap<String, std::collections::BTreeMap<i64, Vec<StoredCell>>>;

/// `key`'s days from `from` on, from the shared rows, as [`super::Store::read_days`] reads them:
/// a day with no row of the key's variants is absent.
fn shared_days_of(
    rows: &SharedRows,
    key: &DaysKey,
    from: i64,
) -> Result<std::collections::BTreeMap<i64, Histogram>> {
    let mut out = std::collections::BTreeMap::new();
    let Some(days) = rows.get(key.backend.as_str()) else { return Ok(out) };
    for (&day, rows) in days.range(from.max(key.days.0)..key.days.1) {
        let mut runs = 0;
        let mut joined = String::new();
        let mut any = false;
        for (variant, n, hist) in rows {
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
        if any {
            out.insert(day, Histogram::decode_concatenated(&joined)?.with_zeros(runs as u64));
        }
    }
    Ok(out)
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
        });
        (self.entries.entry(key.clone()).or_default().clone(), older)
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

    /// The variants and backend names at the current data version: one small read when the
    /// version has not moved since the last call.
    pub async fn catalog(&self) -> anyhow::Result<Catalog> {
        let version = self.data_version().await?;
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
        let version = self.data_version().await?;
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

    /// `key`'s days at `version`: from an older answer and the days changed since when the
    /// changes are all on record, else all read afresh.
    async fn refresh_days(&self, key: &DaysKey, version: i64, older: Option<Older>) -> anyhow::Result<Days> {
        let Some(Older { version: since, days: older, changes, share_rows }) = older else {
            return self.read_days(key, key.days.0).await;
        };
        let changes = changes.get_or_try_init(|| self.changes_between(since, version, share_rows)).await?;
        let Some(first_day) = changes.first_day else {
            return self.read_days(key, key.days.0).await;
        };
        let from = first_day.max(key.days.0);
        let mut days: std::collections::BTreeMap<i64, Histogram> =
            older.range(..from).map(|(d, h)| (*d, h.clone())).collect();
        match &changes.rows {
            Some(rows) if key.days.1 <= first_day.saturating_add(SHARED_DAYS) => {
                days.extend(shared_days_of(rows, key, from)?);
            }
            _ => days.extend(self.read_days(key, from).await?.iter().map(|(d, h)| (*d, h.clone()))),
        }
        Ok(std::sync::Arc::new(days))
    }

    /// What changed from `since` to `version`: the first day, and (`share_rows`, on PostgreSQL)
    /// every cell's rows of the [`SHARED_DAYS`] from it. SQLite reads a backend's days
    /// in-process at little cost; PostgreSQL's per-answer statement probes the key once per
    /// variant, and one statement for all is cheaper.
    async fn changes_between(&self, since: i64, version: i64, share_rows: bool) -> anyhow::Result<Changes> {
        let first_day = self.first_change_between(since, version).await?;
        let share_rows = share_rows && self.engine() == crate::config::Engine::Postgres;
        let Some(first_day) = first_day.filter(|_| share_rows) else {
            return Ok(Changes { first_day, ..Changes::default() });
        };
        let rows: Vec<(String, i64, i64, i64, String)> = self
            .fetch_all(
                sql("SELECT b.name, c.day, c.variant_id, c.runs, c.hist FROM cell_days c \
                     JOIN backends b ON b.id = c.backend_id WHERE c.day >= $1 AND c.day < $2")
                .bind(first_day)
                .bind(first_day.saturating_add(SHARED_DAYS)),
            )
            .await?;
        let mut by_backend: SharedRows = HashMap::new();
        for (backend, day, variant, runs, hist) in rows {
            by_backend.entry(backend).or_default().entry(day).or_default().push((variant, runs, hist));
        }
        Ok(Changes { first_day: Some(first_day), rows: Some(by_backend) })
    }

    /// Reads `key`'s days from `from` on.
    async fn read_days(&self, key: &DaysKey, from: i64) -> anyhow::Result<Days> {
        let ids = serde_json::to_string(&key.variants)?;
        let text = if self.engine() == crate::config::Engine::Postgres { DAYS_POSTGRES } else { DAYS_SQLITE };
        let rows: Vec<DayRow> = self
            .fetch_all(sql(text).bind(&key.backend).bind(from.max(key.days.0)).bind(key.days.1).bind(ids))
            .await?;
        let mut out = std::collections::BTreeMap::new();
        for (day, runs, hist) in rows {
            let h = Histogram::decode_concatenated(hist.as_deref().unwrap_or_default())?;
            out.insert(day, h.with_zeros(runs as u64));
        }
        Ok(std::sync::Arc::new(out))
    }
}
