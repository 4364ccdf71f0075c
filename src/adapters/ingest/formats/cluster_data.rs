//! `cluster-data_*.json`: the cluster's dimensions as the test suite saw them.

use serde::Deserialize;

/// The fields sheriff uses; anything else in the file (`os`, …) is ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ClusterData {
    #[serde(rename = "Release", deserialize_with = "super::null_as_empty")]
    pub release: String,
    #[serde(rename = "FromRelease", deserialize_with = "super::null_as_empty")]
    pub from_release: String,
    #[serde(rename = "Platform", deserialize_with = "super::null_as_empty")]
    pub platform: String,
    #[serde(rename = "Architecture", deserialize_with = "super::null_as_empty")]
    pub architecture: String,
    #[serde(rename = "Network", deserialize_with = "super::null_as_empty")]
    pub network: String,
    #[serde(rename = "Topology", deserialize_with = "super::null_as_empty")]
    pub topology: String,
    #[serde(rename = "NetworkStack", deserialize_with = "super::null_as_empty")]
    pub network_stack: String,
    #[serde(
        rename = "MasterNodesUpdated",
        deserialize_with = "super::null_as_empty"
    )]
    pub master_nodes_updated: String,
    /// The versions the cluster ran, the current one first (a payload tag for CI builds).
    #[serde(rename = "ClusterVersionHistory", deserialize_with = "versions")]
    pub cluster_version_history: Vec<String>,
}

/// `ClusterVersionHistory`: a list of version strings; null, or anything else, is none.
fn versions<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

/// Why a file is not a usable cluster-data file.
#[derive(Debug, thiserror::Error)]
pub enum ClusterDataError {
    #[error("not a cluster-data file: {0}")]
    NotJson(serde_json::Error),
    #[error("not a cluster-data file: expected {}", super::JSON_OBJECT)]
    NotAnObject,
    #[error("unknown schema: neither `Release` nor `Platform` present")]
    UnknownSchema,
    /// A field sheriff reads holds a value of another type (`"Release": 4.14`).
    #[error("cluster-data field of the wrong type: {0}")]
    WrongType(serde_json::Error),
}

pub fn parse_cluster_data(bytes: &[u8]) -> Result<ClusterData, ClusterDataError> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(ClusterDataError::NotJson)?;
    let object = value.as_object().ok_or(ClusterDataError::NotAnObject)?;
    if !object.contains_key("Release") && !object.contains_key("Platform") {
        return Err(ClusterDataError::UnknownSchema);
    }
    serde_json::from_value(value).map_err(ClusterDataError::WrongType)
}

/// Several files of one run (one per test phase) become one: the first non-empty value of
/// each field wins, and `MasterNodesUpdated` is `Y` when any file says `Y`.
pub fn merge(files: &[ClusterData]) -> ClusterData {
    let mut out = ClusterData::default();
    for f in files {
        for (dst, src) in [
            (&mut out.release, &f.release),
            (&mut out.from_release, &f.from_release),
            (&mut out.platform, &f.platform),
            (&mut out.architecture, &f.architecture),
            (&mut out.network, &f.network),
            (&mut out.topology, &f.topology),
            (&mut out.network_stack, &f.network_stack),
        ] {
            if dst.is_empty() && !src.is_empty() {
                dst.clone_from(src);
            }
        }
        if out.cluster_version_history.is_empty() {
            out.cluster_version_history
                .clone_from(&f.cluster_version_history);
        }
        if f.master_nodes_updated.eq_ignore_ascii_case("y") {
            out.master_nodes_updated = "Y".into();
        } else if out.master_nodes_updated.is_empty()
            && f.master_nodes_updated.eq_ignore_ascii_case("n")
        {
            out.master_nodes_updated = "N".into();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_flat_object_and_ignores_the_rest() {
        let json =
            br#"{"Release": "4.14", "FromRelease": "4.13", "Platform": "metal", "Architecture": "amd64",
            "Network": "ovn", "Topology": "ha", "NetworkStack": "IPv4", "CloudRegion": "", "CloudZone": "",
            "ClusterVersionHistory": ["4.13.0", "4.14.0"], "MasterNodesUpdated": "N", "os": "rhcos"}"#;
        let d = parse_cluster_data(json).unwrap();
        assert_eq!(d.platform, "metal");
        assert_eq!(d.network_stack, "IPv4");
        assert_eq!(d.master_nodes_updated, "N");
    }

    #[test]
    fn null_fields_read_as_empty() {
        let d = parse_cluster_data(
            br#"{"Release": "4.15", "FromRelease": null, "Platform": "aws", "MasterNodesUpdated": null}"#,
        )
        .unwrap();
        assert_eq!(
            (
                d.release.as_str(),
                d.from_release.as_str(),
                d.master_nodes_updated.as_str()
            ),
            ("4.15", "", "")
        );
    }

    #[test]
    fn master_nodes_updated_is_y_if_any_file_says_y() {
        let a = ClusterData {
            release: "4.14".into(),
            master_nodes_updated: "N".into(),
            ..Default::default()
        };
        let b = ClusterData {
            platform: "aws".into(),
            master_nodes_updated: "Y".into(),
            ..Default::default()
        };
        let m = merge(&[a, b]);
        assert_eq!(
            (
                m.release.as_str(),
                m.platform.as_str(),
                m.master_nodes_updated.as_str()
            ),
            ("4.14", "aws", "Y")
        );
    }

    #[test]
    fn wrong_types_and_schemas_are_errors() {
        let message = |bytes: &[u8]| parse_cluster_data(bytes).unwrap_err().to_string();
        assert_eq!(
            message(br#"{"Release": 4.14}"#),
            "cluster-data field of the wrong type: invalid type: floating point `4.14`, expected a string"
        );
        assert_eq!(
            message(br#"[1, 2]"#),
            "not a cluster-data file: expected a JSON object"
        );
        assert_eq!(
            message(br#"{"foo": 1}"#),
            "unknown schema: neither `Release` nor `Platform` present"
        );
        assert_eq!(
            message(b"{"),
            "not a cluster-data file: EOF while parsing an object at line 1 column 1"
        );
        assert!(matches!(
            parse_cluster_data(br#"{"Release": 4.14}"#),
            Err(ClusterDataError::WrongType(_))
        ));
        assert!(
            matches!(parse_cluster_data(b"{"), Err(ClusterDataError::NotJson(e)) if e.is_eof())
        );
    }
}
