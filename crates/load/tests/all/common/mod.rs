//! An in-test HTTP server on an ephemeral loopback port that counts what it answered.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Response, StatusCode};
use hyper_util::rt::TokioIo;

#[derive(Default, Clone, Copy)]
pub(crate) struct Behaviour {
    /// Every n-th request answers 500 (0: never).
    pub fail_every: u64,
    /// A request arriving in [from, to) after the server started is held until `to`: a stall
    /// such as a GC pause or a full queue.
    pub stall: Option<(Duration, Duration)>,
    /// Paths other than `/` answer 404.
    pub only_root: bool,
}

/// Starts the server in its own thread; returns its address and the count of answers.
#[allow(dead_code)] // Not every test module uses it.
pub(crate) fn server(b: Behaviour) -> (SocketAddr, Arc<AtomicU64>) {
    let (addr, served, _) = server_with_connections(b);
    (addr, served)
}

/// As [`server`], and the count of connections closed so far.
#[allow(dead_code)] // Not every test module uses it.
pub(crate) fn server_with_connections(
    b: Behaviour,
) -> (SocketAddr, Arc<AtomicU64>, Arc<AtomicU64>) {
    let served = Arc::new(AtomicU64::new(0));
    let closed = Arc::new(AtomicU64::new(0));
    let counter = served.clone();
    let closings = closed.clone();
    let addr = wasmlab_test_support::serve_on_loopback(move |listener| async move {
        let t0 = Instant::now();
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let _ = stream.set_nodelay(true);
            let counter = counter.clone();
            let closings = closings.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let root = req.uri().path() == "/";
                    let counter = counter.clone();
                    async move {
                        if let Some((from, to)) = b.stall {
                            let at = t0.elapsed();
                            if at >= from && at < to {
                                tokio::time::sleep(to - at).await;
                            }
                        }
                        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                        let mut resp = Response::new(Full::new(Bytes::from_static(b"ok")));
                        if b.only_root && !root {
                            *resp.status_mut() = StatusCode::NOT_FOUND;
                        }
                        if b.fail_every > 0 && n.is_multiple_of(b.fail_every) {
                            *resp.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                        }
                        Ok::<_, Infallible>(resp)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
                closings.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    (addr, served, closed)
}
