//! HTTP/2 end to end: streams multiplexed on each connection against an in-test h2c server, and
//! a server that speaks only HTTP/1.1 refused with the reason (by prior knowledge and by ALPN).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::Response;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use wasmlab_load::{LoadConfig, run};

use crate::common;

/// An h2c (HTTP/2 by prior knowledge) server on an ephemeral loopback port; returns its address,
/// the count of answers and the count of connections.
fn h2c_server() -> (std::net::SocketAddr, Arc<AtomicU64>, Arc<AtomicU64>) {
    let (answers, conns) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (a, c) = (answers.clone(), conns.clone());
    let addr = wasmlab_test_support::serve_on_loopback(move |listener| async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            c.fetch_add(1, Ordering::SeqCst);
            let a = a.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |_req| {
                    a.fetch_add(1, Ordering::SeqCst);
                    async {
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                    }
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    (addr, answers, conns)
}

#[test]
fn streams_share_each_connection() {
    let (addr, answers, conns) = h2c_server();
    let mut c = LoadConfig::new(&format!("http://{addr}/x")).unwrap();
    c.http2 = true;
    c.connections = 2;
    c.streams = 4;
    c.duration = None;
    c.requests = Some(400);
    c.timeout = Duration::from_secs(5);
    let r = run(c).unwrap();
    assert_eq!((r.ok, r.errors.total()), (400, 0), "{:?}", r.first_error);
    assert_eq!(answers.load(Ordering::SeqCst), 400);
    assert_eq!(
        conns.load(Ordering::SeqCst),
        2,
        "8 streams on 2 connections"
    );
    assert_eq!(r.phases.connections_opened, 2);
    assert_eq!(r.body_bytes, 800);
    assert!(r.http2 && r.streams == 4);
    assert!(r.latency_ms.p50 > 0.0);
}

#[test]
fn a_server_without_http2_is_refused_with_the_reason() {
    let (addr, _) = common::server(common::Behaviour::default());
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.http2 = true;
    c.connections = 1;
    c.duration = Some(Duration::from_millis(200));
    c.timeout = Duration::from_secs(2);
    let r = run(c).unwrap();
    assert_eq!(r.ok, 0);
    let why = r.first_error.unwrap();
    assert!(why.contains("HTTP/2"), "{why}");

    let tls = wasmlab_test_support::https_server(true, |_| (200, "ok"));
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &tls.cert_pem).unwrap();
    let mut c = LoadConfig::new(&format!("https://localhost:{}/", tls.port)).unwrap();
    c.http2 = true;
    c.ca_file = Some(ca);
    c.connections = 1;
    c.duration = Some(Duration::from_millis(200));
    let r = run(c).unwrap();
    assert_eq!(r.ok, 0);
    let why = r.first_error.unwrap();
    assert!(
        why.contains("does not speak HTTP/2 over TLS (ALPN: none)"),
        "{why}"
    );

    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.streams = 4;
    let e = run(c).unwrap_err().to_string();
    assert!(e.contains("need HTTP/2"), "{e}");
}
