//! A Google service-account key as credentials: an RS256-signed JWT exchanged at the key's
//! `token_uri` for an access token (the OAuth 2.0 JWT bearer grant), kept until a minute
//! before it expires.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde::Deserialize;

use crate::config::Secret;
use crate::model::HOUR;

/// What the access token may do: run queries and read tables.
const SCOPE: &str = "https://www.googleapis.com/auth/bigquery";

/// How long a signed assertion is valid (Google's maximum).
const ASSERTION_SECS: i64 = HOUR;

/// A token is renewed this long before it expires.
const RENEW_BEFORE: Duration = Duration::from_secs(60);

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
    pub fn load(path: &Path) -> Result<ServiceAccount> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading bigquery.credentials_file {}", path.display()))?;
        let file: KeyFile = serde_json::from_str(&text).map_err(|e| {
            anyhow!("bigquery.credentials_file {} is not a service-account key: {e}", path.display())
        })?;
        if file.client_email.is_empty() || file.token_uri.is_empty() {
            bail!("bigquery.credentials_file {}: client_email and token_uri are needed", path.display());
        }
        let der = pem_body(&file.private_key)
            .with_context(|| format!("bigquery.credentials_file {}: private_key", path.display()))?;
        let key = ring::signature::RsaKeyPair::from_pkcs8(&der).map_err(|e| {
            anyhow!("bigquery.credentials_file {}: private_key is not a PKCS#8 RSA key ({e})", path.display())
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
    pub async fn token(&self, http: &reqwest::Client) -> Result<Secret> {
        let mut cached = self.cached.lock().await;
        if let Some((token, until)) = cached.as_ref()
            && Instant::now() + RENEW_BEFORE < *until
        {
            return Ok(token.clone());
        }
        let assertion = self.assertion(chrono::Utc::now().timestamp())?;
        let form = [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", &assertion)];
        let response = http
            .post(&self.token_uri)
            .form(&form)
            .send()
            .await
            .with_context(|| format!("asking {} for a BigQuery access token", self.token_uri))?;
        let status = response.status();
        let body = response.bytes().await.context("reading the token answer")?;
        if !status.is_success() {
            // the answer names the error (invalid_grant, …); it holds no secret
            let why: String = String::from_utf8_lossy(&body).chars().take(300).collect();
            bail!(
                "{} refused the key of {} ({}): {status} {why}",
                self.token_uri,
                self.email,
                self.path.display()
            );
        }
        let answer: TokenAnswer = serde_json::from_slice(&body).context("an unexpected token answer")?;
        if answer.access_token.is_empty() {
            bail!("{} answered an empty access token", self.token_uri);
        }
        let token = Secret::new(answer.access_token);
        let until = Instant::now() + Duration::from_secs(answer.expires_in.max(60));
        *cached = Some((token.clone(), until));
        Ok(token)
    }

    /// The signed JWT asserting the key's identity at `now` (Unix seconds).
    fn assertion(&self, now: i64) -> Result<String> {
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
            .map_err(|_| anyhow!("signing the token request failed"))?;
        Ok(format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

/// The DER bytes of a `-----BEGIN PRIVATE KEY-----` PEM block.
fn pem_body(pem: &str) -> Result<Vec<u8>> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "-----BEGIN PRIVATE KEY-----")
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    if body.is_empty() {
        bail!("no -----BEGIN PRIVATE KEY----- block");
    }
    STANDARD.decode(body).context("the PEM block is not base64")
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
