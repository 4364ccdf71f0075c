//! Questions' answers kept per data version: the per-day histograms `query` and the charts
//! read, the variants and backend names they select from, and the reads of the version itself
//! that many questions asked at once share. See [`super`] for why they stay exact.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::store::Result;

use crate::model::Histogram;
use crate::store::Store;
use crate::store::cells::{CellRow, LISTED_VERSIONS, summary};

/// The answers kept for questions, shared by every one asked of this process.
#[derive(Debug, Default)]
pub struct Queries {
    /// Questions' reads of the data version, shared by those asked at once.
    version_reads: VersionReads,
    /// The variants and backend names as of one data version.
    catalog: Mutex<Option<Catalog>>,
    /// Per-day histograms of recent questions, valid for one data version.
    days: Mutex<DayCache>,
}

/// What a query's per-day histograms depend on, besides the stored data.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct DaysKey {
    backend: String,
    variants: Vec<i64>,
    days: (i64, i64),
}

/// A question's answer: its histogram per UTC day.
pub type Days = std::sync::Arc<std::collections::BTreeMap<i64, Histogram>>;

/// Recent per-day answers, valid for one `data_version`; bounded, emptied when full. Each key
/// has one slot, so a question asked by many at once after a change is read once. The answers
/// of the version before are kept too, so that a change re-reads only the days it touched.
#[derive(Debug, Default)]
struct DayCache {
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

/// What changed between two versions: the first day changed (None: not all on record), the
/// variant-days changed when every change listed them, and every cell's rows of recent days at
/// the newer version when they are kept.
#[derive(Debug, Default)]
struct Changes {
    first_day: Option<i64>,
    cells: Option<Vec<(i64, i64)>>,
    rows: Option<std::sync::Arc<RecentRows>>,
}

/// One variant's row of a backend's day: its id, runs and non-zero histogram as stored.
type StoredCell = (i64, i64, std::sync::Arc<str>);

/// Every cell's rows of some days, by backend name, then day; each day's rows by variant id.
type SharedRows = HashMap<String, std::collections::BTreeMap<i64, std::sync::Arc<Vec<StoredCell>>>>;

/// The rows of `backend` on `day`, made empty when there are none yet.
fn row_slot(by_backend: &mut SharedRows, backend: String, day: i64) -> &mut Vec<StoredCell> {
    std::sync::Arc::make_mut(
        by_backend
            .entry(backend)
            .or_default()
            .entry(day)
            .or_default(),
    )
}

/// Every cell's rows of the days in `days`, as of `version` (or newer, cell by cell).
#[derive(Debug)]
struct RecentRows {
    version: i64,
    days: (i64, i64),
    by_backend: SharedRows,
}

impl RecentRows {
    fn from_rows(version: i64, days: (i64, i64), rows: Vec<CellRow>) -> RecentRows {
        let mut by_backend = SharedRows::new();
        for r in rows {
            let hist = r.hist.into();
            row_slot(&mut by_backend, r.backend, r.day).push((r.variant_id, r.runs, hist));
        }
        for rows in by_backend.values_mut().flat_map(|days| days.values_mut()) {
            std::sync::Arc::make_mut(rows).sort_unstable_by_key(|r| r.0);
        }
        RecentRows {
            version,
            days,
            by_backend,
        }
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
        for r in fresh {
            let rows = row_slot(&mut by_backend, r.backend, r.day);
            let at = rows.partition_point(|row| row.0 < r.variant_id);
            rows.insert(at, (r.variant_id, r.runs, r.hist.into()));
        }
        RecentRows {
            version,
            days: self.days,
            by_backend,
        }
    }

    fn holds(&self, day: i64) -> bool {
        (self.days.0..self.days.1).contains(&day)
    }

