//! The domain layer: pure decisions over the model (evaluation, attribution, incident
//! planning), no I/O. Its modules import only the model and the settings, not each other,
//! and write no text for people: what they tell is typed values.

pub(crate) mod attribute;
pub(crate) mod evaluate;
pub mod incidents;
