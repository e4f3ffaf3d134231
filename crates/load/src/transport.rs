//! A connection's transport: TCP, or TLS over it for https, behind one type; opened with its
//! connect and handshake phases recorded.

use std::cell::RefCell;
use std::time::Instant;

use tokio::net::TcpStream;
use tokio_util::either::Either;

use crate::exchange::Failure;
use crate::report::WorkerStats;
use crate::shared::Shared;
use wasmlab_load_data::record;

/// A connection's byte stream: plain TCP, or TLS over it.
pub(crate) type Stream = Either<TcpStream, Box<tokio_rustls::client::TlsStream<TcpStream>>>;

/// A new connection for a request that started at `started`, its TCP connect (and TLS
/// handshake) recorded in `stats`; and when it was ready.
pub(crate) async fn connect(
    shared: &Shared,
    stats: &RefCell<WorkerStats>,
    started: Instant,
) -> Result<(Stream, Instant), Failure> {
    let (stream, tcp_done, tls_resumed) = open(shared).await?;
    let connected = Instant::now();
    let mut st = stats.borrow_mut();
    record(&mut st.phases.connect, tcp_done - started);
    if let Some(resumed) = tls_resumed {
        record(&mut st.phases.tls, connected - tcp_done);
        st.phases.tls_resumed += u64::from(resumed);
    }
    Ok((stream, connected))
}

/// A new connection's stream (TLS over TCP for https), when its TCP connect ended, and for TLS
/// whether the handshake resumed a session. Over TLS with HTTP/2 asked, the server must agree to
/// it (ALPN).
async fn open(shared: &Shared) -> Result<(Stream, Instant, Option<bool>), Failure> {
    let addr = shared.config.authority();
    let timeout = shared.config.timeout;
    let tcp = tokio::time::timeout(timeout, TcpStream::connect(&addr))
        .await
        .map_err(|_| Failure::Connect(format!("connect to {addr} timed out")))?
        .map_err(|e| Failure::Connect(format!("connect to {addr}: {e}")))?;
    let tcp_done = Instant::now();
    let _ = tcp.set_nodelay(true);
    let (stream, tls_resumed) = match &shared.tls {
        None => (Either::Left(tcp), None),
        Some(tls) => {
            let handshake = tls.connector.connect(tls.server_name.clone(), tcp);
            let s = tokio::time::timeout(timeout, handshake)
                .await
                .map_err(|_| Failure::Connect(format!("TLS handshake with {addr} timed out")))?
                .map_err(|e| Failure::Connect(format!("TLS handshake with {addr}: {e}")))?;
            let session = s.get_ref().1;
            if shared.config.http2 && session.alpn_protocol() != Some(b"h2") {
                let got = session
                    .alpn_protocol()
                    .map_or("none".into(), |p| String::from_utf8_lossy(p).into_owned());
                return Err(Failure::Connect(format!(
                    "{addr} does not speak HTTP/2 over TLS (ALPN: {got})"
                )));
            }
            let resumed = session.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
            (Either::Right(Box::new(s)), Some(resumed))
        }
    };
    Ok((stream, tcp_done, tls_resumed))
}
