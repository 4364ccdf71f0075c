//! The dimensions a job run is described by (the README's words), and their names in JSON and filters.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One value of every dimension. Values are lower-case strings as the CI writes them
/// (`metal`, `ovn`, `micro`, …); an unknown value stays as written rather than being lost.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Dimensions {
    pub release: String,
    /// Empty when the run is not an upgrade.
    pub from_release: String,
    /// `none`, `micro`, `minor`, `multi`, `major` or `micro-downgrade`.
    pub upgrade_type: String,
    pub platform: String,
    pub architecture: String,
    pub network: String,
    /// `ipv4`, `ipv6` or `dual`.
    pub network_stack: String,
    /// `ha`, `single`, `external` or `compact`.
    pub topology: String,
    /// `Y`, `N`, or empty when unknown.
    pub master_nodes_updated: String,
}

/// The name of a dimension, as used in scopes, filters and JSON (the README documents them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    Release,
    FromRelease,
    UpgradeType,
    Platform,
    Architecture,
    Network,
    NetworkStack,
    Topology,
    MasterNodesUpdated,
}

impl Dimension {
    pub const ALL: [Dimension; 9] = [
        Dimension::Release,
        Dimension::FromRelease,
        Dimension::UpgradeType,
        Dimension::Platform,
        Dimension::Architecture,
        Dimension::Network,
        Dimension::NetworkStack,
        Dimension::Topology,
        Dimension::MasterNodesUpdated,
    ];

    /// Its place in [`Dimension::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Release => "release",
            Dimension::FromRelease => "from_release",
            Dimension::UpgradeType => "upgrade_type",
            Dimension::Platform => "platform",
            Dimension::Architecture => "architecture",
            Dimension::Network => "network",
            Dimension::NetworkStack => "network_stack",
            Dimension::Topology => "topology",
            Dimension::MasterNodesUpdated => "master_nodes_updated",
        }
    }

    /// Accepts the JSON names and the short forms people type (`upgrade=`, `arch=`, `stack=`).
    pub fn parse(name: &str) -> Option<Dimension> {
        Some(match name.to_ascii_lowercase().as_str() {
            "release" => Dimension::Release,
            "from_release" | "from" => Dimension::FromRelease,
            "upgrade_type" | "upgrade" => Dimension::UpgradeType,
            "platform" => Dimension::Platform,
            "architecture" | "arch" => Dimension::Architecture,
            "network" => Dimension::Network,
            "network_stack" | "stack" => Dimension::NetworkStack,
            "topology" => Dimension::Topology,
            "master_nodes_updated" => Dimension::MasterNodesUpdated,
            _ => return None,
        })
    }
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Dimensions {
    pub fn get(&self, d: Dimension) -> &str {
        match d {
            Dimension::Release => &self.release,
            Dimension::FromRelease => &self.from_release,
            Dimension::UpgradeType => &self.upgrade_type,
            Dimension::Platform => &self.platform,
            Dimension::Architecture => &self.architecture,
            Dimension::Network => &self.network,
            Dimension::NetworkStack => &self.network_stack,
            Dimension::Topology => &self.topology,
            Dimension::MasterNodesUpdated => &self.master_nodes_updated,
        }
    }

    pub fn set(&mut self, d: Dimension, value: impl Into<String>) {
        let v = value.into();
        match d {
            Dimension::Release => self.release = v,
            Dimension::FromRelease => self.from_release = v,
            Dimension::UpgradeType => self.upgrade_type = v,
            Dimension::Platform => self.platform = v,
            Dimension::Architecture => self.architecture = v,
            Dimension::Network => self.network = v,
            Dimension::NetworkStack => self.network_stack = v,
            Dimension::Topology => self.topology = v,
            Dimension::MasterNodesUpdated => self.master_nodes_updated = v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dimension_round_trips_through_its_name() {
        for d in Dimension::ALL {
            assert_eq!(Dimension::parse(d.as_str()), Some(d));
            let mut dims = Dimensions::default();
            dims.set(d, "x");
            assert_eq!(dims.get(d), "x");
        }
        assert_eq!(Dimension::parse("arch"), Some(Dimension::Architecture));
        assert_eq!(Dimension::parse("colour"), None);
    }
}
