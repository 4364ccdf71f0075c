//! The runs of a few cells one by one (a regression's backend over its scope's variants), and,
//! in `sheriff serve`, those runs kept in memory from one cycle to the next.
//!
//! A cycle describes every regression and follows every open incident from its runs: weeks of
//! them, thousands of rows, read again each cycle though hardly any changed. Kept, a cycle
//! reads only what changed since: the variant-days the change log lists (`data_changes.cells`)
//! among the scope's variants, and the runs started since the last cycle. Exact whichever
//! process writes, as the windows kept in memory are (`windows.rs`): the version is read before
//! the rows, so whatever the rows hold beyond it is read again at the next change.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Result;

use super::{Store, row_by_position, sql};
use crate::model::{CellRun, DAY};

/// Scopes kept at most; the least recently asked goes first.
const KEPT_SCOPES: usize = 32;

/// One row: the run's id and when it became visible (finished, else started), and the run.
type KeptRun = (i64, i64, CellRun);

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
    rows: Vec<KeptRun>,
    /// When it was last asked for (a count of the cache's answers).
    used: u64,
}

/// The scopes kept, when `sheriff serve` keeps them ([`Store::keep_windows_in_memory`]).
#[derive(Debug, Default)]
pub(crate) struct ScopeRunsCache {
    kept: HashMap<ScopeKey, Kept>,
    answers: u64,
    /// Rows read from the database so far (tests check that nothing changed reads nothing).
    rows_read: u64,
}

/// The runs of some backends in some variants started in `[from, to)` (and, with `visible_at`,
/// finished by then): `SELECT`, the placeholders' values, then the order.
const SELECT_RUNS: &str = "SELECT r.id, COALESCE(r.finished_at, r.started_at), b.name, r.variant_id, \
    r.started_at, s.seconds, r.job_name, r.build_id, r.url, r.payload \
    FROM samples s JOIN job_runs r ON r.id = s.run_id JOIN backends b ON b.id = s.backend_id \
    WHERE r.started_at >= $1 AND r.started_at < $2 AND r.ci_trouble IS NULL AND b.name IN (";

/// One sample of a run, as [`SELECT_RUNS`] reads it.
struct RunRow {
    id: i64,
    /// When the run became visible: finished, else started (Unix seconds).
    visible: i64,
    backend: String,
    variant_id: i64,
    /// Unix seconds.
    started: i64,
    seconds: i64,
    job: String,
    build_id: String,
    url: String,
    payload: String,
}
row_by_position!(RunRow { id, visible, backend, variant_id, started, seconds, job, build_id, url, payload });

impl Store {
    /// The runs of some backends in some variants that started in `range` and finished by
    /// `visible_at`, by start (then run, then backend). Kept between calls when the windows
    /// are kept in memory.
    pub async fn cell_runs(
        &self,
        backends: &[String],
        variant_ids: &[i64],
        range: (i64, i64),
        visible_at: i64,
    ) -> Result<Vec<CellRun>> {
        if backends.is_empty() || variant_ids.is_empty() || range.0 >= range.1 {
            return Ok(Vec::new());
        }
        let Some(cache) = self.scope_runs_cache() else {
            let rows = self.read_cell_runs(backends, variant_ids, range, Some(visible_at)).await?;
            return Ok(rows.into_iter().map(|(_, _, run)| run).collect());
        };
        let mut key = ScopeKey { backends: backends.to_vec(), variants: variant_ids.to_vec() };
        key.backends.sort();
        key.backends.dedup();
        key.variants.sort_unstable();
        key.variants.dedup();
        // The version before the rows: what is read is at least as new as the version kept.
        let version = self.data_version().await?;
        let old = cache.lock().expect("cache lock").kept.remove(&key);
        let (kept, read) = match old {
            Some(old) => self.bring_up_to_date(&key, old, version, range).await?,
            None => self.read_scope(&key, version, range).await?,
        };
        let answer = kept
            .rows
            .iter()
            .filter(|(_, visible, run)| (range.0..range.1).contains(&run.started) && *visible <= visible_at)
            .map(|(_, _, run)| run.clone())
            .collect();
        let mut cache = cache.lock().expect("cache lock");
        cache.rows_read += read;
        cache.answers += 1;
        let used = cache.answers;
        cache.kept.insert(key, Kept { used, ..kept });
        if cache.kept.len() > KEPT_SCOPES
            && let Some(oldest) = cache.kept.iter().min_by_key(|(_, k)| k.used).map(|(key, _)| key.clone())
        {
            cache.kept.remove(&oldest);
        }
        Ok(answer)
    }

    /// Rows of scopes' runs read from the database so far while kept in memory.
    pub fn scope_rows_read(&self) -> u64 {
        self.scope_runs_cache().map_or(0, |c| c.lock().expect("cache lock").rows_read)
    }

    fn scope_runs_cache(&self) -> Option<Arc<std::sync::Mutex<ScopeRunsCache>>> {
        self.scope_runs.lock().expect("cache lock").clone()
    }

