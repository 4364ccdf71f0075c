//! One parser per artifact format (DESIGN §3). Pure: bytes in, typed values or a message out.

pub mod cluster_data;
pub mod disruption;
pub mod duration;
pub mod intervals;
pub mod job_name;
pub mod prow;
pub mod query_results;
pub mod variant_mapping;
