//! ci-test-mapping's `variant_mapping.json`: which Jira component owns a variant (a platform).

use serde::Deserialize;

/// One ownership row: `Platform` = `metal` belongs to "Bare Metal Hardware Provisioning".
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct VariantOwnership {
    #[serde(rename = "JiraProject", default)]
    pub jira_project: String,
    #[serde(rename = "JiraComponent")]
    pub jira_component: String,
    #[serde(rename = "VariantName")]
    pub variant_name: String,
    #[serde(rename = "VariantValue")]
    pub variant_value: String,
}

/// Why a file is not a variant mapping: the JSON does not decode as an array of rows.
#[derive(Debug, thiserror::Error)]
#[error("not a variant mapping (an array of VariantOwnership): {json}")]
pub struct VariantMappingError {
    /// Where and why decoding stopped (its line and column).
    pub json: serde_json::Error,
}

pub fn parse_variant_mapping(bytes: &[u8]) -> Result<Vec<VariantOwnership>, VariantMappingError> {
    serde_json::from_slice(bytes).map_err(|json| VariantMappingError { json })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_maps_metal_and_vsphere() {
        let path = crate::test_fixture("ci-test-mapping_variant_mapping.json");
        let rows = parse_variant_mapping(&std::fs::read(path).unwrap()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[0].variant_value.as_str(),
                rows[0].jira_component.as_str()
            ),
            ("metal", "Bare Metal Hardware Provisioning")
        );
        assert_eq!(rows[1].jira_component, "Cloud Compute / vSphere Provider");
    }

    #[test]
    fn a_variant_mapping_error_reads_as_before_and_says_where() {
        let err = parse_variant_mapping(br#"[{"JiraComponent": 7}]"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "not a variant mapping (an array of VariantOwnership): \
             invalid type: integer `7`, expected a string at line 1 column 20"
        );
        assert_eq!((err.json.line(), err.json.column()), (1, 20));
    }
}
