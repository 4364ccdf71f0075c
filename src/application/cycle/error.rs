//! The error of an evaluation cycle: why it could not read, judge or record.
//!
//! Its text is what the store records of a failed cycle and what the commands print. The store's
//! error is the source of [`CycleError::Store`], so the chain (`{:#}`, or `with_sources`) says
//! the cycle failed, then the store's words, and [`crate::store::is_storage_error`] finds it; a
//! number that does not parse is said in its own words; the others say what went wrong in words
//! of their own.

use crate::store::StoreError;

/// The result of the cycle's functions and of the runs it reads ([`super::source::RunSource`]).
pub type Result<T, E = CycleError> = std::result::Result<T, E>;

/// Why a cycle, or the replay a backtest's cycles read, failed.
#[derive(Debug, thiserror::Error)]
pub enum CycleError {
    /// The store failed: reading the windows, runs, incidents or group states, or recording
    /// the cycle's outcome. The store's error is this one's source, so the scheduler and the
    /// commands find it in the chain ([`crate::store::is_storage_error`]).
    #[error("running the cycle")]
    Store(#[from] StoreError),
    /// The thread computing a replayed cycle's windows ahead of it panicked.
    #[error("computing the windows panicked")]
    WindowsPanicked,
    /// A stored run's samples, as the store joins them (`backend:seconds` pairs), hold a pair
    /// without its `:`.
    #[error("a sample `{pair}` without `:`")]
    SampleWithoutColon {
        /// The pair as read.
        pair: String,
    },
    /// A stored run's samples hold a backend id or a number of seconds that is not a number.
    #[error(transparent)]
    SampleNumber(#[from] std::num::ParseIntError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::error::with_sources;

    #[test]
    fn a_replay_s_own_failures_say_what_went_wrong() {
        assert_eq!(
            with_sources(&CycleError::WindowsPanicked),
            "computing the windows panicked"
        );
        let e = CycleError::SampleWithoutColon { pair: "7".into() };
        assert_eq!(with_sources(&e), "a sample `7` without `:`");
        let e = CycleError::from("x".parse::<i64>().unwrap_err());
        assert_eq!(with_sources(&e), "invalid digit found in string");
    }

    #[test]
    fn a_store_failure_says_the_cycle_failed_and_stays_a_storage_failure() {
        let refused = || StoreError::Refused("the days are backfilled already".into());
        assert_eq!(
            with_sources(&CycleError::from(refused())),
            "running the cycle: the days are backfilled already"
        );
        let lost = anyhow::Error::from(CycleError::from(StoreError::Connection(
            sqlx::Error::PoolTimedOut,
        )));
        assert!(crate::store::is_storage_error(&lost), "{lost:#}");
        assert!(!crate::store::is_storage_error(&anyhow::Error::from(
            CycleError::from(refused())
        )));
    }
}
