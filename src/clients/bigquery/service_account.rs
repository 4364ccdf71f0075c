//! A Google service-account key as credentials: an RS256-signed JWT exchanged at the key's
//! `token_uri` for an access token (the OAuth 2.0 JWT bearer grant), kept until a minute
//! before it expires.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde::Deserialize;

use crate::config::Secret;
use crate::model::HOUR;
use crate::support::error::with_sources;

/// What the access token may do: run queries and read tables.
const SCOPE: &str = "https://www.googleapis.com/auth/bigquery";

/// How long a signed assertion is valid (Google's maximum).
const ASSERTION_SECS: i64 = HOUR;

/// A token is renewed this long before it expires.
const RENEW_BEFORE: Duration = Duration::from_secs(60);

/// Why a service-account key gave no access token. No variant holds the key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("reading bigquery.credentials_file {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("bigquery.credentials_file {path} is not a service-account key: {error}")]
    NotAKey {
        path: String,
        error: serde_json::Error,
    },
    #[error("bigquery.credentials_file {path}: client_email and token_uri are needed")]
    Incomplete { path: String },
    #[error("bigquery.credentials_file {path}: private_key: {why}")]
    Pem { path: String, why: PemProblem },
    #[error("bigquery.credentials_file {path}: private_key is not a PKCS#8 RSA key ({why})")]
    NotPkcs8 { path: String, why: String },
    #[error("signing the token request failed")]
    Signing,
    /// The token endpoint gave no answer, with the transport's reasons.
    #[error("asking {uri} for a BigQuery access token: {why}")]
    Request { uri: String, why: String },
    #[error("reading the token answer: {0}")]
    Body(String),
    /// The token endpoint refused the key, with its status and the start of its answer.
    #[error("{uri} refused the key of {email} ({path}): {status} {why}")]
    Refused {
        uri: String,
        email: String,
        path: String,
        status: reqwest::StatusCode,
        why: String,
    },
    #[error("an unexpected token answer: {0}")]
    Unexpected(serde_json::Error),
    #[error("{uri} answered an empty access token")]
    EmptyToken { uri: String },
}

/// What is wrong with the key's PEM text.
#[derive(Debug, thiserror::Error)]
pub enum PemProblem {
    #[error("no -----BEGIN PRIVATE KEY----- block")]
    NoBlock,
    #[error("the PEM block is not base64: {0}")]
    NotBase64(base64::DecodeError),
}

/// The parts of a key file sheriff uses.
#[derive(Deserialize)]
struct KeyFile {
    client_email: String,
    private_key: String,
    token_uri: String,
}

/// A loaded key, and the token it last got.
pub struct ServiceAccount {
    path: PathBuf,
    email: String,
    token_uri: String,
    key: ring::signature::RsaKeyPair,
    cached: tokio::sync::Mutex<Option<(Secret, Instant)>>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    expires_in: u64,
}

impl ServiceAccount {
    /// Reads and checks the key file; the key is never logged or shown.
    pub fn load(path: &Path) -> Result<ServiceAccount, KeyError> {
        let shown = || path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| KeyError::Read {
            path: shown(),
            error,
        })?;
        let file: KeyFile = serde_json::from_str(&text).map_err(|error| KeyError::NotAKey {
            path: shown(),
            error,
        })?;
        if file.client_email.is_empty() || file.token_uri.is_empty() {
            return Err(KeyError::Incomplete { path: shown() });
        }
        let der =
            pem_body(&file.private_key).map_err(|why| KeyError::Pem { path: shown(), why })?;
        let key =
            ring::signature::RsaKeyPair::from_pkcs8(&der).map_err(|e| KeyError::NotPkcs8 {
                path: shown(),
                why: e.to_string(),
            })?;
        Ok(ServiceAccount {
            path: path.to_path_buf(),
            email: file.client_email,
            token_uri: file.token_uri,
            key,
            cached: tokio::sync::Mutex::new(None),
        })
    }

    /// An access token: the cached one while it has more than a minute left, else a new one.
    pub async fn token(&self, http: &reqwest::Client) -> Result<Secret, KeyError> {
        let mut cached = self.cached.lock().await;
        if let Some((token, until)) = cached.as_ref()
            && Instant::now() + RENEW_BEFORE < *until
        {
            return Ok(token.clone());
        }

        let assertion = self.assertion(chrono::Utc::now().timestamp())?;
        let form = [
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", &assertion),
        ];

        let response = http
            .post(&self.token_uri)
            .form(&form)
            .send()
            .await
            .map_err(|e| KeyError::Request {
                uri: self.token_uri.clone(),
                why: with_sources(&e),
            })?;

        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| KeyError::Body(with_sources(&e)))?;

        if !status.is_success() {
            // the answer names the error (invalid_grant, …); it holds no secret
            let why: String = String::from_utf8_lossy(&body).chars().take(300).collect();
            return Err(KeyError::Refused {
                uri: self.token_uri.clone(),
                email: self.email.clone(),
                path: self.path.display().to_string(),
                status,
                why,
            });
        }

        let answer: TokenAnswer = serde_json::from_slice(&body).map_err(KeyError::Unexpected)?;
        if answer.access_token.is_empty() {
            return Err(KeyError::EmptyToken {
                uri: self.token_uri.clone(),
            });
        }

        let token = Secret::new(answer.access_token);
        let until = Instant::now() + Duration::from_secs(answer.expires_in.max(60));
        *cached = Some((token.clone(), until));
        Ok(token)
    }

    /// The signed JWT asserting the key's identity at `now` (Unix seconds).
    fn assertion(&self, now: i64) -> Result<String, KeyError> {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
        let claims = serde_json::json!({
            "iss": self.email, "scope": SCOPE, "aud": self.token_uri,
            "iat": now, "exp": now + ASSERTION_SECS,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let message = format!("{header}.{claims}");
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(
                &ring::signature::RSA_PKCS1_SHA256,
                &ring::rand::SystemRandom::new(),
                message.as_bytes(),
                &mut signature,
            )
            .map_err(|_| KeyError::Signing)?;
        Ok(format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

/// The DER bytes of a `-----BEGIN PRIVATE KEY-----` PEM block.
fn pem_body(pem: &str) -> Result<Vec<u8>, PemProblem> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "-----BEGIN PRIVATE KEY-----")
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    if body.is_empty() {
        return Err(PemProblem::NoBlock);
    }
    STANDARD.decode(body).map_err(PemProblem::NotBase64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_without_a_pkcs8_key_is_refused_without_showing_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.json");
        let secret = "c2VjcmV0LWtleS1tYXRlcmlhbA==";
        let key = format!("-----BEGIN PRIVATE KEY-----\n{secret}\n-----END PRIVATE KEY-----\n");
        let file = serde_json::json!({"client_email": "a@b", "private_key": key, "token_uri": "http://127.0.0.1:1/token"});
        std::fs::write(&path, file.to_string()).unwrap();
        let e = format!("{:#}", ServiceAccount::load(&path).err().unwrap());
        assert!(e.contains("not a PKCS#8 RSA key"), "{e}");
        assert!(!e.contains(secret), "{e}");
        std::fs::write(&path, "{}").unwrap();
        assert!(ServiceAccount::load(&path).is_err());
    }
}
