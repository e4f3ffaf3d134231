//! HTTPS end to end against an in-test TLS server (a certificate generated for `localhost`):
//! verified with `ca_file`, refused without it, accepted with `insecure`; the handshake is its
//! own phase, and sessions are resumed when connections are replaced.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::Response;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use wasmlab_load::{LoadConfig, run};

/// A TLS server on an ephemeral loopback port; returns its port and its certificate (PEM).
/// `keep_alive: false` closes every connection after one answer, so each request handshakes.
fn tls_server(keep_alive: bool) -> (u16, String) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let pem = cert.cert.pem();
    let key = PrivateKeyDer::from_pem_slice(cert.key_pair.serialize_pem().as_bytes()).unwrap();
    let chain = vec![CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()];
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap().port()).unwrap();
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let svc = service_fn(|_req| async {
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                    });
                    let _ = http1::Builder::new()
                        .keep_alive(keep_alive)
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
    });
    (rx.recv().unwrap(), pem)
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
