//! The support layer: what the I/O layers share (text for people, HTTP clients, the
//! process's identity, shutdown, logging). Its modules import the model, the settings and
//! each other; neither the domain nor the store uses them.

pub(crate) mod document;
pub(crate) mod error;
pub mod http;
pub mod process;
pub(crate) mod render;
pub(crate) mod shutdown;
pub(crate) mod telemetry;
