//! `backend-disruption_*.json`: seconds of disruption per backend for one test phase.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::duration::{DurationError, parse_go_duration};
use crate::model::DAY;

/// One backend's entry in one file.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendDisruption {
    /// The full backend name (`image-registry-new-connections`), from the map key or `Name`.
    pub backend: String,
    /// `new`, `reused`, or empty when neither the writer nor the name says.
    pub connection: String,
    pub seconds: f64,
}

#[derive(Deserialize)]
struct FileBody {
    #[serde(rename = "BackendDisruptions")]
    backend_disruptions: Option<BTreeMap<String, Entry>>,
}

/// Keys are Go field names. Only `DisruptedDuration` is required; older writers lack the rest.
#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "Name", default)]
    name: Option<String>,
    #[serde(rename = "ConnectionType", default)]
    connection_type: Option<String>,
    #[serde(rename = "DisruptedDuration")]
    disrupted_duration: Option<DurationValue>,
}

/// `metav1.Duration` marshals as a string; a bare Go `time.Duration` as integer nanoseconds.
#[derive(Deserialize)]
#[serde(untagged)]
enum DurationValue {
    Text(String),
    Nanos(i64),
}

/// Why a backend-disruption file cannot be used; past the file's shape, it names the backend
/// whose `DisruptedDuration` is at fault.
#[derive(Debug, thiserror::Error)]
pub enum DisruptionError {
    #[error("not a backend-disruption file: {0}")]
    NotJson(serde_json::Error),
    #[error("no `BackendDisruptions` object (unknown schema)")]
    UnknownSchema,
    #[error("{backend}: DisruptedDuration {duration}")]
    BadDuration {
        backend: String,
        duration: DurationError,
    },
    #[error("{backend}: no DisruptedDuration")]
    NoDuration { backend: String },
    #[error("{backend}: DisruptedDuration is negative")]
    Negative { backend: String },
}

impl DisruptionError {
    /// The backend whose entry is at fault, when the file itself is not.
    pub fn backend(&self) -> Option<&str> {
        match self {
            DisruptionError::NotJson(_) | DisruptionError::UnknownSchema => None,
            DisruptionError::BadDuration { backend, .. }
            | DisruptionError::NoDuration { backend }
            | DisruptionError::Negative { backend } => Some(backend),
        }
    }

    /// What the backend's `DisruptedDuration` should have held, when it is at fault.
    pub fn expected(&self) -> Option<&'static str> {
        match self {
            DisruptionError::BadDuration { .. } => Some(super::GO_DURATION),
            DisruptionError::NoDuration { .. }
            | DisruptionError::Negative { .. }
            | DisruptionError::NotJson(_)
            | DisruptionError::UnknownSchema => None,
        }
    }
}

/// Parses one file. The error names the backend or field at fault.
pub fn parse_backend_disruption(bytes: &[u8]) -> Result<Vec<BackendDisruption>, DisruptionError> {
    let body: FileBody = serde_json::from_slice(bytes).map_err(DisruptionError::NotJson)?;
    let map = body
        .backend_disruptions
        .ok_or(DisruptionError::UnknownSchema)?;
    let mut out = Vec::with_capacity(map.len());
    for (key, entry) in map {
        let backend = entry.name.filter(|n| !n.is_empty()).unwrap_or(key);
        let seconds = match entry.disrupted_duration {
            Some(DurationValue::Text(t)) => match parse_go_duration(&t) {
                Ok(seconds) => seconds,
                Err(duration) => return Err(DisruptionError::BadDuration { backend, duration }),
            },
            Some(DurationValue::Nanos(n)) => n as f64 / 1e9,
            None => return Err(DisruptionError::NoDuration { backend }),
        };
        if seconds < 0.0 || !seconds.is_finite() {
            return Err(DisruptionError::Negative { backend });
        }
        let connection = match entry
            .connection_type
            .as_deref()
            .map(str::to_ascii_lowercase)
        {
            Some(c) if !c.is_empty() => c,
            _ if backend.ends_with("-new-connections") => "new".into(),
            _ if backend.ends_with("-reused-connections") => "reused".into(),
            _ => String::new(),
        };
        out.push(BackendDisruption {
            backend,
            connection,
            seconds,
        });
    }
    Ok(out)
}

/// The most disruption one backend can have in one run: a day. A job runs for hours; a value
/// beyond this is a broken or hostile file, and is stored as this rather than wrapping.
pub(crate) const MAX_RUN_SECONDS: i64 = DAY;

