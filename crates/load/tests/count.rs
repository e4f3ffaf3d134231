//! The load generator's count against what an in-test server actually served.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Response, StatusCode};
use hyper_util::rt::TokioIo;
use wasmlab_load::{LoadConfig, run};

/// Starts a server on an ephemeral loopback port, in its own thread, that counts what it answered.
/// Every `fail_every`-th request answers 500.
fn counting_server(fail_every: u64) -> (SocketAddr, Arc<AtomicU64>) {
    let served = Arc::new(AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let counter = served.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let counter = counter.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |_req| {
                        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                        let mut resp = Response::new(Full::new(Bytes::from_static(b"ok")));
                        if fail_every > 0 && n.is_multiple_of(fail_every) {
                            *resp.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                        }
                        async move { Ok::<_, Infallible>(resp) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
    });
    (rx.recv().unwrap(), served)
}

#[test]
fn duration_run_counts_what_the_server_served() {
    let (addr, served) = counting_server(0);
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.connections = 8;
    c.threads = 2;
    c.duration = Some(Duration::from_millis(800));
    let r = run(c).unwrap();
    assert!(r.responses > 100, "too few responses: {}", r.responses);
    assert_eq!(r.responses, served.load(Ordering::SeqCst));
    assert_eq!(r.ok, r.responses);
    assert_eq!(r.errors.total(), 0);
    assert_eq!(r.body_bytes, 2 * r.responses);
    assert!(r.latency_ms.p50 > 0.0 && r.latency_ms.p50 <= r.latency_ms.p99);
    assert!(r.latency_ms.p99 <= r.latency_ms.max);
    assert_eq!(r.histogram.unwrap().len(), r.responses);
}

#[test]
fn request_bounded_run_and_non_2xx_are_counted() {
    let (addr, served) = counting_server(10);
    let mut c = LoadConfig::new(&format!("http://{addr}/x?y=1")).unwrap();
    c.connections = 5;
    c.duration = None;
    c.requests = Some(1000);
    let r = run(c).unwrap();
    assert_eq!(r.responses, 1000);
    assert_eq!(served.load(Ordering::SeqCst), 1000);
    assert_eq!(r.errors.non_2xx, 100);
    assert_eq!(r.ok, 900);
    assert_eq!(
        r.status_counts.into_iter().collect::<Vec<_>>(),
        vec![(200, 900), (500, 100)]
    );
}
