//! `[attribute]`: whom a regression belongs to: control backends, components, harnesses.

use serde::{Deserialize, Serialize};

/// Whom a regression belongs to.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AttributeSettings {
    /// A platform-specific regression names two owners, the backend's component and the
    /// platform's; `backend` files against the first and mentions the second, `platform` the
    /// other way round.
    pub file_against: FileAgainst,
    /// The control backend of a regressed backend: the first rule whose glob matches.
    /// `{connection}` becomes `new` or `reused`, after the regressed backend.
    pub controls: Vec<ControlRule>,
    /// Backend → Jira component and ClusterOperator. Empty: the CI's own defaults.
    pub components: Vec<ComponentSetting>,
    /// Platform → the platform's own component (ci-test-mapping's variant ownership).
    pub platform_components: std::collections::BTreeMap<String, String>,
    /// Regressed and healthy sample runs read for interval evidence.
    pub evidence_runs: usize,
    /// Platform → the CI harness that sets up its test clusters, filed against when the
    /// mechanism shows the cause is the test environment (a single replica, say).
    pub harnesses: std::collections::BTreeMap<String, String>,
}

pub use crate::model::FileAgainst;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlRule {
    pub backend: String,
    pub control: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentSetting {
    pub backends: Vec<String>,
    pub component: String,
    #[serde(default)]
    pub operator: String,
}

impl Default for AttributeSettings {
    fn default() -> Self {
        Self {
            file_against: FileAgainst::Backend,
            controls: vec![
                // The console route is the control of everything except itself.
                ControlRule {
                    backend: "ingress-to-console-*".into(),
                    control: "kube-api-{connection}-connections".into(),
                },
                ControlRule {
                    backend: "*".into(),
                    control: "ingress-to-console-{connection}-connections".into(),
                },
            ],
            components: Vec::new(),
            platform_components: [
                (
                    "metal".to_string(),
                    "Bare Metal Hardware Provisioning".to_string(),
                ),
                (
                    "vsphere".to_string(),
                    "Cloud Compute / vSphere Provider".to_string(),
                ),
            ]
            .into(),
            evidence_runs: 10,
            harnesses: default_harnesses(),
        }
    }
}

/// Metal clusters come from dev-scripts; the cloud platforms from their step-registry steps.
fn default_harnesses() -> std::collections::BTreeMap<String, String> {
    let mut m: std::collections::BTreeMap<String, String> = [(
        "metal".to_string(),
        "openshift-metal3/dev-scripts".to_string(),
    )]
    .into();
    for p in [
        "aws",
        "azure",
        "gcp",
        "vsphere",
        "openstack",
        "ovirt",
        "nutanix",
    ] {
        m.insert(
            p.to_string(),
            format!("openshift/release ci-operator/step-registry/ipi/conf/{p}"),
        );
    }
    m
}
