//! Clients that hold the gateway without using it: an HTTP/2 connection with no stream is closed
//! at its idle timeout (cleartext and TLS) while a busy one is not; clients that stop reading
//! hold no more than the send budget and are cut at the send timeout (an HTTP/1.1 connection, an
//! HTTP/2 stream while its connection's other streams go on); healthy clients are served
//! meanwhile.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use wasmlab_test_support::{LocalhostCertificate, ServerProcess, request};

const BIN: &str = env!("CARGO_BIN_EXE_wasmlab-gateway-native");

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Opens HTTP/2 on `io` (the preface and empty SETTINGS), sends nothing more, and reads until
/// the server closes: how long that took and the frame types it sent (7 is GOAWAY).
async fn idle_http2<IO: AsyncRead + AsyncWrite + Unpin>(mut io: IO) -> (Duration, Vec<u8>) {
    let started = Instant::now();
    io.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), io.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => bytes.extend_from_slice(&buf[..n]),
            Err(_) => panic!("an idle HTTP/2 connection still open after 10 s"),
        }
    }
    let mut types = Vec::new();
    let mut at = 0;
    while at + 9 <= bytes.len() {
        let len = u32::from_be_bytes([0, bytes[at], bytes[at + 1], bytes[at + 2]]) as usize;
        types.push(bytes[at + 3]);
        at += 9 + len;
    }
    (started.elapsed(), types)
}

fn tls_client(cert_pem: &str) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap())
        .unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

#[test]
fn an_idle_http2_connection_is_closed_at_its_timeout_and_a_busy_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let cert = LocalhostCertificate::new();
    let (cert_file, key_file) = cert.write_to(dir.path());
    let idle = ["--http2", "--http2-idle-timeout-secs", "1"];
    let cleartext = ServerProcess::start(BIN, &idle);
    let tls_args = [
        &idle[..],
        &[
            "--tls-cert",
            cert_file.to_str().unwrap(),
            "--tls-key",
            key_file.to_str().unwrap(),
        ],
    ]
    .concat();
    let tls = ServerProcess::start(BIN, &tls_args);
    runtime().block_on(async {
        // A busy connection: a request every 300 ms for longer than the idle timeout.
        let tcp = tokio::net::TcpStream::connect(cleartext.addr)
            .await
            .unwrap();
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
                .await
                .unwrap();
        let conn = tokio::spawn(conn);
        let busy = async {
            for _ in 0..8 {
                let req = hyper::Request::get(format!("http://{}/", cleartext.addr))
                    .body(Full::new(Bytes::new()))
                    .unwrap();
                let resp = sender
                    .send_request(req)
                    .await
                    .expect("the busy connection stays open");
                assert_eq!(resp.status(), 200);
                resp.into_body().collect().await.unwrap();
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        };
        let idle_cleartext = async {
            let tcp = tokio::net::TcpStream::connect(cleartext.addr)
                .await
                .unwrap();
            idle_http2(tcp).await
        };
        let idle_tls = async {
            let tcp = tokio::net::TcpStream::connect(tls.addr).await.unwrap();
            let stream = tls_client(&cert.cert_pem)
                .connect(ServerName::try_from("localhost").unwrap(), tcp)
                .await
                .unwrap();
            assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
            idle_http2(stream).await
        };
        let ((), (took, frames), (took_tls, frames_tls)) =
            tokio::join!(busy, idle_cleartext, idle_tls);
        for (took, frames, over) in [(took, frames, "h2c"), (took_tls, frames_tls, "TLS")] {
            assert!(
                took >= Duration::from_millis(900) && took < Duration::from_secs(4),
                "{over}: closed after {took:?}"
            );
            assert!(
                frames.contains(&7),
                "{over}: closed without GOAWAY: frame types {frames:?}"
            );
        }
        assert!(!conn.is_finished(), "the busy connection was closed");
        // Once idle itself, it is closed too.
        let closed = tokio::time::timeout(Duration::from_secs(4), conn).await;
        assert!(
            closed.is_ok(),
            "the once-busy connection, now idle, still open"
        );
    });
}

