//! The command line: `sheriff <command>`. Each command loads the settings once, opens what it
//! needs and calls into the library; output for scripts is `--format json` on stdout, logs go
//! to stderr.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};

use crate::config::Settings;
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
