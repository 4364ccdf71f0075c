//! `[server]`: the HTTP listener, its limits and timeouts, and the pages' token.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{HOUR, Secret};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSettings {
    /// Address `sheriff serve` listens on.
    pub listen: String,
    /// Largest pushed run (`POST /api/v1/runs`) accepted, in bytes.
    pub max_body_bytes: usize,
    /// Largest Slack request (`/slack/commands`, `/slack/interactions`) accepted, in bytes. Its
    /// signature can only be checked once the body is read, so it is kept small: real ones are
    /// a few KB, a modal submission a few tens. Larger ones are refused (413) before any is read
    /// when they say their length. Other routes take no body worth speaking of (64 KiB).
    pub slack_max_body_bytes: usize,
    /// sheriff's own address as people reach it (e.g. `https://sheriff.example.com`), for
    /// "Full view" links in Slack and Jira; empty: no links.
    pub public_url: String,
    /// When set, the pages and their JSON (`/`, `/incidents/…`, `/explore`, `GET /api/v1/…`)
    /// require it, as a bearer token or as the password of basic auth. Environment or file
    /// only; without it the pages are open (run them behind an authenticating proxy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_token: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_token_file: Option<PathBuf>,
    /// A request's head must arrive within this many seconds.
    pub header_timeout_secs: u64,
    /// A connection with no traffic for this many seconds is closed.
    pub idle_timeout_secs: u64,
    /// A request, its body included, is answered within this many seconds, else 408.
    pub request_timeout_secs: u64,
    /// No connection lives longer than this many seconds (HTTP/2 ones too): it is asked to
    /// close, and closed once its request in progress is answered.
    pub max_connection_secs: u64,
    /// Connections open at once, at most; the next waits in the listen queue. Well below the
    /// process's file limit, so the database's connections and health checks always have room.
    pub max_connections: usize,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            max_body_bytes: 32 * 1024 * 1024,
            slack_max_body_bytes: 256 * 1024,
            public_url: String::new(),
            pages_token: None,
            pages_token_file: None,
            header_timeout_secs: 10,
            idle_timeout_secs: 75,
            request_timeout_secs: 60,
            max_connection_secs: HOUR,
            max_connections: 1_024,
        }
    }
}
