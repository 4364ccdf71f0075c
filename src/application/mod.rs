//! The application layer: the use cases (the evaluation cycle, questions and people's
//! actions, the scheduled work) and the caches kept over the store that they read through.
//! Its modules import every layer below them (model, settings, domain, store, support, words,
//! clients, adapters) and each other, never the synthetic data or the entry points.

pub mod actions;
pub mod backtest;
pub mod board;
pub mod cycle;
pub(crate) mod fix_watch;
pub mod outbox;
pub mod query;
pub(crate) mod releases;
pub mod scheduler;
pub(crate) mod series;
pub mod warm;
