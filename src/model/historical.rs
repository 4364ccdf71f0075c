//! A row of the CI suite's historical disruption table (`query_results.json`), as evaluation
//! uses it; the parser of the file's three schema generations is in `ingest::formats`.

/// One row: a cell's historical percentiles, in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoricalRow {
    pub backend: String,
    pub release: String,
    pub from_release: String,
    pub platform: String,
    pub architecture: String,
    pub network: String,
    pub topology: String,
    /// Empty in files older than the column.
    pub master_nodes_updated: String,
    /// `None` in the oldest files.
    pub job_runs: Option<u64>,
    pub p50: Option<f64>,
    pub p75: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}