/// A raw HTTP/1.1 client that posts `body` to /echo and never reads: its socket's receive
/// buffer small, so the kernel does not absorb the answer for it.
fn stop_reading(addr: SocketAddr, body: usize) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(&addr.into()).unwrap();
    let mut s: TcpStream = socket.into();
    write!(
        s,
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {body}\r\n\r\n"
    )
    .unwrap();
    s.write_all(&vec![b'x'; body]).unwrap();
    s
}

/// What a client that stopped reading finally finds: the status, and whether the connection was
/// closed (rather than left open) within `wait`.
fn what_it_finds(mut s: TcpStream, wait: Duration) -> (String, bool) {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 64 << 10];
    let closed = loop {
        match s.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                // A refusal is short and whole at once: nothing more to wait for.
                if got.starts_with(b"HTTP/1.1 503") && got.windows(4).any(|w| w == b"\r\n\r\n") {
                    break false;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break false;
            }
            Err(_) => break true,
        }
    };
    let status = String::from_utf8_lossy(&got)
        .split(' ')
        .nth(1)
        .unwrap_or("none")
        .to_owned();
    (status, closed)
}

#[test]
fn http1_clients_that_stop_reading_hold_at_most_the_budget_and_are_cut_at_the_send_timeout() {
    let server = ServerProcess::start_logged(
        BIN,
        &[
            "--send-timeout-secs",
            "1",
            "--max-unsent-bytes",
            "4194304",
            "--max-body-bytes",
            "8388608",
        ],
    );
    // 8 clients ask for 6 MiB each and read none of it. The kernel's socket buffers take up to
    // 4 MiB of each answer; the rest stays in the gateway, and the first answer held leaves no
    // room in the 4 MiB budget for another.
    let stalled: Vec<TcpStream> = (0..8).map(|_| stop_reading(server.addr, 6 << 20)).collect();
    std::thread::sleep(Duration::from_millis(200));
    // Healthy clients are served meanwhile: small answers always.
    assert_eq!(request(server.addr, "GET", "/", b"").status, 200);
    // Past the send timeout, they look.
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    let found: Vec<(String, bool)> = stalled
        .into_iter()
        .map(|s| what_it_finds(s, Duration::from_secs(3)))
        .collect();
    assert!(started.elapsed() < Duration::from_secs(8));
    let answered = found.iter().filter(|(s, _)| s == "200").count();
    let refused = found.iter().filter(|(s, _)| s == "503").count();
    assert!(answered >= 1 && refused >= 1, "{found:?}");
    assert_eq!(answered + refused, found.len(), "{found:?}");
    // Those that got their 200 took none of it: cut at the send timeout.
    assert!(
        found
            .iter()
            .filter(|(s, _)| s == "200")
            .all(|(_, closed)| *closed),
        "{found:?}"
    );
    let big = request(server.addr, "POST", "/echo", &[b'y'; 200_000]);
    assert_eq!(big.status, 200, "the budget given back");
    let log = server.log();
    assert!(log.contains("answered 503"), "{log}");
    assert!(
        log.contains("took no bytes") && log.contains("connection closed"),
        "{log}"
    );
}

/// An HTTP/2 connection to `addr` whose client opens each stream's window by `stream_window`
/// bytes only as a response's body is read, and its connection's by plenty.
async fn http2_client(
    addr: SocketAddr,
    stream_window: u32,
) -> (
    hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    tokio::task::JoinHandle<Result<(), hyper::Error>>,
) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .initial_stream_window_size(stream_window)
        .initial_connection_window_size(64 << 20)
        .handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    (sender, tokio::spawn(conn))
}

fn echo(addr: SocketAddr, bytes: usize) -> hyper::Request<Full<Bytes>> {
    hyper::Request::post(format!("http://{addr}/echo"))
        .body(Full::new(Bytes::from(vec![b'z'; bytes])))
        .unwrap()
}

