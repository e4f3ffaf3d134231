//! One keep-alive connection of a worker: its exchanges (the request written once, the response
//! framed by the worker's parser), each timed by phase, and the stats they leave.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use crate::pacing::{self, Pacer};
use crate::report::record;
use crate::worker::{SerializedRequest, Shared, WorkerStats};
use crate::{LATE_AFTER, http1};

pub(crate) enum Failure {
    Connect(String),
    ReadWrite(String),
    Timeout,
}

/// A connection's byte stream: plain TCP, or TLS over it.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// One keep-alive connection: the socket, the buffer its reads land in, and the response parser.
struct Connection {
    stream: Stream,
    buf: Box<[u8]>,
    parser: http1::ResponseParser,
}

/// Bytes one read takes at most; a hello response is ~100 bytes, larger bodies take several.
const READ_BUFFER_BYTES: usize = 16 * 1024;

/// A new connection, and when its TCP connect ended and its TLS handshake (if any) with
/// whether it resumed a session.
struct Opened {
    conn: Connection,
    tcp_done: Instant,
    tls_resumed: Option<bool>,
}

async fn connect(shared: &Shared) -> Result<Opened, Failure> {
    let (stream, tcp_done, tls_resumed) = open(shared).await?;
    Ok(Opened {
        conn: Connection {
            stream,
            buf: vec![0; READ_BUFFER_BYTES].into_boxed_slice(),
            parser: http1::ResponseParser::new(false),
        },
        tcp_done,
        tls_resumed,
    })
}

/// A new connection's stream (TLS over TCP for https), when its TCP connect ended, and for TLS
/// whether the handshake resumed a session. Over TLS with HTTP/2 asked, the server must agree to
/// it (ALPN).
pub(crate) async fn open(shared: &Shared) -> Result<(Stream, Instant, Option<bool>), Failure> {
    let addr = shared.config.authority();
    let timeout = shared.config.timeout;
    let tcp = tokio::time::timeout(timeout, TcpStream::connect(&addr))
        .await
        .map_err(|_| Failure::Connect(format!("connect to {addr} timed out")))?
        .map_err(|e| Failure::Connect(format!("connect to {addr}: {e}")))?;
    let tcp_done = Instant::now();
    let _ = tcp.set_nodelay(true);
    let (stream, tls_resumed) = match &shared.tls {
        None => (Stream::Plain(tcp), None),
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
            (Stream::Tls(Box::new(s)), Some(resumed))
        }
    };
    Ok((stream, tcp_done, tls_resumed))
}

/// A completed exchange: the response, and when the request started, its last byte was written,
/// the response's first byte was read, and its last.
pub(crate) struct Exchange {
    pub(crate) response: http1::Response,
    pub(crate) begin: Instant,
    pub(crate) written: Instant,
    pub(crate) first_byte: Instant,
    pub(crate) end: Instant,
}

impl Connection {
    /// Sends the request and reads the whole response. One write of the ready bytes, then reads
    /// until the parser has framed the reply; a read that does not fill the buffer has drained
    /// the socket, so tokio waits for the next response without another read syscall.
    async fn exchange(
        &mut self,
        request: &SerializedRequest,
        begin: Instant,
    ) -> Result<Exchange, Failure> {
        let io = |e: std::io::Error| Failure::ReadWrite(e.to_string());
        self.parser.reset(request.head);
        self.stream.write_all(&request.bytes).await.map_err(io)?;
        let written = Instant::now();
        let mut first_byte = None;
        loop {
            let n = self.stream.read(&mut self.buf).await.map_err(io)?;
            let now = Instant::now();
            let first_byte = *first_byte.get_or_insert(now);
            let done = if n == 0 {
                Some(self.parser.eof().map_err(Failure::ReadWrite)?)
            } else {
                match self
                    .parser
                    .feed(&self.buf[..n])
                    .map_err(Failure::ReadWrite)?
                {
                    http1::Progress::Complete(r) => Some(r),
                    http1::Progress::More => None,
                }
            };
            if let Some(response) = done {
                return Ok(Exchange {
                    response,
                    begin,
                    written,
                    first_byte,
                    end: now,
                });
            }
        }
    }
}

/// Waits for this sender's next turn: in the open loop its due time (None when the run is over,
/// else Some(due), its lag counted), in the closed loop at once while the run goes on (Some(None)).
/// `now` becomes the time the send starts.
pub(crate) async fn turn(
    shared: &Shared,
    schedule: Option<&(Rc<Pacer>, Rc<pacing::Alarm>)>,
    stats: &RefCell<WorkerStats>,
    now: &mut Instant,
) -> Option<Option<Instant>> {
    let Some((p, alarm)) = schedule else {
        return shared.may_send(*now).then_some(None);
    };
    // A send is taken by a sender free before the deadline and then made, even if the wait for
    // it ends a hair past the deadline: only sends no sender took in time count as dropped.
    let due = p.take();
    if shared.deadline.is_some_and(|d| due >= d) || shared.stopped() {
        return None;
    }
    alarm.wait_until(due).await;
    if shared.cancelled() {
        return None;
    }
    *now = Instant::now();
    let mut st = stats.borrow_mut();
    let lag = now.saturating_duration_since(due);
    record(&mut st.send_lag, lag);
    st.sent += 1;
    st.late += u64::from(lag > LATE_AFTER);
    Some(Some(due))
}

