//! The command line: `sheriff <command>`. Each command loads the settings once, opens what it
//! needs and calls into the library; output for scripts is `--format json` on stdout, logs go
//! to stderr.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};

use chrono::{DateTime, Utc};

use crate::config::Settings;
use crate::ingest::{IngestOptions, IngestSummary, Source};
use crate::store::Store;

#[derive(Debug, Parser)]
#[command(name = "sheriff", version, about = "Triages CI disruption regressions")]
pub struct Cli {
    /// Configuration file (default: config/sheriff.toml when it exists).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Apply database migrations (also done automatically by every other command).
    Migrate,
    /// Read finished job runs from a bucket tree (a local folder or gs://BUCKET/PREFIX) and store them.
    Ingest {
        /// A local folder in the bucket layout (the bucket root, a `logs/<job>` folder or one run
        /// folder), or gs://BUCKET/PREFIX.
        source: String,
        /// Only runs that started on or after this date (YYYY-MM-DD) or time (RFC 3339).
        #[arg(long, value_parser = parse_since)]
        since: Option<DateTime<Utc>>,
        /// Only jobs whose name matches this regular expression.
        #[arg(long, value_name = "REGEX")]
        job: Option<regex::Regex>,
        /// Re-read runs already stored and replace them.
        #[arg(long)]
        force: bool,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Run one evaluation cycle: which groups regressed.
    Evaluate {
        /// Evaluate as of this time (RFC 3339); default now.
        #[arg(long, value_parser = parse_time)]
        at: Option<DateTime<Utc>>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Evaluate and print, but record nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Manage the CI suite's historical thresholds.
    Thresholds {
        #[command(subcommand)]
        action: ThresholdsAction,
    },
    /// The quick start: generate a month of CI data with a planted regression, ingest it into a
    /// fresh SQLite file, evaluate, and show what sheriff finds. No network, no service.
    Demo {
        /// Folder for the generated data and the demo database.
        #[arg(long, default_value = "demo")]
        dir: PathBuf,
    },
    /// Serve the HTTP API (push ingest, health) until ctrl-c or SIGTERM.
    Serve,
    /// Exit 0 when `sheriff serve` answers /healthz (for container health checks).
    Healthcheck {
        /// Base URL to probe; default http://<server.listen>.
        #[arg(long)]
        url: Option<String>,
    },
    /// Measure sheriff on generated data (use a release build).
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum ThresholdsAction {
    /// Replace the historical table with a query_results.json (any of its schema generations).
    Import { file: PathBuf },
}

fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| format!("`{text}` is not an RFC 3339 time (e.g. 2026-11-29T00:00:00Z): {e}"))
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
    /// --postgres-url) PostgreSQL, against PostgreSQL's percentile_cont.
    Evaluate {
        #[arg(long, default_value_t = 35_000)]
        runs: usize,
        /// Distinct combinations of dimensions (jobs).
        #[arg(long, default_value_t = 384)]
        variants: usize,
        #[arg(long, default_value_t = 30)]
        backends: usize,
        /// Timed cycles per engine; the best is reported.
        #[arg(long, default_value_t = 3)]
        repeat: usize,
        /// An empty PostgreSQL database to load and measure as well.
        #[arg(long)]
        postgres_url: Option<String>,
        /// Keep the SQLite database in this file (reused when it already holds the data).
        #[arg(long)]
        sqlite: Option<PathBuf>,
    },
}

fn parse_since(text: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
        .map_err(|_| format!("`{text}` is neither a date (YYYY-MM-DD) nor an RFC 3339 time"))
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Validate the configuration and print the effective settings, secrets redacted.
    Check {
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

/// How a command prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// Exit code for a bad configuration or command line (clap uses 2 for usage errors too).
const EXIT_CONFIG: u8 = 2;

/// Entry point of the binary.
pub fn main() -> ExitCode {
    crate::init_crypto();
    let cli = Cli::parse();
    let settings = match Settings::load(cli.config.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sheriff: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    crate::telemetry::init(&settings.log);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sheriff: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli.command, settings)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sheriff: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs one command with loaded settings.
pub async fn run(command: Command, settings: Settings) -> Result<ExitCode> {
    match command {
        Command::Config { action: ConfigAction::Check { format } } => {
            config_check(&settings, format);
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate => {
            let store = Store::connect(&settings.database).await?;
            let report = store.migrate().await?;
            if report.applied.is_empty() {
                println!(
                    "{}: schema already at version {}; nothing to apply",
                    settings.database.url, report.current
                );
            } else {
                println!(
                    "{}: applied {} migration(s) {:?}; schema at version {}",
                    settings.database.url,
                    report.applied.len(),
                    report.applied,
                    report.current
                );
            }
            store.close().await;
            Ok(ExitCode::SUCCESS)
        }
        Command::Ingest { source, since, job, force, format } => {
            let source = Source::parse(&source, &settings.gcs)?;
            let store = Store::open(&settings.database).await?;
            let options = IngestOptions { since, job, force, progress: format == Format::Text };
            let summary = crate::ingest::ingest(&store, &settings.ingest, &source, &options).await;
            store.close().await;
            print_ingest_summary(&summary?, format);
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve => serve(settings).await,
        Command::Healthcheck { url } => {
            let base = url.unwrap_or_else(|| {
                format!("http://{}", settings.server.listen.replace("0.0.0.0", "127.0.0.1"))
            });
            let client = reqwest::Client::builder().timeout(std::time::Duration::from_secs(3)).build()?;
            let response = client.get(format!("{}/healthz", base.trim_end_matches('/'))).send().await;
            match response {
                Ok(r) if r.status().is_success() => Ok(ExitCode::SUCCESS),
                Ok(r) => {
                    eprintln!("sheriff: {base}/healthz answered {}", r.status());
                    Ok(ExitCode::FAILURE)
                }
                Err(e) => {
                    eprintln!("sheriff: {base}/healthz: {e}");
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        Command::Evaluate { at, format, dry_run } => {
            let store = Store::open(&settings.database).await?;
            let options = crate::cycle::CycleOptions { at: at.unwrap_or_else(Utc::now), dry_run };
            let report = crate::cycle::run_cycle(&store, &settings, options).await;
            store.close().await;
            let report = report?;
            match format {
                Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
                Format::Text => print!("{}", crate::cycle::render_text(&report)),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Thresholds { action: ThresholdsAction::Import { file } } => {
            let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let rows = crate::ingest::formats::query_results::parse_query_results(&bytes)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            let store = Store::open(&settings.database).await?;
            store.import_thresholds(&rows, &file.display().to_string()).await?;
            store.close().await;
            let generation = if rows.iter().any(|r| r.p50.is_some()) {
                "current (P50/P75/P95/P99, MasterNodesUpdated)"
            } else if rows.iter().any(|r| r.job_runs.is_some()) {
                "4.13 (JobRuns, P95/P99)"
            } else {
                "oldest (P95/P99 only)"
            };
            println!("imported {} rows from {} (schema: {generation})", rows.len(), file.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo { dir } => {
            let mut stdout = std::io::stdout();
            crate::demo::run(&dir, &settings, &mut stdout).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { what: BenchCommand::Ingest { runs, noise, database_url, keep } } => {
            let result = crate::bench::ingest(runs, noise, database_url.as_deref(), keep).await?;
            println!(
                "ingest: {} runs, {:.1} MB of interval files, in {:.2} s on {}: {:.0} runs/s, {:.1} MB/s (generating took {:.1} s)",
                result.runs,
                result.interval_mb,
                result.ingest_seconds,
                result.engine,
                result.runs_per_second,
                result.interval_mb_per_second,
                result.generate_seconds
            );
            println!("{}", serde_json::to_string(&result).unwrap_or_default());
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench {
            what: BenchCommand::Evaluate { runs, variants, backends, repeat, postgres_url, sqlite },
        } => {
            let r = crate::bench::evaluate(
                runs,
                variants,
                backends,
                repeat,
                postgres_url.as_deref(),
                sqlite.as_deref(),
            )
            .await?;
            println!(
                "evaluate: {} runs, {} samples, {} cells with runs, {} groups judged, {} regression(s) found",
                r.runs, r.samples, r.cells, r.groups, r.regressions
            );
            for (engine, s) in &r.load_seconds {
                println!("  load into {engine}: {s:.1} s");
            }
            for (engine, s) in &r.cycle_seconds {
                println!("  one evaluation cycle on {engine}: {s:.3} s (best of {repeat})");
            }
            if let Some(pg) = r.postgres_percentile_cont_seconds {
                println!("  PostgreSQL percentile_cont GROUP BY over the raw samples: {pg:.3} s");
                for (engine, s) in &r.cycle_seconds {
                    println!("  ratio percentile_cont / sheriff on {engine}: {:.1}x", pg / s);
                }
            }
            println!("{}", serde_json::to_string(&r).unwrap_or_default());
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn serve(settings: Settings) -> Result<ExitCode> {
    let store = Arc::new(Store::open(&settings.database).await?);
    let listener = tokio::net::TcpListener::bind(&settings.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", settings.server.listen))?;
    let state = crate::server::AppState { store: store.clone(), settings: Arc::new(settings) };
    crate::server::serve(listener, state, crate::server::shutdown_signal()).await?;
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

fn print_ingest_summary(summary: &IngestSummary, format: Format) {
    match format {
        Format::Json => println!("{}", serde_json::to_string(summary).unwrap_or_default()),
        Format::Text => {
            println!("ingested {}, skipped {}, failed {}", summary.ingested, summary.skipped, summary.failed);
            let shown = 10;
            for e in summary.errors.iter().take(shown) {
                let file = if e.file.is_empty() { String::new() } else { format!(" {}", e.file) };
                println!("  {} {}{}: {}", e.severity, e.run, file, e.error);
            }
            if summary.errors.len() > shown {
                println!(
                    "  … and {} more (sheriff ingest --format json lists them all)",
                    summary.errors.len() - shown
                );
            }
        }
    }
}

fn config_check(settings: &Settings, format: Format) {
    match format {
        Format::Text => {
            println!("# configuration is valid; effective settings (secrets redacted):");
            print!("{}", settings.to_redacted_toml());
        }
        Format::Json => {
            let value = serde_json::json!({ "valid": true, "settings": settings });
            println!("{value}");
        }
    }
}
