//! The domain layer: pure decisions over the model (evaluation, attribution, incident
//! planning), no I/O. Its modules import only the model and the settings, not each other,
//! and write no text through `render`: the incident planner says what it tells as typed
//! values ([`incidents::Told`]), and a person's request refused as a typed
//! [`Refusal`](incidents::Refusal), which `words` gives their words. Attribution likewise
//! gathers a regression's facts (`attribute::facts`) and its mechanism's clauses as typed
//! values (`attribute::mechanism::Clause`), which `words` says.

pub(crate) mod attribute;
pub(crate) mod evaluate;
pub mod incidents;
