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

pub fn parse_variant_mapping(bytes: &[u8]) -> Result<Vec<VariantOwnership>, String> {
    serde_json::from_slice(bytes)
        .map_err(|e| format!("not a variant mapping (an array of VariantOwnership): {e}"))
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
            (rows[0].variant_value.as_str(), rows[0].jira_component.as_str()),
            ("metal", "Bare Metal Hardware Provisioning")
        );
        assert_eq!(rows[1].jira_component, "Cloud Compute / vSphere Provider");
    }
}
