//! What evaluation reads and writes: window histograms, group states, cycles, and the imported
//! historical thresholds.

use std::collections::HashMap;

use super::window_reads::{CellWindow, WindowDays};
use super::{Conn, Result, Store, StoreError, row_by_position, sql};
use crate::domain::evaluate::{CellHistograms, GroupState};
use crate::model::{DAY, Dimensions, Histogram, HistoricalRow};

/// One cell's whole days of both windows, as [`WHOLE_DAYS_SQLITE`] reads them. The runs and
/// histograms of a window are None when the cell has no row in it.
struct WholeDaysRow {
    backend_id: i64,
    variant_id: i64,
    baseline_runs: Option<i64>,
    /// The baseline days' non-zero histograms, joined by spaces.
    baseline_hist: Option<String>,
    current_runs: Option<i64>,
    /// The current days' non-zero histograms, joined by spaces.
    current_hist: Option<String>,
}
row_by_position!(WholeDaysRow {
    backend_id,
    variant_id,
    baseline_runs,
    baseline_hist,
    current_runs,
    current_hist
});

/// One sample of a clean run, with its cell.
#[derive(sqlx::FromRow)]
struct CellSample {
    backend_id: i64,
    variant_id: i64,
    seconds: i64,
}

/// One sample of a clean run, with its cell and the run's start.
#[derive(sqlx::FromRow)]
struct StartedCellSample {
    backend_id: i64,
    variant_id: i64,
    /// The run's start (Unix seconds).
    started_at: i64,
    seconds: i64,
}

/// One cell's percentiles in one window, as the reference query computes them.
#[derive(sqlx::FromRow)]
#[allow(
    dead_code,
    reason = "decoded so that the comparison pays for reading the rows; only counted"
)]
struct ReferencePercentiles {
    backend_id: i64,
    variant_id: i64,
    /// Whether the row is of the current window (else the baseline).
    current: bool,
    /// The 50th, 75th, 95th and 99th percentiles.
    percentile_cont: Vec<f64>,
}

/// A row of `group_states`.
#[derive(sqlx::FromRow)]
struct GroupStateRow {
    group_label: String,
    /// 1 when regressed.
    regressed: i64,
    clean_streak: i64,
    since: Option<i64>,
}

/// Each cell's whole-day histograms of the baseline ($1..$2) and current ($3..$4) days, joined
/// into one string per window, for backends $5..$6; $7..$8 spans both windows. Each cell is
/// looked up by its key (backend, variant, first needed day), so a cycle reads its windows'
/// days and nothing older, however long the history; and reads them in key order: no sort
/// (`EXPLAIN QUERY PLAN`: `SEARCH d USING PRIMARY KEY (backend_id=? AND variant_id=? AND
/// day>? AND day<?)`). The table is read in parallel ranges of backends, one connection each.
const WHOLE_DAYS_SQLITE: &str = "SELECT b.id, v.id, \
    SUM(d.runs) FILTER (WHERE d.day >= $1 AND d.day < $2), \
    group_concat(d.hist, ' ') FILTER (WHERE d.day >= $1 AND d.day < $2 AND d.hist <> ''), \
    SUM(d.runs) FILTER (WHERE d.day >= $3 AND d.day < $4), \
    group_concat(d.hist, ' ') FILTER (WHERE d.day >= $3 AND d.day < $4 AND d.hist <> '') \
    FROM backends b CROSS JOIN variants v CROSS JOIN cell_days d \
    WHERE b.id >= $5 AND b.id < $6 AND d.backend_id = b.id AND d.variant_id = v.id \
    AND d.day >= $7 AND d.day < $8 AND ((d.day >= $1 AND d.day < $2) OR (d.day >= $3 AND d.day < $4)) \
    GROUP BY b.id, v.id";
/// PostgreSQL reads the windows' days through its index on `day` (migration 0010) and
/// aggregates by hash: its planner would not keep a per-cell lookup.
const WHOLE_DAYS_POSTGRES: &str = "SELECT backend_id, variant_id, \
    SUM(runs) FILTER (WHERE day >= $1 AND day < $2)::BIGINT, \
    string_agg(hist, ' ') FILTER (WHERE day >= $1 AND day < $2 AND hist <> ''), \
    SUM(runs) FILTER (WHERE day >= $3 AND day < $4)::BIGINT, \
    string_agg(hist, ' ') FILTER (WHERE day >= $3 AND day < $4 AND hist <> '') \
    FROM cell_days WHERE backend_id >= $5 AND backend_id < $6 AND day >= $7 AND day < $8 \
    AND ((day >= $1 AND day < $2) OR (day >= $3 AND day < $4)) \
    GROUP BY backend_id, variant_id";

