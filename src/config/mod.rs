//! Settings: `config/sheriff.toml`, then `SHERIFF__SECTION__KEY` environment variables, read once.
//!
//! Every other module receives the parts of [`Settings`] it needs; apart from the process's
//! identity (`HOSTNAME` in [`crate::support::process`], `USER` for who ran a command), nothing else
//! reads the environment. Secrets are never accepted from the TOML file: they come from an environment
//! variable or from a file named by a `*_file` setting (a mounted Kubernetes secret, say), and
//! they print as `[redacted]` in `Debug`, `Display` and serialized output.
//!
//! This file holds [`Settings`], its loading and the environment's layering over the file. Each
//! section (`[database]`, `[slack]`, …) has a file with its struct, its defaults and the checks
//! of its own values; `secret.rs` the secrets, `error.rs` the error text, `validate.rs` the
//! checks across sections and their order; `cron.rs` the cron expressions the schedules name,
//! in their time zone.

use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

mod attribute;
mod bigquery;
pub(crate) mod cron;
mod database;
mod error;
mod evaluate;
mod gcs;
mod github;
mod ingest;
mod jira;
mod log;
mod outbox;
mod release_controller;
mod retention;
mod schedule;
mod secret;
mod server;
mod slack;
mod validate;

use error::describe_figment_error;
use secret::{SECRET_KEYS, check_no_secrets_in_file};

pub use attribute::{AttributeSettings, ComponentSetting, ControlRule, FileAgainst};
pub use bigquery::BigQuerySettings;
pub use database::{DatabaseSettings, DatabaseUrl, DatabaseUrlError, Engine};
pub use error::ConfigError;
pub use evaluate::{EvaluateSettings, LimitRule};
pub use gcs::GcsSettings;
pub use github::{GitHubSettings, OutsideRepository};
pub use ingest::{IngestSettings, IntervalsMode};
pub use jira::{JiraApi, JiraSettings};
pub use log::{LogFormat, LogSettings};
pub use outbox::OutboxSettings;
pub use release_controller::{ComponentRepositories, ReleaseControllerSettings};
pub use retention::RetentionSettings;
pub use schedule::{IngestSchedule, ScheduleSettings};
pub use secret::Secret;
pub use server::ServerSettings;
pub use slack::{SlackRoute, SlackSettings};

/// The file read when `--config` is not given.
pub(crate) const DEFAULT_CONFIG_PATH: &str = "config/sheriff.toml";

/// The environment prefix: `SHERIFF__DATABASE__URL` sets `[database] url`.
pub(crate) const ENV_PREFIX: &str = "SHERIFF__";

/// An hour and a day in seconds, as the unsigned numbers settings are read in.
const HOUR: u64 = crate::model::HOUR.unsigned_abs();
const DAY: u64 = crate::model::DAY.unsigned_abs();

/// Everything sheriff can be told, one section per external system or pipeline stage.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    pub database: DatabaseSettings,
    pub server: ServerSettings,
    pub log: LogSettings,
    pub ingest: IngestSettings,
    pub gcs: GcsSettings,
    pub bigquery: BigQuerySettings,
    pub slack: SlackSettings,
    pub jira: JiraSettings,
    pub evaluate: EvaluateSettings,
    pub attribute: AttributeSettings,
    pub schedule: ScheduleSettings,
    pub outbox: OutboxSettings,
    pub release_controller: ReleaseControllerSettings,
    pub github: GitHubSettings,
    pub retention: RetentionSettings,
}

impl Settings {
    /// Reads `path` (when it exists, or always when `explicit`), then the process environment.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let vars: Vec<(String, String)> = std::env::vars().collect();
        Self::load_from(path, &vars)
    }

    /// Like [`Settings::load`] with an explicit environment, so tests do not touch the process's.
    pub fn load_from(path: Option<&Path>, env: &[(String, String)]) -> Result<Self, ConfigError> {
        let (file, required) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => (PathBuf::from(DEFAULT_CONFIG_PATH), false),
        };
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        if required || file.exists() {
            let text = std::fs::read_to_string(&file).map_err(|source| ConfigError::Read {
                path: file.clone(),
                source,
            })?;
            check_no_secrets_in_file(&file, &text)?;
            figment = figment.merge(Toml::string(&text));
        }
        let env_pairs: Vec<(String, String)> = env
            .iter()
            .filter(|(k, _)| k.starts_with(ENV_PREFIX))
            .cloned()
            .collect();
        let env_keys: Vec<String> = env_pairs.iter().map(|(k, _)| k.clone()).collect();
        figment = figment.merge(env_provider(env_pairs));
        let mut settings: Settings = figment
            .extract()
            .map_err(|e| invalid(e, &file, &env_keys))?;
        settings.resolve_secret_files()?;
        settings.validate()?;
        Ok(settings)
    }

    /// The `[evaluate]` section of the file at `path` over the defaults, checked as `config
    /// check` checks it (an unknown key or a value out of range is named). The file's other
    /// sections are not read: a deployment's file names secret files and services that scoring
    /// a trial of the evaluation settings has no use for.
    pub fn evaluate_from(path: &Path) -> Result<EvaluateSettings, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let file: toml::Table = toml::from_str(&text)
            .map_err(|e| ConfigError::Invalid(format!("{}: {e}", path.display())))?;
        let mut only = toml::Table::new();
        if let Some(evaluate) = file.get("evaluate") {
            only.insert("evaluate".into(), evaluate.clone());
        }
        let settings: Settings = Figment::from(Serialized::defaults(Settings::default()))
            .merge(Serialized::defaults(only))
            .extract()
            .map_err(|e| invalid(e, path, &[]))?;
        settings.validate()?;
        Ok(settings.evaluate)
    }

    /// The effective configuration as TOML, every secret shown as `[redacted]`.
    pub(crate) fn to_redacted_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render settings: {e}\n"))
    }
}

