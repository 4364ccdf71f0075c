//! The composition root of `sheriff serve`: [`App::build`] opens the store, makes the caches
//! kept over it ([`Warm`]), binds the listener
//! and puts the HTTP router, the outbox worker and the scheduler together;
//! [`App::run_until_stopped`] runs them until asked to stop, then gives work in progress its
//! grace. The binary and the integration tests start the same thing (tests bind port 0).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::net::TcpListener;

use crate::application::outbox::{Sinks, Worker};
use crate::application::scheduler::Scheduler;
use crate::application::warm::Warm;
use crate::config::Settings;
use crate::edge::server::AppState;
use crate::store::Store;
use crate::support::shutdown::SHUTDOWN_GRACE;

/// This replica's name: the process's, and a number after it for a second app in the same
/// process (tests run several), so that each holds its own leases.
fn replica_name() -> String {
    static BUILT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    match BUILT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
        0 => crate::support::process::replica_id(),
        n => format!("{}-{}", crate::support::process::replica_id(), n + 1),
    }
}

/// A built, not yet running, `sheriff serve`.
pub struct App {
    pub store: Arc<Store>,
    /// The caches kept over the store: the windows, the scopes' runs and the questions'
    /// answers, shared by the scheduler's cycles and the HTTP edge.
    pub warm: Arc<Warm>,
    pub settings: Arc<Settings>,
    /// This replica's name in leases, logs and request ids.
    pub replica: String,
    /// What every HTTP handler reaches; the router is built from it.
    pub state: AppState,
    pub worker: Worker,
    pub scheduler: Scheduler,
    listener: TcpListener,
}

impl App {
    /// Opens and migrates the database, claims it (SQLite serves one replica), binds
    /// `server.listen` and builds the parts. Every setting a part needs is checked here, so a
    /// bad one stops the start rather than a later tick.
    pub async fn build(settings: Settings) -> Result<App> {
        let store = Arc::new(Store::open_configured(&settings).await?);
        let warm = Arc::new(Warm::kept());
        let replica = replica_name();
        crate::application::scheduler::claim_sqlite(&store, &replica).await?;
        let listener = TcpListener::bind(&settings.server.listen)
            .await
            .with_context(|| format!("cannot listen on {}", settings.server.listen))?;
        if settings.slack.bot_token.is_some() {
            warn_of_console_threads(&store).await?;
        }
        let settings = Arc::new(settings);
        let sinks = Arc::new(Sinks::from_settings(&settings)?);
        let mut worker = Worker::new(store.clone(), sinks, settings.outbox.clone());
        worker.id.clone_from(&replica);
        let state = AppState::new(store.clone(), warm.clone(), settings.clone());
        // one keeper of unrecorded cycles: the scheduler records those of the Slack edge too
        let scheduler = Scheduler::new(
            store.clone(),
            warm.clone(),
            state.unrecorded.clone(),
            settings.clone(),
            replica.clone(),
        )?;
        Ok(App {
            store,
            warm,
            settings,
            replica,
            state,
            worker,
            scheduler,
            listener,
        })
    }

    /// Where it listens (the port the system chose for `127.0.0.1:0`).
    pub fn address(&self) -> Result<SocketAddr> {
        self.listener
            .local_addr()
            .context("reading the listening address")
    }

    /// What `serve` says at start, for the log and for people: where it listens, its
    /// schedules with their next ticks, and which integrations are on.
    pub(crate) fn start_report(&self, now: chrono::DateTime<chrono::Utc>) -> Result<StartReport> {
        let schedules = crate::application::scheduler::plan(&self.settings, now)?;
        Ok(StartReport {
            listen: self.address()?.to_string(),
            timezone: self.settings.schedule.timezone.clone(),
            schedules,
            cycle_at_start: self.scheduler.cycles_at_start(),
            integrations: integrations(&self.settings),
        })
    }

    /// Serves and works until `shutdown` resolves, then stops taking work: a request, cycle or
    /// delivery in progress gets `SHUTDOWN_GRACE` and is then dropped (a cycle writes in one
    /// transaction at its end; a delivery's claim lapses and is retried).
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        announce(&self.start_report(chrono::Utc::now())?);
        let App {
            store,
            state,
            worker,
            scheduler,
            listener,
            ..
        } = self;

        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut background = tokio::task::JoinSet::new();
        background.spawn(scheduler.run(stopped.clone()));
        {
            let stopped = stopped.clone();
            background.spawn(async move { worker.run(stopped).await });
        }

        let mut http_stop = stopped.clone();
        let server = tokio::spawn(crate::edge::server::serve(listener, state, async move {
            let _ = http_stop.wait_for(|s| *s).await;
        }));

        shutdown.await;
        let _ = stop.send(true);
        let grace = SHUTDOWN_GRACE + std::time::Duration::from_secs(1);
        let all_background = async { while background.join_next().await.is_some() {} };
        let (server, background) = tokio::join!(
            tokio::time::timeout(grace, server),
            tokio::time::timeout(grace, all_background)
        );

        match server {
            Err(_) => tracing::warn!("stopping with HTTP requests still in flight"),
            Ok(Ok(Err(e))) => tracing::error!("HTTP server: {e:#}"),
            Ok(Err(e)) => tracing::error!("HTTP server: {e}"),
            Ok(Ok(Ok(()))) => {}
        }

        if background.is_err() {
            tracing::warn!("stopping with background work still running");
        }

        store.close().await;
        tracing::info!("stopped");
        Ok(())
    }
}

