//! Scope finding: the smallest description, in dimension values, of the cells a regression
//! covers — and not of the cells that stayed healthy. Pure.
//!
//! Each cell of a backend is regressed, healthy (it had enough runs of its own, or belongs to
//! a healthy group with enough runs), or unknown (too few runs to tell). The description is a
//! conjunction `dimension ∈ {values of the regressed cells}` over as few dimensions as possible
//! such that no healthy cell satisfies it. Unknown cells never count as evidence of health.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Dimension, Dimensions};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Regressed,
    Healthy,
    Unknown,
}

/// One cell as evidence.
#[derive(Debug, Clone)]
pub struct CellEvidence {
    pub dims: Dimensions,
    pub verdict: Verdict,
}

/// The dimensions a scope may narrow, in the order a person would name them.
pub const SEARCHABLE: [Dimension; 6] = [
    Dimension::Platform,
    Dimension::Network,
    Dimension::UpgradeType,
    Dimension::NetworkStack,
    Dimension::FromRelease,
    Dimension::MasterNodesUpdated,
];

/// What scope finding concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeFinding {
    /// The narrowing constraints: dimension → the values it is limited to.
    pub constraints: BTreeMap<Dimension, BTreeSet<String>>,
    /// The values of each dimension the scope does not narrow, among the regressed cells.
    pub spans: BTreeMap<Dimension, BTreeSet<String>>,
    /// False when even the most specific description also fits a healthy cell.
    pub separates: bool,
}

impl ScopeFinding {
    /// The finding once the scope was narrowed to `scope`: a dimension the scope now limits is
    /// a constraint with its values, no longer one the regression spans.
    pub fn narrowed_to(&self, scope: &crate::model::Scope) -> ScopeFinding {
        let mut out = self.clone();
        for (d, values) in scope.iter() {
            let spanned = self.spans.get(&d).is_some_and(|s| s.len() > values.len());
            let tighter = self
                .constraints
                .get(&d)
                .is_some_and(|c| c.len() > values.len());
            if spanned || tighter {
                out.spans.remove(&d);
                out.constraints.insert(d, values.clone());
            }
        }
        out
    }
}

fn satisfies(d: &Dimensions, constraints: &[(Dimension, &BTreeSet<String>)]) -> bool {
    constraints
        .iter()
        .all(|(dim, values)| values.contains(d.get(*dim)))
}

/// The smallest scope over `dims` covering the regressed cells and no healthy one. `None`
/// when nothing regressed.
pub fn smallest_scope(cells: &[CellEvidence], dims: &[Dimension]) -> Option<ScopeFinding> {
    let regressed: Vec<&Dimensions> = cells
        .iter()
        .filter(|c| c.verdict == Verdict::Regressed)
        .map(|c| &c.dims)
        .collect();

    if regressed.is_empty() {
        return None;
    }

    let healthy: Vec<&Dimensions> = cells
        .iter()
        .filter(|c| c.verdict == Verdict::Healthy)
        .map(|c| &c.dims)
        .collect();

    let values: BTreeMap<Dimension, BTreeSet<String>> = dims
        .iter()
        .map(|d| {
            (
                *d,
                regressed.iter().map(|r| r.get(*d).to_string()).collect(),
            )
        })
        .collect();

    // Subsets of the dimensions by size, then by the order of `dims`: the first that excludes
    // every healthy cell is the smallest description.
    let n = dims.len();
    let members = |m: u32| -> Vec<usize> { (0..n).filter(|i| m & (1 << i) != 0).collect() };
    let mut subsets: Vec<u32> = (0..(1u32 << n)).collect();
    subsets.sort_by_key(|&m| (m.count_ones(), members(m)));
    let mut chosen = None;
    for mask in subsets {
        let constraints: Vec<(Dimension, &BTreeSet<String>)> = (0..n)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| (dims[i], &values[&dims[i]]))
            .collect();
        if !healthy.iter().any(|h| satisfies(h, &constraints)) {
            chosen = Some(mask);
            break;
        }
    }

    let separates = chosen.is_some();
    let mask = chosen.unwrap_or((1u32 << n) - 1);
    let constraints = (0..n)
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| (dims[i], values[&dims[i]].clone()))
        .collect();

    let spans = (0..n)
        .filter(|i| mask & (1 << i) == 0)
        .map(|i| (dims[i], values[&dims[i]].clone()))
        .collect();

    Some(ScopeFinding {
        constraints,
        spans,
        separates,
    })
}