/// Database ids → positions in [`WindowData`]'s lists.
struct Indexes {
    backends: foldhash::HashMap<i64, usize>,
    variants: foldhash::HashMap<i64, usize>,
}

impl Indexes {
    fn cell(&self, backend_id: i64, variant_id: i64) -> Option<(usize, usize)> {
        Some((
            *self.backends.get(&backend_id)?,
            *self.variants.get(&variant_id)?,
        ))
    }
}

/// The backends and variants a [`WindowData`] indexes, read before its cells.
pub(crate) struct WindowFrame {
    backends: Vec<(i64, String)>,
    variants: std::sync::Arc<Vec<(i64, Dimensions)>>,
    index: Indexes,
}

impl WindowFrame {
    /// The position of a cell given by database ids, when both are known.
    pub(crate) fn cell(&self, backend_id: i64, variant_id: i64) -> Option<(usize, usize)> {
        self.index.cell(backend_id, variant_id)
    }
}

/// Cells with their current and baseline histograms.
type Decoded = Vec<((usize, usize), (Histogram, Histogram))>;

/// Decodes each part of the window query on a thread of its own, and merges them by cell.
fn decode_on_every_core(
    index: &Indexes,
    fetched: Vec<Vec<WholeDaysRow>>,
) -> Result<HashMap<(usize, usize), (Histogram, Histogram)>> {
    let decoded: Vec<Result<Decoded>> = std::thread::scope(|scope| {
        let handles: Vec<_> = fetched
            .into_iter()
            .map(|rows| scope.spawn(move || decode(index, rows)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|payload| {
                    Err(StoreError::panicked(
                        "a cell_days decoding thread",
                        &*payload,
                    ))
                })
            })
            .collect()
    });
    let mut cells: HashMap<(usize, usize), (Histogram, Histogram)> = HashMap::new();
    for part in decoded {
        for (key, (current, baseline)) in part? {
            let entry = cells.entry(key).or_default();
            entry.0.merge(&current);
            entry.1.merge(&baseline);
        }
    }
    Ok(cells)
}

/// Decodes the rows of one part of the whole-days query.
fn decode(index: &Indexes, rows: Vec<WholeDaysRow>) -> Result<Decoded> {
    let histogram = |runs: Option<i64>, hist: Option<String>| -> Result<Histogram> {
        let nonzero = match hist {
            Some(h) => Histogram::decode_concatenated(&h)?,
            None => Histogram::new(),
        };
        Ok(nonzero.with_zeros(runs.unwrap_or(0).max(0) as u64))
    };
    let mut out = Vec::with_capacity(rows.len());
    for WholeDaysRow {
        backend_id,
        variant_id,
        baseline_runs,
        baseline_hist,
        current_runs,
        current_hist,
    } in rows
    {
        let Some(key) = index.cell(backend_id, variant_id) else {
            continue;
        };
        out.push((
            key,
            (
                histogram(current_runs, current_hist)?,
                histogram(baseline_runs, baseline_hist)?,
            ),
        ));
    }
    Ok(out)
}

/// Every cell's histograms for a current and a baseline window, with the names they index.
#[derive(Debug, Default, PartialEq)]
pub struct WindowData {
    pub backends: Vec<String>,
    pub variants: Vec<Dimensions>,
    /// Database id of each variant, parallel to `variants`.
    pub variant_ids: Vec<i64>,
    pub cells: Vec<CellHistograms>,
    /// CI-troubled runs of each variant in the current window, left out of `cells`.
    pub troubled: Vec<u64>,
}

/// `[from, to)` in Unix seconds, split into whole UTC days and the partial days at its edges,
/// each edge within one day (a span of less than two days with no whole day in it is cut at
/// midnight: the warm windows read each edge's samples from its day).
pub(super) fn split(from: i64, to: i64) -> (std::ops::Range<i64>, Vec<(i64, i64)>) {
    let first_full = (from + DAY - 1).div_euclid(DAY);
    let last_full_end = to.div_euclid(DAY);
    if first_full > last_full_end {
        // no midnight inside: one edge
        return (0..0, vec![(from, to)]);
    }
    let mut edges = Vec::new();
    if from < first_full * DAY {
        edges.push((from, first_full * DAY));
    }
    if last_full_end * DAY < to {
        edges.push((last_full_end * DAY, to));
    }
    let days = if first_full < last_full_end {
        first_full..last_full_end
    } else {
        0..0
    };
    (days, edges)
}