/// Warns when open incidents were announced on the console only (a `sheriff demo` database, or
/// one served without a bot token before): with Slack on now, their threads do not exist, so
/// edits of them cannot be delivered, while Jira would still be told.
async fn warn_of_console_threads(store: &Store) -> Result<()> {
    // the thread id the Slack sink records for a message it only showed (notify::slack)
    let console_only = |ts: &str| ts.starts_with("console-");
    let incidents = store.incidents().all().await?;
    let stranded: Vec<i64> = incidents
        .iter()
        .filter(|i| i.state.is_open() && i.slack_ts.as_deref().is_some_and(console_only))
        .map(|i| i.id)
        .collect();
    if !stranded.is_empty() {
        tracing::warn!(
            incidents = stranded.len(),
            "{} open incident(s) ({}) were announced on the console only, never in Slack (a demo's \
             database?); their Slack threads do not exist. Go live on a fresh database",
            stranded.len(),
            stranded
                .iter()
                .map(|id| format!("#{id}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

/// What `serve` announces at start (`App::start_report`).
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct StartReport {
    pub listen: String,
    pub timezone: String,
    pub schedules: Vec<crate::application::scheduler::Planned>,
    /// `serve --cycle-now`: a cycle runs at once too.
    pub cycle_at_start: bool,
    pub integrations: Vec<Integration>,
}

/// One outside system `serve` talks to (or would), on or off, and what that means.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Integration {
    /// `slack`, `jira`, `pages_auth`, `push`.
    pub name: &'static str,
    pub on: bool,
    pub detail: String,
}

/// Which integrations the settings turn on. Names and addresses only, never a secret.
pub fn integrations(settings: &Settings) -> Vec<Integration> {
    let (slack, jira) = (&settings.slack, &settings.jira);
    let slack_detail = match &slack.bot_token {
        Some(_) => format!(
            "posts to {} ({} route(s)); {} verified with the signing secret",
            slack.channel,
            slack.routes.len(),
            slack.command
        ),
        None => "no bot token: messages are shown on the console, not posted".into(),
    };

    let jira_on = jira.enabled() && jira.token.is_some();
    let jira_detail = if jira_on {
        let api = match jira.api {
            crate::config::JiraApi::V2 => "REST v2",
            crate::config::JiraApi::V3 => "REST v3",
        };
        format!("files in {} at {} ({api})", jira.project, jira.url)
    } else {
        "no jira.url: no issues are filed".into()
    };

    let pages_on = settings.server.pages_token.is_some();
    let pages_detail = if pages_on {
        "the pages and their JSON need the pages token".into()
    } else {
        "the pages are open to anyone who reaches them (no server.pages_token)".into()
    };

    let push_on = settings.ingest.push_token.is_some();
    let push_detail = if push_on {
        "POST /api/v1/runs takes runs"
    } else {
        "off (no ingest.push_token)"
    };

    vec![
        Integration {
            name: "slack",
            on: slack.bot_token.is_some(),
            detail: slack_detail,
        },
        Integration {
            name: "jira",
            on: jira_on,
            detail: jira_detail,
        },
        Integration {
            name: "pages_auth",
            on: pages_on,
            detail: pages_detail,
        },
        Integration {
            name: "push",
            on: push_on,
            detail: push_detail.into(),
        },
    ]
}

/// Logs the start report: one line for where it listens, one per schedule, one for the
/// integrations, so a new deployment says at once when it will first speak up.
fn announce(report: &StartReport) {
    tracing::info!(listen = %report.listen, "sheriff serve listening on http://{}", report.listen);
    for s in &report.schedules {
        let next = s.next.map_or("never".to_string(), |t| t.to_rfc3339());
        tracing::info!(
            job = %s.job,
            cron = %s.cron,
            next = %next,
            "schedule {}: `{}` ({}, {}); next tick {next}",
            s.job,
            s.cron,
            s.in_words,
            report.timezone
        );
    }

    if report.cycle_at_start {
        tracing::info!(
            cycle_at_start = true,
            "a first cycle runs now (--cycle-now)"
        );
    } else if let Some(next) = report.schedules.first().and_then(|s| s.next) {
        tracing::info!(
            cycle_at_start = false,
            "the first cycle runs at {}; `serve --cycle-now` runs one at start",
            next.to_rfc3339()
        );
    }

    let on_off = |i: &Integration| format!("{} {}", i.name, if i.on { "on" } else { "off" });
    let summary: Vec<String> = report.integrations.iter().map(on_off).collect();
    let field = |name: &str| report.integrations.iter().any(|i| i.name == name && i.on);
    tracing::info!(
        slack = field("slack"),
        jira = field("jira"),
        pages_auth = field("pages_auth"),
        push = field("push"),
        "integrations: {}",
        summary.join(", ")
    );

    for i in &report.integrations {
        tracing::info!(integration = i.name, on = i.on, "{}: {}", i.name, i.detail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrations_say_what_is_on_and_never_a_secret() {
        let off = integrations(&Settings::default());
        assert!(off.iter().all(|i| !i.on), "{off:?}");
        assert!(off[0].detail.contains("console"), "{off:?}");
        let mut s = Settings::default();
        s.slack.bot_token = Some(crate::config::Secret::new("xoxb-never-shown"));
        s.slack.channel = "C0DISRUPT".into();
        s.jira.url = "https://issues.example.com".into();
        s.jira.project = "OCPBUGS".into();
        s.jira.token = Some(crate::config::Secret::new("jira-never-shown"));
        s.server.pages_token = Some(crate::config::Secret::new("pages-never-shown"));
        let on = integrations(&s);
        assert!(
            on.iter().filter(|i| i.name != "push").all(|i| i.on),
            "{on:?}"
        );
        assert!(
            on[0].detail.contains("C0DISRUPT") && on[1].detail.contains("OCPBUGS"),
            "{on:?}"
        );
        let shown = format!("{on:?}");
        assert!(!shown.contains("never-shown"), "{shown}");
    }
}
