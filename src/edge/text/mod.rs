//! The application's answers as the text people read in a terminal: what the command line
//! prints, and what the slash command shows (its tables in code blocks). The application
//! answers with typed values (`board::Status`, `cycle::CycleReport`, `backtest::Backtest`,
//! `query::QueryAnswer`); the words for the domain's own values (an incident's history, a
//! regression's account) come from `crate::words`.

mod backtest_report;
mod cycle_report;
mod query_answer;
mod status;

pub use backtest_report::backtest;
pub use cycle_report::cycle_report;
pub(crate) use query_answer::query_answer;
pub use status::{explain, status};
pub(crate) use status::{incident_line, incident_table, resolved_words};
