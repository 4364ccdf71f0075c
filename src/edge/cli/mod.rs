//! The command line: `sheriff <command>`. Each command loads the settings once, opens what it
//! needs and calls into the library; output for scripts is `--format json` on stdout, logs go
//! to stderr.
//!
//! This file holds the entry point and the dispatch of each command; `args.rs` the command
//! line's grammar, and one file per group of commands the rest. `sheriff bench` is no command
//! of the library: the binary adds it (`src/main.rs`, `src/bench/`).

use std::process::ExitCode;

use anyhow::Result;
use chrono::Utc;
use clap::{Parser, Subcommand};

use crate::adapters::ingest::IngestOptions;
use crate::application::board;
use crate::config::Settings;
use crate::store::Store;

mod args;
mod evaluation;
mod incidents;
mod ingest;
mod outbox;
mod service;

use args::Cli;
pub use args::{
    Command, ConfigAction, Format, IncidentsAction, OutboxAction, ThresholdsAction, parse_class,
};
use evaluation::{backtest, evaluate};
use incidents::incidents_on;
use ingest::{backfill, import_thresholds, ingest_runs};
use outbox::outbox;
use service::{config_check, healthcheck, migrate, serve};

/// Exit code for a bad configuration or command line (clap uses 2 for usage errors too).
const EXIT_CONFIG: u8 = 2;

/// Entry point of the binary, whose commands are `C`: the product's [`Command`]s and what the
/// binary adds of its own (`sheriff bench`). Parses the command line, loads the settings,
/// starts logging and the async runtime, and hands the command to `run_command` (which sends
/// the product's commands to [`run`]); the exit code is its, or says what stopped it.
pub fn main<C: Subcommand>(
    run_command: impl AsyncFnOnce(C, Settings) -> Result<ExitCode>,
) -> ExitCode {
    end_quietly_when_stdout_is_closed();
    crate::init_crypto();
    let cli = Cli::<C>::parse();
    let settings = match Settings::load(cli.config.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sheriff: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    crate::support::telemetry::init(&settings.log);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sheriff: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run_command(cli.command, settings)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sheriff: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A reader that stops reading (`sheriff incidents list | head`) ends the process quietly with
/// the status a SIGPIPE gives (141), as other Unix tools end. The standard library ignores
/// SIGPIPE, so `println!` panics on the broken pipe instead; restoring the signal would take
/// `unsafe` (forbidden here), so the panic is caught at the hook.
fn end_quietly_when_stdout_is_closed() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map_or("", String::as_str);
        if text.starts_with("failed printing to stdout") && text.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

/// Runs one of the product's commands with loaded settings.
pub async fn run(command: Command, settings: Settings) -> Result<ExitCode> {
    match command {
        Command::Config {
            action: ConfigAction::Check { format },
        } => Ok(config_check(&settings, format)),
        Command::Migrate => migrate(&settings).await,
        Command::Ingest {
            source,
            from: Some(from),
            to,
            format,
            ..
        } => backfill(&settings, &source, from, to, format).await,
        Command::Ingest {
            source,
            since,
            job,
            force,
            format,
            ..
        } => {
            let options = IngestOptions {
                since,
                job,
                force,
                progress: format == Format::Text,
            };
            ingest_runs(&settings, &source, &options, format).await
        }
        Command::Serve { cycle_now } => serve(settings, cycle_now).await,
        Command::Healthcheck { url } => healthcheck(&settings, url).await,
        Command::Evaluate {
            at,
            format,
            dry_run,
        } => evaluate(&settings, at, format, dry_run).await,
        Command::Backtest {
            from,
            to,
            every,
            cron,
            against,
            format,
        } => {
            backtest(
                &settings,
                (from, to),
                every.as_deref(),
                cron.as_deref(),
                against.as_deref(),
                format,
            )
            .await
        }
        Command::Prune { dry_run, format } => prune(&settings, dry_run, format).await,
        Command::Incidents { action } => {
            with_store(&settings, async |store| {
                incidents_on(store, action, &settings).await
            })
            .await
        }
        Command::Status { format } => status(&settings, format).await,
        Command::Outbox { action } => outbox(action, &settings).await,
        Command::Query { words, format } => query(&settings, &words, format).await,
        Command::Thresholds {
            action: ThresholdsAction::Import { file },
        } => import_thresholds(&settings, &file).await,
        Command::Demo { dir, serve, world } => demo(settings, &dir, serve, world.as_deref()).await,
    }
}

/// Opens the database for one command, runs `work` and closes it whatever happened.
async fn with_store<T>(
    settings: &Settings,
    work: impl AsyncFnOnce(&Store) -> Result<T>,
) -> Result<T> {
    let store = Store::open_configured(settings).await?;
    let result = work(&store).await;
    store.close().await;
    result
}

/// `prune`: deletes (or with `dry_run` counts) what is older than the retention settings.
async fn prune(settings: &Settings, dry_run: bool, format: Format) -> Result<ExitCode> {
    let now = Utc::now().timestamp();
    let prune = async |store: &Store| {
        crate::application::scheduler::prune(store, settings, now, dry_run).await
    };
    let r = with_store(settings, prune).await?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&r)?),
        Format::Text => println!(
            "{} {} runs ({} samples) and {} day histograms older than {} days; interval evidence of {} runs older than {} days; kept {} old runs that open incidents name",
            if dry_run { "would delete" } else { "deleted" },
            r.runs,
            r.samples,
            r.cell_days,
            settings.retention.samples_days,
            r.interval_runs,
            settings.retention.intervals_days,
            r.kept_for_incidents
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// `status`: open incidents, silences and the outbox at a glance.
async fn status(settings: &Settings, format: Format) -> Result<ExitCode> {
    let status = with_store(settings, async |store| {
        Ok(board::status(store, Utc::now().timestamp()).await?)
    })
    .await?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&status)?),
        Format::Text => print!("{}", crate::edge::text::status(&status)),
    }
    Ok(ExitCode::SUCCESS)
}

/// `demo`: a generated month (or `world`) ingested and evaluated in `dir`, then with `serve`
/// its pages.
async fn demo(
    mut settings: Settings,
    dir: &std::path::Path,
    serve: bool,
    world: Option<&[crate::synth::world::Class]>,
) -> Result<ExitCode> {
    let mut stdout = std::io::stdout();
    if serve && settings.server.public_url.is_empty() {
        settings.server.public_url = format!("http://{}", settings.server.listen);
    }
    crate::edge::demo::run(dir, &settings, world, &mut stdout).await?;
    if serve {
        crate::edge::demo::serve(dir, &settings, crate::support::shutdown::signal()).await?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn query(settings: &Settings, words: &[String], format: Format) -> Result<ExitCode> {
    let command =
        crate::edge::server::slack::command::parse(&format!("query {}", words.join(" ")))?;
    let crate::edge::server::slack::command::Command::Query(q) = command else {
        anyhow::bail!("not a query");
    };
    let answer = with_store(settings, async |store| {
        let kept = crate::application::warm::Queries::default();
        Ok(crate::application::query::answer(
            store,
            &kept,
            &settings.evaluate,
            &q,
            Utc::now().timestamp(),
        )
        .await?)
    })
    .await?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&answer)?),
        Format::Text if !answer.known_backend => {
            eprintln!("sheriff: {}", crate::edge::text::query_answer(&answer).0);
            return Ok(ExitCode::FAILURE);
        }
        Format::Text => {
            let (title, table) = crate::edge::text::query_answer(&answer);
            println!("{title}\n{table}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub use crate::application::board::incident_json;