/// Every error of reading settings from `file` and the environment's `env_keys`, on one line.
fn invalid(e: figment::Error, file: &Path, env_keys: &[String]) -> ConfigError {
    ConfigError::Invalid(
        e.into_iter()
            .map(|e| describe_figment_error(&e, file, env_keys))
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// `SHERIFF__SLACK__BOT_TOKEN=x` becomes `slack.bot_token = "x"`. A value that reads as a TOML
/// number or boolean is passed as one (the target type decides), except for secrets, which are
/// always strings, so a token that looks like a number stays a token. A list setting takes
/// comma-separated values (see [`list_from_env`]).
fn env_provider(pairs: Vec<(String, String)>) -> Serialized<toml::Table> {
    // Which keys are lists, and of what, is read off the defaults: every list setting has one.
    let defaults = toml::Table::try_from(Settings::default()).unwrap_or_default();
    let mut root = toml::Table::new();
    for (key, raw) in pairs {
        let path: Vec<String> = key[ENV_PREFIX.len()..]
            .split("__")
            .map(|p| p.to_lowercase())
            .collect();
        let is_secret = path.len() == 2
            && SECRET_KEYS
                .iter()
                .any(|(s, k)| path[0] == *s && path[1] == *k);
        let value = match default_at(&defaults, &path) {
            _ if is_secret => toml::Value::String(raw),
            Some(toml::Value::Array(items)) => list_from_env(&raw, items.first()),
            _ => scalar_from_env(&raw),
        };
        let mut table = &mut root;
        for (i, part) in path.iter().enumerate() {
            if i + 1 == path.len() {
                table.insert(part.clone(), value.clone());
            } else {
                let entry = table
                    .entry(part.clone())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                if !entry.is_table() {
                    *entry = toml::Value::Table(toml::Table::new());
                }
                table = entry.as_table_mut().expect("just made a table");
            }
        }
    }
    Serialized::defaults(root)
}

/// The default value at `path` (`["slack", "authorized_users"]`), if the defaults have one.
fn default_at<'a>(defaults: &'a toml::Table, path: &[String]) -> Option<&'a toml::Value> {
    let (last, parents) = path.split_last()?;
    let mut table = defaults;
    for part in parents {
        table = table.get(part)?.as_table()?;
    }
    table.get(last)
}

/// A list setting from the environment: `U01,U02` (comma-separated, each value trimmed, empty
/// ones dropped, so an empty variable is an empty list), or a TOML array (`[{ channel = "C1",
/// platform = "metal" }]`) for a list of tables such as `slack.routes`. Values are strings
/// unless the default list holds numbers (`evaluate.recent_days = 1,2,3`).
fn list_from_env(raw: &str, default_item: Option<&toml::Value>) -> toml::Value {
    if raw.trim_start().starts_with('[')
        && let Ok(mut t) = format!("v = {raw}").parse::<toml::Table>()
        && let Some(array @ toml::Value::Array(_)) = t.remove("v")
    {
        return array;
    }
    let numeric = matches!(
        default_item,
        Some(toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_))
    );
    let items = raw.split(',').map(str::trim).filter(|v| !v.is_empty());
    toml::Value::Array(
        items
            .map(|v| {
                if numeric {
                    scalar_from_env(v)
                } else {
                    toml::Value::String(v.to_string())
                }
            })
            .collect(),
    )
}

/// `a = 1` parses as a TOML document, not a scalar; try the value on its own line.
fn scalar_from_env(raw: &str) -> toml::Value {
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => match t.remove("v") {
            Some(
                v @ (toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_)),
            ) => v,
            _ => toml::Value::String(raw.to_string()),
        },
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

#[cfg(test)]
mod tests;
