//! One parser per artifact format. Pure: bytes in, typed values or a typed error out. Each
//! format has its own error type, naming the field (or backend, row, item) at fault; its text is
//! the message a run's problem stores and the ingest log shows.

pub mod cluster_data;
pub mod disruption;
pub mod duration;
pub mod interval_files;
pub mod prow;
pub mod variant_mapping;

// Pure readers the synthetic data needs too, so they live in the model; named here as well,
// as the formats ingest reads.
pub use crate::model::{job_name, query_results};

/// Reads a JSON string field that writers sometimes set to `null` as an empty string.
pub(crate) fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    use serde::Deserialize;
    Option::<String>::deserialize(d).map(Option::unwrap_or_default)
}

/// Why a JSON file's text cannot be stored: it holds a NUL character (`\u0000`). PostgreSQL's
/// text refuses NUL where SQLite keeps it, so sheriff refuses it on both engines alike, naming
/// the file, instead of a storage error a retry can never get past.
pub(crate) fn refused_text(bytes: &[u8]) -> Option<&'static str> {
    let escaped_nul = memchr::memmem::find_iter(bytes, b"u0000").any(|at| {
        // a `\u0000` escape, not the text `\\u0000` (an escaped backslash, then "u0000")
        bytes[..at]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count()
            % 2
            == 1
    });
    escaped_nul.then_some(NUL_REFUSED)
}

/// What a field should have held, as the parsers' errors say it ("`soon` is not an RFC 3339
/// time") and [`ParseError::expected`](super::ParseError::expected) gives it.
pub(crate) const RFC3339_TIME: &str = "an RFC 3339 time";
pub(crate) const EPOCH_SECONDS: &str = "epoch seconds";
pub(crate) const GO_DURATION: &str = "a Go duration";
pub(crate) const JSON_OBJECT: &str = "a JSON object";

/// What [`refused_text`] says.
pub(crate) const NUL_REFUSED: &str =
    "holds a NUL character (\\u0000) in its text, which sheriff does not store";

#[cfg(test)]
mod tests {
    #[test]
    fn a_nul_escape_is_refused_and_an_escaped_backslash_before_u0000_is_not() {
        assert!(super::refused_text(br#"{"a": "x\u0000y"}"#).is_some());
        assert!(super::refused_text(br#"{"a\u0000": 1}"#).is_some());
        assert!(super::refused_text(br#"{"a": "\\\u0000"}"#).is_some());
        assert!(super::refused_text(br#"{"a": "\\u0000"}"#).is_none());
        assert!(super::refused_text(br#"{"a": "u0000"}"#).is_none());
        assert!(super::refused_text(b"").is_none());
    }
}