/// How well each value of a dimension the scope does not narrow is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueEvidence {
    /// Its own group regressed significantly.
    Regressed,
    /// Its own group had enough runs and did not regress.
    Healthy,
    /// Too few runs of its own to tell.
    Thin,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(platform: &str, network: &str, upgrade: &str, verdict: Verdict) -> CellEvidence {
        CellEvidence {
            dims: Dimensions {
                release: "4.14".into(),
                from_release: if upgrade == "minor" {
                    "4.13".into()
                } else {
                    "4.14".into()
                },
                upgrade_type: upgrade.into(),
                platform: platform.into(),
                architecture: "amd64".into(),
                network: network.into(),
                network_stack: "ipv4".into(),
                topology: "ha".into(),
                master_nodes_updated: "Y".into(),
            },
            verdict,
        }
    }

    /// Every platform × network × upgrade type; `hit` says which cells regressed, `thin` which
    /// ones had too few runs.
    fn matrix(
        hit: impl Fn(&str, &str, &str) -> bool,
        thin: impl Fn(&str, &str, &str) -> bool,
    ) -> Vec<CellEvidence> {
        let mut cells = Vec::new();
        for p in ["aws", "gcp", "azure", "metal", "vsphere"] {
            for n in ["ovn", "sdn"] {
                for u in ["micro", "minor"] {
                    let v = if hit(p, n, u) {
                        Verdict::Regressed
                    } else if thin(p, n, u) {
                        Verdict::Unknown
                    } else {
                        Verdict::Healthy
                    };
                    cells.push(cell(p, n, u, v));
                }
            }
        }
        cells
    }

    fn constraint(f: &ScopeFinding, d: Dimension) -> Option<Vec<&str>> {
        f.constraints
            .get(&d)
            .map(|v| v.iter().map(String::as_str).collect())
    }

    #[test]
    fn one_platform() {
        let cells = matrix(|p, _, _| p == "metal", |_, _, _| false);
        let f = smallest_scope(&cells, &SEARCHABLE).unwrap();
        assert_eq!(f.constraints.len(), 1);
        assert_eq!(constraint(&f, Dimension::Platform), Some(vec!["metal"]));
        assert_eq!(f.spans[&Dimension::Network].len(), 2, "both networks");
        assert!(f.separates);
    }

    #[test]
    fn one_network_across_platforms() {
        let cells = matrix(|_, n, _| n == "ovn", |_, _, _| false);
        let f = smallest_scope(&cells, &SEARCHABLE).unwrap();
        assert_eq!(f.constraints.len(), 1);
        assert_eq!(constraint(&f, Dimension::Network), Some(vec!["ovn"]));
        assert_eq!(f.spans[&Dimension::Platform].len(), 5, "every platform");
    }

    #[test]
    fn one_upgrade_type() {
        let cells = matrix(|_, _, u| u == "minor", |_, _, _| false);
        let f = smallest_scope(&cells, &SEARCHABLE).unwrap();
        // minor upgrades are also the only ones from 4.13: either dimension describes them.
        assert_eq!(f.constraints.len(), 1);
        assert!(
            constraint(&f, Dimension::UpgradeType) == Some(vec!["minor"])
                || constraint(&f, Dimension::FromRelease) == Some(vec!["4.13"])
        );
    }

    #[test]
    fn everything_is_cluster_wide() {
        let cells = matrix(|_, _, _| true, |_, _, _| false);
        let f = smallest_scope(&cells, &SEARCHABLE).unwrap();
        assert!(f.constraints.is_empty(), "{f:?}");
        assert_eq!(f.spans[&Dimension::Platform].len(), 5);
    }

    #[test]
    fn two_unrelated_regressions_of_one_backend_are_scoped_apart() {
        // metal on every network, and azure sdn minor only: scoped one at a time, the other's
        // cells are neither evidence of health nor part of the regression.
        let metal = |p: &str, _: &str, _: &str| p == "metal";
        let azure = |p: &str, n: &str, u: &str| p == "azure" && n == "sdn" && u == "minor";
        let first = matrix(metal, azure);
        let f = smallest_scope(&first, &SEARCHABLE).unwrap();
        assert_eq!(constraint(&f, Dimension::Platform), Some(vec!["metal"]));
        assert_eq!(f.constraints.len(), 1);
        let second = matrix(azure, metal);
        let f = smallest_scope(&second, &SEARCHABLE).unwrap();
        assert_eq!(constraint(&f, Dimension::Platform), Some(vec!["azure"]));
        assert_eq!(constraint(&f, Dimension::Network), Some(vec!["sdn"]));
        assert!(
            constraint(&f, Dimension::UpgradeType) == Some(vec!["minor"])
                || constraint(&f, Dimension::FromRelease) == Some(vec!["4.13"])
        );
    }

    #[test]
    fn unknown_cells_are_not_evidence_of_health() {
        // metal ovn regressed; metal sdn has too few runs: the scope stays metal, not metal ovn.
        let cells = matrix(
            |p, n, _| p == "metal" && n == "ovn",
            |p, n, _| p == "metal" && n == "sdn",
        );
        let f = smallest_scope(&cells, &SEARCHABLE).unwrap();
        assert_eq!(f.constraints.len(), 1);
        assert_eq!(constraint(&f, Dimension::Platform), Some(vec!["metal"]));
    }
}
