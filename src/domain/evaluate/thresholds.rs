//! Thresholds from the three sources, most specific first: configured limits, the CI suite's
//! historical table, and sheriff's own history (a baseline window, or the previous release).

use std::collections::{HashMap, HashSet};

use crate::config::LimitRule;
use crate::model::{
    DAY, Dimension, Dimensions, Fixed, GroupKey, HistoricalRow, Percentile, Threshold,
    ThresholdSource, glob_match,
};

/// The configured limit for a group and percentile: among rules whose backend glob matches and
/// whose every dimension the group fixes to the same value, the most specific.
pub fn configured(
    rules: &[LimitRule],
    group: &GroupKey,
    percentile: Percentile,
) -> Option<Threshold> {
    rules
        .iter()
        .filter(|r| r.percentile == percentile && glob_match(&r.backend, &group.backend))
        .filter(|r| {
            r.dimensions()
                .iter()
                .all(|(d, v)| group.get(*d) == Some(v.as_str()))
        })
        .max_by_key(|r| (r.dimensions().len(), r.backend.replace('*', "").len()))
        .map(|r| Threshold {
            percentile,
            seconds: r.seconds,
            source: ThresholdSource::Configured { rule: r.describe() },
        })
}

/// The table's key : backend, release, from-release, platform, architecture,
/// network, topology.
type RowKey = (String, String, String, String, String, String, String);

/// The CI suite's table, indexed by its key.
#[derive(Debug, Default, Clone)]
pub struct HistoricalTable {
    rows: HashMap<RowKey, Vec<HistoricalRow>>,
    /// Rows with fewer runs are not trusted (the suite itself wants 100 for its per-run rule).
    pub min_runs: u64,
}

