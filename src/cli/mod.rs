//! The command line: `sheriff <command>`. Each command loads the settings once, opens what it
//! needs and calls into the library; output for scripts is `--format json` on stdout, logs go
//! to stderr.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};

use chrono::{DateTime, Utc};

use crate::board;
use crate::config::Settings;
use crate::ingest::{IngestOptions, IngestSummary, Source};
use crate::model::{DAY, HOUR};
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
        /// bq:// only: fill the day histograms of whole days from BigQuery's counts, without
        /// storing the runs (docs/commands.md, "Backfill"); needs --from.
        #[arg(long, requires = "from", conflicts_with_all = ["since", "job", "force"])]
        backfill: bool,
        /// The backfill's first day (YYYY-MM-DD, UTC).
        #[arg(long, value_parser = parse_since, requires = "backfill")]
        from: Option<DateTime<Utc>>,
        /// The day after the backfill's last (YYYY-MM-DD, UTC); default the last day that
        /// ended bigquery.overlap_hours ago.
        #[arg(long, value_parser = parse_since, requires = "backfill")]
        to: Option<DateTime<Utc>>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Run one evaluation cycle: which groups regressed.
    Evaluate {
        /// Evaluate as of this time: a date (2026-12-01, the day's start in UTC) or an RFC 3339
        /// time; default now.
        #[arg(long, value_parser = parse_since)]
        at: Option<DateTime<Utc>>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Evaluate and print, but record nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Replay evaluation cycles over the stored runs and tell what sheriff would have said: each
    /// incident's opening, onset, scope history, resolution and notifications. Writes nothing
    /// to the live incidents, silences or outbox.
    Backtest {
        /// The first cycle's time (RFC 3339 or YYYY-MM-DD).
        #[arg(long, value_parser = parse_since)]
        from: DateTime<Utc>,
        /// The end, exclusive (RFC 3339 or YYYY-MM-DD).
        #[arg(long, value_parser = parse_since)]
        to: DateTime<Utc>,
        /// A cycle every so long (90m, 6h, 1d); default the schedule's cron.
        #[arg(long, conflicts_with = "cron")]
        every: Option<String>,
        /// A cron expression for the cycles (read in schedule.timezone).
        #[arg(long)]
        cron: Option<String>,
        /// A second configuration to replay too; the difference is printed.
        #[arg(long, value_name = "FILE")]
        against: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Delete what `[retention]` no longer keeps: runs and their samples older than
    /// retention.samples_days, interval evidence older than retention.intervals_days (the
    /// sample runs of open incidents stay). `serve` does it daily.
    Prune {
        /// Count what would go, delete nothing.
        #[arg(long)]
        dry_run: bool,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Incidents: list, show, resolve, not a regression, silence, unsilence, acknowledge, accept.
    Incidents {
        #[command(subcommand)]
        action: IncidentsAction,
    },
    /// Open incidents, silences and the outbox (pending, retrying, dead) at a glance.
    Status {
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// The outbox of Slack and Jira side effects.
    Outbox {
        #[command(subcommand)]
        action: OutboxAction,
    },
    /// Answer a query as the slash command does: `sheriff query image-registry-new-connections
    /// release=4.14 platform=metal window=7d`.
    Query {
        #[arg(required = true, num_args = 1.., value_name = "TEXT")]
        words: Vec<String>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Manage the CI suite's historical reference table (origin's levels a group is compared with).
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
        /// Then serve the pages on the demo's data (at `server.listen`) until ctrl-c.
        #[arg(long)]
        serve: bool,
        /// Use a world calibrated from origin's real disruption table instead of the demo month,
        /// holding these failure classes (default seed_case), e.g. `--world seed_case ci_infra`.
        #[arg(long, value_name = "CLASS", num_args = 0.., value_parser = parse_class)]
        world: Option<Vec<crate::synth::world::Class>>,
    },
    /// Run as a service until ctrl-c or SIGTERM: the pages, the HTTP API, the scheduled cycles
    /// and ingests, and the delivery to Slack and Jira.
    ///
    /// The pages and the HTTP API (Slack's slash command and buttons, push ingest, health,
    /// metrics) at server.listen; evaluation cycles on schedule.evaluate (default every 6
    /// hours), the ingests of schedule.ingest and daily pruning; and the outbox worker that
    /// posts to Slack and files in Jira. At start it logs its schedules with their next ticks
    /// and which integrations are on; it refuses to start with a half-configured Slack or Jira
    /// (see `config check`).
    Serve {
        /// Also run an evaluation cycle at start, rather than first at the next scheduled tick.
        #[arg(long)]
        cycle_now: bool,
    },
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
pub enum IncidentsAction {
    /// Every incident (or those in one state), newest first.
    List {
        /// new, ongoing, stale, resolved, reopened, or open (all but resolved).
        #[arg(long)]
        state: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// One incident with its attribution, evidence and history.
    Show {
        /// Its number (12 or #12) or fingerprint.
        incident: String,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Resolve an incident by hand; Slack and Jira are told who did and why.
    Resolve {
        incident: String,
        /// Why: recorded in its history and told to Slack and Jira. Required; asked for when
        /// missing and the input is a terminal.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Mark an incident not a regression: resolved with the reason (Slack and Jira are told)
    /// and its fingerprint silenced for 30 days, as Slack's button does.
    NotARegression {
        incident: String,
        /// Why it is not a regression.
        #[arg(long)]
        reason: String,
    },
    /// Hold notifications of an incident, or of a matcher such as
    /// `backend=image-registry-* platform=metal`, for a while.
    Silence {
        #[arg(required = true, num_args = 1.., value_name = "INCIDENT|KEY=VALUE")]
        target: Vec<String>,
        /// How long: 90m, 24h, 7d, 2w.
        #[arg(long = "for", value_name = "DURATION")]
        duration: String,
        #[arg(long)]
        reason: String,
    },
    /// End silences: a silence number, or an incident's silences.
    Unsilence { reference: String },
    /// Acknowledge an incident.
    Ack { incident: String },
    /// Accept a level on purpose: the incident stays quiet while its level is within it (plus
    /// the minimum effect) and re-alerts above it. The reference is not raised.
    Accept {
        incident: String,
        /// The accepted level, e.g. "P50<=20s".
        #[arg(long)]
        level: String,
        /// When it lapses: a date (2026-12-15), a time (RFC 3339) or a span (14d); a reminder
        /// goes to the thread 2 days before.
        #[arg(long)]
        until: Option<String>,
        #[arg(long)]
        reason: String,
        /// The Jira issue that records the decision, if any.
        #[arg(long)]
        jira: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum OutboxAction {
    /// Entries in a state: pending, dead or done.
    List {
        #[arg(long, default_value = "dead")]
        state: String,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Put dead-lettered entries back in the queue: one by number, or all of them.
    Retry {
        id: Option<i64>,
        #[arg(long, conflicts_with = "id")]
        all: bool,
    },
    /// Deliver what is due now (what `sheriff serve` does continuously).
    Deliver,
}

#[derive(Debug, Subcommand)]
pub enum ThresholdsAction {
    /// Replace the historical table with a query_results.json (any of its schema generations).
    Import { file: PathBuf },
}

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
    /// default settings. `--check` exits 1 when below the floors.
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
        scenarios: Vec<crate::synth::world::Class>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Exit 1 when the scorecard is below the floors.
        #[arg(long)]
        check: bool,
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

fn parse_class(text: &str) -> Result<crate::synth::world::Class, String> {
    crate::synth::world::Class::parse(text).ok_or_else(|| {
        let names: Vec<&str> = crate::synth::world::Class::ALL.iter().map(|c| c.as_str()).collect();
        format!("`{text}` is not a failure class; one of: {}", names.join(", "))
    })
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
    end_quietly_when_stdout_is_closed();
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

/// A reader that stops reading (`sheriff incidents list | head`) ends the process quietly with
/// the status a SIGPIPE gives (141), as other Unix tools end. The standard library ignores
/// SIGPIPE, so `println!` panics on the broken pipe instead; restoring the signal would take
/// `unsafe` (forbidden here), so the panic is caught at the hook.
fn end_quietly_when_stdout_is_closed() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info.payload().downcast_ref::<String>().map_or("", String::as_str);
        if text.starts_with("failed printing to stdout") && text.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

/// Runs one command with loaded settings.
pub async fn run(command: Command, settings: Settings) -> Result<ExitCode> {
    match command {
        Command::Config { action: ConfigAction::Check { format } } => Ok(config_check(&settings, format)),
        Command::Migrate => migrate(&settings).await,
        Command::Ingest { source, from: Some(from), to, format, .. } => {
            backfill(&settings, &source, from, to, format).await
        }
        Command::Ingest { source, since, job, force, format, .. } => {
            let source = Source::parse(&source, &settings)?;
            let options = IngestOptions { since, job, force, progress: format == Format::Text };
            let summary = with_store(&settings, async |store| {
                crate::ingest::ingest(store, &settings.ingest, &source, &options).await
            })
            .await?;
            print_ingest_summary(&summary, format);
            // 2: some runs could not be stored for sheriff's own reasons (a retry may store them);
            // runs refused for bad files are reported, not an exit status.
            Ok(if summary.storage_failed > 0 { ExitCode::from(2) } else { ExitCode::SUCCESS })
        }
        Command::Serve { cycle_now } => serve(settings, cycle_now).await,
        Command::Healthcheck { url } => healthcheck(&settings, url).await,
        Command::Evaluate { at, format, dry_run } => evaluate(&settings, at, format, dry_run).await,
        Command::Backtest { from, to, every, cron, against, format } => {
            backtest(&settings, (from, to), every.as_deref(), cron.as_deref(), against.as_deref(), format)
                .await
        }
        Command::Prune { dry_run, format } => {
            let now = Utc::now().timestamp();
            let prune = async |store: &Store| crate::scheduler::prune(store, &settings, now, dry_run).await;
            let r = with_store(&settings, prune).await?;
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
        Command::Incidents { action } => {
            with_store(&settings, async |store| incidents_on(store, action, &settings).await).await
        }
        Command::Status { format } => {
            let status =
                with_store(&settings, async |store| board::status(store, Utc::now().timestamp()).await)
                    .await?;
            match format {
                Format::Json => println!("{}", serde_json::to_string_pretty(&status)?),
                Format::Text => print!("{}", board::render_status(&status)),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Outbox { action } => outbox(action, &settings).await,
        Command::Query { words, format } => query(&settings, &words, format).await,
        Command::Thresholds { action: ThresholdsAction::Import { file } } => {
            import_thresholds(&settings, &file).await
        }
        Command::Demo { dir, serve, world } => {
            let mut stdout = std::io::stdout();
            let mut settings = settings;
            if serve && settings.server.public_url.is_empty() {
                settings.server.public_url = format!("http://{}", settings.server.listen);
            }
            crate::demo::run(&dir, &settings, world.as_deref(), &mut stdout).await?;
            if serve {
                crate::demo::serve(&dir, &settings, crate::shutdown::signal()).await?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { what } => bench(what).await,
    }
}

/// Opens the database for one command, runs `work` and closes it whatever happened.
/// `ingest bq://… --backfill`: the day histograms of `from..to` from BigQuery's counts.
async fn backfill(
    settings: &Settings,
    source: &str,
    from: DateTime<Utc>,
    to: Option<DateTime<Utc>>,
    format: Format,
) -> Result<ExitCode> {
    let Source::BigQuery(dataset) = Source::parse(source, settings)? else {
        anyhow::bail!("--backfill reads a BigQuery dataset (bq://PROJECT/DATASET), not `{source}`");
    };
    let to = to.unwrap_or_else(|| {
        let end = Utc::now().timestamp() - i64::from(dataset.overlap_hours) * HOUR;
        DateTime::from_timestamp(end.div_euclid(DAY) * DAY, 0).unwrap_or_default()
    });
    let summary = with_store(settings, async |store| {
        crate::ingest::bigquery::backfill::backfill(store, &dataset, from, to).await
    })
    .await?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&summary)?),
        Format::Text => println!(
            "backfilled {} from {} to {} (exclusive): {} rows read, {} samples into {} variant-days, {} of CI-troubled runs left out, in {:.1} s",
            summary.source,
            summary.from,
            summary.to,
            summary.rows,
            summary.report.samples,
            summary.report.variant_days,
            summary.report.troubled_samples,
            summary.seconds
        ),
    }
    Ok(ExitCode::SUCCESS)
}

async fn with_store<T>(settings: &Settings, work: impl AsyncFnOnce(&Store) -> Result<T>) -> Result<T> {
    let store = Store::open_configured(settings).await?;
    let result = work(&store).await;
    store.close().await;
    result
}

async fn migrate(settings: &Settings) -> Result<ExitCode> {
    let store = Store::connect(&settings.database).await?;
    let report = store.migrate().await;
    store.close().await;
    let report = report?;
    if report.applied.is_empty() {
        println!("{}: schema already at version {}; nothing to apply", settings.database.url, report.current);
    } else {
        println!(
            "{}: applied {} migration(s) {:?}; schema at version {}",
            settings.database.url,
            report.applied.len(),
            report.applied,
            report.current
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn healthcheck(settings: &Settings, url: Option<String>) -> Result<ExitCode> {
    let base =
        url.unwrap_or_else(|| format!("http://{}", settings.server.listen.replace("0.0.0.0", "127.0.0.1")));
    let client = crate::http::client_builder(std::time::Duration::from_secs(3)).build()?;
    match client.get(format!("{}/healthz", base.trim_end_matches('/'))).send().await {
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

async fn evaluate(
    settings: &Settings,
    at: Option<DateTime<Utc>>,
    format: Format,
    dry_run: bool,
) -> Result<ExitCode> {
    let store = Arc::new(Store::open_configured(settings).await?);
    let options = crate::cycle::CycleOptions { at: at.unwrap_or_else(Utc::now), dry_run };
    let report = async {
        let mut report = crate::cycle::run_cycle(&store, settings, options).await?;
        if !dry_run {
            report.delivery = Some(crate::notify::deliver_for_a_while(store.clone(), settings).await?);
        }
        anyhow::Ok(report)
    }
    .await;
    store.close().await;
    let report = report?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Format::Text => print!("{}", crate::cycle::render_text(&report)),
    }
    Ok(ExitCode::SUCCESS)
}

async fn backtest(
    settings: &Settings,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    every: Option<&str>,
    cron: Option<&str>,
    against: Option<&std::path::Path>,
    format: Format,
) -> Result<ExitCode> {
    use crate::backtest::Cadence;
    let cadence = match (every, cron) {
        (Some(e), _) => Cadence::Every(
            crate::model::parse_span(e)
                .with_context(|| format!("`--every {e}`: use a span like 90m, 6h or 1d"))?,
        ),
        (None, c) => {
            let expression = c.unwrap_or(&settings.schedule.evaluate);
            Cadence::Cron(Box::new(
                crate::cron::Schedule::parse(expression, &settings.schedule.timezone)
                    .map_err(|e| anyhow::anyhow!("`{expression}`: {e}"))?,
            ))
        }
    };
    let other = against.map(|p| Settings::load(Some(p)).map_err(|e| anyhow::anyhow!("{e}"))).transpose()?;
    let store = Arc::new(Store::open_configured(settings).await?);
    let result = async {
        let a = crate::backtest::backtest(store.clone(), settings, from, to, &cadence).await?;
        let b = match &other {
            Some(o) => Some(crate::backtest::backtest(store.clone(), o, from, to, &cadence).await?),
            None => None,
        };
        anyhow::Ok((a, b))
    }
    .await;
    store.close().await;
    let (a, b) = result?;
    let difference = b.as_ref().map(|b| crate::backtest::compare(&a, b));
    match format {
        Format::Json => {
            let mut v = serde_json::to_value(&a)?;
            if let (Some(b), Some(d)) = (&b, &difference) {
                v["against"] = serde_json::to_value(b)?;
                v["difference"] = serde_json::to_value(d)?;
            }
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        Format::Text => {
            print!("{}", crate::backtest::render_text(&a));
            if let (Some(b), Some(d)) = (&b, &difference) {
                println!("\n── against the other configuration ──");
                print!("{}", crate::backtest::render_text(b));
                println!(
                    "\nonly in the first: {}",
                    if d.only_in_a.is_empty() { "-".into() } else { d.only_in_a.join("; ") }
                );
                println!(
                    "only in the second: {}",
                    if d.only_in_b.is_empty() { "-".into() } else { d.only_in_b.join("; ") }
                );
                for t in &d.different_timing {
                    println!(
                        "timing differs: {}: opened {} / {}, resolved {:?} / {:?}",
                        t.incident, t.opened.0, t.opened.1, t.resolved.0, t.resolved.1
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn query(settings: &Settings, words: &[String], format: Format) -> Result<ExitCode> {
    let command = crate::notify::slack::command::parse(&format!("query {}", words.join(" ")))
        .map_err(anyhow::Error::msg)?;
    let crate::notify::slack::command::Command::Query(q) = command else {
        anyhow::bail!("not a query");
    };
    let answer = with_store(settings, async |store| {
        crate::query::answer(store, &settings.evaluate, &q, Utc::now().timestamp()).await
    })
    .await?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&answer)?),
        Format::Text if !answer.known_backend => {
            eprintln!("sheriff: {}", crate::query::render(&answer).0);
            return Ok(ExitCode::FAILURE);
        }
        Format::Text => {
            let (title, table) = crate::query::render(&answer);
            println!("{title}\n{table}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn import_thresholds(settings: &Settings, file: &std::path::Path) -> Result<ExitCode> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let rows = crate::ingest::formats::query_results::parse_query_results(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    with_store(settings, async |store| store.import_thresholds(&rows, &file.display().to_string()).await)
        .await?;
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

async fn bench(what: BenchCommand) -> Result<ExitCode> {
    match what {
        BenchCommand::Ingest { runs, noise, database_url, keep } => {
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
        BenchCommand::Evaluate { data, days, duckdb, repeat, postgres_url, sqlite } => {
            let shape = crate::bench::EvaluateShape {
                runs_per_28_days: data.runs,
                variants: data.variants,
                backends: data.backends,
                repeat,
                postgres_url: postgres_url.as_deref(),
                sqlite: sqlite.as_deref(),
                duckdb,
            };
            let points = crate::bench::evaluate(&shape, &days).await?;
            for r in &points {
                print_evaluate_bench(r, repeat);
            }
            print_history_ratio(&points);
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Page { data, repeat, sqlite } => {
            let r = crate::bench::page(data.runs, data.variants, data.backends, repeat, sqlite.as_deref())
                .await?;
            print_page_bench(&r);
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Backtest { runs_per_28_days, days, peer_cycles, sqlite } => {
            let r = crate::bench::backtest(runs_per_28_days, days, peer_cycles, sqlite.as_deref()).await?;
            println!(
                "backtest: {} runs, {} samples over {} days; {} cycles over the last {} days",
                r.runs, r.samples, r.stored_days, r.cycles, r.replayed_days
            );
            if let Some(s) = r.load_seconds {
                println!("  load into sqlite: {s:.1} s");
            }
            println!(
                "  backtest: {:.1} s in all, {:.1} ms a cycle, {} incident(s)",
                r.backtest_seconds, r.ms_per_cycle, r.incidents
            );
            println!(
                "  the same cycles reading the database: {:.1} ms a cycle (over {}), {:.1}x the backtest's",
                r.peer_ms_per_cycle,
                r.peer_cycles,
                r.peer_ms_per_cycle / r.ms_per_cycle
            );
            println!("{}", serde_json::to_string(&r).unwrap_or_default());
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Quality { seeds, first, scenarios, format, check } => {
            let options = crate::bench::quality::QualityOptions { seeds, first, classes: scenarios };
            quality(&options, format, check).await
        }
        BenchCommand::Query { data, requests, concurrency, write_every_ms, database_url } => {
            let BenchData { runs, variants, backends } = data;
            let shape =
                crate::bench::QueryShape { runs, variants, backends, requests, concurrency, write_every_ms };
            let r = crate::bench::query(&shape, database_url.as_deref()).await?;
            print_query_bench(&r);
            Ok(if r.errors == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
    }
}

/// `sheriff bench quality`: the scorecard, and with `check` exit 1 below the floors.
async fn quality(
    options: &crate::bench::quality::QualityOptions,
    format: Format,
    check: bool,
) -> Result<ExitCode> {
    let card = crate::bench::quality::quality(options).await?;
    match format {
        Format::Text => print!("{}", crate::bench::quality::render_text(&card)),
        Format::Json => println!("{}", serde_json::to_string_pretty(&card)?),
    }
    Ok(if check && !card.below_floors.is_empty() { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn print_page_bench(r: &crate::bench::PageBench) {
    println!(
        "page: {} samples; /incidents/{} ({} charts): first {:.1} ms, then p50 {:.1} ms, p99 {:.1} ms over {}; / p50 {:.1} ms; JSON p50 {:.1} ms",
        r.samples,
        r.incident,
        r.charts,
        r.incident_first_ms,
        r.incident_page.p50_ms,
        r.incident_page.p99_ms,
        r.incident_page.count,
        r.index.p50_ms,
        r.incident_json.p50_ms
    );
    println!("{}", serde_json::to_string(r).unwrap_or_default());
}

fn print_evaluate_bench(r: &crate::bench::EvaluateBench, repeat: usize) {
    println!(
        "evaluate, {} days of history: {} runs, {} samples, {} cells with runs, {} groups judged, {} regression(s) found",
        r.days, r.runs, r.samples, r.cells, r.groups, r.regressions
    );
    for (engine, s) in &r.load_seconds {
        println!("  load into {engine}: {s:.1} s");
    }
    for (engine, s) in &r.cycle_seconds {
        println!("  one evaluation cycle on {engine}: {s:.3} s (best of {repeat})");
    }
    for (engine, k) in &r.kept_in_memory {
        println!(
            "  windows kept in memory on {engine} (as serve runs): first cycle {:.3} s, then {:.3} s (best of {repeat}), {:.3} s after {} new runs; resident memory +{:.0} MB over the first",
            k.first,
            k.warm,
            k.after_new_runs,
            k.new_runs,
            k.resident_growth_bytes.unwrap_or(0) as f64 / 1e6
        );
    }
    if let Some(pg) = r.postgres_percentile_cont_seconds {
        println!("  PostgreSQL percentile_cont GROUP BY over the raw samples: {pg:.3} s");
        for (engine, s) in &r.cycle_seconds {
            println!("  ratio percentile_cont / sheriff on {engine}: {:.1}x", pg / s);
        }
    }
    match &r.duckdb_seconds {
        Ok(d) => {
            println!("  DuckDB quantile_cont over the raw samples (2 threads, query only): {d:.3} s");
            for (engine, s) in &r.cycle_seconds {
                println!("  ratio DuckDB / sheriff on {engine}: {:.1}x", d / s);
            }
            for (engine, k) in &r.kept_in_memory {
                println!("  ratio DuckDB / sheriff on {engine}, windows kept in memory: {:.1}x", d / k.warm);
            }
        }
        Err(why) => println!("  DuckDB: {why}"),
    }
    println!("{}", serde_json::to_string(r).unwrap_or_default());
}

/// How a cycle's cost grew with history: each length's SQLite cycles against the first's, best
/// against best, and the median of the rounds' ratios (each round times the lengths back to
/// back, so a slow spell of the machine falls on both sides of a ratio).
fn print_history_ratio(points: &[crate::bench::EvaluateBench]) {
    let plain = |r: &crate::bench::EvaluateBench| {
        let best = r.cycle_seconds.iter().find(|(e, _)| e == "sqlite")?.1;
        Some((best, r.cycle_rounds.iter().find(|(e, _)| e == "sqlite")?.1.clone()))
    };
    let warm = |r: &crate::bench::EvaluateBench| {
        let k = &r.kept_in_memory.iter().find(|(e, _)| e == "sqlite")?.1;
        Some((k.warm, k.warm_rounds.clone()))
    };
    let Some(first) = points.first() else { return };
    for p in &points[1..] {
        let mut parts = Vec::new();
        for (what, of) in [("plain cycle", &plain as &dyn Fn(_) -> _), ("serve's warm cycle", &warm)] {
            if let (Some((best0, rounds0)), Some((best, rounds))) = (of(first), of(p)) {
                parts.push(format!(
                    "{what} {:.2}x best against best, {:.2}x the median of {} rounds",
                    best / best0,
                    median_ratio(&rounds, &rounds0),
                    rounds.len().min(rounds0.len())
                ));
            }
        }
        println!(
            "history: {} days ({} samples) against {} days ({} samples) on SQLite, {:.1}x the history: {}",
            p.days,
            p.samples,
            first.days,
            first.samples,
            p.samples as f64 / first.samples.max(1) as f64,
            parts.join("; ")
        );
    }
}

/// The median of `a[k] / b[k]`.
fn median_ratio(a: &[f64], b: &[f64]) -> f64 {
    let mut ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN)
}

fn print_query_bench(r: &crate::bench::QueryBench) {
    println!("query: {} runs, {} samples on {}", r.runs, r.samples, r.engine);
    if let Some(s) = r.load_seconds {
        println!("  load: {s:.1} s");
    }
    let show = |name: &str, l: &crate::bench::Latency| {
        println!(
            "  {name}: {} answers, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            l.count, l.p50_ms, l.p99_ms, l.max_ms
        );
    };
    show("direct, first asked", &r.direct_cold);
    show("direct, asked again", &r.direct_warm);
    show(&format!("HTTP, {} clients", r.concurrency), &r.http);
    println!(
        "  {:.0} requests/s, {} error(s); meanwhile {} evaluation cycle(s) ran (after a first one of {:.2} s \
         before the load, which read the windows into memory) and {} run(s) were written",
        r.requests_per_second, r.errors, r.cycles_during_load, r.first_cycle_seconds, r.writes_during_load
    );
    println!("{}", serde_json::to_string(r).unwrap_or_default());
}

/// Who a command-line action is recorded as: `cli:$USER`, else `cli:<host name>`.
fn cli_actor() -> String {
    let user = std::env::var("USER").ok().filter(|u| !u.trim().is_empty());
    format!("cli:{}", user.unwrap_or_else(crate::process::hostname))
}

/// `sheriff incidents list`: every incident, or those in one state, newest first.
async fn list_incidents(store: &Store, state: Option<String>, format: Format) -> Result<()> {
    use crate::incidents::State;
    let wanted = match state.as_deref() {
        None => None,
        Some("open") => Some(None),
        Some(s) => Some(Some(State::parse(s).with_context(|| {
            format!("unknown state `{s}`: new, ongoing, stale, resolved, reopened or open")
        })?)),
    };
    let mut list: Vec<_> = store
        .incidents()
        .await?
        .into_iter()
        .filter(|i| match wanted {
            None => true,
            Some(None) => i.state.is_open(),
            Some(Some(s)) => i.state == s,
        })
        .collect();
    list.sort_by_key(|i| std::cmp::Reverse(i.opened_at));
    match format {
        Format::Json => {
            let rows: Vec<serde_json::Value> = list.iter().map(incident_json).collect();
            println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "incidents": rows }))?);
        }
        Format::Text if list.is_empty() => println!("no incidents"),
        Format::Text => print!("{}", board::incident_table(&list)),
    }
    Ok(())
}

/// The reason for a resolution: `--reason`, else asked for on a terminal; an error naming
/// `--reason` when there is none, so no incident is resolved without a word of why.
fn reason_given_or_asked(given: Option<String>) -> Result<String> {
    use std::io::{BufRead, IsTerminal, Write};
    let missing =
        || anyhow::anyhow!("`--reason` is required: say why, e.g. --reason \"the lab was rewired\"");
    let reason = match given {
        Some(r) => r,
        None if std::io::stdin().is_terminal() => {
            eprint!("why do you resolve it (told to Slack and Jira)? ");
            std::io::stderr().flush()?;
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            line
        }
        None => return Err(missing()),
    };
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(missing());
    }
    Ok(reason.to_string())
}

async fn incidents_on(store: &Store, action: IncidentsAction, settings: &Settings) -> Result<ExitCode> {
    let now = Utc::now().timestamp();
    match action {
        IncidentsAction::List { state, format } => list_incidents(store, state, format).await?,
        IncidentsAction::Show { incident, format } => {
            let e =
                board::explain(store, &incident).await?.with_context(|| format!("no incident {incident}"))?;
            match format {
                Format::Json => {
                    let mut v = incident_json(&e.incident);
                    v["events"] = serde_json::to_value(&e.events)?;
                    v["report"] = serde_json::to_value(&e.incident.snapshot.report)?;
                    println!("{}", serde_json::to_string_pretty(&v)?);
                }
                Format::Text => print!("{}", board::render_explain(&e)),
            }
        }
        IncidentsAction::Resolve { incident, reason } => {
            let reason = reason_given_or_asked(reason)?;
            let i = crate::actions::resolve(store, settings, &incident, &reason, &cli_actor(), now).await?;
            print!("{}", board::resolved_words(&i, &reason));
        }
        IncidentsAction::NotARegression { incident, reason } => {
            let i = crate::actions::not_a_regression(store, settings, &incident, &reason, &cli_actor(), now)
                .await?;
            println!("#{} marked not a regression: resolved, and its fingerprint silenced for 30 days", i.id);
        }
        IncidentsAction::Silence { target, duration, reason } => {
            let words: Vec<&str> = target.iter().map(String::as_str).collect();
            let target = crate::incidents::silence::Target::parse(&words).map_err(anyhow::Error::msg)?;
            let secs = crate::model::parse_span(&duration)
                .with_context(|| format!("`--for {duration}`: use a duration like 90m, 24h, 7d or 2w"))?;
            let made = crate::actions::silence(store, &target, secs, &reason, &cli_actor(), now).await?;
            let what = match &target.fingerprint {
                Some(reference) => format!("incident {reference}"),
                None => format!("matcher {}", target.describe()),
            };
            println!("silence #{}: {what} for {duration}{}", made.id, made.holds_words());
        }
        IncidentsAction::Unsilence { reference } => {
            let n = crate::actions::unsilence(store, settings, &reference, &cli_actor(), now).await?;
            println!("ended {n} silence(s)");
        }
        IncidentsAction::Accept { incident, level, until, reason, jira } => {
            let until = until.map(|u| crate::incidents::manual::parse_until(&u, now)).transpose()?;
            let a = crate::incidents::manual::Accept { level, until, reason, jira_key: jira };
            let i = crate::actions::accept(store, &incident, &a, &cli_actor(), now).await?;
            let told = i.allowance.as_ref().map_or_else(String::new, crate::model::Allowance::describe);
            println!("#{}: {told}", i.id);
        }
        IncidentsAction::Ack { incident } => {
            let (i, fresh) = crate::actions::acknowledge(store, &incident, &cli_actor(), now).await?;
            let already = if fresh { "" } else { " (already)" };
            println!("acknowledged #{} ({}){already}", i.id, i.fingerprint);
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub use crate::board::incident_json;

async fn outbox(action: OutboxAction, settings: &Settings) -> Result<ExitCode> {
    let store = Arc::new(Store::open_configured(settings).await?);
    let result: Result<()> = async {
        match action {
            OutboxAction::List { state, format } => {
                let entries = store.outbox_entries(&state, 500).await?;
                match format {
                    Format::Json => println!("{}", serde_json::to_string_pretty(&entries)?),
                    Format::Text => {
                        for e in &entries {
                            println!(
                                "#{} {} {} attempts={} {}",
                                e.id,
                                e.kind,
                                e.idempotency_key,
                                e.attempts,
                                e.last_error.as_deref().unwrap_or("")
                            );
                        }
                        let n = entries.len();
                        println!("{n} {state} {}", if n == 1 { "entry" } else { "entries" });
                    }
                }
            }
            OutboxAction::Retry { id, all } => {
                if id.is_none() && !all {
                    anyhow::bail!("name an entry number, or --all");
                }
                let n = store.retry_outbox(id, Utc::now().timestamp()).await?;
                println!("{n} {} queued again", if n == 1 { "entry" } else { "entries" });
            }
            OutboxAction::Deliver => {
                let r = crate::notify::deliver_for_a_while(store.clone(), settings).await?;
                println!("delivered {}, retrying {}, dead {}", r.delivered, r.retrying, r.dead);
            }
        }
        Ok(())
    }
    .await;
    store.close().await;
    result.map(|()| ExitCode::SUCCESS)
}

async fn serve(settings: Settings, cycle_now: bool) -> Result<ExitCode> {
    let missing = settings.half_configured();
    if !missing.is_empty() {
        eprint!("{}", incomplete(&missing));
        return Ok(ExitCode::from(EXIT_CONFIG));
    }
    let mut app = crate::app::App::build(settings).await?;
    if cycle_now {
        app.scheduler.cycle_at_start();
    }
    app.run_until_stopped(crate::shutdown::signal()).await?;
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

/// Prints the effective settings, or what a half-configured Slack or Jira is missing (exit 2).
fn config_check(settings: &Settings, format: Format) -> ExitCode {
    let missing = settings.half_configured();
    if !missing.is_empty() {
        match format {
            Format::Text => eprint!("{}", incomplete(&missing)),
            Format::Json => println!("{}", serde_json::json!({ "valid": false, "missing": missing })),
        }
        return ExitCode::from(EXIT_CONFIG);
    }
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
    ExitCode::SUCCESS
}

/// `sheriff: the configuration is incomplete:` and one line per missing setting.
fn incomplete(missing: &[String]) -> String {
    let mut text = String::from("sheriff: the configuration is incomplete:\n");
    for m in missing {
        text.push_str(&format!("  - {m}\n"));
    }
    text.push_str("configure Slack (or Jira) fully, or leave it out entirely to run without it\n");
    text
}
