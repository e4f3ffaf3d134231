//! An HTTPS server for tests: a certificate made for `localhost` on the spot, HTTP/1.1 over
//! rustls on an ephemeral loopback port, every request answered by a plain function.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A running HTTPS server (it lives as long as the test process).
pub struct HttpsServer {
    pub port: u16,
    /// Its certificate, PEM: what a client given it as its CA trusts.
    pub cert_pem: String,
}

/// A certificate for `localhost`, self-signed, made on the spot, and its key, PEM.
pub struct LocalhostCertificate {
    pub cert_pem: String,
    pub key_pem: String,
}

impl LocalhostCertificate {
    pub fn new() -> Self {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        Self {
            cert_pem: cert.cert.pem(),
            key_pem: cert.key_pair.serialize_pem(),
        }
    }

    /// Both written into `dir` as `cert.pem` and `key.pem`; returns their paths.
    pub fn write_to(&self, dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, &self.cert_pem).unwrap();
        std::fs::write(&key, &self.key_pem).unwrap();
        (cert, key)
    }
}

impl Default for LocalhostCertificate {
    fn default() -> Self {
        Self::new()
    }
}

/// Starts an HTTPS server whose answer to a request for `path` is `answer(path)`: a status and a
/// body. With `keep_alive` false it closes every connection after one answer, so each request
/// needs a new handshake.
pub fn https_server(keep_alive: bool, answer: fn(&str) -> (u16, &'static str)) -> HttpsServer {
    let LocalhostCertificate { cert_pem, key_pem } = LocalhostCertificate::new();
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
    let chain = vec![CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap()];
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let addr = crate::serve_on_loopback(move |listener| async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let (status, body) = answer(req.uri().path());
                    let mut resp =
                        hyper::Response::new(Full::new(Bytes::from_static(body.as_bytes())));
                    *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
                    async move { Ok::<_, Infallible>(resp) }
                });
                let _ = http1::Builder::new()
                    .keep_alive(keep_alive)
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    HttpsServer {
        port: addr.port(),
        cert_pem,
    }
}
