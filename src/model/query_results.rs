//! The CI test suite's historical disruption table, `query_results.json` , in all
//! three schema generations: oldest (P95/P99 only, no JobRuns), 4.13 (JobRuns), and current
//! (P50/P75 and MasterNodesUpdated added). Percentiles are strings, often with float noise.

use serde::Deserialize;

pub use crate::model::HistoricalRow;

#[derive(Deserialize)]
struct RawRow {
    #[serde(rename = "BackendName")]
    backend: String,
    #[serde(rename = "Release")]
    release: String,
    #[serde(rename = "FromRelease", default)]
    from_release: String,
    #[serde(rename = "Platform", default)]
    platform: String,
    #[serde(rename = "Architecture", default)]
    architecture: String,
    #[serde(rename = "Network", default)]
    network: String,
    #[serde(rename = "Topology", default)]
    topology: String,
    #[serde(rename = "MasterNodesUpdated", default)]
    master_nodes_updated: String,
    #[serde(rename = "JobRuns", default)]
    job_runs: Option<serde_json::Value>,
    #[serde(rename = "P50", default)]
    p50: Option<serde_json::Value>,
    #[serde(rename = "P75", default)]
    p75: Option<serde_json::Value>,
    #[serde(rename = "P95", default)]
    p95: Option<serde_json::Value>,
    #[serde(rename = "P99", default)]
    p99: Option<serde_json::Value>,
}

/// Why a `query_results.json` cannot be read; past the file's shape, it names the row
/// (counted from 0) and the field at fault.
#[derive(Debug, thiserror::Error)]
pub enum QueryResultsError {
    #[error("not a query_results.json (a JSON array of rows): {0}")]
    NotAnArray(serde_json::Error),
    /// A row that is not an object of the expected fields (`BackendName` missing, a type wrong).
    #[error("row {row}: {json}")]
    BadRow { row: usize, json: serde_json::Error },
    #[error("row {row}: {field} `{text}` is not a number")]
    NotANumber {
        row: usize,
        field: &'static str,
        text: String,
    },
    #[error("row {row}: {field} is {value}, not a number")]
    NotNumeric {
        row: usize,
        field: &'static str,
        value: serde_json::Value,
    },
    #[error("row {row}: neither P95 nor P99 (unknown schema)")]
    NoPercentile { row: usize },
}

impl QueryResultsError {
    /// The row at fault, when the file as a whole is an array.
    pub fn row(&self) -> Option<usize> {
        match self {
            QueryResultsError::NotAnArray(_) => None,
            QueryResultsError::BadRow { row, .. }
            | QueryResultsError::NotANumber { row, .. }
            | QueryResultsError::NotNumeric { row, .. }
            | QueryResultsError::NoPercentile { row } => Some(*row),
        }
    }

    /// The field at fault, when one is.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            QueryResultsError::NotANumber { field, .. }
            | QueryResultsError::NotNumeric { field, .. } => Some(field),
            _ => None,
        }
    }
}

fn number(
    v: Option<serde_json::Value>,
    field: &'static str,
    row: usize,
) -> Result<Option<f64>, QueryResultsError> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Number(n)) => Ok(n.as_f64()),
        Some(serde_json::Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(serde_json::Value::String(text)) => match text.trim().parse::<f64>() {
            Ok(x) => Ok(Some(x)),
            Err(_) => Err(QueryResultsError::NotANumber { row, field, text }),
        },
        Some(value) => Err(QueryResultsError::NotNumeric { row, field, value }),
    }
}