const INSERT_CYCLE: &str = "INSERT INTO eval_cycles \
    (started_at, finished_at, evaluated_at, groups, regressions, outcome, error) \
    VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id";

/// Inserts a [`CycleRecord`]; its id.
pub(crate) async fn insert_cycle(c: &mut Conn<'_>, cycle: &CycleRecord) -> Result<i64> {
    c.scalar(
        sql(INSERT_CYCLE)
            .bind(cycle.started_at)
            .bind(cycle.finished_at)
            .bind(cycle.evaluated_at)
            .bind(cycle.groups)
            .bind(cycle.regressions)
            .bind(cycle.outcome.as_str())
            .bind(&cycle.error),
    )
    .await
}

/// Replaces the stored group states and records the cycle, in an open transaction; its id.
pub(crate) async fn write_cycle(
    c: &mut Conn<'_>,
    states: &[(String, GroupState)],
    cycle: &CycleRecord,
) -> Result<i64> {
    c.execute(sql("DELETE FROM group_states")).await?;
    for chunk in states.chunks(500) {
        c.execute(
            sql("INSERT INTO group_states (group_label, regressed, clean_streak, since, updated_at)").values(
                chunk,
                |(label, s)| {
                    vec![
                        label.into(),
                        s.regressed.into(),
                        i64::from(s.clean_streak).into(),
                        s.since.into(),
                        cycle.finished_at.into(),
                    ]
                },
            ),
        )
        .await?;
    }
    insert_cycle(c, cycle).await
}

/// What evaluation reads and records: the windows' histograms, group states, cycles, and the
/// imported historical thresholds. Reached through [`Store::evaluations`].
#[derive(Clone, Copy)]
pub struct Evaluations<'a> {
    pub(super) store: &'a Store,
}

