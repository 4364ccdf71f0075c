//! sheriff triages CI disruption regressions.
//!
//! # Architecture: one job run, from artifacts to a Jira comment
//!
//! 1. **ingest** ([`adapters::ingest`]) finds a finished run in a bucket tree (local, or GCS
//!    through [`clients::gcs`]) or receives it by HTTP push, parses `backend-disruption_*.json`,
//!    `cluster-data_*.json`, the Prow metadata and the interval files into a
//!    [`model::RunRecord`]: the run's dimensions, one sample of whole seconds per backend, and
//!    its outages and operator condition spans.
//! 2. **store** ([`store`]) writes the run once (SQLite or PostgreSQL) and, in the same
//!    transaction, adds its samples to the exact per-day histogram of each cell.
//! 3. **a cycle** ([`application::cycle`]) reads the windows' histograms (in `serve` kept in
//!    memory between cycles, [`application::warm`], exact through the store's data version);
//!    **evaluate** (`domain::evaluate`, pure) computes P50–P99 per cell and coarser groups and
//!    decides against thresholds which regressed; **attribute** (`domain::attribute`, pure)
//!    finds the smallest scope that explains a backend's regressed groups, its owners and the
//!    operator conditions behind the outages, and says it in words. The result is a
//!    [`model::RegressionReport`] per regression.
//! 4. **incidents** ([`domain::incidents`], pure) match the reports to the incidents already
//!    known and plan what changes and what to tell; people's actions
//!    ([`application::actions`]: acknowledge, silence, resolve, …) are planned the same way.
//!    The store applies a plan and its outbox entries in one transaction.
//! 5. **outbox** ([`application::outbox`]) delivers the outbox to Slack and Jira through the
//!    sinks ([`adapters::notify`]) and their clients ([`clients`]), exactly once at the remote
//!    side; `support::render` holds the text pieces every output shares.
//! 6. **serve** ([`edge::serve`]) puts the HTTP edge ([`edge::server`]: Slack commands and
//!    buttons, push ingest, health, metrics), the [`application::scheduler`] and the outbox
//!    worker together; `support::shutdown` stops them in one place.
//!
//! # Layers
//!
//! The layers import downwards only, and `src/` shows them: a layer of several modules is a
//! folder of its own ([`domain`], [`support`], [`adapters`], [`application`], [`edge`]), a
//! layer of one module is that module at the top level. `tests/integration/architecture.rs`
//! gives each module its layer, checks that it sits in its layer's folder, checks every
//! `crate::` path against the layers it may import, and that the modules form a DAG. Lowest
//! first:
//! - **model** ([`model`]): plain types and pure readers; imports nothing of the crate. A
//!   layer of its own below the domain rather than a folder inside it: the settings, the
//!   store and the clients speak in its types too, and none of them may import the domain.
//! - **settings** ([`config`], with its cron schedules, `config::cron`): read once; import the
//!   model.
//! - **domain** ([`domain`]: `evaluate`, `attribute`, [`incidents`](domain::incidents)): pure
//!   decisions; import only the model and the settings, not each other, and write no text
//!   through `render`: the incident planner says what it tells as typed values
//!   ([`domain::incidents::Told`]).
//! - **store** ([`store`]): keeps what the domain decided; imports the domain, no text or I/O
//!   helpers: the lines it records are given their words by a function the application hands
//!   it.
//! - **support** ([`support`]: `render`, `error`, [`http`](support::http),
//!   [`process`](support::process), `shutdown`, `telemetry`): what the layers above share.
//! - **words** ([`words`]): the domain's typed values as the text people read; the application
//!   hands its functions to the domain and the store.
//! - **synthetic** ([`synth`]): realistic CI data for the demo, the tests and the benchmarks,
//!   written without the ingest that reads it; only the entry points use it.
//! - **clients** ([`clients`]): one per outside system (Slack, Jira, GCS, BigQuery, the
//!   release controller, GitHub), its wire types private; imports only the settings, support
//!   and model.
//! - **adapters** ([`adapters`]: [`ingest`](adapters::ingest), [`notify`](adapters::notify)):
//!   the artifact sources and parsers, and the outbox's sinks with the messages they send.
//! - **application** ([`application`]: [`cycle`](application::cycle),
//!   [`query`](application::query), [`board`](application::board),
//!   [`actions`](application::actions), [`outbox`](application::outbox),
//!   [`scheduler`](application::scheduler),
//!   [`backtest`](application::backtest), `series`, `fix_watch`, `releases`): the use cases;
//!   [`warm`](application::warm), the caches they read through.
//! - **edge** ([`edge`]: [`server`](edge::server), [`cli`](edge::cli), [`serve`](edge::serve),
//!   `demo`, [`scorecard`](edge::scorecard)): the entry points; the quality scorecard judges
//!   detection for `sheriff bench quality` and the integration tests.
//!
//! The binary (`src/main.rs`) parses the command line and runs these commands through
//! [`edge::cli`]; `sheriff bench`'s timing harness is the binary's own (`src/bench/`), no part
//! of this library. The architecture test gives its modules a layer as well (they sit at the
//! top level of `src/`, in the binary's crate) and reads their `sheriff::` paths.

// The layers, lowest first: a layer imports only (some of) those listed before it, and its own
// modules where the architecture test allows it.
pub mod model;

pub mod config;

pub mod domain;

pub mod store;

pub mod support;

pub mod words;

pub mod synth;

pub mod clients;

pub mod adapters;

pub mod application;

pub mod edge;

/// Installs ring as the process's one rustls crypto provider. Every entry point (the binary,
/// each test binary) calls it before any TLS client is built.
pub fn init_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A file of `tests/fixtures`, for the unit tests. The folder is the package cargo is testing
/// now (its run-time `CARGO_MANIFEST_DIR`), not the one a cached test binary was built in.
#[cfg(test)]
pub(crate) fn test_fixture(name: &str) -> std::path::PathBuf {
    let root = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        std::path::PathBuf::from,
    );
    root.join("tests/fixtures").join(name)
}
