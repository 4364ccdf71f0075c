//! `cell_days`: the exact per-day histogram of each cell, kept in step with `samples`.
//!
//! Ingest adds a run's samples in the same transaction that stores the run; a forced re-ingest
//! takes the old run's samples out first. PostgreSQL locks the touched rows (`FOR UPDATE`, in
//! backend order, so concurrent ingests neither lose an update nor deadlock); SQLite holds the
//! database write lock for the whole transaction anyway.

use std::collections::HashMap;

use crate::model::Histogram;

/// Adds one run's `(backend_id, seconds)` pairs to the histograms of `day` × `variant_id`.
macro_rules! add_samples {
    ($tx:expr, $dialect:expr, $day:expr, $variant_id:expr, $cells:expr) => {{
        let mut cells: Vec<(i64, i64)> = $cells.to_vec();
        cells.sort_unstable();
        $crate::store::cells::apply_change!(
            $tx,
            $dialect,
            $day,
            $variant_id,
            &cells,
            |h: &mut $crate::model::Histogram, secs: i64| h.add(secs, 1)
        );
    }};
}
pub(crate) use add_samples;

/// Removes a stored run's samples from the histograms (before the run is replaced).
macro_rules! forget_run {
    ($tx:expr, $dialect:expr, $run_id:expr) => {{
        let rows: Vec<(i64, i64, i64, i64)> = sqlx::query_as(
            "SELECT s.backend_id, s.seconds, r.variant_id, r.started_at FROM samples s \
             JOIN job_runs r ON r.id = s.run_id WHERE s.run_id = $1 ORDER BY s.backend_id",
        )
        .bind($run_id)
        .fetch_all(&mut *$tx)
        .await?;
        if let Some(&(_, _, variant_id, started_at)) = rows.first() {
            let cells: Vec<(i64, i64)> = rows.iter().map(|r| (r.0, r.1)).collect();
            let day = started_at.div_euclid(86_400);
            $crate::store::cells::apply_change!(
                $tx,
                $dialect,
                day,
                variant_id,
                &cells,
                |h: &mut $crate::model::Histogram, secs: i64| h.remove(secs, 1)
            );
        }
    }};
}
pub(crate) use forget_run;

/// Read-modify-write of the histograms of one variant-day, locked on PostgreSQL.
macro_rules! apply_change {
    ($tx:expr, $dialect:expr, $day:expr, $variant_id:expr, $cells:expr, $change:expr) => {{
        let cells: &[(i64, i64)] = $cells;
        let (day, variant_id): (i64, i64) = ($day, $variant_id);
        if !cells.is_empty() {
            let mut q = sqlx::QueryBuilder::new("INSERT INTO cell_days (day, backend_id, variant_id, runs, hist) ");
            q.push_values(cells, |mut b, (backend_id, _)| {
                b.push_bind(day).push_bind(*backend_id).push_bind(variant_id).push_bind(0i64).push_bind("");
            });
            q.push(" ON CONFLICT (backend_id, variant_id, day) DO NOTHING");
            q.build().execute(&mut *$tx).await?;
            let mut q = sqlx::QueryBuilder::new("SELECT backend_id, runs, hist FROM cell_days WHERE variant_id = ");
            q.push_bind(variant_id).push(" AND day = ").push_bind(day).push(" AND backend_id IN (");
            let mut list = q.separated(", ");
            for (backend_id, _) in cells {
                list.push_bind(*backend_id);
            }
            q.push(") ORDER BY backend_id");
            if $dialect.is_postgres {
                q.push(" FOR UPDATE");
            }
            let rows: Vec<(i64, i64, String)> = q.build_query_as().fetch_all(&mut *$tx).await?;
            let updated = $crate::store::cells::updated_histograms(rows, cells, $change)?;
            let mut q = sqlx::QueryBuilder::new("INSERT INTO cell_days (day, backend_id, variant_id, runs, hist) ");
            q.push_values(&updated, |mut b, (backend_id, hist)| {
                b.push_bind(day)
                    .push_bind(*backend_id)
                    .push_bind(variant_id)
                    .push_bind(hist.count() as i64)
                    .push_bind(hist.encode_nonzero());
            });
            q.push(" ON CONFLICT (backend_id, variant_id, day) DO UPDATE SET runs = excluded.runs, hist = excluded.hist");
            q.build().execute(&mut *$tx).await?;
        }
    }};
}
pub(crate) use apply_change;

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
        let rows: Vec<(i64, String)> = super::with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT c.runs, c.hist FROM cell_days c JOIN backends b ON b.id = c.backend_id \
                 WHERE b.name = $1 AND c.day >= $2 AND c.day < $3",
            )
            .bind(backend)
            .bind(days.start)
            .bind(days.end)
            .fetch_all(pool)
            .await?
        });
        let mut total = Histogram::new();
        for (runs, hist) in rows {
            total.merge(&Histogram::decode(&hist)?.with_zeros(runs as u64));
        }
        Ok(total)
    }
}

/// One UTC day of one backend in one variant: day number, variant id, runs, non-zero histogram.
type DayRow = (i64, i64, i64, String);

/// A variant's id and its nine dimensions, in `Dimension::ALL` order.
type VariantTuple = (i64, String, String, String, String, String, String, String, String, String);

impl super::Store {
    /// Every variant and its id.
    pub async fn variants(&self) -> anyhow::Result<Vec<(i64, crate::model::Dimensions)>> {
        let rows: Vec<VariantTuple> = super::with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, release, from_release, upgrade_type, platform, architecture, network, network_stack, \
                 topology, master_nodes_updated FROM variants ORDER BY id",
            )
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(
                |(
                    id,
                    release,
                    from_release,
                    upgrade_type,
                    platform,
                    architecture,
                    network,
                    network_stack,
                    topology,
                    mnu,
                )| {
                    (
                        id,
                        crate::model::Dimensions {
                            release,
                            from_release,
                            upgrade_type,
                            platform,
                            architecture,
                            network,
                            network_stack,
                            topology,
                            master_nodes_updated: mnu,
                        },
                    )
                },
            )
            .collect())
    }

    /// Per UTC day in `days`, the merged histogram of `backend` over the variants in `variants`.
    pub async fn daily_histograms(
        &self,
        backend: &str,
        variants: &std::collections::HashSet<i64>,
        days: std::ops::Range<i64>,
    ) -> anyhow::Result<std::collections::BTreeMap<i64, Histogram>> {
        let rows: Vec<DayRow> = super::with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT c.day, c.variant_id, c.runs, c.hist FROM cell_days c JOIN backends b ON b.id = c.backend_id \
                 WHERE b.name = $1 AND c.day >= $2 AND c.day < $3",
            )
            .bind(backend)
            .bind(days.start)
            .bind(days.end)
            .fetch_all(pool)
            .await?
        });
        let mut out: std::collections::BTreeMap<i64, Histogram> = std::collections::BTreeMap::new();
        for (day, variant, runs, hist) in rows {
            if variants.contains(&variant) {
                out.entry(day).or_default().merge(&Histogram::decode(&hist)?.with_zeros(runs as u64));
            }
        }
        Ok(out)
    }
}