/// The per-run value of each backend: the sum over the run's files of ceil(seconds), the same
/// number the CI data warehouse stores, each file's value and the sum held within
/// `0..=MAX_RUN_SECONDS`.
pub fn per_run_seconds<'a>(
    files: impl IntoIterator<Item = &'a [BackendDisruption]>,
) -> Vec<(String, String, i64)> {
    let mut totals: BTreeMap<String, (String, i64)> = BTreeMap::new();
    for file in files {
        for d in file {
            let entry = totals
                .entry(d.backend.clone())
                .or_insert_with(|| (d.connection.clone(), 0));
            // `as` saturates a float (NaN is 0); the sum cannot wrap below the cap
            let seconds = (d.seconds.ceil() as i64).clamp(0, MAX_RUN_SECONDS);
            entry.1 = (entry.1 + seconds).min(MAX_RUN_SECONDS);
            if entry.0.is_empty() {
                entry.0.clone_from(&d.connection);
            }
        }
    }
    totals.into_iter().map(|(b, (c, s))| (b, c, s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_durations_are_held_at_a_day_and_never_wrap() {
        let huge = BackendDisruption {
            backend: "b".into(),
            connection: "new".into(),
            seconds: 3.6e25,
        };
        let negative = BackendDisruption {
            backend: "c".into(),
            connection: "new".into(),
            seconds: -5.0,
        };
        let files = [vec![huge.clone(), negative.clone()], vec![huge]];
        let sums = per_run_seconds(files.iter().map(Vec::as_slice));
        assert_eq!(
            sums,
            vec![
                ("b".into(), "new".into(), MAX_RUN_SECONDS),
                ("c".into(), "new".into(), 0)
            ]
        );
    }

    #[test]
    fn current_writer_keys_on_the_map_key_and_name() {
        let json = br#"{"BackendDisruptions": {
            "image-registry-new-connections": {"Name": "image-registry-new-connections",
              "BackendName": "image-registry-new-connections", "ConnectionType": "New",
              "DisruptedDuration": "31s", "DisruptionMessages": ["x"], "LoadBalancerType": "",
              "Protocol": "", "TargetAPI": ""},
            "ingress-to-console-reused-connections": {"Name": "ingress-to-console-reused-connections",
              "ConnectionType": "Reused", "DisruptedDuration": "850ms", "DisruptionMessages": null}}}"#;
        let got = parse_backend_disruption(json).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].backend, "image-registry-new-connections");
        assert_eq!(got[0].connection, "new");
        assert_eq!(got[0].seconds, 31.0);
        assert_eq!(got[1].connection, "reused");
        assert!((got[1].seconds - 0.85).abs() < 1e-9);
    }

    #[test]
    fn older_writers_short_backend_name_and_minimal_fields() {
        let json = br#"{"BackendDisruptions": {
            "image-registry-new-connections": {"Name": "image-registry-new-connections",
              "BackendName": "image-registry", "ConnectionType": "New", "DisruptedDuration": "1m5.5s",
              "DisruptionMessages": null},
            "kube-api-reused-connections": {"Name": "kube-api-reused-connections",
              "ConnectionType": "Reused", "DisruptedDuration": "0s", "DisruptionMessages": []}}}"#;
        let got = parse_backend_disruption(json).unwrap();
        assert_eq!(got[0].backend, "image-registry-new-connections");
        assert_eq!(got[0].seconds, 65.5);
        assert_eq!(got[1].seconds, 0.0);
        // Oldest: only the map key, a duration as nanoseconds, no connection type.
        let oldest =
            br#"{"BackendDisruptions": {"oauth-api-new-connections": {"DisruptedDuration": 2500000000}}}"#;
        let got = parse_backend_disruption(oldest).unwrap();
        assert_eq!(got[0].backend, "oauth-api-new-connections");
        assert_eq!(got[0].connection, "new");
        assert_eq!(got[0].seconds, 2.5);
    }

    #[test]
    fn the_run_value_is_the_sum_of_ceilings_over_files() {
        let a = vec![BackendDisruption {
            backend: "b-new-connections".into(),
            connection: "new".into(),
            seconds: 0.2,
        }];
        let b = vec![BackendDisruption {
            backend: "b-new-connections".into(),
            connection: "new".into(),
            seconds: 3.0,
        }];
        let c = vec![BackendDisruption {
            backend: "b-new-connections".into(),
            connection: "new".into(),
            seconds: 0.0,
        }];
        assert_eq!(
            per_run_seconds([a.as_slice(), b.as_slice(), c.as_slice()]),
            vec![("b-new-connections".into(), "new".into(), 4)]
        );
    }

    #[test]
    fn bad_files_say_what_is_wrong_as_before_and_name_the_backend() {
        let error = |bytes: &[u8]| parse_backend_disruption(bytes).unwrap_err();
        let err = error(b"{\"BackendDisruptions\": {\"x\": {");
        assert_eq!(
            err.to_string(),
            "not a backend-disruption file: EOF while parsing an object at line 1 column 30"
        );
        assert_eq!(err.backend(), None);
        let err = error(b"{\"items\": []}");
        assert_eq!(
            err.to_string(),
            "no `BackendDisruptions` object (unknown schema)"
        );
        let err = error(br#"{"BackendDisruptions": {"x": {"DisruptedDuration": "12 parsecs"}}}"#);
        assert_eq!(
            err.to_string(),
            "x: DisruptedDuration `12 parsecs` is not a Go duration: unknown unit"
        );
        assert!(
            matches!(&err, DisruptionError::BadDuration { backend, duration } if backend == "x" && duration.text == "12 parsecs")
        );
        let err = error(br#"{"BackendDisruptions": {"x": {"DisruptedDuration": "-3s"}}}"#);
        assert_eq!(
            (err.to_string().as_str(), err.backend()),
            ("x: DisruptedDuration is negative", Some("x"))
        );
        let err = error(br#"{"BackendDisruptions": {"k": {"Name": "x"}}}"#);
        assert_eq!(
            (err.to_string().as_str(), err.backend()),
            ("x: no DisruptedDuration", Some("x"))
        );
    }
}
