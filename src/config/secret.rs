//! Secrets: the [`Secret`] wrapper that never prints, which settings hold one, the files they
//! are read from, and the refusal of a secret written in the configuration file.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, Serializer};

use super::{ConfigError, Settings};

/// A secret value. Its `Debug`, `Display` and `Serialize` never show the content.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The only way to read the value: call it where the secret is used, never to log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether a credential a request carried is this secret, compared in constant time. No
    /// credential, or an empty one, never matches, not even an empty secret: a missing header
    /// must not pass for a token.
    pub fn matches(&self, given: Option<&str>) -> bool {
        match given {
            Some(g) if !g.is_empty() && !self.0.is_empty() => bool::from(
                subtle::ConstantTimeEq::ct_eq(g.as_bytes(), self.0.as_bytes()),
            ),
            _ => false,
        }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("[redacted]")
    }
}

/// The settings that hold secrets, as `(section, key)`; each has a `KEY_file` companion.
pub(super) const SECRET_KEYS: &[(&str, &str)] = &[
    ("database", "password"),
    ("gcs", "token"),
    ("bigquery", "token"),
    ("ingest", "push_token"),
    ("server", "pages_token"),
    ("slack", "bot_token"),
    ("slack", "signing_secret"),
    ("slack", "signing_secret_previous"),
    ("jira", "token"),
    ("github", "token"),
];

impl Settings {
    pub(super) fn resolve_secret_files(&mut self) -> Result<(), ConfigError> {
        fn resolve(
            key: &str,
            value: &mut Option<Secret>,
            file: &Option<PathBuf>,
        ) -> Result<(), ConfigError> {
            if let Some(v) = value {
                if v.0.trim().is_empty() {
                    return Err(ConfigError::EmptySecret { key: key.into() });
                }
                return Ok(());
            }
            if let Some(path) = file {
                let text =
                    std::fs::read_to_string(path).map_err(|source| ConfigError::SecretFile {
                        key: key.into(),
                        path: path.clone(),
                        source,
                    })?;
                let first = text.lines().next().unwrap_or_default().trim().to_string();
                if first.is_empty() {
                    return Err(ConfigError::EmptySecretFile { key: key.into() });
                }
                *value = Some(Secret(first));
            }
            Ok(())
        }

        resolve(
            "database.password",
            &mut self.database.password,
            &self.database.password_file,
        )?;
        resolve("gcs.token", &mut self.gcs.token, &self.gcs.token_file)?;
        resolve(
            "bigquery.token",
            &mut self.bigquery.token,
            &self.bigquery.token_file,
        )?;

        resolve(
            "ingest.push_token",
            &mut self.ingest.push_token,
            &self.ingest.push_token_file,
        )?;

        resolve(
            "server.pages_token",
            &mut self.server.pages_token,
            &self.server.pages_token_file,
        )?;

        resolve(
            "slack.bot_token",
            &mut self.slack.bot_token,
            &self.slack.bot_token_file,
        )?;

        resolve(
            "slack.signing_secret",
            &mut self.slack.signing_secret,
            &self.slack.signing_secret_file,
        )?;

        let previous = &mut self.slack.signing_secret_previous;
        resolve(
            "slack.signing_secret_previous",
            previous,
            &self.slack.signing_secret_previous_file,
        )?;

        resolve("jira.token", &mut self.jira.token, &self.jira.token_file)?;
        resolve(
            "github.token",
            &mut self.github.token,
            &self.github.token_file,
        )?;

        Ok(())
    }
}

/// A secret file's path as errors show it. A value whose folder does not exist is most likely
/// the secret itself, put in the `_FILE` variable by mistake (base64 tokens hold `/`), and is
/// not echoed; neither is one right under `/`, which a token starting with `/` would look like.
pub(super) fn shown_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    let in_a_real_folder = path
        .parent()
        .is_some_and(|p| !p.as_os_str().is_empty() && p != Path::new("/") && p.is_dir());
    if in_a_real_folder {
        text.into_owned()
    } else {
        format!(
            "a value of {} characters that is not a path (is the secret itself in the _FILE variable?)",
            text.chars().count()
        )
    }
}

pub(super) fn check_no_secrets_in_file(path: &Path, text: &str) -> Result<(), ConfigError> {
    let value: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigError::Syntax {
            path: path.to_path_buf(),
            message: e.message().to_string(),
        })?;
    for (section, key) in SECRET_KEYS {
        let present = value
            .get(*section)
            .and_then(|s| s.as_table())
            .is_some_and(|t| t.contains_key(*key));
        if present {
            return Err(ConfigError::SecretInFile {
                path: path.to_path_buf(),
                section: (*section).into(),
                key: (*key).into(),
            });
        }
    }
    Ok(())
}