impl Evaluations<'_> {
    /// The histograms of every cell in `current` and `baseline` (Unix-second ranges). Whole
    /// days come from `cell_days`; the partial days at the edges from the samples themselves,
    /// counting only runs finished by `visible_at` (whole days are taken as they are stored: a
    /// replay of the past is exact to the day, as `sheriff backtest`'s own source is to the run).
    /// The windows kept in memory between cycles (`crate::application::warm`) give the same, read again only
    /// where the stored runs changed.
    ///
    /// Each start of `recent` is a span `[start, current.1)` whose runs each cell also counts
    /// apart, from the samples themselves (the last few days).
    pub async fn window_data(
        self,
        current: (i64, i64),
        baseline: (i64, i64),
        recent: &[i64],
        visible_at: i64,
    ) -> Result<WindowData> {
        let frame = self.window_frame().await?;
        let want = WindowDays::new(current, baseline, recent, visible_at);
        let mut cells = self
            .read_windows(
                &frame.index,
                want.current.clone(),
                want.baseline.clone(),
                &want.edges,
                visible_at,
            )
            .await?;
        self.read_recent(&frame.index, &mut cells, recent, current.1, visible_at)
            .await?;
        self.window_data_of(frame, cells.into_iter().collect(), current, visible_at)
            .await
    }

    /// Every backend and variant, read before the cells of a [`WindowData`] so that it names
    /// every cell read.
    pub(crate) async fn window_frame(self) -> Result<WindowFrame> {
        let backends: Vec<(i64, String)> = self
            .store
            .fetch_all(sql("SELECT id, name FROM backends ORDER BY id"))
            .await?;
        let variants = self.store.variants().await?;
        let index = Indexes {
            backends: backends
                .iter()
                .enumerate()
                .map(|(i, (id, _))| (*id, i))
                .collect(),
            variants: variants
                .iter()
                .enumerate()
                .map(|(i, (id, _))| (*id, i))
                .collect(),
        };
        Ok(WindowFrame {
            backends,
            variants,
            index,
        })
    }

    /// The [`WindowData`] of the cells in `list` (by position in `frame`), with the runs left
    /// out for CI trouble counted per variant in the current window.
    pub(crate) async fn window_data_of(
        self,
        frame: WindowFrame,
        mut list: Vec<((usize, usize), CellWindow)>,
        current: (i64, i64),
        visible_at: i64,
    ) -> Result<WindowData> {
        let WindowFrame {
            backends,
            variants,
            index,
        } = frame;

        // each cell once: no order among equals to keep
        list.sort_unstable_by_key(|(k, _)| *k);
        let mut troubled = vec![0; variants.len()];
        let counts: Vec<(i64, i64)> = self.store
            .fetch_all(
                sql("SELECT variant_id, COUNT(*) FROM job_runs WHERE started_at >= $1 AND started_at < $2 \
                     AND COALESCE(finished_at, started_at) <= $3 AND ci_trouble IS NOT NULL GROUP BY variant_id")
                .bind(current.0)
                .bind(current.1)
                .bind(visible_at),
            )
            .await?;

        for (variant_id, n) in counts {
            if let Some(&v) = index.variants.get(&variant_id) {
                troubled[v] = n as u64;
            }
        }

        Ok(WindowData {
            troubled,
            backends: backends.into_iter().map(|(_, n)| n).collect(),
            variant_ids: variants.iter().map(|(id, _)| *id).collect(),
            variants: variants.iter().map(|(_, d)| d.clone()).collect(),
            cells: list
                .into_iter()
                .map(|((backend, variant), w)| CellHistograms {
                    backend,
                    variant,
                    current: w.current,
                    baseline: w.baseline,
                    recent: w.recent,
                })
                .collect(),
        })
    }

    /// The windows' histograms from the database: the whole days from `cell_days`, the edges
    /// from their samples.
    async fn read_windows(
        self,
        index: &Indexes,
        current_days: std::ops::Range<i64>,
        baseline_days: std::ops::Range<i64>,
        edges: &[((i64, i64), bool)],
        visible_at: i64,
    ) -> Result<HashMap<(usize, usize), CellWindow>> {
        let whole = self.whole_days(index, current_days, baseline_days).await?;
        let mut cells: HashMap<(usize, usize), CellWindow> = whole
            .into_iter()
            .map(|(k, (current, baseline))| {
                (
                    k,
                    CellWindow {
                        current,
                        baseline,
                        recent: Vec::new(),
                    },
                )
            })
            .collect();

        for &((from, to), is_current) in edges {
            let rows: Vec<CellSample> = self.store
                .fetch_all(
                    sql("SELECT s.backend_id, r.variant_id, s.seconds FROM job_runs r JOIN samples s ON s.run_id = r.id \
                         WHERE r.started_at >= $1 AND r.started_at < $2 AND COALESCE(r.finished_at, r.started_at) <= $3 \
                         AND r.ci_trouble IS NULL")
                    .bind(from)
                    .bind(to)
                    .bind(visible_at),
                )
                .await?;
            for CellSample {
                backend_id,
                variant_id,
                seconds,
            } in rows
            {
                let Some(key) = index.cell(backend_id, variant_id) else {
                    continue;
                };
                let entry = cells.entry(key).or_default();
                if is_current {
                    entry.current.add(seconds, 1)
                } else {
                    entry.baseline.add(seconds, 1)
                }
            }
        }

        Ok(cells)
    }

    /// Each cell's runs of the recent spans `[start, to)` (one per start of `recent`), from the
    /// samples of the runs started since the first.
    async fn read_recent(
        self,
        index: &Indexes,
        cells: &mut HashMap<(usize, usize), CellWindow>,
        recent: &[i64],
        to: i64,
        visible_at: i64,
    ) -> Result<()> {
        for cell in cells.values_mut() {
            cell.recent = vec![Histogram::new(); recent.len()];
        }

        let Some(&first) = recent.iter().min() else {
            return Ok(());
        };

        let rows: Vec<StartedCellSample> = self
            .store
            .fetch_all(
                sql("SELECT s.backend_id, r.variant_id, r.started_at, s.seconds FROM job_runs r \
                     JOIN samples s ON s.run_id = r.id WHERE r.started_at >= $1 AND r.started_at < $2 \
                     AND COALESCE(r.finished_at, r.started_at) <= $3 AND r.ci_trouble IS NULL")
                .bind(first)
                .bind(to)
                .bind(visible_at),
            )
            .await?;

        for StartedCellSample {
            backend_id,
            variant_id,
            started_at: started,
            seconds,
        } in rows
        {
            let Some(key) = index.cell(backend_id, variant_id) else {
                continue;
            };
            let cell = cells.entry(key).or_insert_with(|| CellWindow {
                recent: vec![Histogram::new(); recent.len()],
                ..Default::default()
            });
            for (k, start) in recent.iter().enumerate() {
                if started >= *start {
                    cell.recent[k].add(seconds, 1);
                }
            }
        }

        Ok(())
    }

    /// Each cell's whole-day histograms of both windows. The database joins a cell's day
    /// histograms into one string per window, so a month of 11,000 cells is 11,000 rows rather
    /// than 300,000; the table is read in parallel ranges of backends and decoded on every core.
    async fn whole_days(
        self,
        index: &Indexes,
        current_days: std::ops::Range<i64>,
        baseline_days: std::ops::Range<i64>,
    ) -> Result<HashMap<(usize, usize), (Histogram, Histogram)>> {
        // An empty range must not match (and must not mark baseline days as current).
        let nothing = i64::MAX..i64::MAX;
        let current_days = if current_days.is_empty() {
            nothing.clone()
        } else {
            current_days
        };
        let baseline_days = if baseline_days.is_empty() {
            nothing
        } else {
            baseline_days
        };

        let started = std::time::Instant::now();
        let parts = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 4);
        let ids: Vec<i64> = index.backends.keys().copied().collect();
        let (lo, hi) = (
            ids.iter().min().copied().unwrap_or(0),
            ids.iter().max().copied().unwrap_or(0) + 1,
        );
        let step = ((hi - lo) as usize).div_ceil(parts).max(1) as i64;
        let text = if self.store.engine() == crate::config::Engine::Postgres {
            WHOLE_DAYS_POSTGRES
        } else {
            WHOLE_DAYS_SQLITE
        };
        let queries = (0..parts as i64)
            .map(|i| (lo + i * step, (lo + (i + 1) * step).min(hi)))
            .filter(|r| r.0 < r.1)
            .map(|(from, to)| {
                let q = sql(text)
                    .bind(baseline_days.start)
                    .bind(baseline_days.end)
                    .bind(current_days.start)
                    .bind(current_days.end)
                    .bind(from)
                    .bind(to)
                    .bind(baseline_days.start.min(current_days.start))
                    .bind(baseline_days.end.max(current_days.end));
                self.store.fetch_all::<WholeDaysRow>(q)
            });
        let fetched = futures::future::try_join_all(queries).await?;
        tracing::debug!(
            parts = fetched.len(),
            seconds = started.elapsed().as_secs_f64(),
            "window query"
        );

        decode_on_every_core(index, fetched)
    }

    /// Each release's first run started by `visible_at` (Unix seconds). Read per variant, which
    /// the (variant, start) index answers without a scan; a variant whose first runs were pruned
    /// keeps the time recorded then (`variant_first_seen`).
    pub(crate) async fn release_first_seen(self, visible_at: i64) -> Result<HashMap<String, i64>> {
        // One index probe per variant (a GROUP BY would read every stored run's index entry).
        let rows: Vec<(i64, Option<i64>)> = self.store
            .fetch_all(sql(
                "SELECT v.id, COALESCE((SELECT started_at FROM variant_first_seen f WHERE f.variant_id = v.id), \
                 (SELECT MIN(r.started_at) FROM job_runs r WHERE r.variant_id = v.id)) FROM variants v",
            ))
            .await?;
        let rows = rows.into_iter().filter_map(|(v, s)| Some((v, s?)));
        let variants = self.store.variants().await?;
        let release: HashMap<i64, &str> = variants
            .iter()
            .map(|(id, d)| (*id, d.release.as_str()))
            .collect();
        let mut first: HashMap<String, i64> = HashMap::new();
        for (variant, started) in rows.filter(|(_, s)| *s <= visible_at) {
            if let Some(r) = release.get(&variant) {
                let e = first.entry((*r).to_string()).or_insert(started);
                *e = (*e).min(started);
            }
        }
        Ok(first)
    }

    /// Job names that ran in some variants during a window.
    pub(crate) async fn jobs_of_variants(
        self,
        variant_ids: &[i64],
        window: (i64, i64),
    ) -> Result<Vec<(String, i64)>> {
        if variant_ids.is_empty() {
            return Ok(Vec::new());
        }
        let q = sql(
            "SELECT job_name, COUNT(*) FROM job_runs WHERE started_at >= $1 AND started_at < $2 \
                 AND variant_id IN (",
        )
        .bind(window.0)
        .bind(window.1)
        .list(variant_ids.iter().copied())
        .push(") GROUP BY job_name ORDER BY job_name");
        self.store.fetch_all(q).await
    }

    pub(crate) async fn group_states(self) -> Result<HashMap<String, GroupState>> {
        let rows: Vec<GroupStateRow> = self
            .store
            .fetch_all(sql(
                "SELECT group_label, regressed, clean_streak, since FROM group_states",
            ))
            .await?;
        Ok(rows
            .into_iter()
            .map(
                |GroupStateRow {
                     group_label,
                     regressed,
                     clean_streak,
                     since,
                 }| {
                    (
                        group_label,
                        GroupState {
                            regressed: regressed != 0,
                            clean_streak: clean_streak as u32,
                            since,
                        },
                    )
                },
            )
            .collect())
    }

    /// Records a cycle that did not finish (it failed, or its tick was skipped); the
    /// application keeps what it cannot record yet (`application::cycle::Unrecorded`).
    pub async fn record_cycle(self, cycle: &CycleRecord) -> Result<()> {
        insert_cycle(&mut self.store.acquire().await?.conn(), cycle).await?;
        Ok(())
    }

    pub async fn count_cycles(self) -> Result<i64> {
        self.store
            .scalar(sql("SELECT COUNT(*) FROM eval_cycles"))
            .await
    }

    /// Replaces the historical table with `rows`.
    pub async fn import_thresholds(self, rows: &[HistoricalRow], source_file: &str) -> Result<()> {
        let now = chrono::Utc::now().timestamp();
        let mut tx = self.store.begin_write().await?;
        let mut c = tx.conn();
        c.execute(sql("DELETE FROM historical_thresholds")).await?;
        for chunk in rows.chunks(200) {
            let q = sql("INSERT INTO historical_thresholds (backend, release, from_release, platform, architecture, \
                     network, topology, master_nodes_updated, job_runs, p50, p75, p95, p99, source_file, imported_at)")
            .values(chunk, |r| {
                vec![
                    (&r.backend).into(),
                    (&r.release).into(),
                    (&r.from_release).into(),
                    (&r.platform).into(),
                    (&r.architecture).into(),
                    (&r.network).into(),
                    (&r.topology).into(),
                    (&r.master_nodes_updated).into(),
                    r.job_runs.map(|n| n as i64).into(),
                    r.p50.into(),
                    r.p75.into(),
                    r.p95.into(),
                    r.p99.into(),
                    source_file.into(),
                    now.into(),
                ]
            });
            c.execute(q).await?;
        }
        tx.commit().await
    }

    pub(crate) async fn historical_thresholds(self) -> Result<Vec<HistoricalRow>> {
        let rows: Vec<HistoricalRowRead> = self
            .store
            .fetch_all(sql(
                "SELECT backend, release, from_release, platform, architecture, network, topology, \
                 master_nodes_updated, job_runs, p50, p75, p95, p99 FROM historical_thresholds",
            ))
            .await?;
        Ok(rows.into_iter().map(HistoricalRowRead::into_row).collect())
    }
}

