//! The edge layer: the entry points (the HTTP edge, the command line, the composition root,
//! the demo, the quality scorecard). Its modules may import every layer, the synthetic data
//! included, and each other; nothing of the library imports them.

pub mod cli;
pub(crate) mod demo;
pub mod scorecard;
pub mod serve;
pub mod server;
pub mod text;
