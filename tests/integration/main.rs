//! sheriff's integration tests, in one binary so the fakes and the library are compiled and
//! linked once: each module starts what it needs (a fresh database on SQLite and PostgreSQL,
//! the fake GCS, Slack and Jira under `common/`, or the `sheriff` binary itself).

#[macro_use]
mod common;

mod architecture;
mod bigquery;
mod bigquery_intervals;
mod cli;
mod evaluate;
mod fixes;
mod fuzz;
mod history;
mod incidents;
mod ingest;
mod mechanism;
mod on_demand_evidence;
mod pages;
mod payloads;
mod push;
mod quality;
mod retention;
mod serve;
mod slack;
mod storage_faults;
mod store;
mod windows;
mod world;
