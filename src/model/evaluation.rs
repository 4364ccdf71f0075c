//! What evaluation talks about: percentiles, groups of cells, thresholds, regressions.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Dimension, Dimensions, Histogram};

/// The percentiles sheriff computes for every group.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Percentile {
    #[default]
    P50,
    P75,
    P95,
    P99,
}

impl Percentile {
    pub const ALL: [Percentile; 4] = [
        Percentile::P50,
        Percentile::P75,
        Percentile::P95,
        Percentile::P99,
    ];

    /// Its place in [`Percentile::ALL`], for arrays of the four.
    pub fn index(self) -> usize {
        Percentile::ALL.iter().position(|x| *x == self).unwrap_or(0)
    }

    /// As a fraction: P95 → 0.95.
    pub fn fraction(self) -> f64 {
        match self {
            Percentile::P50 => 0.50,
            Percentile::P75 => 0.75,
            Percentile::P95 => 0.95,
            Percentile::P99 => 0.99,
        }
    }

    pub fn parse(text: &str) -> Option<Percentile> {
        match text.trim().to_ascii_uppercase().as_str() {
            "P50" => Some(Percentile::P50),
            "P75" => Some(Percentile::P75),
            "P95" => Some(Percentile::P95),
            "P99" => Some(Percentile::P99),
            _ => None,
        }
    }
}

/// P50, P75, P95 and P99 of a histogram, in one walk over it.
pub fn percentiles_of(h: &Histogram) -> [Option<f64>; 4] {
    h.percentiles(Percentile::ALL.map(Percentile::fraction))
}

impl fmt::Display for Percentile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// A group of cells: one backend and the dimension values every cell of the group shares.
/// A dimension not listed is merged over (every value of it is in the group).
///
/// A cycle makes some 20,000 keys from a few hundred distinct sets of values, so the values
/// are shared, not copied: a key is two pointers, built and dropped without the allocator.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GroupKey {
    pub backend: Arc<str>,
    pub fixed: Fixed,
}

/// The dimension values a group keeps: at most one per dimension, in dimension order. Shared
/// by every group that keeps the same values (a change copies them first).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Fixed(Arc<[Option<Arc<str>>; Dimension::ALL.len()]>);

impl Fixed {
    pub fn get(&self, d: Dimension) -> Option<&str> {
        self.0[d.index()].as_deref()
    }

    pub fn insert(&mut self, d: Dimension, value: impl Into<Arc<str>>) {
        Arc::make_mut(&mut self.0)[d.index()] = Some(value.into());
    }

    /// The kept dimensions and their values, in dimension order.
    pub fn iter(&self) -> impl Iterator<Item = (Dimension, &str)> {
        Dimension::ALL
            .into_iter()
            .zip(self.0.iter())
            .filter_map(|(d, v)| Some((d, v.as_deref()?)))
    }