/// Reads a response's body to its end: its length, or the error that ended it.
async fn read_body(resp: hyper::Response<hyper::body::Incoming>) -> Result<usize, hyper::Error> {
    let mut body = resp.into_body();
    let mut got = 0;
    while let Some(frame) = body.frame().await {
        got += frame?.into_data().map_or(0, |d| d.len());
    }
    Ok(got)
}

#[test]
fn an_http2_client_that_opens_no_window_holds_at_most_its_budget_and_its_streams_are_reset() {
    let server = ServerProcess::start_logged(
        BIN,
        &[
            "--http2",
            "--send-timeout-secs",
            "1",
            "--http2-idle-timeout-secs",
            "1",
            "--max-unsent-bytes-per-connection",
            "1048576",
        ],
    );
    let addr = server.addr;
    runtime().block_on(async {
        // Its streams' windows start shut and are never opened: no response data can leave.
        let (sender, conn) = http2_client(addr, 0).await;
        let asks: Vec<_> = (0..24)
            .map(|_| {
                let mut sender = sender.clone();
                tokio::spawn(async move {
                    // The head comes (HEADERS are not flow-controlled); the body is never read.
                    let resp = sender.send_request(echo(addr, 256 << 10)).await.unwrap();
                    let status = resp.status().as_u16();
                    (status, resp)
                })
            })
            .collect();
        let mut answers = Vec::new();
        for ask in asks {
            answers.push(ask.await.unwrap());
        }
        let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
        let ok = statuses.iter().filter(|s| **s == 200).count();
        // 24 × 256 KiB asked on one connection: its 1 MiB budget admits four or five.
        assert!((1..=5).contains(&ok), "{statuses:?}");
        assert!(
            statuses.iter().all(|s| *s == 200 || *s == 503),
            "{statuses:?}"
        );
        // A healthy client meanwhile, on its own connection.
        assert_eq!(request(addr, "GET", "/", b"").status, 200);
        // Nothing moves: each admitted stream is reset at the send timeout (its body ends in an
        // error), and the connection, with no stream left, is closed at its idle timeout.
        let started = Instant::now();
        let closed = tokio::time::timeout(Duration::from_secs(6), conn).await;
        assert!(closed.is_ok(), "still open 6 s after its responses stalled");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
        for (status, resp) in answers {
            if status == 200 {
                assert!(
                    read_body(resp).await.is_err(),
                    "a stalled stream was not reset"
                );
            }
        }
    });
    let log = server.log();
    assert!(
        log.contains("HTTP/2:") && log.contains("stream reset"),
        "{log}"
    );
    assert_eq!(request(addr, "GET", "/", b"").status, 200);
}

#[test]
fn an_http2_stream_whose_client_stops_reading_is_reset_and_its_connection_goes_on() {
    let server = ServerProcess::start_logged(BIN, &["--http2", "--send-timeout-secs", "1"]);
    let addr = server.addr;
    runtime().block_on(async {
        // Each stream's window is 64 KiB until its body is read.
        let (mut sender, conn) = http2_client(addr, 65_535).await;
        // A 512 KiB answer whose body is never read: it stalls past its first 64 KiB.
        let stalled = sender.send_request(echo(addr, 512 << 10)).await.unwrap();
        assert_eq!(stalled.status(), 200);
        // The same connection's other streams are answered meanwhile and after the timeout,
        // large ones too.
        let started = Instant::now();
        let mut served = 0;
        while started.elapsed() < Duration::from_millis(2500) {
            let resp = sender.send_request(echo(addr, 200 << 10)).await.unwrap();
            assert_eq!(resp.status(), 200);
            assert_eq!(read_body(resp).await.unwrap(), 200 << 10);
            served += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(served >= 10, "{served}");
        // The stalled one was reset: what was sent of it arrives, then the reset.
        let err = read_body(stalled).await.unwrap_err();
        assert!(format!("{err:?}").contains("CANCEL"), "{err:?}");
        assert!(
            !conn.is_finished(),
            "the connection was closed, not the stream"
        );
        let resp = sender
            .send_request(
                hyper::Request::get(format!("http://{addr}/"))
                    .body(Full::default())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    });
    let log = server.log();
    assert_eq!(log.matches("stream reset").count(), 1, "{log}");
}
