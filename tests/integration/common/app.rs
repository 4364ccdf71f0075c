//! `sheriff serve` started in-process on port 0: the same `App` the binary runs, with a stop
//! handle, so a test talks HTTP to it and stops it when done.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use sheriff::config::Settings;
use sheriff::edge::serve::App;

pub struct TestApp {
    pub address: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    running: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

/// Builds and starts the app with `settings`, listening on a port of its own.
pub async fn spawn_app(mut settings: Settings) -> TestApp {
    // boxed: the settings and the app's start make a future too large to move around
    Box::pin(try_spawn_app(std::mem::take(&mut settings)))
        .await
        .expect("the app starts")
}

/// As [`spawn_app`], or the reason the app refused to start.
pub async fn try_spawn_app(mut settings: Settings) -> anyhow::Result<TestApp> {
    sheriff::init_crypto();
    settings.server.listen = "127.0.0.1:0".into();
    let app = App::build(settings).await?;
    let address = app.address()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(app.run_until_stopped(async move {
        let _ = stopped.await;
    }));
    Ok(TestApp {
        address,
        stop: Some(stop),
        running: Some(running),
    })
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// Asks it to stop and waits; how long stopping took.
    pub async fn stop(mut self) -> Duration {
        let started = Instant::now();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(running) = self.running.take() {
            running
                .await
                .expect("the app task")
                .expect("the app stops cleanly");
        }
        started.elapsed()
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
