//! `[jira]`: the Jira instance, what an issue is filed with, and its transitions.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Secret;

/// Which Jira REST API to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum JiraApi {
    /// REST v2, wiki-markup text: Jira Server and Data Center.
    #[default]
    V2,
    /// REST v3, Atlassian Document Format: Jira Cloud.
    V3,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JiraSettings {
    /// Base URL of the Jira instance, e.g. `https://issues.example.com`. Empty: Jira is off.
    pub url: String,
    /// `v2` (Server/Data Center, wiki markup) or `v3` (Cloud, Atlassian Document Format).
    pub api: JiraApi,
    /// Project key issues are filed in.
    pub project: String,
    pub issue_type: String,
    /// User (email on Jira Cloud) for basic authentication; empty means bearer-token auth.
    pub user: String,
    /// API token or personal access token. Environment or file only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// Labels on every issue, besides the incident's fingerprint.
    pub labels: Vec<String>,
    /// Set the issue's component to the incident's component (the project must know it).
    pub set_component: bool,
    /// The component of an issue whose cause is the test environment (the attribution files it
    /// against the CI harness): the product's component is only consulted, so it is never set.
    /// Unset: no component (the project's default applies) and the Ask names the harness.
    pub harness_component: Option<String>,
    /// Set "affects version" to the release, when the project has such a version.
    pub affects_version_prefix: Option<String>,
    /// Severity band (`<2x`, `2-5x`, `5-10x`, `>=10x`) → priority name; unlisted: no priority.
    pub priorities: std::collections::BTreeMap<String, String>,
    /// New issues per evaluation cycle, at most; the rest wait and are reported in Slack.
    pub max_created_per_cycle: usize,
    /// A recurrence within this many days of the issue's resolution reopens it; later, a new
    /// issue (linked to the old one) is filed.
    pub reopen_window_days: u32,
    /// Transition applied on resolution (e.g. "Done"); empty: comment only.
    pub resolve_transition: String,
    /// Transition that reopens (e.g. "Reopen"); empty: comment only.
    pub reopen_transition: String,
    /// Resolutions that mean "leave it": such an issue is never reopened.
    pub never_reopen: Vec<String>,
    /// After a Won't Fix, file a new linked issue on recurrence (otherwise stay silent in Jira).
    pub file_after_never_reopen: bool,
    /// Seconds a request may take (fractions allowed).
    pub timeout_secs: f64,
    /// Statuses that claim a fix (any case). A done status claims one only with a resolution
    /// of `fix_resolutions`.
    pub fix_statuses: Vec<String>,
    pub fix_resolutions: Vec<String>,
    /// The issue field that lists linked pull requests (Red Hat's "Git Pull Request"); empty:
    /// remote links only.
    pub pull_request_field: String,
    /// Transition applied after a failed fix (e.g. "ASSIGNED"); empty: comment only.
    pub failed_fix_transition: String,
}

impl Default for JiraSettings {
    fn default() -> Self {
        Self {
            url: String::new(),
            api: JiraApi::V2,
            project: String::new(),
            issue_type: "Bug".into(),
            user: String::new(),
            token: None,
            token_file: None,
            labels: vec!["sheriff".into()],
            set_component: true,
            harness_component: None,
            affects_version_prefix: None,
            priorities: std::collections::BTreeMap::new(),
            max_created_per_cycle: 3,
            reopen_window_days: 14,
            resolve_transition: String::new(),
            reopen_transition: String::new(),
            never_reopen: vec!["Won't Fix".into(), "Not a Bug".into(), "Won't Do".into()],
            file_after_never_reopen: false,
            timeout_secs: 30.0,
            fix_statuses: vec!["MODIFIED".into(), "ON_QA".into(), "Verified".into()],
            fix_resolutions: vec!["Done".into(), "Fixed".into(), "Done-Errata".into()],
            pull_request_field: "customfield_12310220".into(),
            failed_fix_transition: String::new(),
        }
    }
}

impl JiraSettings {
    /// Jira is used when a URL and a project are configured.
    pub fn enabled(&self) -> bool {
        !self.url.is_empty() && !self.project.is_empty()
    }
}
