//! Stopping in one place: the signal that asks for it, and how work in progress is given a
//! bounded grace before it is dropped. Every long-running task (HTTP, schedules, the outbox
//! worker) watches the same `watch` channel.

use std::time::Duration;

use tokio::sync::watch;

/// After a stop is asked for, how long work in progress may go on before it is dropped (a
/// dropped cycle writes nothing; a dropped delivery is retried once its lease lapses).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(7);

/// Resolves once a stop is asked for (at once if it already was).
pub async fn stopping(shutdown: &mut watch::Receiver<bool>) {
    // An error means the sender is gone, which is a stop too.
    drop(shutdown.wait_for(|stop| *stop).await);
}

/// Runs `work` to its end, unless `shutdown` turns true first: then it gets `SHUTDOWN_GRACE`
/// more and is dropped (None) if still not done.
pub async fn finish_or_abandon<T>(
    work: impl std::future::Future<Output = T>,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<T> {
    tokio::pin!(work);
    tokio::select! {
        done = &mut work => Some(done),
        () = stopping(shutdown) => {
            tokio::time::timeout(SHUTDOWN_GRACE, work).await.ok()
        }
    }
}

/// Resolves on ctrl-c or SIGTERM.
pub async fn signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn work_finishes_unless_a_stop_outlasts_the_grace() {
        let (stop, mut shutdown) = watch::channel(false);
        assert_eq!(finish_or_abandon(async { 7 }, &mut shutdown).await, Some(7));
        stop.send(true).unwrap();
        // a stop asked for: work shorter than the grace still finishes…
        let short = tokio::time::sleep(SHUTDOWN_GRACE / 2);
        assert_eq!(
            finish_or_abandon(
                async {
                    short.await;
                    1
                },
                &mut shutdown
            )
            .await,
            Some(1)
        );
        // …and work that would outlast it is dropped when the grace is over
        let started = tokio::time::Instant::now();
        let endless = std::future::pending::<()>();
        assert_eq!(finish_or_abandon(endless, &mut shutdown).await, None);
        assert_eq!(started.elapsed(), SHUTDOWN_GRACE);
        // and `stopping` answers at once once a stop was asked for
        tokio::time::timeout(Duration::from_millis(1), stopping(&mut shutdown))
            .await
            .unwrap();
    }
}
