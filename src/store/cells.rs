//! `cell_days`: the exact per-day histogram of each cell, kept in step with `samples`.
//!
//! Ingest adds a run's samples in the same transaction that stores the run; a forced re-ingest
//! takes the old run's samples out first. PostgreSQL locks the touched rows (`FOR UPDATE`, in
//! backend order, so concurrent ingests neither lose an update nor deadlock); SQLite holds the
//! database write lock for the whole transaction anyway.
//!
//! Every such write bumps `data_version` and records what it changed in `data_changes`
//! (`runs::note_change`); [`Cells`] reads both, with the day histograms the warm caches
//! ([`crate::application::warm`]) and `query` read.

use std::collections::{BTreeMap, HashMap};

use super::{Conn, Result, Store, StoreError, row_by_position, sql};
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
    let mut cells: Vec<RunsAt> = cells
        .iter()
        .map(|&(backend_id, seconds)| RunsAt {
            backend_id,
            seconds,
            runs: 1,
        })
        .collect();
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
pub(crate) async fn forget_run(
    c: &mut Conn<'_>,
    run_id: i64,
    changed: &mut ChangedCells,
) -> Result<()> {
    let rows: Vec<CountedSample> = c
        .fetch_all(
            sql(
                "SELECT s.backend_id, s.seconds, r.variant_id, r.started_at FROM samples s \
                 JOIN job_runs r ON r.id = s.run_id WHERE s.run_id = $1 AND r.ci_trouble IS NULL \
                 ORDER BY s.backend_id",
            )
            .bind(run_id),
        )
        .await?;
    if let Some(&CountedSample {
        variant_id,
        started_at,
        ..
    }) = rows.first()
    {
        let cells: Vec<(i64, i64)> = rows.iter().map(|r| (r.backend_id, r.seconds)).collect();
        change_samples(
            c,
            started_at.div_euclid(DAY),
            variant_id,
            &cells,
            false,
            changed,
        )
        .await?;
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
                vec![
                    day.into(),
                    cell.backend_id.into(),
                    variant_id.into(),
                    0i64.into(),
                    "".into(),
                ]
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
) -> Result<Vec<(i64, Histogram)>> {
    let mut current: HashMap<i64, Histogram> = HashMap::with_capacity(rows.len());
    for CellDay {
        backend_id,
        runs,
        hist,
    } in rows
    {
        current.insert(
            backend_id,
            Histogram::decode(&hist)?.with_zeros(runs as u64),
        );
    }
    let mut touched: Vec<(i64, Histogram)> = Vec::with_capacity(cells.len());
    for &RunsAt {
        backend_id,
        seconds,
        runs,
    } in cells
    {
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

/// The per-day histograms of the cells (`cell_days`), the change log that keeps readers of
/// them exact (`data_version`, `data_changes`), and the runs of a few cells one by one.
/// Reached through [`Store::cells`].
#[derive(Clone, Copy)]
pub struct Cells<'a> {
    pub(super) store: &'a Store,
}

impl Cells<'_> {
    /// The merged histogram of one backend over every variant, for UTC days in `days`.
    pub async fn backend_histogram(
        self,
        backend: &str,
        days: std::ops::Range<i64>,
    ) -> Result<Histogram> {
        let rows: Vec<(i64, String)> = self
            .store
            .fetch_all(
                sql(
                    "SELECT c.runs, c.hist FROM cell_days c JOIN backends b ON b.id = c.backend_id \
                     WHERE b.name = $1 AND c.day >= $2 AND c.day < $3",
                )
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

/// A stored `cell_days` row with its backend's name.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct CellRow {
    #[sqlx(rename = "name")]
    pub backend: String,
    pub day: i64,
    pub variant_id: i64,
    pub runs: i64,
    /// The non-zero buckets, as stored.
    pub hist: String,
}

/// Changes further apart than this are not read one by one: a reader that far behind re-reads
/// every day from the first one changed.
pub(crate) const LISTED_VERSIONS: i64 = 256;

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
pub(crate) struct LoggedChange {
    pub version: i64,
    /// The first UTC day it changed.
    pub first_day: i64,
    /// The `(variant id, day)` pairs it changed, when it listed them.
    pub cells: Option<Vec<(i64, i64)>>,
}

/// The first day and the variant-days (sorted, when all listed) of the changes in `log` after
/// `since`, when all of them up to `version` are there.
pub(crate) fn summary(
    log: &[LoggedChange],
    since: i64,
    version: i64,
) -> (Option<i64>, Option<Vec<(i64, i64)>>) {
    let after: Vec<&LoggedChange> = log
        .iter()
        .filter(|c| c.version > since && c.version <= version)
        .collect();
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

impl Store {
    /// Every backend name any stored run has recorded, sorted.
    pub async fn backend_names(&self) -> Result<Vec<String>> {
        let rows: Vec<(String,)> = self
            .fetch_all(sql("SELECT name FROM backends ORDER BY name"))
            .await?;
        Ok(rows.into_iter().map(|(n,)| n).collect())
    }

    /// Every variant and its id, by id. Variants are only ever added, so the list is kept in
    /// memory and read again only when the table's count or newest id moved (by any process;
    /// the count catches an id that committed after a higher one).
    pub async fn variants(&self) -> Result<std::sync::Arc<Vec<(i64, crate::model::Dimensions)>>> {
        let (count, newest): (i64, i64) = self
            .fetch_one(sql("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM variants"))
            .await?;
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
}

impl Cells<'_> {
    /// The version of the stored runs, bumped by every write that changes them (in any process).
    pub async fn data_version(self) -> Result<i64> {
        self.store
            .scalar(sql("SELECT version FROM data_version WHERE id = 1"))
            .await
    }

    /// The first day and the variant-days (sorted, when every change listed them) changed after
    /// `since` up to `version`; the first day is None when some of those changes are not on
    /// record. Changes more than [`LISTED_VERSIONS`] apart give the first day alone.
    pub(crate) async fn changes_listed(
        self,
        since: i64,
        version: i64,
    ) -> Result<(Option<i64>, Option<Vec<(i64, i64)>>)> {
        if version - since > LISTED_VERSIONS {
            return Ok((
                self.store
                    .cells()
                    .first_change_between(since, version)
                    .await?,
                None,
            ));
        }
        let log = self.change_log(since, version).await?;
        Ok(summary(&log, since, version))
    }

    /// The changes recorded after `since` up to `version`, oldest first.
    pub(crate) async fn change_log(self, since: i64, version: i64) -> Result<Vec<LoggedChange>> {
        let rows: Vec<ChangeRow> = self
            .store
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
            .map(
                |ChangeRow {
                     version,
                     first_day,
                     cells,
                 }| {
                    let unreadable = |e| {
                        StoreError::corrupt(
                            "data_changes",
                            format!("change {version} lists unreadable cells"),
                            e,
                        )
                    };
                    let cells = cells
                        .map(|c| serde_json::from_str(&c))
                        .transpose()
                        .map_err(unreadable)?;
                    Ok(LoggedChange {
                        version,
                        first_day,
                        cells,
                    })
                },
            )
            .collect()
    }

    /// Every backend's row of the variant-days `cells`, as stored now.
    pub(crate) async fn read_cells(self, cells: &[(i64, i64)]) -> Result<Vec<CellRow>> {
        if cells.is_empty() {
            return Ok(Vec::new());
        }
        // One key probe per backend and pair (the planner, left to itself, scans a whole day).
        let q = if self.store.engine() == crate::config::Engine::Postgres {
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
            .bind(serde_json::to_string(cells).map_err(StoreError::Encode)?)
        };
        let rows: Vec<CellRow> = self.store.fetch_all(q).await?;
        Ok(rows)
    }

    /// Per UTC day in `days`, the merged histogram of `backend` over `variants` (sorted ids),
    /// read in one statement: one row per day whatever the number of variants.
    pub(crate) async fn days_of(
        self,
        backend: &str,
        variants: &[i64],
        days: std::ops::Range<i64>,
    ) -> Result<BTreeMap<i64, Histogram>> {
        let ids = serde_json::to_string(variants).map_err(StoreError::Encode)?;
        let text = if self.store.engine() == crate::config::Engine::Postgres {
            DAYS_POSTGRES
        } else {
            DAYS_SQLITE
        };
        let rows: Vec<DayRow> = self
            .store
            .fetch_all(
                sql(text)
                    .bind(backend)
                    .bind(days.start)
                    .bind(days.end)
                    .bind(ids),
            )
            .await?;
        let mut out = BTreeMap::new();
        for DayRow { day, runs, hists } in rows {
            let h = Histogram::decode_concatenated(hists.as_deref().unwrap_or_default())?;
            out.insert(day, h.with_zeros(runs as u64));
        }
        Ok(out)
    }

    /// Every cell's rows of the UTC days in `days`, as stored now.
    pub(crate) async fn cell_rows_between(self, days: (i64, i64)) -> Result<Vec<CellRow>> {
        self.store
            .fetch_all(
                sql(
                    "SELECT b.name, c.day, c.variant_id, c.runs, c.hist FROM cell_days c \
                 JOIN backends b ON b.id = c.backend_id WHERE c.day >= $1 AND c.day < $2",
                )
                .bind(days.0)
                .bind(days.1),
            )
            .await
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

    fn change(version: i64, first_day: i64, cells: Option<Vec<(i64, i64)>>) -> LoggedChange {
        LoggedChange {
            version,
            first_day,
            cells,
        }
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
        assert_eq!(
            summary(&log, 4, 5),
            (Some(12), Some(vec![(1, 10), (1, 13), (2, 12)]))
        );
        assert_eq!(
            summary(&log, 5, 7),
            (Some(9), None),
            "a change that listed none"
        );
        assert_eq!(summary(&log, 6, 7), (Some(11), Some(vec![(3, 11)])));
        assert_eq!(
            summary(&log, 2, 5),
            (None, None),
            "version 3 is not on record"
        );
        assert_eq!(
            summary(&log, 3, 8),
            (None, None),
            "version 8 is not on record"
        );
    }

    #[test]
    fn a_postgres_array_literal_lists_the_values() {
        assert_eq!(pg_array(&[3, -1, 20]), "{3,-1,20}");
        assert_eq!(pg_array(&[]), "{}");
    }
}
