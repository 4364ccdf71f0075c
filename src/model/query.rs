//! A question about one backend's disruption, as the slash command and `sheriff query` put
//! it; [`crate::application::query`] answers it from the store.

use std::collections::BTreeMap;

use super::Dimension;

/// A question about one backend: which variants (dimension globs) over how many days.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub backend: String,
    pub filters: BTreeMap<Dimension, String>,
    pub window_days: i64,
}