    pub fn len(&self) -> usize {
        self.0.iter().flatten().count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<V: Into<Arc<str>>> FromIterator<(Dimension, V)> for Fixed {
    fn from_iter<I: IntoIterator<Item = (Dimension, V)>>(pairs: I) -> Fixed {
        let mut fixed = Fixed::default();
        for (d, v) in pairs {
            fixed.insert(d, v);
        }
        fixed
    }
}

/// Ordered as the map of dimension to value it stands for: pair by pair, in dimension order.
impl Ord for Fixed {
    fn cmp(&self, other: &Fixed) -> std::cmp::Ordering {
        self.iter().cmp(other.iter())
    }
}

impl PartialOrd for Fixed {
    fn partial_cmp(&self, other: &Fixed) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A map of dimension names to values, as JSON shows scopes.
impl Serialize for Fixed {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Fixed {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Fixed, D::Error> {
        Ok(BTreeMap::<Dimension, String>::deserialize(deserializer)?
            .into_iter()
            .collect())
    }
}

impl GroupKey {
    /// The group of one cell (every dimension fixed).
    pub fn cell(backend: &str, dims: &Dimensions) -> GroupKey {
        GroupKey::keeping(backend, dims, &Dimension::ALL)
    }

    /// The coarser group of a cell that keeps only `dims`.
    pub fn keeping(backend: &str, cell: &Dimensions, dims: &[Dimension]) -> GroupKey {
        GroupKey {
            backend: backend.into(),
            fixed: dims.iter().map(|d| (*d, cell.get(*d))).collect(),
        }
    }

    pub fn get(&self, d: Dimension) -> Option<&str> {
        self.fixed.get(d)
    }

    pub fn is_cell(&self) -> bool {
        self.fixed.len() == Dimension::ALL.len()
    }

    /// Whether a cell belongs to this group.
    pub fn contains(&self, backend: &str, dims: &Dimensions) -> bool {
        *self.backend == *backend && self.fixed.iter().all(|(d, v)| dims.get(d) == v)
    }

    /// `image-registry-new-connections release=4.14 platform=metal …`: stable, readable, unique.
    pub fn label(&self) -> String {
        let mut s = self.backend.to_string();
        for (d, v) in self.fixed.iter() {
            s.push(' ');
            s.push_str(d.as_str());
            s.push('=');
            s.push_str(if v.is_empty() { "\"\"" } else { v });
        }
        s
    }
}

impl GroupKey {
    /// Reads a label written by [`GroupKey::label`] back.
    pub fn parse_label(label: &str) -> Option<GroupKey> {
        let mut parts = label.split(' ');
        let backend = parts.next()?.into();
        let mut fixed = Fixed::default();
        for part in parts {
            let (d, v) = part.split_once('=')?;
            let v = if v == "\"\"" { "" } else { v };
            fixed.insert(Dimension::parse(d)?, v);
        }
        Some(GroupKey { backend, fixed })
    }
}

impl fmt::Display for GroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// Where a threshold came from, most specific first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ThresholdSource {
    /// A limit in the configuration (`[[evaluate.limits]]`), described by its rule.
    Configured { rule: String },
    /// The CI suite's historical table (`sheriff thresholds import`).
    Historical { job_runs: Option<u64> },
    /// The same group in the baseline window before the current one.
    Baseline { runs: u64 },
    /// The group is new: the previous release's same group.
    PreviousRelease { release: String, runs: u64 },
}

/// The allowed value of one percentile for one group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    pub percentile: Percentile,
    pub seconds: f64,
    pub source: ThresholdSource,
}

/// The family of a backend: `image-registry-new-connections` → `image-registry`. The new- and
/// reused-connection backends of one family are one problem.
pub fn backend_family(backend: &str) -> &str {
    backend
        .strip_suffix("-new-connections")
        .or_else(|| backend.strip_suffix("-reused-connections"))
        .unwrap_or(backend)
}

/// A stable, documented fingerprint of a problem: the first 16 hex digits of
/// SHA-256(`family` `\n` `release` `\n` `dimension=value` lines of the scope, sorted). The same
/// scope in the next cycle gives the same fingerprint; any other scope gives another.
pub fn fingerprint(family: &str, release: &str, scope: &BTreeMap<Dimension, String>) -> String {
    use sha2::Digest;
    let mut text = format!("{family}\n{release}\n");
    for (d, v) in scope {
        text.push_str(d.as_str());
        text.push('=');
        text.push_str(v);
        text.push('\n');
    }
    let digest = sha2::Sha256::digest(text.as_bytes());
    format!("sheriff-{}", hex::encode(&digest[..8]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_stable_and_distinct() {
        let scope: BTreeMap<_, _> = [(Dimension::Platform, "metal".to_string())].into();
        let a = fingerprint("image-registry", "4.14", &scope);
        assert_eq!(a, fingerprint("image-registry", "4.14", &scope.clone()));
        assert_eq!(a, "sheriff-".to_string() + &a[8..]);
        assert_eq!(a.len(), 8 + 16);
        let other: BTreeMap<_, _> = [(Dimension::Platform, "aws".to_string())].into();
        assert_ne!(a, fingerprint("image-registry", "4.14", &other));
        assert_ne!(a, fingerprint("image-registry", "4.15", &scope));
        assert_ne!(a, fingerprint("ingress-to-console", "4.14", &scope));
    }

    #[test]
    fn families_join_new_and_reused_connections() {
        assert_eq!(
            backend_family("image-registry-new-connections"),
            "image-registry"
        );
        assert_eq!(
            backend_family("image-registry-reused-connections"),
            "image-registry"
        );
        assert_eq!(backend_family("odd-backend"), "odd-backend");
    }

    #[test]
    fn groups_contain_their_cells() {
        let dims = Dimensions {
            platform: "metal".into(),
            network: "ovn".into(),
            ..Default::default()
        };
        let g = GroupKey::keeping("b", &dims, &[Dimension::Platform]);
        assert!(g.contains("b", &dims));
        assert!(!g.contains("c", &dims));
        assert!(g.contains(
            "b",
            &Dimensions {
                platform: "metal".into(),
                network: "sdn".into(),
                ..Default::default()
            }
        ));
        assert!(GroupKey::cell("b", &dims).is_cell());
        assert_eq!(g.label(), "b platform=metal");
        let cell = GroupKey::cell("b", &dims);
        assert_eq!(GroupKey::parse_label(&cell.label()), Some(cell));
    }
}

/// Which of a group's runs a check judges: the current window, or the runs of the last `days`
/// days (the recent span at `index` of the cycle's list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Span {
    #[default]
    Window,
    Recent {
        index: usize,
        days: u32,
    },
}

impl Span {
    /// The days of a recent span; None for the window.
    pub fn days(self) -> Option<u32> {
        match self {
            Span::Window => None,
            Span::Recent { days, .. } => Some(days),
        }
    }
}
