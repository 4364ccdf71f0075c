//! Faults the fake servers inject, decided per request by a seeded generator: errors before the
//! request is handled, and — the hard case — answers lost after the request was handled
//! (a response slower than the client's timeout, a connection that breaks mid-answer).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    /// 500 with an error body, not handled.
    ServerError,
    /// 503, not handled.
    Unavailable,
    /// 429 with `Retry-After`, not handled.
    RateLimited(u64),
    /// The connection breaks before anything is handled.
    ResetBefore,
    /// Handled, then the answer is slower than any client waits.
    TimeoutAfter,
    /// Handled, then the connection breaks mid-answer.
    ResetAfter,
}

/// Decides faults; `rate` is the share of requests that get one.
#[derive(Clone)]
pub struct Faults {
    inner: Arc<Mutex<(sheriff::synth::Rng, f64)>>,
}

impl Faults {
    pub fn none() -> Faults {
        Faults::seeded(0, 0.0)
    }

    pub fn seeded(seed: u64, rate: f64) -> Faults {
        Faults {
            inner: Arc::new(Mutex::new((sheriff::synth::Rng::new(seed), rate))),
        }
    }

    pub fn next(&self) -> Fault {
        let mut g = self.inner.lock().unwrap();
        let rate = g.1;
        if !g.0.chance(rate) {
            return Fault::None;
        }
        match g.0.below(6) {
            0 => Fault::ServerError,
            1 => Fault::Unavailable,
            2 => Fault::RateLimited(1 + g.0.below(3)),
            3 => Fault::ResetBefore,
            4 => Fault::TimeoutAfter,
            _ => Fault::ResetAfter,
        }
    }
}

/// The answer for a fault that stops a request before it is handled, if `fault` is one.
pub fn refuse(fault: Fault, error_body: &str) -> Option<Response> {
    match fault {
        Fault::ServerError => {
            Some((StatusCode::INTERNAL_SERVER_ERROR, error_body.to_string()).into_response())
        }
        Fault::Unavailable => {
            Some((StatusCode::SERVICE_UNAVAILABLE, "upstream unavailable").into_response())
        }
        Fault::RateLimited(secs) => {
            let mut r = (StatusCode::TOO_MANY_REQUESTS, error_body.to_string()).into_response();
            r.headers_mut().insert(
                "retry-after",
                HeaderValue::from_str(&secs.to_string()).unwrap(),
            );
            Some(r)
        }
        Fault::ResetBefore => Some(broken()),
        _ => None,
    }
}

/// Spoils the answer to a handled request, if `fault` says so.
pub async fn spoil(fault: Fault, answer: Response) -> Response {
    match fault {
        Fault::TimeoutAfter => {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            answer
        }
        Fault::ResetAfter => broken(),
        _ => answer,
    }
}

/// A 200 whose body breaks off: the client sees the connection fail mid-answer.
fn broken() -> Response {
    let stream = futures::stream::iter(vec![
        Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b"{\"ok\":")),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "connection reset",
        )),
    ]);
    let mut r = Response::new(Body::from_stream(stream));
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    r
}
