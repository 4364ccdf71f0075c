//! The runs of the scopes cycles describe (a regression's backend over its scope's variants),
//! kept in memory from one cycle to the next in `sheriff serve`.
//!
//! A cycle describes every regression and follows every open incident from its runs: weeks of
//! them, thousands of rows, read again each cycle though hardly any changed. Kept, a cycle
//! reads only what changed since: the variant-days the change log lists (`data_changes.cells`)
//! among the scope's variants, and the runs started since the last cycle. How they stay exact:
//! [`super`].

use std::collections::HashMap;
use std::sync::Mutex;

use crate::store::Result;

use crate::model::{CellRun, DAY};
use crate::store::Store;
use crate::store::scope_run_reads::{StoredCellRun, by_start};

/// Scopes kept at most; the least recently asked goes first.
const KEPT_SCOPES: usize = 32;

/// The runs of the scopes recent cycles described.
#[derive(Debug, Default)]
pub struct ScopeRuns {
    cache: Mutex<ScopeRunsCache>,
}

/// What the runs of a scope depend on besides the stored data.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ScopeKey {
    backends: Vec<String>,
    variants: Vec<i64>,
}

/// One scope's runs started in `[from, to)`, as of `version` (or newer, variant-day by
/// variant-day), every one whatever its finish, by start.
#[derive(Debug)]
struct Kept {
    version: i64,
    from: i64,
    to: i64,
    rows: Vec<StoredCellRun>,
    /// When it was last asked for (a count of the cache's answers).
    used: u64,
}

/// The scopes kept and what reading them has cost.
#[derive(Debug, Default)]
struct ScopeRunsCache {
    kept: HashMap<ScopeKey, Kept>,
    answers: u64,
    /// Rows read from the database so far (tests check that nothing changed reads nothing).
    rows_read: u64,
}

impl ScopeRuns {
    /// The runs of some backends in some variants that started in `range` and finished by
    /// `visible_at`, by start (then run, then backend): what
    /// `crate::store::cells::Cells::cell_runs` reads, from the scope's runs kept here brought up
    /// to date.
    pub async fn cell_runs(
        &self,
        store: &Store,
        backends: &[String],
        variant_ids: &[i64],
        range: (i64, i64),
        visible_at: i64,
    ) -> Result<Vec<CellRun>> {
        if backends.is_empty() || variant_ids.is_empty() || range.0 >= range.1 {
            return Ok(Vec::new());
        }

        let cache = &self.cache;
        let mut key = ScopeKey {
            backends: backends.to_vec(),
            variants: variant_ids.to_vec(),
        };

        key.backends.sort();
        key.backends.dedup();
        key.variants.sort_unstable();
        key.variants.dedup();
        // The version before the rows: what is read is at least as new as the version kept.
        let version = store.cells().data_version().await?;
        let old = cache.lock().expect("cache lock").kept.remove(&key);
        let (kept, read) = match old {
            Some(old) => bring_up_to_date(store, &key, old, version, range).await?,
            None => read_scope(store, &key, version, range).await?,
        };

        let answer = kept
            .rows
            .iter()
            .filter(|r| (range.0..range.1).contains(&r.run.started) && r.visible <= visible_at)
            .map(|r| r.run.clone())
            .collect();

        let mut cache = cache.lock().expect("cache lock");
        cache.rows_read += read;
        cache.answers += 1;
        let used = cache.answers;
        cache.kept.insert(key, Kept { used, ..kept });
        if cache.kept.len() > KEPT_SCOPES
            && let Some(oldest) = cache
                .kept
                .iter()
                .min_by_key(|(_, k)| k.used)
                .map(|(key, _)| key.clone())
        {
            cache.kept.remove(&oldest);
        }

        Ok(answer)
    }

    /// Rows of scopes' runs read from the database so far.
    pub fn rows_read(&self) -> u64 {
        self.cache.lock().expect("cache lock").rows_read
    }
}

/// A kept scope at `version` holding `range`: the variant-days changed since re-read (every
/// day from the first changed when the changes do not list them), the runs before or
/// after what it held read, those before `range` let go. Also how many rows were read.
async fn bring_up_to_date(
    store: &Store,
    key: &ScopeKey,
    mut kept: Kept,
    version: i64,
    range: (i64, i64),
) -> Result<(Kept, u64)> {
    let mut read = 0;
    if kept.version != version {
        let (first_day, cells) = store.cells().changes_listed(kept.version, version).await?;
        // The span of start times to read again, and the variants to read it for.
        let again: Option<((i64, i64), Vec<i64>)> = match (cells, first_day) {
            (Some(cells), _) => {
                let touched: Vec<&(i64, i64)> = cells
                    .iter()
                    .filter(|(v, _)| key.variants.binary_search(v).is_ok())
                    .collect();
                let low = touched.iter().map(|c| c.1).min();
                let high = touched.iter().map(|c| c.1).max();
                let mut variants: Vec<i64> = touched.iter().map(|c| c.0).collect();
                variants.sort_unstable();
                variants.dedup();
                low.zip(high)
                    .map(|(low, high)| ((low * DAY, (high + 1) * DAY), variants))
            }
            (None, Some(first)) if first > i64::MIN / DAY => {
                Some(((first * DAY, i64::MAX), key.variants.clone()))
            }
            // Not on record (or pruned: everything may have changed): all of it again.
            _ => return read_scope(store, key, version, range).await,
        };
        if let Some(((low, high), variants)) = again {
            let (low, high) = (low.max(kept.from), high.min(kept.to));
            if low < high {
                let stale = |run: &CellRun| {
                    (low..high).contains(&run.started)
                        && variants.binary_search(&run.variant_id).is_ok()
                };
                kept.rows.retain(|r| !stale(&r.run));
                let fresh = store
                    .cells()
                    .read_cell_runs(&key.backends, &variants, (low, high), None)
                    .await?;
                read += fresh.len() as u64;
                kept.rows.extend(fresh);
            }
        }
        kept.version = version;
    }

    if range.0 < kept.from {
        let earlier = store
            .cells()
            .read_cell_runs(&key.backends, &key.variants, (range.0, kept.from), None)
            .await?;
        read += earlier.len() as u64;
        kept.rows.extend(earlier);
        kept.from = range.0;
    }

    if range.1 > kept.to {
        let later = store
            .cells()
            .read_cell_runs(&key.backends, &key.variants, (kept.to, range.1), None)
            .await?;
        read += later.len() as u64;
        kept.rows.extend(later);
        kept.to = range.1;
    }

    // What is before the range is not asked for again (a cycle's range moves on with time).
    kept.rows.retain(|r| r.run.started >= range.0);
    kept.from = kept.from.max(range.0);
    by_start(&mut kept.rows);
    Ok((kept, read))
}

/// A scope's runs started in `range` read whole, as of `version`; and how many rows.
async fn read_scope(
    store: &Store,
    key: &ScopeKey,
    version: i64,
    range: (i64, i64),
) -> Result<(Kept, u64)> {
    let rows = store
        .cells()
        .read_cell_runs(&key.backends, &key.variants, range, None)
        .await?;
    let read = rows.len() as u64;
    Ok((
        Kept {
            version,
            from: range.0,
            to: range.1,
            rows,
            used: 0,
        },
        read,
    ))
}
