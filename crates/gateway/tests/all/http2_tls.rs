//! The native gateway serving HTTP/2 (h2c by prior knowledge, h2 by ALPN) and HTTPS: each
//! protocol answered on the same port, limits kept over HTTP/2, bad TLS files refused.

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use wasmlab_test_support::{LocalhostCertificate, ServerProcess, request};

const BIN: &str = env!("CARGO_BIN_EXE_wasmlab-gateway-native");

/// An answer: the protocol it came in, its status and body.
#[derive(Debug)]
struct Answer {
    version: hyper::Version,
    status: u16,
    body: Vec<u8>,
}

/// Sends one request on a fresh connection over `io`, HTTP/2 or HTTP/1.1.
async fn send<IO>(
    io: IO,
    http2: bool,
    method: &str,
    uri: &str,
    body: Vec<u8>,
) -> anyhow::Result<Answer>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut req = hyper::Request::builder().method(method).uri(uri);
    if !http2 {
        req = req.header("host", "localhost");
    }
    let req = req.body(Full::new(Bytes::from(body)))?;
    let resp = if http2 {
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io)).await?;
        tokio::spawn(conn);
        sender.send_request(req).await?
    } else {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
        tokio::spawn(conn);
        sender.send_request(req).await?
    };
    let (version, status) = (resp.version(), resp.status().as_u16());
    let body = resp.into_body().collect().await?.to_bytes().to_vec();
    Ok(Answer {
        version,
        status,
        body,
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn cleartext(
    addr: SocketAddr,
    http2: bool,
    method: &str,
    path: &str,
    body: &[u8],
) -> anyhow::Result<Answer> {
    let uri = format!("http://{addr}{path}");
    runtime().block_on(async {
        let tcp = TcpStream::connect(addr).await?;
        send(tcp, http2, method, &uri, body.to_vec()).await
    })
}

/// Over TLS, trusting `cert_pem`, offering `alpn`; returns the protocol the server chose too.
fn over_tls(
    addr: SocketAddr,
    cert_pem: &str,
    alpn: &[&[u8]],
    path: &str,
) -> anyhow::Result<(Option<Vec<u8>>, Answer)> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(cert_pem.as_bytes())?)?;
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let uri = format!("https://localhost:{}{path}", addr.port());
    runtime().block_on(async {
        let tcp = TcpStream::connect(addr).await?;
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from("localhost")?, tcp)
            .await?;
        let chosen = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        let http2 = chosen.as_deref() == Some(b"h2");
        Ok((chosen, send(tls, http2, "GET", &uri, Vec::new()).await?))
    })
}

#[test]
fn with_http2_one_port_serves_h2c_and_http1_and_keeps_the_limits() {
    let server = ServerProcess::start(BIN, &["--http2", "--max-body-bytes", "1000"]);
    let a = cleartext(server.addr, true, "GET", "/", b"").unwrap();
    assert_eq!((a.version, a.status), (hyper::Version::HTTP_2, 200));
    assert_eq!(a.body, b"hello");
    let a = cleartext(server.addr, true, "POST", "/echo", &[b'x'; 1000]).unwrap();
    assert_eq!((a.status, a.body.len()), (200, 1000));
    assert_eq!(
        cleartext(server.addr, true, "POST", "/echo", &[b'x'; 1001])
            .unwrap()
            .status,
        413
    );
    assert_eq!(
        cleartext(server.addr, true, "GET", "/nope", b"")
            .unwrap()
            .status,
        404
    );
    // HTTP/1.1 on the same port, as before.
    let a = cleartext(server.addr, false, "GET", "/", b"").unwrap();
    assert_eq!((a.version, a.status), (hyper::Version::HTTP_11, 200));
    assert_eq!(request(server.addr, "POST", "/echo", b"abc").status, 200);
}

#[test]
fn without_http2_the_preface_gets_no_http2() {
    let server = ServerProcess::start(BIN, &[]);
    cleartext(server.addr, true, "GET", "/", b"").expect_err("HTTP/1.1 only");
    assert_eq!(request(server.addr, "GET", "/", b"").status, 200);
}

#[test]
fn https_chooses_h2_or_http1_by_alpn() {
    let dir = tempfile::tempdir().unwrap();
    let cert = LocalhostCertificate::new();
    let (cert_file, key_file) = cert.write_to(dir.path());
    let (c, k) = (cert_file.to_str().unwrap(), key_file.to_str().unwrap());
    let both = ServerProcess::start(BIN, &["--http2", "--tls-cert", c, "--tls-key", k]);
    let (alpn, a) = over_tls(both.addr, &cert.cert_pem, &[b"h2", b"http/1.1"], "/").unwrap();
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
    assert_eq!(
        (a.version, a.status, a.body.as_slice()),
        (hyper::Version::HTTP_2, 200, &b"hello"[..])
    );
    let (alpn, a) = over_tls(both.addr, &cert.cert_pem, &[b"http/1.1"], "/").unwrap();
    assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
    assert_eq!((a.version, a.status), (hyper::Version::HTTP_11, 200));
    let (alpn, a) = over_tls(both.addr, &cert.cert_pem, &[], "/").unwrap();
    assert_eq!(
        (alpn, a.version, a.status),
        (None, hyper::Version::HTTP_11, 200)
    );
    // Without --http2, h2 is not offered: a client that asks for both gets HTTP/1.1.
    let one = ServerProcess::start(BIN, &["--tls-cert", c, "--tls-key", k]);
    let (alpn, a) = over_tls(one.addr, &cert.cert_pem, &[b"h2", b"http/1.1"], "/").unwrap();
    assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
    assert_eq!((a.version, a.status), (hyper::Version::HTTP_11, 200));
    // Cleartext to a TLS port is not answered.
    assert!(cleartext(one.addr, false, "GET", "/", b"").is_err());
}

#[test]
fn bad_tls_files_are_refused_with_one_line_before_listening() {
    let dir = tempfile::tempdir().unwrap();
    let (cert_file, key_file) = LocalhostCertificate::new().write_to(dir.path());
    let (c, k) = (cert_file.to_str().unwrap(), key_file.to_str().unwrap());
    let other_dir = dir.path().join("other");
    std::fs::create_dir(&other_dir).unwrap();
    let other = LocalhostCertificate::new().write_to(&other_dir).1;
    let missing = dir.path().join("missing.pem");
    for (args, says) in [
        (
            vec!["--tls-cert", missing.to_str().unwrap(), "--tls-key", k],
            "--tls-cert",
        ),
        (
            vec!["--tls-cert", k, "--tls-key", k],
            "no certificate in it",
        ),
        (
            vec!["--tls-cert", c, "--tls-key", c],
            "no private key in it",
        ),
        (
            vec!["--tls-cert", c, "--tls-key", other.to_str().unwrap()],
            "do not make a usable pair",
        ),
        (vec!["--tls-cert", c], "--tls-key"),
        (vec!["--http2", "--connection-close"], "cannot be used with"),
    ] {
        let out = Command::new(BIN)
            .args(["--port", "0"])
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: listened anyway");
    }
}
