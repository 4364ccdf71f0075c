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

fn number(v: Option<serde_json::Value>, field: &str, row: usize) -> Result<Option<f64>, String> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Number(n)) => Ok(n.as_f64()),
        Some(serde_json::Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(serde_json::Value::String(s)) => {
            s.trim().parse::<f64>().map(Some).map_err(|_| format!("row {row}: {field} `{s}` is not a number"))
        }
        Some(other) => Err(format!("row {row}: {field} is {other}, not a number")),
    }
}

/// Parses the whole file; an error names the row and field.
pub fn parse_query_results(bytes: &[u8]) -> Result<Vec<HistoricalRow>, String> {
    let raw: Vec<serde_json::Value> = serde_json::from_slice(bytes)
        .map_err(|e| format!("not a query_results.json (a JSON array of rows): {e}"))?;
    let mut rows = Vec::with_capacity(raw.len());
    for (i, value) in raw.into_iter().enumerate() {
        let row: RawRow = serde_json::from_value(value).map_err(|e| format!("row {i}: {e}"))?;
        let p95 = number(row.p95, "P95", i)?;
        let p99 = number(row.p99, "P99", i)?;
        if p95.is_none() && p99.is_none() {
            return Err(format!("row {i}: neither P95 nor P99 (unknown schema)"));
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
        let rows = parse_query_results(&fixture("origin_query_results_era4.12_legacy_excerpt.json")).unwrap();
        assert_eq!(rows.len(), 12);
        let console = &rows[0];
        assert_eq!(console.backend, "ingress-to-console-new-connections");
        assert!((console.p95.unwrap() - 41.0).abs() < 1e-9, "float noise 40.999999999999972");
        assert_eq!((console.job_runs, console.p50), (None, None));
    }

    #[test]
    fn the_4_13_generation_adds_job_runs() {
        let rows =
            parse_query_results(&fixture("origin_query_results_era4.13_jobruns_excerpt.json")).unwrap();
        assert_eq!(rows.len(), 35);
        assert_eq!(rows[0].job_runs, Some(516));
        assert!(rows.iter().all(|r| r.p50.is_none() && r.master_nodes_updated.is_empty()));
    }

    #[test]
    fn the_current_generation_has_every_column() {
        let rows =
            parse_query_results(&fixture("origin_query_results_era4.15-4.16_full_schema_excerpt.json"))
                .unwrap();
        assert_eq!(rows.len(), 58);
        let r = rows.iter().find(|r| r.topology == "single").unwrap();
        assert_eq!((r.p50, r.p75, r.master_nodes_updated.as_str()), (Some(209.5), Some(237.0), "Y"));
        assert!(rows.iter().any(|r| r.platform.is_empty()), "rows with Platform \"\" exist");
    }

    #[test]
    fn bad_rows_name_their_field() {
        assert!(
            parse_query_results(br#"[{"BackendName": "x", "Release": "4.14", "P95": "lots", "P99": "1"}]"#)
                .unwrap_err()
                .contains("row 0: P95")
        );
        assert!(parse_query_results(br#"{"rows": []}"#).unwrap_err().contains("JSON array"));
        assert!(
            parse_query_results(br#"[{"BackendName": "x", "Release": "4.14"}]"#)
                .unwrap_err()
                .contains("unknown schema")
        );
    }
}
