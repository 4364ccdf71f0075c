//! What a regression or an incident covers: dimension → the set of values affected. A dimension
//! left out covers every value of it ("not specific to a network plugin").
//!
//! One type for every place a scope is kept or matched. It is written two ways in JSON: the
//! report's compact form (`{"platform": "metal", "network": ["ovn", "sdn"]}`, the
//! `evaluate --format json` contract) by default, and lists only (`{"platform": ["metal"]}`,
//! the form incidents have always been stored in) through [`lists`]. Both forms read back.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Dimension, Dimensions};

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Scope(BTreeMap<Dimension, BTreeSet<String>>);

/// The dimensions one problem may span although groups never do.
const SPANNED: [Dimension; 2] = [Dimension::Architecture, Dimension::Topology];

impl Scope {
    pub fn new() -> Scope {
        Scope::default()
    }

    /// Limits `d` to `values` (replacing what it had).
    pub fn set(&mut self, d: Dimension, values: impl IntoIterator<Item = impl Into<String>>) {
        self.0
            .insert(d, values.into_iter().map(Into::into).collect());
    }

    pub fn remove(&mut self, d: Dimension) {
        self.0.remove(&d);
    }

    pub fn get(&self, d: Dimension) -> Option<&BTreeSet<String>> {
        self.0.get(&d)
    }

