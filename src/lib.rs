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
//! 3. **evaluate** ([`evaluate`], pure) takes a window of those histograms, computes
//!    P50/P75/P95/P99 per cell and coarser groups, and decides against thresholds which groups
//!    regressed, with statistics suited to zero-inflated data and hysteresis between cycles.
//! 4. **attribute** ([`attribute`], pure) finds the smallest scope that explains a backend's
//!    regressed groups, the components behind it, and the operator conditions that covered the
//!    outages of the sample runs.
//! 5. **a cycle** ([`cycle`]) is where store, evaluator and attribution meet: it reads the
//!    windows, evaluates, describes each regression with its evidence, and records the cycle.
//!    `sheriff evaluate` prints it; `sheriff demo` runs the whole pipeline on generated data
//!    ([`synth`]).
//! 6. **incidents and notify** (to come) turn regressions into one record each and deliver
//!    Slack messages and Jira issues through a durable outbox, exactly once.
//!
//! The domain ([`model`]) is pure; the modules that do I/O ([`ingest`], [`store`], [`server`])
//! never import each other, and the CLI ([`cli`]) and the cycle are where they meet.

pub mod actions;
pub mod attribute;
pub mod bench;
pub mod cli;
pub mod config;
pub mod cycle;
pub mod demo;
pub mod evaluate;
pub mod http;
pub mod incidents;
pub mod ingest;
pub mod model;
pub mod notify;
pub mod ops;
pub mod process;
pub mod query;
pub mod render;
pub mod schedule;
pub mod scheduler;
pub mod server;
pub mod shutdown;
pub mod store;
pub mod synth;
pub mod telemetry;

/// Installs ring as the process's one rustls crypto provider. Every entry point (the binary,
/// each test binary) calls it before any TLS client is built.
pub fn init_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
