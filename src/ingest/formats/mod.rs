//! One parser per artifact format. Pure: bytes in, typed values or a message out.

pub mod cluster_data;
pub mod disruption;
pub mod duration;
pub mod intervals;
pub mod job_name;
pub mod prow;
pub mod query_results;
pub mod variant_mapping;

/// Reads a JSON string field that writers sometimes set to `null` as an empty string.
pub(crate) fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    use serde::Deserialize;
    Option::<String>::deserialize(d).map(Option::unwrap_or_default)
}