    /// The value of `d` when the scope limits it to exactly one.
    pub fn single(&self, d: Dimension) -> Option<&str> {
        self.0
            .get(&d)
            .filter(|v| v.len() == 1)
            .and_then(|v| v.iter().next())
            .map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (Dimension, &BTreeSet<String>)> {
        self.0.iter().map(|(d, v)| (*d, v))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a cell with these dimensions is inside the scope.
    pub fn contains(&self, dims: &Dimensions) -> bool {
        self.0
            .iter()
            .all(|(d, values)| values.contains(dims.get(*d)))
    }

    /// Two scopes overlap when, in every dimension both limit, they share a value.
    pub fn overlaps(&self, other: &Scope) -> bool {
        self.0.iter().all(|(d, a)| {
            other
                .0
                .get(d)
                .is_none_or(|b| a.iter().any(|x| b.contains(x)))
        })
    }

    /// Whether two scopes are one problem's: they overlap apart from the architecture and the
    /// topology. Statistics never pool across those (a single-node cluster is disrupted in its
    /// own way), but one broken component shows on every architecture and topology at once.
    pub fn same_problem(&self, other: &Scope) -> bool {
        self.0
            .iter()
            .filter(|(d, _)| !SPANNED.contains(d))
            .all(|(d, a)| {
                other
                    .0
                    .get(d)
                    .is_none_or(|b| a.iter().any(|x| b.contains(x)))
            })
    }

    /// The scope without limits that say nothing: a dimension listing every value its release
    /// has among `variants` (`upgrade_type=micro,minor,none`), and an architecture or topology
    /// that leaves no variant of the rest of the scope out (`architecture=amd64` when every
    /// metal variant is amd64). The release always stays.
    pub fn simplified(&self, variants: &[Dimensions]) -> Scope {
        let mut out = self.clone();
        let release = self.get(Dimension::Release);
        let of_release: Vec<&Dimensions> = variants
            .iter()
            .filter(|v| release.is_none_or(|r| r.contains(&v.release)))
            .collect();
        if of_release.is_empty() {
            return out;
        }
        for d in Dimension::ALL
            .into_iter()
            .filter(|d| *d != Dimension::Release)
        {
            if let Some(values) = out.get(d)
                && of_release.iter().all(|v| values.contains(v.get(d)))
            {
                out.remove(d);
            }
        }
        for d in SPANNED {
            if out.get(d).is_none() {
                continue;
            }
            let mut without = out.clone();
            without.remove(d);
            if of_release
                .iter()
                .filter(|v| without.contains(v))
                .all(|v| out.contains(v))
            {
                out = without;
            }
        }
        out
    }

    /// The same variants of `variants`, named in every dimension: each dimension lists the
    /// values the covered variants have. Two scopes are joined this way, since `upgrade_type=minor`
    /// and `platform=metal` may be the same runs although neither limits the other's dimension.
    /// A scope covering none of `variants` stays as it is.
    pub fn explicit(&self, variants: &[Dimensions]) -> Scope {
        let mut out = Scope::new();
        for v in variants.iter().filter(|v| self.contains(v)) {
            for d in Dimension::ALL {
                out.0.entry(d).or_default().insert(v.get(d).to_string());
            }
        }
        if out.is_empty() { self.clone() } else { out }
    }

    /// The smallest scope covering the variants of both, as simple as `variants` allow.
    pub fn joined_over(&self, other: &Scope, variants: &[Dimensions]) -> Scope {
        self.explicit(variants)
            .union(&other.explicit(variants))
            .simplified(variants)
    }

    /// Every value `other` covers, this scope covers too.
    pub fn covers(&self, other: &Scope) -> bool {
        self.0.iter().all(|(d, a)| {
            other
                .0
                .get(d)
                .is_some_and(|b| b.iter().all(|x| a.contains(x)))
        })
    }

    /// The smallest scope covering both: a dimension stays limited only where both limit it.
    pub fn union(&self, other: &Scope) -> Scope {
        Scope(
            self.0
                .iter()
                .filter_map(|(d, a)| other.0.get(d).map(|b| (*d, a.union(b).cloned().collect())))
                .collect(),
        )
    }

    /// `dimension=v1,v2` per limited dimension, values sorted: the text fingerprints hash.
    pub fn joined(&self) -> BTreeMap<Dimension, String> {
        self.0
            .iter()
            .map(|(d, v)| (*d, v.iter().cloned().collect::<Vec<_>>().join(",")))
            .collect()
    }

    /// `platform=metal network=ovn,sdn` (the release left out: it is said separately), or
    /// `every variant`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .filter(|(d, _)| **d != Dimension::Release)
            .map(|(d, v)| format!("{d}={}", v.iter().cloned().collect::<Vec<_>>().join(",")))
            .collect();
        if parts.is_empty() {
            "every variant".into()
        } else {
            parts.join(" ")
        }
    }

    /// Its release, platform and architecture in words, values only: `4.15 metal amd64`.
    pub fn values_in_words(&self) -> String {
        [
            Dimension::Release,
            Dimension::Platform,
            Dimension::Architecture,
        ]
        .iter()
        .filter_map(|d| self.get(*d))
        .map(|v| v.iter().cloned().collect::<Vec<_>>().join("|"))
        .collect::<Vec<_>>()
        .join(" ")
    }

    /// Every dimension of one cell, each limited to its value.
    pub fn of_cell(dims: &Dimensions) -> Scope {
        Scope(
            Dimension::ALL
                .iter()
                .map(|d| (*d, [dims.get(*d).to_string()].into()))
                .collect(),
        )
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl FromIterator<(Dimension, BTreeSet<String>)> for Scope {
    fn from_iter<I: IntoIterator<Item = (Dimension, BTreeSet<String>)>>(iter: I) -> Scope {
        Scope(iter.into_iter().filter(|(_, v)| !v.is_empty()).collect())
    }
}

impl<const N: usize> From<[(Dimension, &str); N]> for Scope {
    fn from(pairs: [(Dimension, &str); N]) -> Scope {
        let mut s = Scope::new();
        for (d, v) in pairs {
            s.0.entry(d).or_default().insert(v.to_string());
        }
        s
    }
}

/// A value as JSON writes it: one string, or a list of them.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Values {
    One(String),
    Many(BTreeSet<String>),
}

impl Serialize for Scope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let compact: BTreeMap<Dimension, Values> = self
            .0
            .iter()
            .map(|(d, v)| {
                let value = match v.iter().next() {
                    Some(one) if v.len() == 1 => Values::One(one.clone()),
                    _ => Values::Many(v.clone()),
                };
                (*d, value)
            })
            .collect();
        compact.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Scope, D::Error> {
        let raw: BTreeMap<String, Values> = BTreeMap::deserialize(deserializer)?;
        let mut scope = Scope::new();
        for (name, values) in raw {
            let d = Dimension::parse(&name).ok_or_else(|| {
                serde::de::Error::custom(format!("unknown dimension `{name}` in a scope"))
            })?;
            let values = match values {
                Values::One(v) => [v].into(),
                Values::Many(v) => v,
            };
            scope.0.entry(d).or_default().extend(values);
        }
        Ok(scope)
    }
}

/// The lists-only JSON form: `{"platform": ["metal"]}`. For `#[serde(with = …)]`.
pub mod lists {
    use super::*;