/// A row of `historical_thresholds`.
#[derive(sqlx::FromRow)]
struct HistoricalRowRead {
    backend: String,
    release: String,
    from_release: String,
    platform: String,
    architecture: String,
    network: String,
    topology: String,
    master_nodes_updated: String,
    job_runs: Option<i64>,
    p50: Option<f64>,
    p75: Option<f64>,
    p95: Option<f64>,
    p99: Option<f64>,
}

impl HistoricalRowRead {
    fn into_row(self) -> HistoricalRow {
        HistoricalRow {
            backend: self.backend,
            release: self.release,
            from_release: self.from_release,
            platform: self.platform,
            architecture: self.architecture,
            network: self.network,
            topology: self.topology,
            master_nodes_updated: self.master_nodes_updated,
            job_runs: self.job_runs.map(|n| n as u64),
            p50: self.p50,
            p75: self.p75,
            p95: self.p95,
            p99: self.p99,
        }
    }
}

/// One cycle as recorded.
#[derive(Debug, Clone, Default)]
pub struct CycleRecord {
    pub started_at: i64,
    pub finished_at: i64,
    pub evaluated_at: i64,
    pub groups: i64,
    pub regressions: i64,
    pub outcome: CycleOutcome,
    pub error: String,
}

/// How a cycle ended, as `eval_cycles.outcome` and the `outcome` label of the cycle metrics
/// keep it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CycleOutcome {
    /// Evaluated, and what it decided is stored.
    #[default]
    Ok,
    /// Not evaluated, or what it decided could not be stored; `error` says why.
    Failed,
}

