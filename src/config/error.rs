//! Why the configuration could not be loaded, in words that name the key at fault and where its
//! value came from, never the value itself.

use std::path::{Path, PathBuf};

use super::ENV_PREFIX;
use super::secret::shown_path;

/// Why the configuration could not be loaded. The message names the key at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid TOML: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error(
        "`{section}.{key}` is a secret and may not be written in {path}; set {ENV_PREFIX}{upper_section}__{upper_key} or `{section}.{key}_file` instead",
        upper_section = section.to_uppercase(),
        upper_key = key.to_uppercase()
    )]
    SecretInFile {
        path: PathBuf,
        section: String,
        key: String,
    },
    #[error("invalid configuration: {0}")]
    Invalid(String),
    #[error(
        "cannot read secret file for `{key}` at {}: {source}",
        shown_path(path)
    )]
    SecretFile {
        key: String,
        path: PathBuf,
        source: std::io::Error,
    },
    /// An empty secret is a deployment accident (a missing Secret key, an unset `${VAR}` in a
    /// template), never a wish for no secret: it would let an empty credential in.
    #[error(
        "`{key}` is set but empty; give the secret, or unset {ENV_PREFIX}{var} to do without it",
        var = key.replace('.', "__").to_uppercase()
    )]
    EmptySecret { key: String },
    #[error(
        "`{key}_file` names a file whose first line is empty; the secret must be on its first line"
    )]
    EmptySecretFile { key: String },
}

/// `database.url: <what is wrong> (from SHERIFF__DATABASE__URL)`: the key, the problem and
/// where the bad value came from.
pub(super) fn describe_figment_error(
    e: &figment::Error,
    file: &Path,
    env_keys: &[String],
) -> String {
    let key = e.path.join(".");
    // A list's element (`evaluate.recent_days.1`) came from the variable of the whole list.
    let var = (1..=e.path.len())
        .rev()
        .map(|n| format!("{ENV_PREFIX}{}", e.path[..n].join("__").to_uppercase()))
        .find(|var| env_keys.contains(var));
    let origin = if e.path.is_empty() {
        String::new()
    } else if let Some(var) = var {
        format!(" (from {var})")
    } else {
        format!(" (from {})", file.display())
    };
    // The value itself is never repeated: it may be a secret put in the wrong place.
    let kind = match &e.kind {
        figment::error::Kind::InvalidType(_, expected) => {
            format!("a value of the wrong type, expected {expected}")
        }
        figment::error::Kind::InvalidValue(_, expected) => {
            format!("an invalid value, expected {expected}")
        }
        figment::error::Kind::Unsupported(_) => {
            "a value of a type settings cannot hold".to_string()
        }
        other => other.to_string(),
    };
    if key.is_empty() {
        kind
    } else {
        format!("`{key}`: {kind}{origin}")
    }
}
