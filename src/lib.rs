//! sheriff triages CI disruption regressions.
//!
//! # Architecture: one job run, from artifacts to a Jira comment
//!
//! 1. **ingest** ([`ingest`]) finds a finished run in a bucket tree (local or GCS) or receives
//!    it by HTTP push, parses `backend-disruption_*.json`, `cluster-data_*.json`, the Prow
//!    metadata and the interval files into a [`model::RunRecord`]: the run's dimensions, one
//!    sample of whole seconds per backend, and its outages and operator condition spans.
//! 2. **store** ([`store`]) writes the run once (SQLite or PostgreSQL) and, in the same
//!    transaction, adds its samples to the exact per-day histogram of each cell.
//! 3. **evaluate** reads a window of those histograms, computes P50/P75/P95/P99 per cell and
//!    coarser groups, and decides against thresholds which groups regressed.
//! 4. **attribute** finds the smallest scope that explains a backend's regressed groups and
//!    the components and operator conditions behind it.
//! 5. **incidents** turn attributed regressions into one record each, and write every Slack
//!    and Jira side effect to an outbox in the same transaction.
//! 6. **notify** delivers the outbox exactly once: Slack messages, Jira issues and comments.
//!
//! The domain ([`model`]) is pure; the modules that do I/O never import each other, and the
//! CLI ([`cli`]) is where they meet.

pub mod attribute;
pub mod bench;
pub mod cli;
pub mod config;
pub mod cycle;
pub mod demo;
pub mod evaluate;
pub mod ingest;
pub mod model;
pub mod schedule;
pub mod server;
pub mod store;
pub mod synth;
pub mod telemetry;

/// Installs ring as the process's one rustls crypto provider. Every entry point (the binary,
/// each test binary) calls it before any TLS client is built.
pub fn init_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
