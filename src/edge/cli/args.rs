//! The command line's grammar: the clap types of every command and option, with their help
//! text, and the parsers of their values.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use clap::{Parser, Subcommand, ValueEnum};

use crate::store::outbox::EntryState;

/// The whole command line: the options every command takes, and the command, which is the
/// binary's: the product's [`Command`]s and what the binary adds (`sheriff bench`).
#[derive(Debug, Parser)]
#[command(name = "sheriff", version, about = "Triages CI disruption regressions")]
pub(super) struct Cli<C: Subcommand> {
    /// Configuration file (default: config/sheriff.toml when it exists).
    #[arg(long, global = true, value_name = "PATH")]
    pub(super) config: Option<PathBuf>,
    #[command(subcommand)]
    pub(super) command: C,
}

/// The product's commands, which [`super::run`] runs.
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
        #[arg(long, default_value = "dead", value_parser = parse_entry_state)]
        state: EntryState,
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

/// A failure class of the calibrated CI world, by name, for `--world` and the benchmarks.
/// A clap value parser: its error is the String clap shows after the argument.
pub fn parse_class(text: &str) -> Result<crate::synth::world::Class, String> {
    crate::synth::world::Class::parse(text).ok_or_else(|| {
        let names: Vec<&str> = crate::synth::world::Class::ALL
            .iter()
            .map(|c| c.as_str())
            .collect();
        format!(
            "`{text}` is not a failure class; one of: {}",
            names.join(", ")
        )
    })
}

/// An outbox entry's state, by name. A clap value parser.
fn parse_entry_state(text: &str) -> Result<EntryState, String> {
    EntryState::parse(text).ok_or_else(|| {
        let names: Vec<&str> = EntryState::ALL.iter().map(|s| s.as_str()).collect();
        format!(
            "`{text}` is not an entry state; one of: {}",
            names.join(", ")
        )
    })
}

/// `--since` and its kin; a clap value parser, whose error is the String clap shows.
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
