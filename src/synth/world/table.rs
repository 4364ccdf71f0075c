//! origin's real disruption table (trimmed, `data/origin/`), the row a generated cell reads, and
//! the distribution of one cell's per-run seconds fitted through that row's percentiles.

use crate::model::{Dimensions, HistoricalRow};
use crate::synth::Rng;

/// The trimmed table as committed (`data/origin/README.md` says where it came from and how it
/// was cut). Embedded, so the world is the same from any directory.
pub const QUERY_RESULTS: &str = include_str!("../../../data/origin/query_results_upgrades.json");

/// The embedded table does not read (a build from a broken `data/origin/`): the reader's error,
/// naming the row and field.
#[derive(Debug, thiserror::Error)]
#[error("the embedded query_results_upgrades.json: {0}")]
pub struct EmbeddedTableError(crate::model::query_results::QueryResultsError);

/// The rows of the embedded table.
#[derive(Debug, Clone)]
pub struct Table {
    rows: Vec<HistoricalRow>,
}

impl Table {
    /// The embedded table, parsed by the same reader `sheriff thresholds import` uses.
    pub fn embedded() -> Result<Table, EmbeddedTableError> {
        let rows = crate::model::query_results::parse_query_results(QUERY_RESULTS.as_bytes())
            .map_err(EmbeddedTableError)?;
        Ok(Table { rows })
    }

    pub fn rows(&self) -> &[HistoricalRow] {
        &self.rows
    }

    /// The backends the table has rows for, sorted.
    pub fn backends(&self) -> Vec<String> {
        let mut out: Vec<String> = self.rows.iter().map(|r| r.backend.clone()).collect();
        out.sort();
        out.dedup();
        out
    }

    /// The row a generated cell reads, or None when the backend is not measured there.
    ///
    /// The table holds one release (4.15; 4.16 for `gcp-network-liveness-*`), so every world
    /// release reads the rows of its upgrade type: a micro upgrade the rows whose FromRelease is
    /// their Release, a minor one the rows from the release before. Among the backend's rows on
    /// the cell's platform the nearest wins: a different architecture costs 8, topology 4,
    /// upgrade type 2, network 1; ties go to the row with more runs. A backend with no row on the
    /// platform (the registry on vsphere, load balancers on metal) or none of the cell's topology
    /// anywhere (no single-node registry) is not measured in that cell at all, as in real CI.
    pub fn nearest(&self, backend: &str, cell: &Dimensions) -> Option<&HistoricalRow> {
        let of_backend = || self.rows.iter().filter(|r| r.backend == backend);
        if !of_backend().any(|r| r.topology == cell.topology) {
            return None;
        }
        let micro = cell.upgrade_type != "minor";
        of_backend()
            .filter(|r| r.platform == cell.platform)
            .min_by_key(|r| {
                let cost = 8 * u32::from(r.architecture != cell.architecture)
                    + 4 * u32::from(r.topology != cell.topology)
                    + 2 * u32::from((r.from_release == r.release) != micro)
                    + u32::from(r.network != cell.network);
                (cost, std::cmp::Reverse(r.job_runs.unwrap_or(0)))
            })
    }
}

/// A cell's per-run seconds: a quantile function through the row's P50, P75, P95 and P99 (so the
/// share of zero runs is wherever it crosses half a second) and a tail beyond P99 reaching
/// `max(2 × P99, P99 + 2 × (P99 − P95))`, so a P99 far above P95 stays far above it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    knots: [(f64, f64); 6],
    /// P50 = P99 > 0: one value all the time (a probe down the whole run), which varies with the
    /// run's length.
    constant: Option<f64>,
}

impl Fit {
    pub fn of(row: &HistoricalRow) -> Fit {
        let p = |v: Option<f64>| v.unwrap_or(0.0).max(0.0);
        let (p50, p95, p99) = (p(row.p50), p(row.p95), p(row.p99));
        let p75 = row.p75.map_or((p50 + p95) / 2.0, |v| v.max(0.0));
        let tail = if p99 <= 0.0 {
            0.0
        } else {
            (2.0 * p99).max(p99 + 2.0 * (p99 - p95))
        };
        let mut knots = [
            (0.0, 0.0),
            (0.5, p50),
            (0.75, p75),
            (0.95, p95),
            (0.99, p99),
            (1.0, tail),
        ];
        for k in 1..knots.len() {
            knots[k].1 = knots[k].1.max(knots[k - 1].1);
        }
        let constant = (p50 > 0.0 && (p99 - p50).abs() < 1e-9).then_some(p50);
        Fit { knots, constant }
    }

