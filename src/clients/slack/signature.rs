//! Verifying that a request came from Slack, exactly as Slack documents it: `X-Slack-Signature`
//! is `v0=` + hex HMAC-SHA256 of `v0:<X-Slack-Request-Timestamp>:<raw body>` under the signing
//! secret, compared in constant time; timestamps more than five minutes off are refused. During
//! a rotation the previous secret is accepted too. The HMAC and the clock check are
//! slack-morphism's own.

use slack_morphism::prelude::SlackSigningSecret;
use slack_morphism::signature_verifier::SlackEventSignatureVerifier;

use crate::config::Secret;

/// Why a request was refused. Every variant answers 401 but [`VerifyError::NotText`] (400).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    #[error("no signing secret is configured")]
    NotConfigured,
    #[error("the X-Slack-Signature or X-Slack-Request-Timestamp header is missing")]
    Missing,
    #[error("the signature does not match or the timestamp is more than five minutes off")]
    Invalid,
    /// Correctly signed, but the body is not UTF-8 text, which no Slack request is.
    #[error("the request is signed correctly but its body is not UTF-8 text")]
    NotText,
}

/// Checks `signature` and `timestamp` over `body` with each of `secrets` in turn.
pub fn verify(
    secrets: &[&Secret],
    signature: Option<&str>,
    timestamp: Option<&str>,
    body: &[u8],
) -> Result<(), VerifyError> {
    if secrets.is_empty() {
        return Err(VerifyError::NotConfigured);
    }
    let (Some(signature), Some(timestamp)) = (signature, timestamp) else {
        return Err(VerifyError::Missing);
    };
    let Ok(body) = std::str::from_utf8(body) else {
        return Err(if signed_bytes(secrets, signature, timestamp, body) {
            VerifyError::NotText
        } else {
            VerifyError::Invalid
        });
    };
    let ok = secrets.iter().any(|s| {
        SlackEventSignatureVerifier::new(&SlackSigningSecret(s.expose().to_string()))
            .verify(signature, body, timestamp)
            .is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(VerifyError::Invalid)
    }
}

/// The same check over bytes that are not text (slack-morphism's verifier takes text), to tell
/// a signed body that is not UTF-8 from a forgery: the HMAC compared in constant time, the
/// timestamp plain digits within five minutes.
fn signed_bytes(secrets: &[&Secret], signature: &str, timestamp: &str, body: &[u8]) -> bool {
    use hmac::Mac;
    let fresh = timestamp.bytes().all(|b| b.is_ascii_digit())
        && timestamp
            .parse::<i64>()
            .is_ok_and(|t| (chrono::Utc::now().timestamp() - t).abs() <= 300);
    let Some(Ok(expected)) = signature.strip_prefix("v0=").map(hex::decode) else {
        return false;
    };
    fresh
        && secrets.iter().any(|s| {
            mac(s.expose(), timestamp, body)
                .verify_slice(&expected)
                .is_ok()
        })
}

/// Slack's HMAC-SHA256 of `v0:<timestamp>:<body>` under `secret`.
fn mac(secret: &str, timestamp: &str, body: &[u8]) -> hmac::Hmac<sha2::Sha256> {
    use hmac::{KeyInit, Mac};
    let mut mac =
        hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    mac
}

/// The headers a Slack request carries for `body` at `timestamp`: what Slack sends, and what
/// tests and the load benchmark send.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    use hmac::Mac;
    format!(
        "v0={}",
        hex::encode(
            mac(secret, &timestamp.to_string(), body)
                .finalize()
                .into_bytes()
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_rotation_and_staleness() {
        let now = chrono::Utc::now().timestamp();
        let body = b"token=x&command=%2Fsheriff&text=help";
        let current = Secret::new("new-secret");
        let previous = Secret::new("old-secret");
        let sig = sign("new-secret", now, body);
        let ts = now.to_string();
        assert_eq!(verify(&[&current], Some(&sig), Some(&ts), body), Ok(()));
        let old_sig = sign("old-secret", now, body);
        assert_eq!(
            verify(&[&current], Some(&old_sig), Some(&ts), body),
            Err(VerifyError::Invalid)
        );
        assert_eq!(
            verify(&[&current, &previous], Some(&old_sig), Some(&ts), body),
            Ok(())
        );
        assert_eq!(
            verify(&[&current], Some(&sig), Some(&ts), b"token=x&text=evaluate"),
            Err(VerifyError::Invalid)
        );
        let stale = (now - 301).to_string();
        let stale_sig = sign("new-secret", now - 301, body);
        assert_eq!(
            verify(&[&current], Some(&stale_sig), Some(&stale), body),
            Err(VerifyError::Invalid)
        );
        assert_eq!(
            verify(&[&current], None, Some(&ts), body),
            Err(VerifyError::Missing)
        );
        assert_eq!(
            verify(&[], Some(&sig), Some(&ts), body),
            Err(VerifyError::NotConfigured)
        );
        // Raw bytes that are not UTF-8: signed, it is said plainly; forged or stale, refused.
        let bytes = b"token=x&text=\xff\xfe";
        let signed = sign("new-secret", now, bytes);
        assert_eq!(
            verify(&[&current], Some(&signed), Some(&ts), bytes),
            Err(VerifyError::NotText)
        );
        assert_eq!(
            verify(&[&current], Some(&sig), Some(&ts), bytes),
            Err(VerifyError::Invalid)
        );
        let stale_bytes = sign("new-secret", now - 301, bytes);
        assert_eq!(
            verify(&[&current], Some(&stale_bytes), Some(&stale), bytes),
            Err(VerifyError::Invalid)
        );
    }
}
