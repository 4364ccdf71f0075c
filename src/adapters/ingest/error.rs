//! The ingest adapter's one error: why a source could not be named, or an ingest, a backfill or a
//! read of a run's interval rows stopped as a whole. A run's own bad file is no error: it is a
//! problem in the summary and the ingest log ([`super::IngestProblem`]), and the rest go on.
//!
//! Its text is what `sheriff ingest` prints and a scheduled ingest logs. A variant that wraps a
//! client's error says that error's text as its own, and hands on that error's sources, so the
//! chain (`{:#}`) reads as the wrapped error's. The store's error is handed on as the source of
//! words of their own, so that [`crate::store::is_storage_error`] finds it in the chain.

use super::bigquery::RowError;
use super::bigquery::interval_rows::Unusable;
use crate::clients::bigquery::BigQueryError;
use crate::clients::gcs::GcsError;
use crate::store::StoreError;

/// The result of the ingest adapter's functions.
pub type Result<T, E = IngestError> = std::result::Result<T, E>;

/// Why an ingest (or a backfill, or a read of interval rows) did not finish.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// A `gs://` source that names no bucket.
    #[error("`{0}` is not a gs://BUCKET/PREFIX URL")]
    NotAGcsUrl(String),
    /// A `bq://` source whose names are not plain BigQuery names.
    #[error(
        "`{0}` is not a bq://PROJECT/DATASET URL (a project id of letters, digits, `-`, `.` or `:`; a dataset of letters, digits and `_`)"
    )]
    NotABigQueryUrl(String),
    /// A source that is neither a URL sheriff reads nor a directory.
    #[error("`{0}` is neither a gs:// or bq:// URL nor a directory")]
    NotASource(String),
    /// Run folders asked of a BigQuery dataset, which holds rows.
    #[error("a BigQuery dataset holds rows, not run folders")]
    RowsNotFolders,
    /// The local source directory could not be walked.
    #[error("walking the source directory")]
    Walk(#[source] std::io::Error),
    /// Listing the bucket (or building its client) failed.
    #[error(transparent)]
    Gcs(#[from] GcsError),
    /// A BigQuery call failed (or its client could not be built).
    #[error(transparent)]
    BigQuery(#[from] BigQueryError),
    /// BigQuery answered rows sheriff cannot read as its query's.
    #[error(transparent)]
    Rows(#[from] RowError),
    /// A run's interval rows that will not be usable however often they are asked for.
    #[error(transparent)]
    Unusable(#[from] Unusable),
    /// The store failed: reading or moving a watermark, or writing a backfill. The store's
    /// error is this one's source ([`crate::store::is_storage_error`] finds it).
    #[error("keeping the ingest's watermarks and backfills")]
    Store(#[from] StoreError),
    /// A backfill whose `--to` is not after its `--from`.
    #[error("--to must be a later day than --from")]
    EmptyRange,
    /// A backfill ending later than `bigquery.overlap_hours` before now: `to` and `latest` are
    /// days (YYYY-MM-DD), the asked end and the latest it may be.
    #[error(
        "--to {to}: a backfill ends at least bigquery.overlap_hours ({overlap_hours}) before now (by {latest}), so that no row of its days is still to be loaded"
    )]
    TooRecent {
        to: String,
        overlap_hours: u32,
        latest: String,
    },
    /// A task of the ingest's own (walking a directory, parsing a pushed run) panicked.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text an application prints of the error (`{:#}`: the error and its sources).
    fn chain(e: IngestError) -> String {
        format!("{:#}", anyhow::Error::from(e))
    }

    #[test]
    fn a_directory_that_cannot_be_walked_says_so_before_why() {
        let e = IngestError::Walk(std::io::Error::other("/runs: permission denied"));
        assert_eq!(e.to_string(), "walking the source directory");
        assert_eq!(
            chain(e),
            "walking the source directory: /runs: permission denied"
        );
    }

    #[test]
    fn a_wrapped_error_reads_as_its_own_and_a_store_error_stays_in_the_chain() {
        let refused = || StoreError::Refused("the days are backfilled already".into());
        assert_eq!(
            chain(IngestError::from(refused())),
            "keeping the ingest's watermarks and backfills: the days are backfilled already"
        );
        let lost = IngestError::from(StoreError::Connection(sqlx::Error::PoolTimedOut));
        assert!(crate::store::is_storage_error(&anyhow::Error::from(lost)));
        let e = IngestError::from(Unusable("more than 2 interval rows".into()));
        assert_eq!(chain(e), "more than 2 interval rows");
    }

    #[test]
    fn a_backfill_too_close_to_now_names_both_days_and_the_overlap() {
        let e = IngestError::TooRecent {
            to: "2026-12-05".into(),
            overlap_hours: 6,
            latest: "2026-12-04".into(),
        };
        assert_eq!(
            e.to_string(),
            "--to 2026-12-05: a backfill ends at least bigquery.overlap_hours (6) before now (by 2026-12-04), so that no row of its days is still to be loaded"
        );
    }
}
