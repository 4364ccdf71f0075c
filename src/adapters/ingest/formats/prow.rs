//! Prow's `prowjob.json`, `started.json` and `finished.json`.

use chrono::{DateTime, Utc};
use serde::Deserialize;

/// What sheriff takes from `prowjob.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProwJob {
    pub job: String,
    pub job_type: String,
    pub bucket: String,
    pub state: String,
    pub url: String,
    pub build_id: String,
    pub start_time: Option<DateTime<Utc>>,
    pub completion_time: Option<DateTime<Utc>>,
    /// `release.openshift.io/tag` and `release.openshift.io/from-tag`, when set.
    pub release_tag: String,
    pub from_tag: String,
    /// The tag of `RELEASE_IMAGE_LATEST` in the job's container env, when it names one.
    pub env_release_tag: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawProwJob {
    metadata: RawMeta,
    spec: RawSpec,
    status: RawStatus,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawMeta {
    annotations: std::collections::BTreeMap<String, serde_json::Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawSpec {
    #[serde(deserialize_with = "super::null_as_empty")]
    job: String,
    #[serde(rename = "type", deserialize_with = "super::null_as_empty")]
    job_type: String,
    decoration_config: Option<RawDecoration>,
    pod_spec: Option<RawPodSpec>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawPodSpec {
    containers: Vec<RawContainer>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawContainer {
    env: Vec<RawEnv>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawEnv {
    #[serde(deserialize_with = "super::null_as_empty")]
    name: String,
    #[serde(deserialize_with = "super::null_as_empty")]
    value: String,
}

/// The tag of a release image pull spec (`registry.ci.openshift.org/ocp/release:4.14.0-0.nightly-…`),
/// when it has one that looks like a version; a digest (`@sha256:…`) names no tag.
pub(crate) fn tag_of_pull_spec(spec: &str) -> Option<&str> {
    let (repo, tag) = spec.rsplit_once(':')?;
    (!repo.ends_with("@sha256")
        && tag.starts_with(|c: char| c.is_ascii_digit())
        && !tag.contains('/'))
    .then_some(tag)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawDecoration {
    gcs_configuration: Option<RawGcs>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawGcs {
    #[serde(deserialize_with = "super::null_as_empty")]
    bucket: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawStatus {
    #[serde(deserialize_with = "super::null_as_empty")]
    state: String,
    #[serde(deserialize_with = "super::null_as_empty")]
    url: String,
    #[serde(deserialize_with = "super::null_as_empty")]
    build_id: String,
    #[serde(rename = "startTime")]
    start_time: Option<String>,
    #[serde(rename = "completionTime")]
    completion_time: Option<String>,
}

/// Why a Prow file (`prowjob.json`, `started.json`, `finished.json`) cannot be used; past the
/// file's shape, it names the field at fault.
#[derive(Debug, thiserror::Error)]
pub enum ProwError {
    /// `file` is the file's usual name, `prowjob.json`.
    #[error("not a {file}: {json}")]
    NotJson {
        file: &'static str,
        json: serde_json::Error,
    },
    #[error("unknown schema: no spec.job")]
    NoJob,
    #[error("{field} `{text}` is not {}: {why}", super::RFC3339_TIME)]
    NotRfc3339 {
        field: &'static str,
        text: String,
        why: chrono::ParseError,
    },
    #[error("{field} is not {}: {value}", super::EPOCH_SECONDS)]
    NotEpochSeconds {
        field: &'static str,
        value: serde_json::Value,
    },
    #[error("{field} {seconds} is out of range")]
    OutOfRange { field: &'static str, seconds: i64 },
}

impl ProwError {
    /// The field at fault (`status.startTime`, `timestamp`), when the file's shape is not.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            ProwError::NotJson { .. } => None,
            ProwError::NoJob => Some("spec.job"),
            ProwError::NotRfc3339 { field, .. }
            | ProwError::NotEpochSeconds { field, .. }
            | ProwError::OutOfRange { field, .. } => Some(field),
        }
    }

    /// What the field should have held, when the error is about its value.
    pub fn expected(&self) -> Option<&'static str> {
        match self {
            ProwError::NotRfc3339 { .. } => Some(super::RFC3339_TIME),
            ProwError::NotEpochSeconds { .. } => Some(super::EPOCH_SECONDS),
            ProwError::NotJson { .. } | ProwError::NoJob | ProwError::OutOfRange { .. } => None,
        }
    }
}

fn json<'a, T: Deserialize<'a>>(bytes: &'a [u8], file: &'static str) -> Result<T, ProwError> {
    serde_json::from_slice(bytes).map_err(|json| ProwError::NotJson { file, json })
}

pub fn parse_prowjob(bytes: &[u8]) -> Result<ProwJob, ProwError> {
    let raw: RawProwJob = json(bytes, "prowjob.json")?;
    if raw.spec.job.is_empty() {
        return Err(ProwError::NoJob);
    }

    let time =
        |t: Option<String>, field: &'static str| -> Result<Option<DateTime<Utc>>, ProwError> {
            match t.filter(|s| !s.is_empty()) {
                None => Ok(None),
                Some(text) => match DateTime::parse_from_rfc3339(&text) {
                    Ok(d) => Ok(Some(d.with_timezone(&Utc))),
                    Err(why) => Err(ProwError::NotRfc3339 { field, text, why }),
                },
            }
        };

    let annotation = |k: &str| {
        raw.metadata
            .annotations
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };

    let env_release_tag = raw
        .spec
        .pod_spec
        .iter()
        .flat_map(|p| &p.containers)
        .flat_map(|c| &c.env)
        .find(|e| e.name == "RELEASE_IMAGE_LATEST")
        .and_then(|e| tag_of_pull_spec(&e.value))
        .unwrap_or_default()
        .to_string();

    Ok(ProwJob {
        env_release_tag,
        release_tag: annotation("release.openshift.io/tag"),
        from_tag: annotation("release.openshift.io/from-tag"),
        job: raw.spec.job,
        job_type: raw.spec.job_type,
        bucket: raw
            .spec
            .decoration_config
            .and_then(|d| d.gcs_configuration)
            .map(|g| g.bucket)
            .unwrap_or_default(),
        state: raw.status.state,
        url: raw.status.url,
        build_id: raw.status.build_id,
        start_time: time(raw.status.start_time, "status.startTime")?,
        completion_time: time(raw.status.completion_time, "status.completionTime")?,
    })
}

/// `started.json`: when the job started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    pub timestamp: DateTime<Utc>,
}

/// `finished.json`: when and how the job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub timestamp: Option<DateTime<Utc>>,
    pub passed: Option<bool>,
    /// `SUCCESS`, `FAILURE`, `ABORTED`, … as written.
    pub result: String,
}

#[derive(Deserialize)]
struct RawStarted {
    timestamp: serde_json::Value,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawFinished {
    timestamp: Option<serde_json::Value>,
    passed: Option<bool>,
    result: Option<String>,
}

fn epoch(v: &serde_json::Value, field: &'static str) -> Result<DateTime<Utc>, ProwError> {
    let seconds = match v {
        serde_json::Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        serde_json::Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    }
    .ok_or_else(|| ProwError::NotEpochSeconds {
        field,
        value: v.clone(),
    })?;
    DateTime::from_timestamp(seconds, 0).ok_or(ProwError::OutOfRange { field, seconds })
}

pub fn parse_started(bytes: &[u8]) -> Result<Started, ProwError> {
    let raw: RawStarted = json(bytes, "started.json")?;
    Ok(Started {
        timestamp: epoch(&raw.timestamp, "timestamp")?,
    })
}

pub fn parse_finished(bytes: &[u8]) -> Result<Finished, ProwError> {
    let raw: RawFinished = json(bytes, "finished.json")?;
    Ok(Finished {
        timestamp: raw
            .timestamp
            .as_ref()
            .map(|t| epoch(t, "timestamp"))
            .transpose()?,
        passed: raw.passed,
        result: raw.result.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prowjob_fields_and_annotations() {
        let json = br#"{"kind": "ProwJob", "metadata": {"annotations": {"release.openshift.io/tag": "4.14.0-0.nightly-2023-09-01-000000",
            "prow.k8s.io/job": "x"}},
          "spec": {"type": "periodic", "job": "periodic-ci-openshift-release-master-nightly-4.14-e2e-metal-ipi-upgrade-ovn-ipv6",
            "decoration_config": {"gcs_configuration": {"bucket": "test-platform-results", "path_strategy": "single"}}},
          "status": {"startTime": "2023-09-01T10:00:00Z", "completionTime": "2023-09-01T13:01:02Z", "state": "success",
            "url": "https://prow.ci.openshift.org/view/gs/test-platform-results/logs/x/1", "build_id": "1697412112345678848"}}"#;
        let p = parse_prowjob(json).unwrap();
        assert_eq!(p.job_type, "periodic");
        assert_eq!(p.bucket, "test-platform-results");
        assert_eq!(p.state, "success");
        assert_eq!(p.build_id, "1697412112345678848");
        assert_eq!(p.release_tag, "4.14.0-0.nightly-2023-09-01-000000");
        assert_eq!(
            p.completion_time.unwrap().to_rfc3339(),
            "2023-09-01T13:01:02+00:00"
        );
    }

    #[test]
    fn a_pending_prowjob_with_null_fields_still_parses() {
        let p = parse_prowjob(br#"{"spec": {"job": "j", "type": null}, "status": {"state": "pending", "url": null, "build_id": null, "startTime": null}}"#).unwrap();
        assert_eq!(
            (
                p.job.as_str(),
                p.job_type.as_str(),
                p.url.as_str(),
                p.build_id.as_str()
            ),
            ("j", "", "", "")
        );
        assert_eq!(p.start_time, None);
    }

    #[test]
    fn started_and_finished() {
        assert_eq!(
            parse_started(br#"{"timestamp": 1693562400}"#)
                .unwrap()
                .timestamp
                .timestamp(),
            1693562400
        );
        let f = parse_finished(br#"{"timestamp": 1693573262, "passed": false, "result": "FAILURE", "metadata": {"work-namespace": "ci-op-x"}}"#).unwrap();
        assert_eq!((f.passed, f.result.as_str()), (Some(false), "FAILURE"));
    }

    #[test]
    fn prow_errors_read_as_before_and_name_file_and_field() {
        let err = parse_started(br#"{"timestamp": "soon"}"#).unwrap_err();
        assert_eq!(
            (err.to_string().as_str(), err.field()),
            (
                r#"timestamp is not epoch seconds: "soon""#,
                Some("timestamp")
            )
        );
        let err = parse_finished(br#"{"timestamp": 99999999999999999}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "timestamp 99999999999999999 is out of range"
        );
        let err = parse_prowjob(br#"{"spec": {}}"#).unwrap_err();
        assert_eq!(
            (err.to_string().as_str(), err.field()),
            ("unknown schema: no spec.job", Some("spec.job"))
        );
        let err = parse_prowjob(br#"{"spec": {"job": "j"}, "status": {"startTime": "yesterday"}}"#)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "status.startTime `yesterday` is not an RFC 3339 time: premature end of input"
        );
        assert_eq!(err.field(), Some("status.startTime"));
        type Parser = fn(&[u8]) -> Result<(), ProwError>;
        let parsers: [(Parser, &str); 3] = [
            (|b| parse_prowjob(b).map(drop), "prowjob.json"),
            (|b| parse_started(b).map(drop), "started.json"),
            (|b| parse_finished(b).map(drop), "finished.json"),
        ];
        for (parse, file) in parsers {
            let err = parse(b"[").unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("not a {file}: EOF while parsing a list at line 1 column 1")
            );
            assert!(matches!(err, ProwError::NotJson { file: f, .. } if f == file));
            assert_eq!(err.field(), None);
        }
    }
}
