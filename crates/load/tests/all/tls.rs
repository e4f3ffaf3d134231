//! HTTPS end to end against an in-test TLS server (a certificate generated for `localhost`):
//! verified with `ca_file`, refused without it, accepted with `insecure`; the handshake is its
//! own phase, and sessions are resumed when connections are replaced.

use std::time::Duration;

use wasmlab_load::{LoadConfig, run};
use wasmlab_test_support::https_server;

/// The test's HTTPS server: every path answers "ok"; returns its port and certificate (PEM).
fn tls_server(keep_alive: bool) -> (u16, String) {
    let s = https_server(keep_alive, |_| (200, "ok"));
    (s.port, s.cert_pem)
}

fn config(port: u16) -> LoadConfig {
    let mut c = LoadConfig::new(&format!("https://localhost:{port}/")).unwrap();
    c.connections = 4;
    c.duration = None;
    c.requests = Some(200);
    c.timeout = Duration::from_secs(5);
    c
}

#[test]
fn https_is_verified_against_the_given_ca_and_refused_without_it() {
    let (port, pem) = tls_server(true);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &pem).unwrap();

    let mut c = config(port);
    c.ca_file = Some(ca.clone());
    let r = run(c).unwrap();
    assert_eq!((r.ok, r.errors.total()), (200, 0), "{:?}", r.first_error);
    assert_eq!(r.body_bytes, 400);
    assert_eq!(r.phases.connections_opened, 4);
    assert_eq!(r.phases.tls_handshakes, 4);
    assert!(r.phases.tls.p50 > 0.0);

    // The system's roots do not know the test's certificate.
    let mut c = config(port);
    c.requests = Some(4);
    let r = run(c).unwrap();
    assert_eq!(r.ok, 0);
    let why = r.first_error.unwrap();
    assert!(
        why.contains("TLS handshake with localhost:") && why.contains("certificate"),
        "{why}"
    );

    let mut c = config(port);
    c.insecure = true;
    let r = run(c).unwrap();
    assert_eq!((r.ok, r.errors.total()), (200, 0), "{:?}", r.first_error);

    let mut c = config(port);
    std::fs::write(&ca, "not a certificate").unwrap();
    c.ca_file = Some(ca);
    let e = run(c).unwrap_err().to_string();
    assert!(
        e.contains("--cacert") && e.contains("no PEM certificate"),
        "{e}"
    );
}

#[test]
fn sessions_are_resumed_when_connections_are_replaced() {
    let (port, pem) = tls_server(false);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &pem).unwrap();
    let mut c = config(port);
    c.ca_file = Some(ca);
    c.connections = 1;
    c.requests = Some(20);
    let r = run(c).unwrap();
    assert_eq!((r.ok, r.errors.total()), (20, 0), "{:?}", r.first_error);
    assert_eq!(
        r.phases.tls_handshakes, 20,
        "one per request: the server closes"
    );
    assert!(
        r.phases.tls_resumed >= 18,
        "{} of 20 handshakes resumed",
        r.phases.tls_resumed
    );
}
