//! Serving connections with time limits, so that a slow or silent client cannot hold a
//! connection (or thousands of them) open: the first byte and then the request head must
//! arrive within `server.header_timeout_secs`, a connection with no traffic either way for
//! `server.idle_timeout_secs` is closed, and so is one (HTTP/1 or HTTP/2) with no request in
//! progress for that long, however busily it answers pings; no connection lives longer than
//! `server.max_connection_secs`; a request (its body included) is answered within
//! `server.request_timeout_secs` or gets 408; and at most `server.max_connections` are open at
//! once (the next waits in the listen queue). On shutdown, connections finish their request in
//! progress and close.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tower::ServiceExt as _;

/// The limits of connections.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The first byte, then the request head, must arrive within this.
    pub header: Duration,
    /// No traffic, or no request in progress, for this long closes a connection.
    pub idle: Duration,
    /// No connection lives longer (it is asked to close, then closed after the grace).
    pub max_age: Duration,
    /// Connections open at once, at most.
    pub max_connections: usize,
}

/// A stream that fails once nothing has moved either way for `idle`, or when the client has
/// not sent its first byte within `first_byte`.
pub struct IdleTimeout<S> {
    inner: S,
    idle: Duration,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// Until the client's first byte: a connection that says nothing is not kept for `idle`.
    first_byte: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> IdleTimeout<S> {
    pub fn new(inner: S, idle: Duration, first_byte: Duration) -> IdleTimeout<S> {
        IdleTimeout {
            inner,
            idle,
            deadline: Box::pin(tokio::time::sleep(idle)),
            first_byte: Some(Box::pin(tokio::time::sleep(first_byte))),
        }
    }

    fn moved(&mut self) {
        let next = tokio::time::Instant::now() + self.idle;
        self.deadline.as_mut().reset(next);
    }

    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        let silent = self
            .first_byte
            .as_mut()
            .is_some_and(|d| d.as_mut().poll(cx).is_ready());
        silent || self.deadline.as_mut().poll(cx).is_ready()
    }
}

fn timed_out() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "the connection was idle too long",
    )
}

impl<S: AsyncRead + Unpin> AsyncRead for IdleTimeout<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.first_byte = None;
                    self.moved();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(timed_out())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for IdleTimeout<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, data) {
            Poll::Ready(Ok(n)) => {
                self.moved();
                Poll::Ready(Ok(n))
            }
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(timed_out())),
            other => other,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Requests in progress on one connection, and since when none is.
#[derive(Default)]
struct Activity {
    in_progress: AtomicUsize,
    quiet_since: std::sync::Mutex<Option<tokio::time::Instant>>,
}

impl Activity {
    fn started(&self) {
        self.in_progress.fetch_add(1, Ordering::SeqCst);
    }

    fn ended(&self) {
        if self.in_progress.fetch_sub(1, Ordering::SeqCst) == 1 {
            *self.quiet_since.lock().expect("activity lock") = Some(tokio::time::Instant::now());
        }
    }

    /// Whether no request has been in progress for `idle`.
    fn idle_for(&self, idle: Duration, opened: tokio::time::Instant) -> bool {
        let since = self
            .quiet_since
            .lock()
            .expect("activity lock")
            .unwrap_or(opened);
        self.in_progress.load(Ordering::SeqCst) == 0 && since.elapsed() >= idle
    }
}

/// The next connection with its slot; at the cap it waits in the listen queue. None once
/// `shutdown` resolves.
async fn accept_next(
    listener: &tokio::net::TcpListener,
    slots: &Arc<tokio::sync::Semaphore>,
    shutdown: &mut std::pin::Pin<&mut (impl std::future::Future<Output = ()> + Send)>,
) -> Option<(tokio::sync::OwnedSemaphorePermit, tokio::net::TcpStream)> {
    let slot = tokio::select! {
        slot = slots.clone().acquire_owned() => slot.expect("never closed"),
        () = shutdown.as_mut() => return None,
    };
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => return Some((slot, stream)),
                Err(e) => {
                    // Out of file descriptors, say: wait a little rather than spin.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = shutdown.as_mut() => return None,
        }
    }
}

/// HTTP/1 and HTTP/2 with the header timeout and keep-alive of `limits`.
fn http_builder(limits: Limits) -> Builder<TokioExecutor> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header)
        .keep_alive(true);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(limits.idle / 2));
    builder
}

/// Waits on a connection until it ends by itself (None), or until it must close: why, in
/// words (sheriff shutting down, the connection too old, or no request for too long).
async fn reason_to_close<F, E>(
    mut conn: Pin<&mut F>,
    stop: &mut tokio::sync::watch::Receiver<bool>,
    activity: &Activity,
    limits: Limits,
) -> Option<&'static str>
where
    F: std::future::Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    let opened = tokio::time::Instant::now();
    let mut check = tokio::time::interval((limits.idle / 4).max(Duration::from_millis(100)));
    loop {
        tokio::select! {
            ended = conn.as_mut() => {
                if let Err(e) = ended {
                    tracing::debug!("connection ended: {e}");
                }
                return None;
            }
            _ = stop.wait_for(|s| *s) => return Some("shutting down"),
            _ = check.tick() => {
                if opened.elapsed() >= limits.max_age {
                    return Some("it is older than server.max_connection_secs");
                }
                if activity.idle_for(limits.idle, opened) {
                    return Some("no request for server.idle_timeout_secs");
                }
            }
        }
    }
}

/// Accepts and serves connections with `router` until `shutdown`, then lets open ones finish
/// (up to `grace`).
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    grace: Duration,
) {
    let builder = http_builder(limits);
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let (stopping, stop) = tokio::sync::watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    while let Some((slot, stream)) = accept_next(&listener, &slots, &mut shutdown).await {
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(IdleTimeout::new(stream, limits.idle, limits.header));
        let activity = Arc::new(Activity::default());
        let counted = activity.clone();
        let router = router.clone();
        let service = TowerToHyperService::new(tower::service_fn(
            move |r: axum::http::Request<hyper::body::Incoming>| {
                let (router, counted) = (router.clone(), counted.clone());
                async move {
                    counted.started();
                    let answer = router.oneshot(r.map(axum::body::Body::new)).await;
                    counted.ended();
                    answer
                }
            },
        ));
        let conn = builder
            .serve_connection_with_upgrades(io, service)
            .into_owned();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let mut conn = std::pin::pin!(conn);
            let Some(why) = reason_to_close(conn.as_mut(), &mut stop, &activity, limits).await
            else {
                return;
            };
            tracing::debug!("closing a connection: {why}");
            conn.as_mut().graceful_shutdown();
            if tokio::time::timeout(grace, conn).await.is_err() {
                tracing::debug!("a connection did not close within the grace; dropped");
            }
        });
    }

    drop(listener);
    let _ = stopping.send(true);
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(grace, slots.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!("stopping with HTTP connections still open");
    }
}