/// Runs connection number `id` until the run ends: each request sent (in the open loop, at its
/// due time), its response awaited under the timeout, the outcome counted. With several
/// requests, it sends them in turn from the `id`-th on.
pub(crate) async fn connection(
    id: usize,
    shared: Arc<Shared>,
    stats: Rc<RefCell<WorkerStats>>,
    schedule: Option<(Rc<Pacer>, Rc<pacing::Alarm>)>,
) {
    let mut conn: Option<Connection> = None;
    let requests = &shared.requests;
    let mut next = id % requests.len();
    let timeout = shared.config.timeout;
    // One timer per connection for the whole run, re-armed only when it fires: most exchanges
    // end long before it, and re-arming it for each one would cost more than the exchange's own
    // bookkeeping. When it fires before the current exchange's own deadline (it was armed for an
    // earlier one), it is moved to that deadline.
    let timer = tokio::time::sleep(timeout);
    tokio::pin!(timer);
    // The end of the previous exchange: the time the next one starts in the closed loop, so the
    // clock is read once per phase boundary.
    let mut now = Instant::now();
    loop {
        let Some(intended) = turn(&shared, schedule.as_ref(), &stats, &mut now).await else {
            break;
        };
        let started = now;
        let outcome = async {
            let (c, begin) = match conn.as_mut() {
                Some(c) => (c, started),
                None => {
                    let opened = connect(&shared).await?;
                    let connected = Instant::now();
                    let mut st = stats.borrow_mut();
                    record(&mut st.phases.connect, opened.tcp_done - started);
                    if let Some(resumed) = opened.tls_resumed {
                        record(&mut st.phases.tls, connected - opened.tcp_done);
                        st.phases.tls_resumed += u64::from(resumed);
                    }
                    drop(st);
                    (conn.insert(opened.conn), connected)
                }
            };
            let deadline = started + timeout;
            let exchange = c.exchange(&requests[next], begin);
            tokio::pin!(exchange);
            loop {
                tokio::select! {
                    biased;
                    done = &mut exchange => break done,
                    () = &mut timer => {
                        if Instant::now() >= deadline {
                            break Err(Failure::Timeout);
                        }
                        timer.as_mut().reset(deadline.into());
                    }
                }
            }
        }
        .await;
        let expect_status = requests[next].expect_status;
        next = (next + 1) % requests.len();
        let failed = count(
            &mut stats.borrow_mut(),
            outcome,
            Timing {
                started,
                intended,
                timeout,
            },
            expect_status,
            &mut conn,
            &mut now,
        );
        if failed {
            // A refused connect returns at once; do not spin on it.
            tokio::time::sleep(Duration::from_millis(1)).await;
            now = Instant::now();
        }
    }
}

/// When an exchange started, when it was due (open loop), and how long it could take.
pub(crate) struct Timing {
    pub(crate) started: Instant,
    pub(crate) intended: Option<Instant>,
    pub(crate) timeout: Duration,
}

/// Counts an exchange's outcome in the worker's stats; a failed one drops its connection (it
/// is in an unknown state) and says so. `now` becomes the end of a completed exchange.
pub(crate) fn count<C>(
    st: &mut WorkerStats,
    outcome: Result<Exchange, Failure>,
    Timing {
        started,
        intended,
        timeout,
    }: Timing,
    expect_status: Option<u16>,
    conn: &mut Option<C>,
    now: &mut Instant,
) -> bool {
    match outcome {
        Ok(x) => {
            *now = x.end;
            let status = x.response.status;
            record(&mut st.latency, x.end - intended.unwrap_or(started));
            if intended.is_some() {
                record(&mut st.uncorrected, x.end - started);
            }
            st.phases.record_exchange([
                x.written - x.begin,
                x.first_byte - x.written,
                x.end - x.first_byte,
            ]);
            st.responses += 1;
            st.body_bytes += x.response.body_bytes;
            st.by_status[usize::from(status).min(999)] += 1;
            let ok = match expect_status {
                Some(want) => status == want,
                None => (200..300).contains(&status),
            };
            if ok {
                st.ok += 1;
            } else {
                st.errors.non_2xx += 1;
                st.first_error
                    .get_or_insert_with(|| format!("status {status}"));
            }
            if !x.response.keep_alive {
                *conn = None;
            }
            false
        }
        Err(f) => {
            // The connection is in an unknown state: replace it.
            *conn = None;
            let msg = match f {
                Failure::Connect(m) => {
                    st.errors.connect += 1;
                    m
                }
                Failure::ReadWrite(m) => {
                    st.errors.read_write += 1;
                    m
                }
                Failure::Timeout => {
                    st.errors.timeout += 1;
                    format!("no response within {timeout:?}")
                }
            };
            st.first_error.get_or_insert(msg);
            true
        }
    }
}
