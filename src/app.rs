//! The composition root of `sheriff serve`: [`App::build`] opens the store, binds the listener
//! and puts the HTTP router, the outbox worker and the scheduler together;
//! [`App::run_until_stopped`] runs them until asked to stop, then gives work in progress its
//! grace. The binary and the integration tests start the same thing (tests bind port 0).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::net::TcpListener;

use crate::config::Settings;
use crate::notify::{Sinks, Worker};
use crate::scheduler::Scheduler;
use crate::server::AppState;
use crate::shutdown::SHUTDOWN_GRACE;
use crate::store::Store;

/// This replica's name: the process's, and a number after it for a second app in the same
/// process (tests run several), so that each holds its own leases.
fn replica_name() -> String {
    static BUILT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    match BUILT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
        0 => crate::process::replica_id(),
        n => format!("{}-{}", crate::process::replica_id(), n + 1),
    }
}

/// A built, not yet running, `sheriff serve`.
pub struct App {
    pub store: Arc<Store>,
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
        store.keep_windows_in_memory();
        let replica = replica_name();
        crate::scheduler::claim_sqlite(&store, &replica).await?;
        let listener = TcpListener::bind(&settings.server.listen)
            .await
            .with_context(|| format!("cannot listen on {}", settings.server.listen))?;
        let settings = Arc::new(settings);
        let sinks = Arc::new(Sinks::from_settings(&settings)?);
        let mut worker = Worker::new(store.clone(), sinks, settings.outbox.clone());
        worker.id.clone_from(&replica);
        let scheduler = Scheduler::new(store.clone(), settings.clone(), replica.clone())?;
        let state = AppState::new(store.clone(), settings.clone());
        Ok(App { store, settings, replica, state, worker, scheduler, listener })
    }

    /// Where it listens (the port the system chose for `127.0.0.1:0`).
    pub fn address(&self) -> Result<SocketAddr> {
        self.listener.local_addr().context("reading the listening address")
    }

    /// Serves and works until `shutdown` resolves, then stops taking work: a request, cycle or
    /// delivery in progress gets [`SHUTDOWN_GRACE`] and is then dropped (a cycle writes in one
    /// transaction at its end; a delivery's claim lapses and is retried).
    pub async fn run_until_stopped(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<()> {
        let App { store, state, worker, scheduler, listener, .. } = self;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut background = tokio::task::JoinSet::new();
        background.spawn(scheduler.run(stopped.clone()));
        {
            let stopped = stopped.clone();
            background.spawn(async move { worker.run(stopped).await });
        }
        let mut http_stop = stopped.clone();
        let server = tokio::spawn(crate::server::serve(listener, state, async move {
            let _ = http_stop.wait_for(|s| *s).await;
        }));
        shutdown.await;
        let _ = stop.send(true);
        let grace = SHUTDOWN_GRACE + std::time::Duration::from_secs(1);
        let all_background = async { while background.join_next().await.is_some() {} };
        let (server, background) =
            tokio::join!(tokio::time::timeout(grace, server), tokio::time::timeout(grace, all_background));
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
