//! Backend → Jira component and ClusterOperator, and platform → component.

use crate::model::glob_match;

/// One row of the backend table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentRule {
    /// Backend name globs.
    pub backends: Vec<String>,
    pub component: String,
    /// The ClusterOperator behind the backend, when there is one.
    pub operator: String,
}

/// The component tables, shipped with the CI's own defaults.
#[derive(Debug, Clone)]
pub struct ComponentTable {
    pub rules: Vec<ComponentRule>,
    /// platform → component (from ci-test-mapping's variant ownership).
    pub platforms: Vec<(String, String)>,
}

impl Default for ComponentTable {
    fn default() -> Self {
        let rule = |backends: &[&str], component: &str, operator: &str| ComponentRule {
            backends: backends.iter().map(|b| (*b).to_string()).collect(),
            component: component.into(),
            operator: operator.into(),
        };

        ComponentTable {
            rules: vec![
                rule(
                    &["image-registry-*-connections"],
                    "Image Registry",
                    "image-registry",
                ),
                rule(&["ingress-to-*"], "Networking / router", "ingress"),
                rule(
                    &["kube-api-*", "cache-kube-api-*"],
                    "kube-apiserver",
                    "kube-apiserver",
                ),
                rule(
                    &["openshift-api-*", "cache-openshift-api-*"],
                    "openshift-apiserver",
                    "openshift-apiserver",
                ),
                rule(
                    &["oauth-api-*", "cache-oauth-api-*"],
                    "oauth-apiserver",
                    "authentication",
                ),
                rule(
                    &["service-load-balancer-*"],
                    "Cloud Compute / Cloud Controller Manager",
                    "",
                ),
                rule(
                    &["ci-cluster-network-liveness-*", "*-network-liveness-*"],
                    "Test Framework",
                    "",
                ),
            ],
            platforms: vec![
                ("metal".into(), "Bare Metal Hardware Provisioning".into()),
                ("vsphere".into(), "Cloud Compute / vSphere Provider".into()),
            ],
        }
    }
}

/// The control backend of `backend`: the first rule whose glob matches, unless it names the
/// backend itself. `{connection}` becomes `new` or `reused`, after the regressed backend.
pub fn control_for(rules: &[crate::config::ControlRule], backend: &str) -> Option<String> {
    let connection = if backend.ends_with("-reused-connections") {
        "reused"
    } else {
        "new"
    };
    rules
        .iter()
        .find(|r| glob_match(&r.backend, backend))
        .map(|r| r.control.replace("{connection}", connection))
        .filter(|c| c != backend)
}

impl ComponentTable {
    /// The table the settings describe: their rows, or the defaults when they give none.
    pub fn from_settings(settings: &crate::config::AttributeSettings) -> ComponentTable {
        let mut table = ComponentTable::default();
        if !settings.components.is_empty() {
            table.rules = settings
                .components
                .iter()
                .map(|c| ComponentRule {
                    backends: c.backends.clone(),
                    component: c.component.clone(),
                    operator: c.operator.clone(),
                })
                .collect();
        }
        table.platforms = settings
            .platform_components
            .iter()
            .map(|(p, c)| (p.clone(), c.clone()))
            .collect();
        table
    }

    pub fn for_backend(&self, backend: &str) -> Option<&ComponentRule> {
        self.rules
            .iter()
            .find(|r| r.backends.iter().any(|g| glob_match(g, backend)))
    }

    /// The Jira component of a backend ("Unknown" when no rule matches).
    pub fn component(&self, backend: &str) -> String {
        self.for_backend(backend)
            .map_or_else(|| "Unknown".to_string(), |r| r.component.clone())
    }

    pub fn platform_component(&self, platform: &str) -> Option<&str> {
        self.platforms
            .iter()
            .find(|(p, _)| p == platform)
            .map(|(_, c)| c.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_design_defaults() {
        let t = ComponentTable::default();
        assert_eq!(
            t.component("image-registry-new-connections"),
            "Image Registry"
        );
        assert_eq!(
            t.component("ingress-to-console-reused-connections"),
            "Networking / router"
        );
        assert_eq!(
            t.component("cache-kube-api-new-connections"),
            "kube-apiserver"
        );
        assert_eq!(t.component("oauth-api-new-connections"), "oauth-apiserver");
        assert_eq!(
            t.for_backend("oauth-api-new-connections").unwrap().operator,
            "authentication"
        );
        assert_eq!(
            t.component("ci-cluster-network-liveness-new-connections"),
            "Test Framework"
        );
        assert_eq!(t.component("mystery-new-connections"), "Unknown");
        assert_eq!(
            t.platform_component("metal"),
            Some("Bare Metal Hardware Provisioning")
        );
        assert_eq!(t.platform_component("aws"), None);
    }
}