    /// `key`'s histogram of `day` (held here), as [`crate::store::cells::Cells::days_of`] reads
    /// it: None when no row of the key's variants is stored for it.
    fn day_of(&self, key: &DaysKey, day: i64) -> Result<Option<Histogram>> {
        let Some(rows) = self
            .by_backend
            .get(key.backend.as_str())
            .and_then(|d| d.get(&day))
        else {
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
        Ok(Some(
            Histogram::decode_concatenated(&joined)?.with_zeros(runs as u64),
        ))
    }
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
            self.previous = self
                .entries
                .drain()
                .filter_map(|(k, slot)| slot.get().cloned().map(|d| (k, d)))
                .collect();
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
struct VersionReads {
    /// How many reads have started.
    started: std::sync::atomic::AtomicU64,
    /// The last read: its place in that count and the version it read. Held while reading.
    last: tokio::sync::Mutex<(u64, i64)>,
}

impl Queries {
    /// The data version for a question: read after it was asked, the read shared with the
    /// questions asked at once.
    pub async fn data_version(&self, store: &Store) -> Result<i64> {
        use std::sync::atomic::Ordering::SeqCst;
        let reads = &self.version_reads;
        let asked = reads.started.load(SeqCst);
        let mut last = reads.last.lock().await;
        if last.0 > asked {
            return Ok(last.1);
        }
        let place = reads.started.fetch_add(1, SeqCst) + 1;
        let version = store.cells().data_version().await?;
        *last = (place, version);
        Ok(version)
    }

    /// How many reads of the data version questions have made ([`Queries::data_version`]).
    pub fn version_reads_started(&self) -> u64 {
        self.version_reads
            .started
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The variants and backend names at the current data version: one small read (shared by
    /// the questions asked at once) when the version has not moved since the last call.
    pub async fn catalog(&self, store: &Store) -> Result<Catalog> {
        let version = self.data_version(store).await?;
        let known = self.catalog.lock().expect("cache lock").clone();
        if let Some(c) = known.filter(|c| c.version == version) {
            return Ok(c);
        }
        // Read after the version: they hold at least what it counts.
        let variants = store.variants().await?;
        let backend_names = std::sync::Arc::new(store.backend_names().await?);
        let c = Catalog {
            version,
            variants,
            backend_names,
        };
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
        store: &Store,
        backend: &str,
        variants: &std::collections::HashSet<i64>,
        days: std::ops::Range<i64>,
    ) -> Result<Days> {
        let version = self.data_version(store).await?;
        self.daily_histograms_at(store, version, backend, variants, days)
            .await
    }

    /// [`Queries::daily_histograms`] at `version`, read by the caller (from [`Queries::catalog`]).
    pub async fn daily_histograms_at(
        &self,
        store: &Store,
        version: i64,
        backend: &str,
        variants: &std::collections::HashSet<i64>,
        days: std::ops::Range<i64>,
    ) -> Result<Days> {
        if variants.is_empty() {
            return Ok(Default::default());
        }
        let mut ids: Vec<i64> = variants.iter().copied().collect();
        ids.sort_unstable();
        let key = DaysKey {
            backend: backend.to_string(),
            variants: ids,
            days: (days.start, days.end),
        };
        let (slot, older) = self.days.lock().expect("cache lock").slot(version, &key);
        slot.get_or_try_init(|| self.refresh_days(store, &key, version, older))
            .await
            .cloned()
    }

    /// `key`'s days at `version`: the older answer when no change since touched its variants,
    /// else the older answer with the touched days read again (from the kept recent rows when
    /// they hold them); all read afresh when the changes are not on record.
    async fn refresh_days(
        &self,
        store: &Store,
        key: &DaysKey,
        version: i64,
        older: Option<Older>,
    ) -> Result<Days> {
        let Some(Older {
            version: since,
            days: older,
            changes,
            share_rows,
            rows,
        }) = older
        else {
            return read_days(store, key, key.days.0, key.days.1).await;
        };

        let changes = changes
            .get_or_try_init(|| self.changes_between(store, since, version, share_rows, rows))
            .await?;

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
            (None, None) => return read_days(store, key, key.days.0, key.days.1).await,
        };

        let Some((low, high)) = touched else {
            return Ok(older);
        };

        let mut days: std::collections::BTreeMap<i64, Histogram> = older
            .iter()
            .filter(|(d, _)| !(low..=high).contains(*d))
            .map(|(d, h)| (*d, h.clone()))
            .collect();

        match &changes.rows {
            Some(rows) if rows.holds(low) && rows.holds(high) => {
                for day in low..=high {
                    if let Some(h) = rows.day_of(key, day)? {
                        days.insert(day, h);
                    }
                }
            }
            _ => days.extend(
                read_days(store, key, low, high + 1)
                    .await?
                    .iter()
                    .map(|(d, h)| (*d, h.clone())),
            ),
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
        store: &Store,
        since: i64,
        version: i64,
        share_rows: bool,
        rows: Option<std::sync::Arc<RecentRows>>,
    ) -> Result<Changes> {
        let rows = rows.filter(|r| r.version <= version && version - r.version <= LISTED_VERSIONS);
        let from = rows.as_ref().map_or(since, |r| r.version.min(since));
        let (log, (first_day, cells)) = if version - from <= LISTED_VERSIONS {
            let log = store.cells().change_log(from, version).await?;
            let changed = summary(&log, since, version);
            (log, changed)
        } else {
            (
                Vec::new(),
                (
                    store.cells().first_change_between(since, version).await?,
                    None,
                ),
            )
        };

        let mut kept = match rows {
            Some(r) if r.version == version => Some(r),
            Some(r) => match summary(&log, r.version, version).1 {
                Some(listed) => {
                    let listed: Vec<(i64, i64)> =
                        listed.into_iter().filter(|c| r.holds(c.1)).collect();
                    let fresh = store.cells().read_cells(&listed).await?;
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
            (Some(listed), _) => listed
                .iter()
                .map(|c| c.1)
                .max()
                .map(|d| (d + 1 - SHARED_DAYS, d + 1)),
            (None, first) => first.map(|d| (d, d.saturating_add(SHARED_DAYS))),
        };

        let share_rows = share_rows && store.engine() == crate::config::Engine::Postgres;
        if let Some(span) =
            span.filter(|s| share_rows && kept.as_ref().is_none_or(|r| s.1 > r.days.1))
        {
            let rows = store.cells().cell_rows_between(span).await?;
            kept = Some(std::sync::Arc::new(RecentRows::from_rows(
                version, span, rows,
            )));
        }

        if let Some(rows) = &kept {
            self.days.lock().expect("cache lock").keep_rows(rows);
        }

        Ok(Changes {
            first_day,
            cells,
            rows: kept,
        })
    }
}

/// Reads `key`'s days in `from..until` (within its own).
async fn read_days(store: &Store, key: &DaysKey, from: i64, until: i64) -> Result<Days> {
    let (from, until) = (from.max(key.days.0), until.min(key.days.1));
    Ok(std::sync::Arc::new(
        store
            .cells()
            .days_of(&key.backend, &key.variants, from..until)
            .await?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(backend: &str, day: i64, variant_id: i64, runs: i64, hist: &str) -> CellRow {
        CellRow {
            backend: backend.to_string(),
            day,
            variant_id,
            runs,
            hist: hist.to_string(),
        }
    }

    fn key(backend: &str, variants: &[i64]) -> DaysKey {
        DaysKey {
            backend: backend.to_string(),
            variants: variants.to_vec(),
            days: (0, 100),
        }
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
        assert_eq!(
            kept.day_of(&api, 11).unwrap(),
            Some(Histogram::decode("5:1").unwrap().with_zeros(5))
        );
        assert_eq!(
            kept.day_of(&key("api", &[3]), 11).unwrap(),
            None,
            "no row of the key's variants"
        );

        // Variant 1 of day 11 changed: the api row is rewritten, the console row went away (a
        // row not read back is gone), a new backend has one; day 12 is untouched.
        let patched = kept.patched(
            2,
            &[(1, 11)],
            vec![row("api", 11, 1, 3, "9:1"), row("etcd", 11, 1, 1, "")],
        );
        assert_eq!(patched.version, 2);
        let api_11 = &patched.by_backend["api"][&11];
        assert_eq!(
            api_11
                .iter()
                .map(|r| (r.0, r.1, r.2.to_string()))
                .collect::<Vec<_>>(),
            vec![(1, 3, "9:1".to_string()), (2, 3, "5:1".to_string())],
            "sorted by variant"
        );
        assert_eq!(
            patched.day_of(&api, 11).unwrap(),
            Some(Histogram::decode("5:1 9:1").unwrap().with_zeros(6))
        );
        assert_eq!(
            patched.day_of(&api, 12).unwrap(),
            kept.day_of(&api, 12).unwrap()
        );
        assert_eq!(patched.day_of(&key("console", &[1]), 11).unwrap(), None);
        assert_eq!(
            patched.day_of(&key("console", &[1, 3]), 11).unwrap(),
            Some(Histogram::new().with_zeros(1))
        );
        assert_eq!(
            patched.day_of(&key("etcd", &[1]), 11).unwrap(),
            Some(Histogram::new().with_zeros(1))
        );
        // The rows kept before are left as they were (answers at the older version use them).
        assert_eq!(
            kept.day_of(&key("console", &[1]), 11).unwrap(),
            Some(Histogram::decode("2:2").unwrap().with_zeros(4))
        );
    }
}
