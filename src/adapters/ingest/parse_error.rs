//! The one error of reading a run's artifacts: which file (or source), which field when one is at
//! fault, and what was expected against what was found ([`ParseError::field`] and
//! [`ParseError::expected`] give the two apart from the text, which says both).
//!
//! Its text is what a run's problem stores and the ingest log shows; the file is kept beside it
//! (the log names the file in its own column), and a caller adds what follows from it ("; its
//! evidence is not used").

use super::formats::prow::ProwError;
use super::formats::{
    cluster_data::ClusterDataError, disruption::DisruptionError, interval_files::IntervalsError,
};

/// Why one artifact could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{problem}")]
pub struct ParseError {
    /// The file, relative to its run folder (or the source the value came from).
    pub file: String,
    pub problem: Problem,
}

/// What was wrong with the file: it could not be read, or its content was not what its format
/// expects (the format's own error says which field, what it expected and what it found).
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("cannot read: {0}")]
    Unreadable(std::io::Error),
    /// The file is `size` bytes, over the `max`-byte limit it is read with.
    #[error("{size} bytes, larger than the {max}-byte limit; skipped")]
    TooLarge { size: u64, max: u64 },
    /// Fetching it from GCS failed.
    #[error(transparent)]
    Fetch(#[from] crate::clients::gcs::GcsError),
    #[error("read task failed: {0}")]
    Task(String),
    /// The source holds rows (BigQuery), so there is no file to read.
    #[error("a BigQuery dataset holds rows, not files")]
    NoFiles,
    #[error("empty file")]
    Empty,
    #[error("{}", super::formats::NUL_REFUSED)]
    Nul,
    #[error(transparent)]
    Prow(#[from] ProwError),
    #[error(transparent)]
    Disruption(#[from] DisruptionError),
    #[error(transparent)]
    ClusterData(#[from] ClusterDataError),
    #[error(transparent)]
    Intervals(#[from] IntervalsError),
}

impl ParseError {
    pub fn new(file: impl Into<String>, problem: impl Into<Problem>) -> ParseError {
        ParseError {
            file: file.into(),
            problem: problem.into(),
        }
    }

    /// The field (or backend) at fault, when the format's error names one.
    pub fn field(&self) -> Option<&str> {
        match &self.problem {
            Problem::Prow(e) => e.field(),
            Problem::Disruption(e) => e.backend(),
            Problem::Intervals(IntervalsError::BadTime { time, .. }) => Some(time.field),
            _ => None,
        }
    }

    /// What the field should have held (`an RFC 3339 time`, `a JSON object`), when the parser
    /// knows it. The text says it too: "status.startTime `yesterday` is not an RFC 3339 time".
    pub fn expected(&self) -> Option<&'static str> {
        match &self.problem {
            Problem::Prow(e) => e.expected(),
            Problem::Disruption(e) => e.expected(),
            Problem::ClusterData(ClusterDataError::NotAnObject) => {
                Some(super::formats::JSON_OBJECT)
            }
            Problem::Intervals(IntervalsError::BadTime { .. }) => {
                Some(super::formats::RFC3339_TIME)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::ingest::formats::prow;

    #[test]
    fn a_prowjob_without_its_job_names_the_file_and_the_field() {
        let e = prow::parse_prowjob(br#"{"spec": {}}"#).unwrap_err();
        let e = ParseError::new("prowjob.json", e);
        assert_eq!(e.file, "prowjob.json");
        assert_eq!(e.field(), Some("spec.job"));
        assert_eq!(e.to_string(), "unknown schema: no spec.job");
        assert_eq!(e.expected(), None);
    }

    #[test]
    fn a_time_that_is_not_one_says_what_was_expected_in_its_text_and_apart() {
        let e =
            prow::parse_prowjob(br#"{"spec": {"job": "j"}, "status": {"startTime": "yesterday"}}"#)
                .unwrap_err();
        let e = ParseError::new("prowjob.json", e);
        assert_eq!(
            (e.field(), e.expected()),
            (Some("status.startTime"), Some("an RFC 3339 time"))
        );
        assert!(e.to_string().contains("is not an RFC 3339 time"), "{e}");
        let e =
            crate::adapters::ingest::formats::cluster_data::parse_cluster_data(b"[1]").unwrap_err();
        let e = ParseError::new("cluster-data.json", e);
        assert_eq!(e.expected(), Some("a JSON object"));
        assert_eq!(
            e.to_string(),
            "not a cluster-data file: expected a JSON object"
        );
    }

    #[test]
    fn a_file_over_its_limit_says_its_size_and_the_limit() {
        let e = ParseError::new(
            "e2e-events_1.json",
            Problem::TooLarge {
                size: 300,
                max: 200,
            },
        );
        assert_eq!(
            e.to_string(),
            "300 bytes, larger than the 200-byte limit; skipped"
        );
        assert_eq!(e.field(), None);
    }
}
