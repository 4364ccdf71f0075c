//! The command line: `sheriff <command>`. Each command loads the settings once, opens what it
//! needs and calls into the library; output for scripts is `--format json` on stdout, logs go
//! to stderr.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
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
        /// A local folder in the bucket layout (the bucket root, a logs/<job> folder or one run
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
    }
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
