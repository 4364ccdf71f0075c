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

impl Scope {
    pub fn new() -> Scope {
        Scope::default()
    }

    /// Limits `d` to `values` (replacing what it had).
    pub fn set(&mut self, d: Dimension, values: impl IntoIterator<Item = impl Into<String>>) {
        self.0.insert(d, values.into_iter().map(Into::into).collect());
    }

    pub fn remove(&mut self, d: Dimension) {
        self.0.remove(&d);
    }

    pub fn get(&self, d: Dimension) -> Option<&BTreeSet<String>> {
        self.0.get(&d)
    }

    /// The value of `d` when the scope limits it to exactly one.
    pub fn single(&self, d: Dimension) -> Option<&str> {
        self.0.get(&d).filter(|v| v.len() == 1).and_then(|v| v.iter().next()).map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (Dimension, &BTreeSet<String>)> {
        self.0.iter().map(|(d, v)| (*d, v))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a cell with these dimensions is inside the scope.
    pub fn contains(&self, dims: &Dimensions) -> bool {
        self.0.iter().all(|(d, values)| values.contains(dims.get(*d)))
    }

    /// Two scopes overlap when, in every dimension both limit, they share a value.
    pub fn overlaps(&self, other: &Scope) -> bool {
        self.0.iter().all(|(d, a)| other.0.get(d).is_none_or(|b| a.iter().any(|x| b.contains(x))))
    }

    /// Every value `other` covers, this scope covers too.
    pub fn covers(&self, other: &Scope) -> bool {
        self.0.iter().all(|(d, a)| other.0.get(d).is_some_and(|b| b.iter().all(|x| a.contains(x))))
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
        self.0.iter().map(|(d, v)| (*d, v.iter().cloned().collect::<Vec<_>>().join(","))).collect()
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
        if parts.is_empty() { "every variant".into() } else { parts.join(" ") }
    }

    /// Every dimension of one cell, each limited to its value.
    pub fn of_cell(dims: &Dimensions) -> Scope {
        Scope(Dimension::ALL.iter().map(|d| (*d, [dims.get(*d).to_string()].into())).collect())
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
            let d = Dimension::parse(&name)
                .ok_or_else(|| serde::de::Error::custom(format!("unknown dimension `{name}` in a scope")))?;
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
        let metal_or_aws = Scope::from([(Dimension::Platform, "aws"), (Dimension::Platform, "metal")]);
        assert!(metal().overlaps(&metal_ovn) && metal_ovn.overlaps(&metal()));
        assert!(!metal().overlaps(&aws));
        assert!(metal_or_aws.overlaps(&aws));
        assert!(Scope::new().overlaps(&aws));
        assert!(metal().covers(&metal_ovn) && !metal_ovn.covers(&metal()));
        assert_eq!(metal_ovn.union(&metal()), metal());
        assert_eq!(metal().union(&aws).get(Dimension::Platform).unwrap().len(), 2);
    }

    #[test]
    fn cells_are_inside_or_outside() {
        let cell = Dimensions { release: "4.14".into(), platform: "metal".into(), ..Default::default() };
        assert!(metal().contains(&cell));
        assert!(Scope::of_cell(&cell).contains(&cell));
        assert!(!Scope::from([(Dimension::Platform, "aws")]).contains(&cell));
    }

    #[test]
    fn both_json_forms_read_back_and_short_names_are_understood() {
        let mut s = metal();
        s.set(Dimension::Network, ["sdn", "ovn"]);
        let compact = serde_json::to_string(&s).unwrap();
        assert_eq!(compact, r#"{"release":"4.14","platform":"metal","network":["ovn","sdn"]}"#);
        assert_eq!(serde_json::from_str::<Scope>(&compact).unwrap(), s);
        #[derive(Serialize, Deserialize)]
        struct Stored {
            #[serde(with = "lists")]
            scope: Scope,
        }
        let stored = serde_json::to_string(&Stored { scope: s.clone() }).unwrap();
        assert_eq!(stored, r#"{"scope":{"release":["4.14"],"platform":["metal"],"network":["ovn","sdn"]}}"#);
        assert_eq!(serde_json::from_str::<Stored>(&stored).unwrap().scope, s);
        let short: Scope = serde_json::from_str(r#"{"Upgrade": "micro"}"#).unwrap();
        assert_eq!(short.single(Dimension::UpgradeType), Some("micro"));
        assert!(serde_json::from_str::<Scope>(r#"{"colour": "red"}"#).is_err());
        assert_eq!(s.describe(), "platform=metal network=ovn,sdn");
        assert_eq!(s.joined()[&Dimension::Network], "ovn,sdn");
    }
}