    /// A kept scope at `version` holding `range`: the variant-days changed since re-read (every
    /// day from the first changed when the changes do not list them), the runs before or
    /// after what it held read, those before `range` let go. Also how many rows were read.
    async fn bring_up_to_date(
        &self,
        key: &ScopeKey,
        mut kept: Kept,
        version: i64,
        range: (i64, i64),
    ) -> Result<(Kept, u64)> {
        let mut read = 0;
        if kept.version != version {
            let (first_day, cells) = self.changes_listed(kept.version, version).await?;
            // The span of start times to read again, and the variants to read it for.
            let again: Option<((i64, i64), Vec<i64>)> = match (cells, first_day) {
                (Some(cells), _) => {
                    let touched: Vec<&(i64, i64)> =
                        cells.iter().filter(|(v, _)| key.variants.binary_search(v).is_ok()).collect();
                    let low = touched.iter().map(|c| c.1).min();
                    let high = touched.iter().map(|c| c.1).max();
                    let mut variants: Vec<i64> = touched.iter().map(|c| c.0).collect();
                    variants.sort_unstable();
                    variants.dedup();
                    low.zip(high).map(|(low, high)| ((low * DAY, (high + 1) * DAY), variants))
                }
                (None, Some(first)) if first > i64::MIN / DAY => {
                    Some(((first * DAY, i64::MAX), key.variants.clone()))
                }
                // Not on record (or pruned: everything may have changed): all of it again.
                _ => return self.read_scope(key, version, range).await,
            };
            if let Some(((low, high), variants)) = again {
                let (low, high) = (low.max(kept.from), high.min(kept.to));
                if low < high {
                    let stale = |run: &CellRun| {
                        (low..high).contains(&run.started) && variants.binary_search(&run.variant_id).is_ok()
                    };
                    kept.rows.retain(|(_, _, run)| !stale(run));
                    let fresh = self.read_cell_runs(&key.backends, &variants, (low, high), None).await?;
                    read += fresh.len() as u64;
                    kept.rows.extend(fresh);
                }
            }
            kept.version = version;
        }
        if range.0 < kept.from {
            let earlier =
                self.read_cell_runs(&key.backends, &key.variants, (range.0, kept.from), None).await?;
            read += earlier.len() as u64;
            kept.rows.extend(earlier);
            kept.from = range.0;
        }
        if range.1 > kept.to {
            let later = self.read_cell_runs(&key.backends, &key.variants, (kept.to, range.1), None).await?;
            read += later.len() as u64;
            kept.rows.extend(later);
            kept.to = range.1;
        }
        // What is before the range is not asked for again (a cycle's range moves on with time).
        kept.rows.retain(|(_, _, run)| run.started >= range.0);
        kept.from = kept.from.max(range.0);
        by_start(&mut kept.rows);
        Ok((kept, read))
    }

    /// A scope's runs started in `range` read whole, as of `version`; and how many rows.
    async fn read_scope(&self, key: &ScopeKey, version: i64, range: (i64, i64)) -> Result<(Kept, u64)> {
        let rows = self.read_cell_runs(&key.backends, &key.variants, range, None).await?;
        let read = rows.len() as u64;
        Ok((Kept { version, from: range.0, to: range.1, rows, used: 0 }, read))
    }

    /// The runs of `backends` in `variants` started in `range` (and finished by `visible_at`,
    /// when given), with their ids and visible times, by start, then run, then backend.
    async fn read_cell_runs(
        &self,
        backends: &[String],
        variants: &[i64],
        range: (i64, i64),
        visible_at: Option<i64>,
    ) -> Result<Vec<KeptRun>> {
        let mut q = sql(SELECT_RUNS)
            .bind(range.0)
            .bind(range.1)
            .list(backends.iter().map(String::as_str))
            .push(") AND r.variant_id IN (")
            .list(variants.iter().copied())
            .push(")");
        if let Some(visible_at) = visible_at {
            q = q.push(" AND COALESCE(r.finished_at, r.started_at) <= ").list([visible_at]);
        }
        let rows: Vec<RunRow> = self.fetch_all(q).await?;
        // Backend names are few: each one string, shared by its rows.
        let mut names: HashMap<String, Arc<str>> = HashMap::new();
        let mut runs: Vec<KeptRun> = rows
            .into_iter()
            .map(|row: RunRow| {
                let backend = names.entry(row.backend).or_insert_with_key(|b| Arc::from(b.as_str())).clone();
                let run = CellRun {
                    backend,
                    variant_id: row.variant_id,
                    started: row.started,
                    seconds: row.seconds,
                    job: row.job.into(),
                    build_id: row.build_id.into(),
                    url: row.url.into(),
                    payload_at: crate::model::payload_time(&row.payload).map(|t| t.timestamp()),
                    payload: row.payload.into(),
                };
                (row.id, row.visible, run)
            })
            .collect();
        by_start(&mut runs);
        Ok(runs)
    }
}

/// By start, then run, then backend name (ordered here, the same on both engines whatever
/// their collation).
fn by_start(rows: &mut [KeptRun]) {
    rows.sort_unstable_by(|a, b| (a.2.started, a.0, &a.2.backend).cmp(&(b.2.started, b.0, &b.2.backend)));
}
