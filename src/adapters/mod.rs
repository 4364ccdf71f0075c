//! The adapters layer: what sheriff does with the outside systems (the artifact sources and
//! parsers, the outbox's sinks and the messages they send). Its modules import the model,
//! settings, domain, store, support, words and clients, not each other.

pub mod ingest;
pub mod notify;
