//! `sheriff bench`'s grammar: the clap types of each benchmark and its options, with their help
//! text.

use std::path::PathBuf;

use clap::Subcommand;
use sheriff::edge::cli::{Format, parse_class};
use sheriff::synth::world::Class;

/// The generated month a benchmark measures: about a million samples by default.
#[derive(Debug, clap::Args)]
pub struct BenchData {
    /// Runs to generate over 28 days.
    #[arg(long, default_value_t = 35_000)]
    pub runs: usize,
    /// Distinct combinations of dimensions (jobs).
    #[arg(long, default_value_t = 384)]
    pub variants: usize,
    #[arg(long, default_value_t = 30)]
    pub backends: usize,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Ingest throughput from a generated local tree: runs/s and MB/s of interval files.
    Ingest {
        /// Runs to generate.
        #[arg(long, default_value_t = 2000)]
        runs: usize,
        /// Unrelated intervals per events file (their bulk is what makes interval files big).
        #[arg(long, default_value_t = 1000)]
        noise: usize,
        /// Database to ingest into (an empty one); default a fresh SQLite file.
        #[arg(long)]
        database_url: Option<String>,
        /// Keep the generated tree in this folder.
        #[arg(long)]
        keep: Option<PathBuf>,
    },
    /// One evaluation cycle over about a million samples, on SQLite and (with
    /// --postgres-url) PostgreSQL, against PostgreSQL's percentile_cont and (with --duckdb)
    /// DuckDB's quantile_cont; at each --days of history with the same runs per day.
    Evaluate {
        #[command(flatten)]
        data: BenchData,
        /// Days of stored history, repeatable (`--days 28 --days 120`); --runs is per 28 days.
        #[arg(long, default_values_t = [28])]
        days: Vec<u32>,
        /// Also time DuckDB's quantile_cont over the same samples (needs `pip install duckdb`).
        #[arg(long)]
        duckdb: bool,
        /// Timed cycles per engine; the best is reported.
        #[arg(long, default_value_t = 3)]
        repeat: usize,
        /// An empty PostgreSQL database to load and measure as well (at the first --days).
        #[arg(long)]
        postgres_url: Option<String>,
        /// Keep the SQLite databases as `<this>-<days>d.db` (reused when they hold the data).
        #[arg(long)]
        sqlite: Option<PathBuf>,
    },
    /// The pages' server time over the evaluation benchmark's data (about a million samples):
    /// an incident page (first and repeated), `/` and the incident's JSON.
    Page {
        #[command(flatten)]
        data: BenchData,
        #[arg(long, default_value_t = 20)]
        repeat: usize,
        /// Keep the SQLite database in this file (reused when it already holds the data).
        #[arg(long)]
        sqlite: Option<PathBuf>,
    },
    /// `sheriff backtest` over generated months at the evaluation benchmark's density: 90 days
    /// at 4 cycles a day, against the same cycles reading the database.
    Backtest {
        /// Runs per 28 days (35,000 runs × 30 backends is about a million samples).
        #[arg(long, default_value_t = 35_000)]
        runs_per_28_days: usize,
        #[arg(long, default_value_t = 90)]
        days: u32,
        /// Cycles timed reading the database, spread over the backtest's ticks.
        #[arg(long, default_value_t = 8)]
        peer_cycles: usize,
        /// Keep the SQLite database in this file (reused when it already holds the data).
        #[arg(long)]
        sqlite: Option<PathBuf>,
    },
    /// Detection quality on worlds calibrated from origin's real disruption table: precision and
    /// false regressions, recall with exact scope, detection and recovery latency, sample
    /// purity and the onset payload window, per failure class and overall, with sheriff's
    /// default settings (or `--config`'s). `--check` exits 1 when below the floors.
    Quality {
        /// Worlds to build and replay (seed i holds mix i of the selected classes).
        #[arg(long, default_value_t = 20)]
        seeds: usize,
        /// The first world's index: worlds first..first+seeds (seed 1000 + i), to replay one again.
        #[arg(long, default_value_t = 0)]
        first: usize,
        /// A failure class to include, repeatable (default all): seed_case, new_job, heavy_tail,
        /// ci_infra, narrow_scope, quiet, onset_fix, growing, untested_onset.
        #[arg(long = "scenario", value_name = "NAME", value_parser = parse_class)]
        scenarios: Vec<Class>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Exit 1 when the scorecard is below the floors.
        #[arg(long)]
        check: bool,
        /// Keep each world's store and its runs' truth in this folder (`world-<seed>.db`,
        /// `world-<seed>.truth.jsonl`), to look into a result with `sheriff query` or SQL.
        #[arg(long, value_name = "DIR")]
        keep: Option<std::path::PathBuf>,
        /// Score the `[evaluate]` section of this configuration file instead of sheriff's
        /// defaults, to see a setting's effect before changing it (its other sections and the
        /// environment are not read).
        #[arg(long, value_name = "FILE")]
        config: Option<std::path::PathBuf>,
    },
    /// `/sheriff query` over about a million samples: direct answers, then signed HTTP requests
    /// from concurrent clients on 127.0.0.1 while evaluation cycles run; p50/p99 and errors.
    Query {
        #[command(flatten)]
        data: BenchData,
        /// HTTP requests in all.
        #[arg(long, default_value_t = 5_000)]
        requests: usize,
        /// Clients sending at once.
        #[arg(long, default_value_t = 50)]
        concurrency: usize,
        /// A new run is written this often during the load (each write empties the query cache).
        #[arg(long, default_value_t = 1000)]
        write_every_ms: u64,
        /// Database to load and query (an empty one); default a fresh SQLite file.
        #[arg(long)]
        database_url: Option<String>,
    },
}