/// Parses the whole file; an error names the row and field.
pub fn parse_query_results(bytes: &[u8]) -> Result<Vec<HistoricalRow>, QueryResultsError> {
    let raw: Vec<serde_json::Value> =
        serde_json::from_slice(bytes).map_err(QueryResultsError::NotAnArray)?;
    let mut rows = Vec::with_capacity(raw.len());
    for (i, value) in raw.into_iter().enumerate() {
        let row: RawRow = serde_json::from_value(value)
            .map_err(|json| QueryResultsError::BadRow { row: i, json })?;
        let p95 = number(row.p95, "P95", i)?;
        let p99 = number(row.p99, "P99", i)?;
        if p95.is_none() && p99.is_none() {
            return Err(QueryResultsError::NoPercentile { row: i });
        }
        rows.push(HistoricalRow {
            backend: row.backend,
            release: row.release,
            from_release: row.from_release,
            platform: row.platform.to_ascii_lowercase(),
            architecture: row.architecture.to_ascii_lowercase(),
            network: row.network.to_ascii_lowercase(),
            topology: row.topology.to_ascii_lowercase(),
            master_nodes_updated: row.master_nodes_updated,
            job_runs: number(row.job_runs, "JobRuns", i)?.map(|n| n as u64),
            p50: number(row.p50, "P50", i)?,
            p75: number(row.p75, "P75", i)?,
            p95,
            p99,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(crate::test_fixture(name)).unwrap()
    }

    #[test]
    fn the_oldest_generation_has_only_p95_and_p99() {
        let rows =
            parse_query_results(&fixture("origin_query_results_era4.12_legacy_excerpt.json"))
                .unwrap();
        assert_eq!(rows.len(), 12);
        let console = &rows[0];
        assert_eq!(console.backend, "ingress-to-console-new-connections");
        assert!(
            (console.p95.unwrap() - 41.0).abs() < 1e-9,
            "float noise 40.999999999999972"
        );
        assert_eq!((console.job_runs, console.p50), (None, None));
    }

    #[test]
    fn the_4_13_generation_adds_job_runs() {
        let rows = parse_query_results(&fixture(
            "origin_query_results_era4.13_jobruns_excerpt.json",
        ))
        .unwrap();
        assert_eq!(rows.len(), 35);
        assert_eq!(rows[0].job_runs, Some(516));
        assert!(
            rows.iter()
                .all(|r| r.p50.is_none() && r.master_nodes_updated.is_empty())
        );
    }

    #[test]
    fn the_current_generation_has_every_column() {
        let rows = parse_query_results(&fixture(
            "origin_query_results_era4.15-4.16_full_schema_excerpt.json",
        ))
        .unwrap();
        assert_eq!(rows.len(), 58);
        let r = rows.iter().find(|r| r.topology == "single").unwrap();
        assert_eq!(
            (r.p50, r.p75, r.master_nodes_updated.as_str()),
            (Some(209.5), Some(237.0), "Y")
        );
        assert!(
            rows.iter().any(|r| r.platform.is_empty()),
            "rows with Platform \"\" exist"
        );
    }

    #[test]
    fn bad_rows_name_their_row_and_field_in_the_same_words_as_before() {
        let error = |bytes: &[u8]| parse_query_results(bytes).unwrap_err();
        let err = error(br#"[{"BackendName": "x", "Release": "4.14", "P95": "lots", "P99": "1"}]"#);
        assert_eq!(err.to_string(), "row 0: P95 `lots` is not a number");
        assert_eq!((err.row(), err.field()), (Some(0), Some("P95")));
        let err = error(br#"[{"BackendName": "x", "Release": "4.14", "P95": 1}, {"BackendName": "y", "Release": "4.14", "P99": true}]"#);
        assert_eq!(err.to_string(), "row 1: P99 is true, not a number");
        assert_eq!((err.row(), err.field()), (Some(1), Some("P99")));
        let err = error(br#"{"rows": []}"#);
        assert_eq!(
            err.to_string(),
            "not a query_results.json (a JSON array of rows): invalid type: map, expected a sequence at line 1 column 0"
        );
        assert_eq!((err.row(), err.field()), (None, None));
        let err = error(br#"[{"BackendName": "x", "Release": "4.14"}]"#);
        assert_eq!(
            err.to_string(),
            "row 0: neither P95 nor P99 (unknown schema)"
        );
        assert_eq!((err.row(), err.field()), (Some(0), None));
        let err = error(br#"[{"Release": "4.14", "P95": 1}]"#);
        assert_eq!(err.to_string(), "row 0: missing field `BackendName`");
        assert_eq!(err.row(), Some(0));
    }
}