    pub fn serialize<S: Serializer>(scope: &Scope, serializer: S) -> Result<S::Ok, S::Error> {
        scope.0.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Scope, D::Error> {
        Scope::deserialize(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metal() -> Scope {
        Scope::from([(Dimension::Release, "4.14"), (Dimension::Platform, "metal")])
    }

    #[test]
    fn a_missing_dimension_covers_every_value() {
        let mut metal_ovn = metal();
        metal_ovn.set(Dimension::Network, ["ovn"]);
        let aws = Scope::from([(Dimension::Release, "4.14"), (Dimension::Platform, "aws")]);
        let metal_or_aws =
            Scope::from([(Dimension::Platform, "aws"), (Dimension::Platform, "metal")]);
        assert!(metal().overlaps(&metal_ovn) && metal_ovn.overlaps(&metal()));
        assert!(!metal().overlaps(&aws));
        assert!(metal_or_aws.overlaps(&aws));
        assert!(Scope::new().overlaps(&aws));
        assert!(metal().covers(&metal_ovn) && !metal_ovn.covers(&metal()));
        assert_eq!(metal_ovn.union(&metal()), metal());
        assert_eq!(
            metal().union(&aws).get(Dimension::Platform).unwrap().len(),
            2
        );
    }

    #[test]
    fn one_problem_spans_architectures_and_topologies_and_their_limits_go_when_they_cover_all() {
        let mut amd = metal();
        amd.set(Dimension::Architecture, ["amd64"]);
        amd.set(Dimension::Topology, ["ha"]);
        let mut arm = metal();
        arm.set(Dimension::Architecture, ["arm64"]);
        arm.set(Dimension::Topology, ["single"]);
        assert!(!amd.overlaps(&arm) && amd.same_problem(&arm));
        let mut aws = arm.clone();
        aws.set(Dimension::Platform, ["aws"]);
        assert!(
            !amd.same_problem(&aws),
            "another platform is another problem"
        );
        let cell = |platform: &str, arch: &str, topology: &str| Dimensions {
            release: "4.14".into(),
            platform: platform.into(),
            architecture: arch.into(),
            topology: topology.into(),
            ..Default::default()
        };
        let variants = [
            cell("metal", "amd64", "ha"),
            cell("metal", "arm64", "single"),
            cell("metal", "arm64", "ha"),
            cell("aws", "arm64", "ha"),
        ];
        // every architecture and topology metal has: both limits go
        assert_eq!(
            amd.union(&arm).simplified(&variants).describe(),
            "platform=metal"
        );
        // arm64 on metal is both topologies: that limit goes, the architecture stays
        let mut arm_ha = arm.clone();
        arm_ha.set(Dimension::Topology, ["ha"]);
        assert_eq!(
            arm.union(&arm_ha).simplified(&variants).describe(),
            "platform=metal architecture=arm64"
        );
        // a limit that leaves out a real cell stays (metal amd64 is only ever HA here)
        assert_eq!(
            amd.simplified(&variants).describe(),
            "platform=metal architecture=amd64"
        );
    }

    #[test]
    fn two_scopes_naming_different_dimensions_of_the_same_runs_join_to_those_runs() {
        let cell = |platform: &str, upgrade: &str, network: &str| Dimensions {
            release: "4.14".into(),
            platform: platform.into(),
            upgrade_type: upgrade.into(),
            network: network.into(),
            ..Default::default()
        };
        // only metal runs minor upgrades here
        let variants = [
            cell("metal", "minor", "ovn"),
            cell("metal", "micro", "sdn"),
            cell("aws", "micro", "ovn"),
            cell("gcp", "micro", "ovn"),
        ];
        let minor = Scope::from([
            (Dimension::Release, "4.14"),
            (Dimension::UpgradeType, "minor"),
        ]);
        assert_eq!(
            metal().union(&minor),
            Scope::from([(Dimension::Release, "4.14")]),
            "the naive union loses it"
        );
        assert_eq!(
            metal().joined_over(&minor, &variants).describe(),
            "platform=metal"
        );
        let aws = Scope::from([(Dimension::Release, "4.14"), (Dimension::Platform, "aws")]);
        assert_eq!(
            metal().joined_over(&aws, &variants).describe(),
            "platform=aws,metal"
        );
        // nothing known of the variants: the scope as it was
        assert_eq!(metal().explicit(&[]), metal());
    }

    #[test]
    fn cells_are_inside_or_outside() {
        let cell = Dimensions {
            release: "4.14".into(),
            platform: "metal".into(),
            ..Default::default()
        };
        assert!(metal().contains(&cell));
        assert!(Scope::of_cell(&cell).contains(&cell));
        assert!(!Scope::from([(Dimension::Platform, "aws")]).contains(&cell));
    }

    #[test]
    fn both_json_forms_read_back_and_short_names_are_understood() {
        let mut s = metal();
        s.set(Dimension::Network, ["sdn", "ovn"]);
        let compact = serde_json::to_string(&s).unwrap();
        assert_eq!(
            compact,
            r#"{"release":"4.14","platform":"metal","network":["ovn","sdn"]}"#
        );
        assert_eq!(serde_json::from_str::<Scope>(&compact).unwrap(), s);
        #[derive(Serialize, Deserialize)]
        struct Stored {
            #[serde(with = "lists")]
            scope: Scope,
        }
        let stored = serde_json::to_string(&Stored { scope: s.clone() }).unwrap();
        assert_eq!(
            stored,
            r#"{"scope":{"release":["4.14"],"platform":["metal"],"network":["ovn","sdn"]}}"#
        );
        assert_eq!(serde_json::from_str::<Stored>(&stored).unwrap().scope, s);
        let short: Scope = serde_json::from_str(r#"{"Upgrade": "micro"}"#).unwrap();
        assert_eq!(short.single(Dimension::UpgradeType), Some("micro"));
        assert!(serde_json::from_str::<Scope>(r#"{"colour": "red"}"#).is_err());
        assert_eq!(s.describe(), "platform=metal network=ovn,sdn");
        assert_eq!(s.joined()[&Dimension::Network], "ovn,sdn");
    }
}
