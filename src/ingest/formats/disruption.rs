//! `backend-disruption_*.json`: seconds of disruption per backend for one test phase.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::duration::parse_go_duration;
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

/// Parses one file. The error names the backend or field at fault.
pub fn parse_backend_disruption(bytes: &[u8]) -> Result<Vec<BackendDisruption>, String> {
    let body: FileBody =
        serde_json::from_slice(bytes).map_err(|e| format!("not a backend-disruption file: {e}"))?;
    let map = body
        .backend_disruptions
        .ok_or_else(|| "no `BackendDisruptions` object (unknown schema)".to_string())?;
    let mut out = Vec::with_capacity(map.len());
    for (key, entry) in map {
        let backend = entry.name.filter(|n| !n.is_empty()).unwrap_or(key);
        let seconds = match entry.disrupted_duration {
            Some(DurationValue::Text(t)) => {
                parse_go_duration(&t).map_err(|e| format!("{backend}: DisruptedDuration {e}"))?
            }
            Some(DurationValue::Nanos(n)) => n as f64 / 1e9,
            None => return Err(format!("{backend}: no DisruptedDuration")),
        };
        if seconds < 0.0 || !seconds.is_finite() {
            return Err(format!("{backend}: DisruptedDuration is negative"));
        }
        let connection = match entry.connection_type.as_deref().map(str::to_ascii_lowercase) {
            Some(c) if !c.is_empty() => c,
            _ if backend.ends_with("-new-connections") => "new".into(),
            _ if backend.ends_with("-reused-connections") => "reused".into(),
            _ => String::new(),
        };
        out.push(BackendDisruption { backend, connection, seconds });
    }
    Ok(out)
}

/// The most disruption one backend can have in one run: a day. A job runs for hours; a value
/// beyond this is a broken or hostile file, and is stored as this rather than wrapping.
pub const MAX_RUN_SECONDS: i64 = DAY;

/// The per-run value of each backend: the sum over the run's files of ceil(seconds), the same
/// number the CI data warehouse stores, each file's value and the sum held within
/// `0..=MAX_RUN_SECONDS`.
pub fn per_run_seconds<'a>(
    files: impl IntoIterator<Item = &'a [BackendDisruption]>,
) -> Vec<(String, String, i64)> {
    let mut totals: BTreeMap<String, (String, i64)> = BTreeMap::new();
    for file in files {
        for d in file {
            let entry = totals.entry(d.backend.clone()).or_insert_with(|| (d.connection.clone(), 0));
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
        let huge = BackendDisruption { backend: "b".into(), connection: "new".into(), seconds: 3.6e25 };
        let negative = BackendDisruption { backend: "c".into(), connection: "new".into(), seconds: -5.0 };
        let files = [vec![huge.clone(), negative.clone()], vec![huge]];
        let sums = per_run_seconds(files.iter().map(Vec::as_slice));
        assert_eq!(sums, vec![("b".into(), "new".into(), MAX_RUN_SECONDS), ("c".into(), "new".into(), 0)]);
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
    fn bad_files_say_what_is_wrong() {
        assert!(
            parse_backend_disruption(b"{\"BackendDisruptions\": {\"x\": {")
                .unwrap_err()
                .contains("not a backend-disruption file")
        );
        assert!(parse_backend_disruption(b"{\"items\": []}").unwrap_err().contains("unknown schema"));
        assert!(
            parse_backend_disruption(
                br#"{"BackendDisruptions": {"x": {"DisruptedDuration": "12 parsecs"}}}"#
            )
            .unwrap_err()
            .contains("x: DisruptedDuration")
        );
        assert!(
            parse_backend_disruption(br#"{"BackendDisruptions": {"x": {"DisruptedDuration": "-3s"}}}"#)
                .unwrap_err()
                .contains("negative")
        );
        assert!(
            parse_backend_disruption(br#"{"BackendDisruptions": {"x": {"Name": "x"}}}"#)
                .unwrap_err()
                .contains("no DisruptedDuration")
        );
    }
}
