//! The warm caches: what sheriff keeps in memory over the database so that a question or a
//! cycle reads only what changed since the last one. [`Queries`] keeps questions' per-day
//! answers (`query`, the charts); [`Windows`] and [`ScopeRuns`] keep, in `sheriff serve`, the
//! windows' day histograms and the runs of the scopes a cycle describes. The store knows
//! nothing of them; whoever builds the app owns one [`Warm`] and hands it to the cycle and the
//! questions.
//!
//! # Exact, whichever process writes
//!
//! Every answer kept here equals what reading the database afresh would give, even with other
//! replicas (or the command line) writing the same database. Three things make it so:
//!
//! - Every transaction that changes the stored runs or their histograms (a run written,
//!   replaced or removed, a backfill, a reclassification, a prune) ends by bumping the one row
//!   of `data_version` and recording, under the new version, the first UTC day it changed and,
//!   when it touched at most a few thousand, the `(variant, day)` pairs it changed
//!   (`data_changes`; see `store::runs::note_change`). The counter row is locked until the
//!   commit, so versions commit in order and a version is visible only with its rows.
//! - A reader reads the version *before* the rows, and keeps what it read under that version:
//!   the rows are at least as new as the version says, and whatever they hold beyond it is
//!   listed in a later change and read again then.
//! - Brought up to date from version `v` to `w`, a cache reads the changes `v < version <= w`.
//!   When every one of them listed its variant-days, it re-reads only those cells' days; when
//!   some did not (or `w - v` is over 256, too many to read one by one), every day from the
//!   earliest first day on (a prune records the earliest day there is: everything); when some
//!   are missing from the log (it keeps the last 100,000), everything.
//!
//! Nothing else is trusted: no write notifies a cache, and a cache never patches itself from
//! what this process wrote.

mod queries;
mod scope_runs;
mod windows;

pub use self::queries::{Catalog, Days, Queries};
pub use self::scope_runs::ScopeRuns;
pub use self::windows::Windows;

/// The caches one process keeps: the questions' answers always; the windows and the scopes'
/// runs when it runs cycles again and again (`sheriff serve`).
#[derive(Debug, Default)]
pub struct Warm {
    /// Questions' answers per data version.
    pub queries: Queries,
    /// The windows' day histograms between cycles, when kept.
    pub windows: Option<Windows>,
    /// The runs of the scopes cycles describe, when kept along with the windows.
    pub scope_runs: Option<ScopeRuns>,
}

impl Warm {
    /// The questions' answers only: what a command that runs once needs.
    pub fn new() -> Warm {
        Warm::default()
    }

    /// Everything kept, the windows and the scopes' runs too: what `sheriff serve` runs with.
    pub fn kept() -> Warm {
        Warm {
            windows: Some(Windows::default()),
            scope_runs: Some(ScopeRuns::default()),
            ..Warm::default()
        }
    }

    /// Days the windows kept here have read from the database so far (0 when not kept, or
    /// while a cycle is reading them).
    pub fn window_days_read(&self) -> u64 {
        self.windows.as_ref().map_or(0, Windows::days_read)
    }

    /// Rows of scopes' runs read from the database so far while kept here.
    pub fn scope_rows_read(&self) -> u64 {
        self.scope_runs.as_ref().map_or(0, ScopeRuns::rows_read)
    }
}