impl HistoricalTable {
    pub fn new(rows: Vec<HistoricalRow>, min_runs: u64) -> HistoricalTable {
        let mut map: HashMap<_, Vec<HistoricalRow>> = HashMap::new();
        for r in rows {
            let key = (
                r.backend.clone(),
                r.release.clone(),
                r.from_release.clone(),
                r.platform.clone(),
                r.architecture.clone(),
                r.network.clone(),
                r.topology.clone(),
            );
            map.entry(key).or_default().push(r);
        }
        HistoricalTable {
            rows: map,
            min_runs,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The row of one cell, if the table has a trusted one.
    fn row(&self, backend: &str, d: &Dimensions) -> Option<&HistoricalRow> {
        let key = (
            backend.to_string(),
            d.release.clone(),
            d.from_release.clone(),
            d.platform.clone(),
            d.architecture.clone(),
            d.network.clone(),
            d.topology.clone(),
        );
        let rows = self.rows.get(&key)?;
        let trusted = |r: &&HistoricalRow| r.job_runs.is_none_or(|n| n >= self.min_runs);
        rows.iter()
            .filter(trusted)
            .find(|r| {
                !r.master_nodes_updated.is_empty()
                    && r.master_nodes_updated == d.master_nodes_updated
            })
            .or_else(|| {
                rows.iter()
                    .filter(trusted)
                    .find(|r| r.master_nodes_updated.is_empty())
            })
            .or_else(|| {
                rows.iter()
                    .filter(trusted)
                    .max_by_key(|r| r.job_runs.unwrap_or(0))
            })
    }

    /// A group's historical threshold: the largest of its cells' values, when every cell with
    /// runs has a trusted row carrying that percentile; otherwise none.
    pub fn threshold(
        &self,
        backend: &str,
        cells: &[&Dimensions],
        percentile: Percentile,
    ) -> Option<Threshold> {
        if self.rows.is_empty() || cells.is_empty() {
            return None;
        }
        let mut worst: Option<(f64, Option<u64>)> = None;
        for d in cells {
            let row = self.row(backend, d)?;
            let value = match percentile {
                Percentile::P50 => row.p50,
                Percentile::P75 => row.p75,
                Percentile::P95 => row.p95,
                Percentile::P99 => row.p99,
            }?;
            if worst.is_none_or(|w| value > w.0) {
                worst = Some((value, row.job_runs));
            }
        }
        worst.map(|(seconds, job_runs)| Threshold {
            percentile,
            seconds,
            source: ThresholdSource::Historical { job_runs },
        })
    }
}

/// The release before `release` (4.14 → 4.13), for groups too new to have a baseline.
pub fn previous_release(release: &str) -> Option<String> {
    let (major, minor) = release.split_once('.')?;
    let minor: u32 = minor.parse().ok()?;
    (minor > 0).then(|| format!("{major}.{}", minor - 1))
}

/// The releases judged against the previous release's runs at `now`: those whose first run is
/// younger than `min_history_days` (their own few days may already hold a regression, as a new
/// release's can) and came a day or more after the previous release's first run. Releases whose
/// first runs came within a day of each other began together as far as sheriff knows (every
/// release does when sheriff's history began less than `min_history_days` ago: CI runs each of
/// them at least daily): comparing one with the other would only tell a difference between
/// releases that was always there, so each keeps its own history. `first_seen` is each
/// release's first run.
pub fn young_releases(
    first_seen: &HashMap<String, i64>,
    now: i64,
    min_history_days: u32,
) -> HashSet<String> {
    let since = now - i64::from(min_history_days) * DAY;
    first_seen
        .iter()
        .filter(|(_, first)| **first > since)
        .filter(|(release, first)| {
            previous_release(release)
                .and_then(|p| first_seen.get(&p))
                .is_some_and(|previous| *previous <= **first - DAY)
        })
        .map(|(release, _)| release.clone())
        .collect()
}

/// The same group one release earlier (`from_release` shifted too when the group fixes it).
#[cfg(test)]
pub(crate) fn previous_release_key(group: &GroupKey) -> Option<GroupKey> {
    Some(GroupKey {
        backend: group.backend.clone(),
        fixed: previous_release_values(&group.fixed)?,
    })
}

/// The values of a group one release earlier: the release (and a fixed, non-empty
/// from-release) one back, the other values the same.
pub fn previous_release_values(fixed: &Fixed) -> Option<Fixed> {
    let release = fixed.get(Dimension::Release)?;
    let mut out = fixed.clone();
    out.insert(Dimension::Release, previous_release(release)?);
    if let Some(from) = fixed.get(Dimension::FromRelease).filter(|f| !f.is_empty()) {
        out.insert(Dimension::FromRelease, previous_release(from)?);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_is_young_only_beside_an_older_one() {
        let (day, hour) = (DAY, crate::model::HOUR);
        let now = 100 * day;
        let first: HashMap<String, i64> = [
            ("4.13".to_string(), 10 * day),
            ("4.14".to_string(), 95 * day),
            ("4.15".to_string(), 95 * day + 3 * hour),
        ]
        .into();
        // 4.14 began five days ago beside a 4.13 of ninety days; 4.15 hours after 4.14
        let young = young_releases(&first, now, 14);
        assert_eq!(young, ["4.14".to_string()].into());

        // sheriff's history began a little over 14 days ago, with every release within hours:
        // none is younger than the one before, now or as the first passes 14 days
        let first: HashMap<String, i64> = [
            ("4.13".to_string(), 86 * day - hour),
            ("4.14".to_string(), 86 * day + 3 * hour),
            ("4.15".to_string(), 86 * day + 9 * hour),
        ]
        .into();
        assert!(young_releases(&first, now, 14).is_empty());
    }

    fn rule(backend: &str, dims: &[(&str, &str)], p: Percentile, seconds: f64) -> LimitRule {
        let mut r = LimitRule {
            backend: backend.into(),
            percentile: p,
            seconds,
            ..Default::default()
        };
        for (d, v) in dims {
            r.set(Dimension::parse(d).unwrap(), v);
        }
        r
    }

    fn metal_group() -> GroupKey {
        let d = Dimensions {
            release: "4.14".into(),
            platform: "metal".into(),
            architecture: "amd64".into(),
            topology: "ha".into(),
            ..Default::default()
        };
        GroupKey::keeping(
            "image-registry-new-connections",
            &d,
            &[
                Dimension::Release,
                Dimension::Platform,
                Dimension::Architecture,
                Dimension::Topology,
            ],
        )
    }

    #[test]
    fn the_most_specific_configured_limit_wins() {
        let rules = vec![
            rule("*", &[], Percentile::P50, 30.0),
            rule(
                "image-registry-*",
                &[("platform", "metal")],
                Percentile::P50,
                5.0,
            ),
            rule(
                "image-registry-*",
                &[("platform", "aws")],
                Percentile::P50,
                2.0,
            ),
            rule(
                "image-registry-*",
                &[("network", "ovn")],
                Percentile::P50,
                1.0,
            ),
        ];
        let t = configured(&rules, &metal_group(), Percentile::P50).unwrap();
        assert_eq!(t.seconds, 5.0);
        assert!(
            matches!(t.source, ThresholdSource::Configured { ref rule } if rule.contains("platform=metal"))
        );
        assert!(configured(&rules, &metal_group(), Percentile::P95).is_none());
    }

    #[test]
    fn historical_rows_match_cells_and_a_group_takes_the_worst_cell() {
        let row = |net: &str, p50: f64, runs: u64| HistoricalRow {
            backend: "image-registry-new-connections".into(),
            release: "4.14".into(),
            from_release: "4.13".into(),
            platform: "metal".into(),
            architecture: "amd64".into(),
            network: net.into(),
            topology: "ha".into(),
            master_nodes_updated: "Y".into(),
            job_runs: Some(runs),
            p50: Some(p50),
            p75: None,
            p95: Some(p50 * 3.0),
            p99: Some(p50 * 4.0),
        };
        let table = HistoricalTable::new(vec![row("ovn", 2.0, 40), row("sdn", 4.0, 35)], 30);
        let cell = |net: &str| Dimensions {
            release: "4.14".into(),
            from_release: "4.13".into(),
            upgrade_type: "minor".into(),
            platform: "metal".into(),
            architecture: "amd64".into(),
            network: net.into(),
            network_stack: "ipv4".into(),
            topology: "ha".into(),
            master_nodes_updated: "Y".into(),
        };
        let (ovn, sdn) = (cell("ovn"), cell("sdn"));
        let t = table
            .threshold(
                "image-registry-new-connections",
                &[&ovn, &sdn],
                Percentile::P50,
            )
            .unwrap();
        assert_eq!(t.seconds, 4.0);
        assert!(
            table
                .threshold(
                    "image-registry-new-connections",
                    &[&ovn, &sdn],
                    Percentile::P75
                )
                .is_none()
        );
        let untrusted = HistoricalTable::new(vec![row("ovn", 2.0, 10)], 30);
        assert!(
            untrusted
                .threshold("image-registry-new-connections", &[&ovn], Percentile::P50)
                .is_none()
        );
    }

    #[test]
    fn previous_release_of_a_group() {
        let key = previous_release_key(&metal_group()).unwrap();
        assert_eq!(key.get(Dimension::Release), Some("4.13"));
        assert_eq!(previous_release("4.0"), None);
    }
}