    /// The seconds at quantile `u` ∈ [0, 1), whole as the CI writes them.
    pub fn at(&self, u: f64, rng: &mut Rng) -> i64 {
        if let Some(v) = self.constant {
            return (v * (0.6 + 0.6 * rng.unit())).round() as i64;
        }
        let u = u.clamp(0.0, 1.0);
        let k = self
            .knots
            .iter()
            .position(|(q, _)| *q >= u)
            .unwrap_or(self.knots.len() - 1)
            .max(1);
        let ((q0, v0), (q1, v1)) = (self.knots[k - 1], self.knots[k]);
        let v = if q1 > q0 {
            v0 + (v1 - v0) * (u - q0) / (q1 - q0)
        } else {
            v1
        };
        v.round() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::job_name::dimensions_from_job_name;

    fn table() -> Table {
        Table::embedded().unwrap()
    }

    fn percentile(sorted: &[i64], q: f64) -> f64 {
        let rank = q * (sorted.len() - 1) as f64;
        let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
        sorted[lo] as f64 + (sorted[hi] - sorted[lo]) as f64 * (rank - lo as f64)
    }

    #[test]
    fn the_embedded_table_is_the_documented_trim() {
        let t = table();
        assert_eq!(t.rows().len(), 598);
        assert_eq!(t.backends().len(), 24);
        assert!(
            t.rows()
                .iter()
                .all(|r| r.p50.is_some() && r.p75.is_some() && r.job_runs.is_some())
        );
    }

    #[test]
    fn generated_runs_of_a_cell_land_on_the_rows_percentiles() {
        let t = table();
        let mut rng = Rng::new(7);
        for row in t.rows().iter().filter(|r| r.job_runs.unwrap_or(0) >= 30) {
            let fit = Fit::of(row);
            let mut runs: Vec<i64> = (0..20_000).map(|_| fit.at(rng.unit(), &mut rng)).collect();
            runs.sort_unstable();
            // The row's P50 (P95) is the generated P49–P51 (P94–P96), to the second: a steep
            // tail moves a percentile by many seconds within one percent.
            for (q, want) in [(0.5, row.p50.unwrap()), (0.95, row.p95.unwrap())] {
                let (lo, hi) = (
                    percentile(&runs, q - 0.01) - 1.0,
                    percentile(&runs, q + 0.01) + 1.0,
                );
                assert!(
                    lo <= want && want <= hi,
                    "{} {} {}: P{} {lo}..{hi} against the table's {want}",
                    row.backend,
                    row.platform,
                    row.from_release,
                    (q * 100.0) as u32
                );
            }
        }
    }

    #[test]
    fn a_p99_far_above_p95_keeps_its_tail() {
        let t = table();
        let cell = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-ci-4.15-e2e-gcp-ovn-upgrade",
        );
        let row = t.nearest("kube-api-new-connections", &cell).unwrap();
        assert_eq!((row.p95, row.p99), (Some(2.0), Some(77.52)));
        let fit = Fit::of(row);
        let mut rng = Rng::new(3);
        let mut runs: Vec<i64> = (0..50_000).map(|_| fit.at(rng.unit(), &mut rng)).collect();
        runs.sort_unstable();
        assert!(
            percentile(&runs, 0.99) > 60.0,
            "{}",
            percentile(&runs, 0.99)
        );
        assert!(*runs.last().unwrap() > 100, "a tail beyond P99");
    }

    #[test]
    fn metal_reads_a_probe_that_is_down_all_run_and_misses_platforms_without_rows() {
        let t = table();
        let metal = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.15-e2e-metal-ipi-ovn-upgrade",
        );
        let probe = t
            .nearest("gcp-network-liveness-new-connections", &metal)
            .unwrap();
        let mut rng = Rng::new(1);
        assert!((0..100).all(|_| Fit::of(probe).at(rng.unit(), &mut rng) > 1000));
        let vsphere = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.15-e2e-vsphere-ovn-upgrade",
        );
        assert!(
            t.nearest("image-registry-new-connections", &vsphere)
                .is_none()
        );
        assert!(
            t.nearest("service-load-balancer-with-pdb-new-connections", &metal)
                .is_none()
        );
        let single = dimensions_from_job_name(
            "periodic-ci-openshift-release-master-nightly-4.15-e2e-aws-ovn-upgrade-single-node",
        );
        assert!(
            t.nearest("image-registry-new-connections", &single)
                .is_none()
        );
        assert!(
            t.nearest("kube-api-new-connections", &single)
                .unwrap()
                .p50
                .unwrap()
                > 200.0
        );
    }
}
