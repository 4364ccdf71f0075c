//! `[database]`: which database, its pool, and a URL whose password never prints.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize, Serializer};

use super::Secret;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseSettings {
    /// `sqlite://PATH` (created on first use) or `postgres://USER@HOST:PORT/DB`.
    pub url: DatabaseUrl,
    /// Upper bound of pooled connections.
    pub max_connections: u32,
    /// Seconds to wait for a free connection before a query fails.
    pub acquire_timeout_secs: u64,
    /// PostgreSQL cancels a statement that runs longer than this (its `statement_timeout`): a
    /// hung server or a held lock fails as a storage error instead of waiting without end.
    pub statement_timeout_secs: u64,
    /// PostgreSQL password, when it is not in the URL. Environment or file only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<Secret>,
    /// A file holding the PostgreSQL password (its first line is used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_file: Option<PathBuf>,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: DatabaseUrl::from_str("sqlite://sheriff.db").expect("the default URL is valid"),
            max_connections: 8,
            acquire_timeout_secs: 10,
            statement_timeout_secs: 300,
            password: None,
            password_file: None,
        }
    }
}

/// A validated database URL: the scheme picks the engine.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl {
    raw: String,
    engine: Engine,
}

/// The two storage engines sheriff supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl DatabaseUrl {
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The URL as given, password included: only for opening the connection.
    pub fn expose(&self) -> &str {
        &self.raw
    }

    /// The URL with any password replaced, safe to print and log.
    pub fn redacted(&self) -> String {
        redact_url_password(&self.raw)
    }
}

pub(super) fn redact_url_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    // The password may hold `/` or `@`: the user information ends at the last `@`.
    let mut out = match before_query.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:[redacted]@{host}"),
            None => format!("{scheme}://{userinfo}@{host}"),
        },
        None => format!("{scheme}://{before_query}"),
    };
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if k.to_ascii_lowercase().contains("password") => {
                    format!("{k}=[redacted]")
                }
                _ => p.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// Why a database URL is not one sheriff can open; the password never shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatabaseUrlError {
    #[error("a sqlite URL needs a file path, e.g. sqlite://sheriff.db")]
    NoPath,
    #[error("a postgres URL needs a host, e.g. postgres://sheriff@db:5432/sheriff")]
    NoHost,
    /// Another scheme; the URL as given, its password redacted.
    #[error(
        "`{0}` is not a database URL sheriff supports: use sqlite://PATH or postgres://USER@HOST/DB"
    )]
    Unsupported(String),
}

impl FromStr for DatabaseUrl {
    type Err = DatabaseUrlError;

    fn from_str(raw: &str) -> Result<Self, DatabaseUrlError> {
        let raw = raw.trim();
        let engine = if let Some(path) = raw.strip_prefix("sqlite:") {
            let path = path.trim_start_matches("//");
            let path = path.split('?').next().unwrap_or_default();
            if path.is_empty() {
                return Err(DatabaseUrlError::NoPath);
            }
            Engine::Sqlite
        } else if let Some(rest) = raw
            .strip_prefix("postgres://")
            .or_else(|| raw.strip_prefix("postgresql://"))
        {
            let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
            if host.is_empty() || host.starts_with('/') {
                return Err(DatabaseUrlError::NoHost);
            }
            Engine::Postgres
        } else {
            return Err(DatabaseUrlError::Unsupported(redact_url_password(raw)));
        };
        Ok(Self {
            raw: raw.to_string(),
            engine,
        })
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl Serialize for DatabaseUrl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.redacted())
    }
}

impl<'de> Deserialize<'de> for DatabaseUrl {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        raw.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_of_another_scheme_is_refused_without_its_password() {
        let e = DatabaseUrl::from_str("mysql://sheriff:hunter2@db/sheriff").unwrap_err();
        assert!(matches!(&e, DatabaseUrlError::Unsupported(_)), "{e:?}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        assert_eq!(
            DatabaseUrl::from_str("sqlite://"),
            Err(DatabaseUrlError::NoPath)
        );
        assert_eq!(
            DatabaseUrl::from_str("postgres://sheriff@"),
            Err(DatabaseUrlError::NoHost)
        );
    }
}
