//! `[slack]`: the Slack Web API, channels and routes, who may act, and the tokens.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Secret;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlackSettings {
    /// Base URL of the Slack Web API; tests point it at a local fake.
    pub api_url: String,
    /// Channel id (or name) for summaries and incidents when no routing rule matches.
    pub channel: String,
    /// The workspace's address (`https://example.slack.com`), for links to incident threads on
    /// the pages; empty: the links open the channel.
    pub workspace_url: String,
    /// Incidents (and their summary lines) go to the first route that matches.
    pub routes: Vec<SlackRoute>,
    /// The slash command's name, as configured in the Slack app.
    pub command: String,
    /// Slack user ids (`U…`) allowed to silence, acknowledge, file and evaluate.
    pub authorized_users: Vec<String>,
    /// Slack user-group handles or ids (`S…`) whose members are allowed too. Slack sends no
    /// group membership with a request, so sheriff asks `usergroups.users.list`.
    pub authorized_groups: Vec<String>,
    /// Messages to one channel at most this often (Slack allows about one a second).
    pub min_post_interval_ms: u64,
    /// Seconds a Web API call may take (fractions allowed).
    pub timeout_secs: f64,
    /// Bot token (`xoxb-…`). Environment or file only. Without one, messages go to the console.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bot_token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bot_token_file: Option<PathBuf>,
    /// Signing secret that verifies requests from Slack. Environment or file only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret_file: Option<PathBuf>,
    /// The previous signing secret, accepted too while a rotation is under way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret_previous: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret_previous_file: Option<PathBuf>,
}

impl Default for SlackSettings {
    fn default() -> Self {
        Self {
            api_url: "https://slack.com/api".into(),
            channel: String::new(),
            workspace_url: String::new(),
            routes: Vec::new(),
            command: "/sheriff".into(),
            authorized_users: Vec::new(),
            authorized_groups: Vec::new(),
            min_post_interval_ms: 1_000,
            timeout_secs: 10.0,
            bot_token: None,
            bot_token_file: None,
            signing_secret: None,
            signing_secret_file: None,
            signing_secret_previous: None,
            signing_secret_previous_file: None,
        }
    }
}

/// Sends matching incidents to a channel. Every field given must match (globs allowed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackRoute {
    pub channel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// Matches incidents specific to one platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
}
