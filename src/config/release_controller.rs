//! `[release_controller]`: where the changes between two payloads are read, and the
//! repositories each component's pull requests come from.

use serde::{Deserialize, Serialize};

/// The release controllers that list the changes between two payloads; `[release_controller]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReleaseControllerSettings {
    /// Base URL per architecture (`amd64 = "https://amd64.ocp.releases.ci.openshift.org"`).
    /// Empty: no changes are read, the payload window still shows.
    pub urls: std::collections::BTreeMap<String, String>,
    /// Whole-request timeout of one changelog request.
    pub timeout_secs: u64,
    /// Repositories whose pull requests rank first for a component (the attributed component or
    /// the platform's): `{ component = "Image Registry", repositories = ["openshift/image-registry"] }`.
    pub repositories: Vec<ComponentRepositories>,
}

/// The repositories of one component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentRepositories {
    pub component: String,
    pub repositories: Vec<String>,
}

/// The default `repositories`: a component, and the repositories its pull requests come from.
const DEFAULT_REPOSITORIES: [(&str, &[&str]); 9] = [
    (
        "Image Registry",
        &[
            "openshift/cluster-image-registry-operator",
            "openshift/image-registry",
            "openshift/docker-distribution",
        ],
    ),
    (
        "Bare Metal Hardware Provisioning",
        &[
            "openshift/cluster-baremetal-operator",
            "openshift/baremetal-operator",
            "openshift/ironic-image",
            "openshift/machine-config-operator",
            "openshift/baremetal-runtimecfg",
        ],
    ),
    (
        "Networking / router",
        &["openshift/router", "openshift/cluster-ingress-operator"],
    ),
    (
        "kube-apiserver",
        &[
            "openshift/kubernetes",
            "openshift/cluster-kube-apiserver-operator",
        ],
    ),
    (
        "openshift-apiserver",
        &[
            "openshift/openshift-apiserver",
            "openshift/cluster-openshift-apiserver-operator",
        ],
    ),
    (
        "oauth-apiserver",
        &[
            "openshift/oauth-apiserver",
            "openshift/oauth-server",
            "openshift/cluster-authentication-operator",
        ],
    ),
    (
        "Cloud Compute / Cloud Controller Manager",
        &[
            "openshift/cloud-provider-aws",
            "openshift/cloud-provider-gcp",
            "openshift/cluster-cloud-controller-manager-operator",
        ],
    ),
    (
        "Cloud Compute / vSphere Provider",
        &[
            "openshift/cloud-provider-vsphere",
            "openshift/machine-api-operator",
        ],
    ),
    (
        "Networking / ovn-kubernetes",
        &[
            "openshift/ovn-kubernetes",
            "openshift/cluster-network-operator",
        ],
    ),
];

impl Default for ReleaseControllerSettings {
    fn default() -> Self {
        ReleaseControllerSettings {
            urls: std::collections::BTreeMap::new(),
            timeout_secs: 10,
            repositories: DEFAULT_REPOSITORIES
                .iter()
                .map(|(c, r)| ComponentRepositories {
                    component: (*c).into(),
                    repositories: r.iter().map(|x| (*x).to_string()).collect(),
                })
                .collect(),
        }
    }
}