impl CycleOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CycleOutcome::Ok => "ok",
            CycleOutcome::Failed => "failed",
        }
    }
}

impl Evaluations<'_> {
    /// The straightforward way, for comparison in `sheriff bench evaluate`: exact percentiles of
    /// every cell in both windows with PostgreSQL's `percentile_cont … GROUP BY` over the raw
    /// samples. Returns the number of (cell, window) rows. PostgreSQL only.
    pub async fn reference_percentiles_query(
        self,
        baseline_from: i64,
        window_from: i64,
        to: i64,
    ) -> Result<usize> {
        let super::Pool::Postgres(pool) = &self.store.pool else {
            return Err(StoreError::Refused(
                "the reference query is PostgreSQL's percentile_cont".into(),
            ));
        };
        // PostgreSQL only, and its float8[] is not a type the shared statements bind or read.
        let rows: Vec<ReferencePercentiles> = sqlx::query_as(
            "SELECT s.backend_id, r.variant_id, r.started_at >= $2 AS current, \
             percentile_cont(ARRAY[0.5, 0.75, 0.95, 0.99]::float8[]) WITHIN GROUP (ORDER BY s.seconds) \
             FROM samples s JOIN job_runs r ON r.id = s.run_id \
             WHERE r.started_at >= $1 AND r.started_at < $3 GROUP BY 1, 2, 3",
        )
        .bind(baseline_from)
        .bind(window_from)
        .bind(to)
        .fetch_all(pool)
        .await?;
        Ok(rows.len())
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    /// A step of SQLite's `EXPLAIN QUERY PLAN`.
    #[derive(sqlx::FromRow)]
    struct PlanStep {
        detail: String,
    }

    #[test]
    fn windows_split_into_whole_days_and_edges() {
        let d = 86_400;
        assert_eq!(split(0, 7 * d), (0..7, vec![]));
        assert_eq!(
            split(d / 2, 3 * d + 10),
            (1..3, vec![(d / 2, d), (3 * d, 3 * d + 10)])
        );
        assert_eq!(split(10, 20), (0..0, vec![(10, 20)]));
        assert_eq!(split(d + 5, 2 * d - 5), (0..0, vec![(d + 5, 2 * d - 5)]));
        // a one-day window from midday: no whole day, two edges, each within its own day
        assert_eq!(
            split(d / 2, d + d / 2),
            (0..0, vec![(d / 2, d), (d, d + d / 2)])
        );
        assert_eq!(split(d, 2 * d), (1..2, vec![]));
    }

    /// SQLite reads a cycle's windows by key, starting at the first needed day of each cell:
    /// no scan of the older days and no sort, so a cycle costs what its windows hold.
    #[tokio::test]
    async fn the_window_query_seeks_each_cell_from_its_first_needed_day() {
        let dir = tempfile::tempdir().unwrap();
        let settings = crate::config::DatabaseSettings {
            url: format!("sqlite://{}", dir.path().join("plan.db").display())
                .parse()
                .unwrap(),
            ..Default::default()
        };
        let store = crate::store::Store::open(&settings).await.unwrap();
        let plan: Vec<PlanStep> = store
            .fetch_all(crate::store::Sql::built(format!(
                "EXPLAIN QUERY PLAN {}",
                super::WHOLE_DAYS_SQLITE
            )))
            .await
            .unwrap();
        let steps: Vec<&str> = plan.iter().map(|r| r.detail.as_str()).collect();
        assert!(
            steps.iter().any(|s| s.starts_with(
                "SEARCH d USING PRIMARY KEY (backend_id=? AND variant_id=? AND day>? AND day<?)"
            )),
            "{steps:?}"
        );
        assert!(
            !steps
                .iter()
                .any(|s| s.contains("TEMP B-TREE") || s.starts_with("SCAN d")),
            "{steps:?}"
        );
    }
}
