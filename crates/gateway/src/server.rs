//! The HTTP server: accept loop, connection settings (HTTP/1.1, and HTTP/2 and TLS when asked),
//! request → executor → response.

use std::cell::Cell;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Body as _;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use crate::connections::{ConnectionGauge, ConnectionSlot};
use crate::executor::{ExecRequest, Executor, Failure, Reply};
use crate::log::{self, Incident, RequestId};
use crate::protocol::{self, Http};
use crate::send::{
    ConnectionSend, ResponseBody, SendBudget, SendDeadline, StreamGuard, StreamSpawner,
};

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Keep connections open between requests (HTTP/1.1 keep-alive). Off reproduces the gateway
    /// study's server: `Connection: close` on every response, one connection at a time per loop.
    pub keep_alive: bool,
    /// Concurrent accept loops; only matters with keep-alive off (otherwise each connection is a task).
    pub accept_loops: usize,
    /// Request bodies above this answer 413.
    pub max_body_bytes: usize,
    /// A client must send its whole request head within this time (and, on an idle keep-alive
    /// connection, start the next one).
    pub header_timeout: Duration,
    /// A client must send a request's whole body within this time after its head; past it the
    /// answer is 408 and the connection is closed.
    pub body_timeout: Duration,
    /// Largest request head (request line and headers); larger ones get 431.
    pub max_header_bytes: usize,
    /// Connections open at once; past it the gateway stops accepting until one closes (the
    /// kernel's accept queue holds the next ones). Bounds the memory connections can take.
    pub max_connections: usize,
    /// Tell clients the diagnosis of a failure (trap, ABI violation) rather than only its status
    /// and a generic line. For tests and the lab's verification; the log always has it.
    pub error_details: bool,
    /// Whether a busy worker defers replies (see `handle`); None: as the executor prefers.
    pub defer_replies: Option<bool>,
    /// Serve HTTP/2 beside HTTP/1.1: in cleartext to clients that open with its preface (prior
    /// knowledge, h2c), over TLS to those that choose `h2` by ALPN. Needs keep-alive.
    pub http2: bool,
    /// HTTPS with these settings (certificate, ALPN); None: cleartext.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// An HTTP/2 connection with no stream open for this long is sent GOAWAY and closed (an
    /// HTTP/1.1 one is closed by the header timeout).
    pub http2_idle_timeout: Duration,
    /// A connection whose writes wait on the client, or (HTTP/2) whose responses all stand
    /// still, for this long is closed, and what it held given back (see `send.rs`).
    pub send_timeout: Duration,
    /// Response bytes all connections together may hold for clients that have not taken them,
    /// beyond each connection's small allowance; past it new responses are answered 503.
    pub max_unsent_bytes: usize,
    /// Response bytes one connection may hold (HTTP/2: over all its streams); past it its new
    /// responses are answered 503.
    pub max_unsent_bytes_per_connection: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            keep_alive: true,
            accept_loops: 1,
            max_body_bytes: 1 << 20,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_header_bytes: 64 << 10,
            max_connections: 10_000,
            error_details: false,
            defer_replies: None,
            http2: false,
            tls: None,
            http2_idle_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(10),
            max_unsent_bytes: 64 << 20,
            max_unsent_bytes_per_connection: 4 << 20,
        }
    }
}

impl ServerConfig {
    /// A budget for unsent response bytes with these limits.
    pub(crate) fn send_budget(&self) -> SendBudget {
        SendBudget::new(self.max_unsent_bytes, self.max_unsent_bytes_per_connection)
    }
}

/// What every connection of a server shares: its executor, its settings and its send budget.
struct Serving<E> {
    executor: Arc<E>,
    config: Arc<ServerConfig>,
    budget: Arc<SendBudget>,
}

impl<E> Clone for Serving<E> {
    fn clone(&self) -> Self {
        Self {
            executor: self.executor.clone(),
            config: self.config.clone(),
            budget: self.budget.clone(),
        }
    }
}

/// Serves connections from `listener` until the task is dropped.
pub async fn serve<E: Executor>(
    listener: TcpListener,
    executor: Arc<E>,
    config: ServerConfig,
) -> std::io::Result<()> {
    let listener = Arc::new(listener);
    let config = Arc::new(config);
    let loops = if config.keep_alive {
        1
    } else {
        config.accept_loops.max(1)
    };
    let gauge = Arc::new(ConnectionGauge::new(config.max_connections));
    let serving = Serving {
        executor,
        budget: Arc::new(config.send_budget()),
        config,
    };
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..loops {
        tasks.spawn(accept_loop(
            listener.clone(),
            serving.clone(),
            gauge.clone(),
        ));
    }
    let trimmer = tokio::spawn(crate::memory::return_memory_after_storms(
        gauge,
        serving.budget.clone(),
    ));
    let res = async {
        while let Some(res) = tasks.join_next().await {
            res.expect("accept loop panicked")?;
        }
        Ok(())
    }
    .await;
    trimmer.abort();
    res
}

async fn accept_loop<E: Executor>(
    listener: Arc<TcpListener>,
    serving: Serving<E>,
    gauge: Arc<ConnectionGauge>,
) -> std::io::Result<()> {
    let config = serving.config.clone();
    loop {
        // At the connection limit, wait for a slot before accepting: the next clients wait in
        // the kernel's accept queue rather than in the gateway's memory.
        let slot = ConnectionSlot::acquire(&gauge).await;
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of file descriptors or a connection reset before accept: keep serving the others.
            Err(e) if is_transient_accept_error(&e) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        // Responses are written whole; Nagle would only delay them (the wasi-test study's 41 ms).
        let _ = stream.set_nodelay(true);
        if config.keep_alive {
            let serving = serving.clone();
            tokio::spawn(async move {
                // hyper allocates a connection's buffers (16 KiB) when it starts: a connection
                // that has sent nothing yet costs only this task until it does, and is closed if
                // it sends nothing within the header timeout. (A peek, not `readable()`: tokio
                // takes a freshly accepted socket to be readable until a read says otherwise.)
                let mut first = [0u8; 1];
                let first_byte =
                    tokio::time::timeout(serving.config.header_timeout, stream.peek(&mut first));
                if let Ok(Ok(1..)) = first_byte.await {
                    serve_counted(stream, serving).await;
                }
                drop(slot);
            });
        } else {
            serve_counted(stream, serving.clone()).await;
            drop(slot);
        }
    }
}

fn is_transient_accept_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || matches!(e.raw_os_error(), Some(code) if code == 24 /* EMFILE */ || code == 23 /* ENFILE */)
}

/// Numbers connections in the order they are served, for request ids in the log.
static CONNECTIONS: AtomicU64 = AtomicU64::new(0);

/// Serves one connection (any byte stream: a TCP socket, or an in-memory pipe in the fuzz target)
/// until the client or the server closes it: the TLS handshake first with HTTPS, then HTTP/1.1,
/// or HTTP/2 where the configuration serves it and the client chose it. Its unsent responses are
/// counted against a budget of its own (`serve` shares one among all its connections).
pub async fn serve_connection<E, S>(stream: S, executor: Arc<E>, config: Arc<ServerConfig>)
where
    E: Executor,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let serving = Serving {
        executor,
        budget: Arc::new(config.send_budget()),
        config,
    };
    serve_counted(stream, serving).await
}

async fn serve_counted<E, S>(stream: S, serving: Serving<E>)
where
    E: Executor,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    // Under TLS too: a client that takes no bytes stalls the handshake's and records' writes.
    let stream = SendDeadline::new(stream, serving.config.send_timeout);
    // The TLS and HTTP/2 paths are boxed: an idle connection's task is as small as the plain
    // HTTP/1.1 path alone makes it (tokio allocates a task's whole future when it is spawned).
    match serving.config.tls.clone() {
        Some(tls) => Box::pin(serve_tls(tls, stream, serving)).await,
        None if serving.config.http2 => Box::pin(serve_sniffed(stream, serving)).await,
        // The tuned path: the bytes go to hyper's HTTP/1.1 parser untouched.
        None => serve_http(Http::One, stream, serving).await,
    }
}

/// HTTPS: the handshake, then the protocol ALPN chose.
async fn serve_tls<E, S>(tls: Arc<rustls::ServerConfig>, stream: S, serving: Serving<E>)
where
    E: Executor,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let accept = tokio_rustls::TlsAcceptor::from(tls).accept(stream);
    // A handshake must finish within the time a request head must; a failed or slow one is
    // the client's, and its connection is closed.
    let handshake = tokio::time::timeout(serving.config.header_timeout, accept);
    let Ok(Ok(stream)) = handshake.await else {
        return;
    };
    let http = match stream.get_ref().1.alpn_protocol() {
        Some(crate::tls::ALPN_H2) => Http::Two,
        _ => Http::One,
    };
    serve_http(http, stream, serving).await;
}

/// Cleartext with HTTP/2 on: the first bytes say which protocol (within the header timeout).
async fn serve_sniffed<E, S>(stream: S, serving: Serving<E>)
where
    E: Executor,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let sniff = protocol::sniff(stream);
    if let Ok(Ok((http, stream))) = tokio::time::timeout(serving.config.header_timeout, sniff).await
    {
        serve_http(http, stream, serving).await;
    }
}

async fn serve_http<E, S>(http: Http, stream: S, serving: Serving<E>)
where
    E: Executor,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Serving {
        executor,
        config,
        budget,
    } = serving;
    let connection = CONNECTIONS.fetch_add(1, Ordering::Relaxed) + 1;
    let requests = Cell::new(0);
    // Copied into each request's future: no shared counter touched per request.
    let rules = RequestRules::from(config.as_ref());
    let sending = ConnectionSend::new(budget);
    let counted = sending.clone();
    let service = service_fn(move |req: Request<Incoming>| {
        let executor = executor.clone();
        requests.set(requests.get() + 1);
        let id = RequestId {
            connection,
            sequence: requests.get(),
        };
        let sending = counted.clone();
        // HTTP/2: the stream is open from its request until its response is sent.
        let stream = (http == Http::Two).then(|| sending.stream_opened(id));
        async move {
            let reply = handle(req, executor.as_ref(), rules, id).await;
            Ok::<_, Infallible>(respond(reply, &sending, stream, id))
        }
    });
    let io = TokioIo::new(stream);
    // Errors here are the client's (reset, malformed request answered by hyper with 400, timeout,
    // a protocol error in an HTTP/2 frame).
    match http {
        Http::One => {
            let mut builder = http1::Builder::new();
            builder
                .keep_alive(config.keep_alive)
                .timer(TokioTimer::new())
                .header_read_timeout(config.header_timeout)
                // 431 past this many bytes of request line and headers, however they are split.
                .max_header_size(config.max_header_bytes)
                // The read buffer's cap (hyper needs at least 8 KiB).
                .max_buf_size(config.max_header_bytes.max(8192));
            if let Err(e) = builder.serve_connection(io, service).await {
                note_send_timeout(&e, connection, &config);
            }
        }
        Http::Two => {
            // Each stream's request runs as a task of its own, so one connection's requests run
            // at once, as they would on as many HTTP/1.1 connections; a stream whose response
            // stalls for the send timeout is reset, its connection's other streams go on.
            let streams = StreamSpawner::new(sending.clone());
            let mut builder = http2::Builder::new(streams);
            builder
                .timer(TokioTimer::new())
                // hyper's own default; said here because it bounds one connection's work.
                .max_concurrent_streams(200)
                .max_header_list_size(config.max_header_bytes as u32);
            let mut served = Box::pin(builder.serve_connection(io, service));
            tokio::select! {
                done = served.as_mut() => {
                    if let Err(e) = done {
                        note_send_timeout(&e, connection, &config);
                    }
                }
                // GOAWAY, then the close; streams that open meanwhile are answered first (or
                // reset, if their responses stall).
                () = sending.watch(config.http2_idle_timeout, config.send_timeout) => {
                    served.as_mut().graceful_shutdown();
                    // h2 closes once the client has acknowledged GOAWAY's PING and its streams
                    // are done; one that never answers is closed a moment later, once no stream
                    // is open.
                    tokio::select! {
                        _ = served.as_mut() => {}
                        () = async {
                            tokio::time::sleep(GOAWAY_GRACE).await;
                            sending.watch(Duration::ZERO, config.send_timeout).await
                        } => {}
                    }
                }
            }
        }
    }
}

/// How long an HTTP/2 connection closed for idleness has to take in its GOAWAY (a round trip
/// answers it) before it is closed anyway once it has no stream open.
const GOAWAY_GRACE: Duration = Duration::from_secs(1);

/// Logs a connection closed because its client took no bytes for the send timeout.
fn note_send_timeout(e: &hyper::Error, connection: u64, config: &ServerConfig) {
    use std::error::Error as _;
    let timed_out = e
        .source()
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut);
    if timed_out {
        log::connection_incident(
            Incident::SendTimeout,
            connection,
            format_args!(
                "the client took no bytes for {:?}; connection closed",
                config.send_timeout
            ),
        );
    }
}

/// The reply as a response whose body is counted against the connection's budget; past the
/// budget, a 503 in its place (HTTP/2's REFUSED_STREAM would say the same; a status is what every
/// client shows).
fn respond(
    reply: Reply,
    sending: &Arc<ConnectionSend>,
    stream: Option<StreamGuard>,
    id: RequestId,
) -> Response<ResponseBody> {
    let Reply {
        status,
        headers,
        body,
    } = reply;
    match ResponseBody::admitted(body, sending, stream) {
        Ok(body) => response(status, headers, body),
        Err((body, stream)) => {
            log::incident(
                Incident::SendBudget,
                id,
                format_args!(
                    "a {}-byte response not sent: its connection holds {} unsent bytes, the gateway {} past the connections' allowances; answered 503",
                    body.len(),
                    sending.held(),
                    sending.budget_drawn()
                ),
            );
            let mut busy = Reply::text(
                503,
                "the gateway holds too many response bytes that clients have not taken; try again\n",
            );
            busy.headers
                .insert(hyper::header::RETRY_AFTER, HeaderValue::from_static("1"));
            let body = ResponseBody::admitted_anyway(busy.body, sending, stream);
            response(busy.status, busy.headers, body)
        }
    }
}

/// What the server needs to know per request.
#[derive(Debug, Clone, Copy)]
struct RequestRules {
    max_body_bytes: usize,
    body_timeout: Duration,
    error_details: bool,
    defer_replies: Option<bool>,
}

impl From<&ServerConfig> for RequestRules {
    fn from(c: &ServerConfig) -> Self {
        Self {
            max_body_bytes: c.max_body_bytes,
            body_timeout: c.body_timeout,
            error_details: c.error_details,
            defer_replies: c.defer_replies,
        }
    }
}

async fn handle<E: Executor>(
    req: Request<Incoming>,
    executor: &E,
    config: RequestRules,
    id: RequestId,
) -> Reply {
    let (mut parts, body) = req.into_parts();
    let max_body = config.max_body_bytes;
    let target = parts
        .uri
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |pq| pq.as_str().to_owned());
    let declared_too_big = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > max_body as u64);
    let body = if declared_too_big {
        Err(too_large(max_body))
    } else if body.is_end_stream() {
        // No body (most GETs): nothing to collect.
        Ok(Bytes::new())
    } else {
        let collect = Limited::new(body, max_body).collect();
        match tokio::time::timeout(config.body_timeout, collect).await {
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large(max_body)),
            Ok(Err(e)) => Err(Reply::text(
                400,
                format!("could not read the request body: {e}"),
            )),
            Err(_) => {
                log::incident(
                    Incident::BodyTimeout,
                    id,
                    format_args!(
                        "{} {}: body not received within {:?}; answered 408 and closed",
                        parts.method,
                        loggable(&parts.uri),
                        config.body_timeout
                    ),
                );
                let mut reply = Reply::text(
                    408,
                    format!(
                        "request body not received within {} ms",
                        config.body_timeout.as_millis()
                    ),
                );
                reply
                    .headers
                    .insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
                return reply;
            }
        }
    };
    match body {
        Ok(body) => {
            let mut headers = std::mem::take(&mut parts.headers);
            if let Some(authority) = parts.uri.authority()
                && !headers.contains_key(hyper::header::HOST)
                && let Ok(host) = HeaderValue::from_str(authority.as_str())
            {
                headers.insert(hyper::header::HOST, host);
            }
            let req = ExecRequest {
                method: parts.method.clone(),
                target,
                headers,
                body,
            };
            let defer = config
                .defer_replies
                .unwrap_or_else(|| executor.defer_replies_when_busy());
            let started = defer.then(std::time::Instant::now);
            let outcome = executor.execute(req).await;
            // A busy worker lets its other ready requests run before this reply is written: the
            // executor's work then runs back to back (its code and data stay in cache) and the
            // replies leave in a burst, so the client side is woken once per burst rather than
            // once per reply. An idle worker answers at once: the pass through the scheduler
            // would only add latency (~15 µs at c=1 on the 2-core VM). So does a long request:
            // batching saves it nothing, and waiting behind other long requests lengthens the
            // tail (/compute at 100 connections: p99 1.3x native deferred, 1.06x not).
            if defer
                && crate::idle::finished_while_busy()
                && started.is_some_and(|t| t.elapsed() < DEFER_ONLY_UNDER)
            {
                tokio::task::yield_now().await;
            }
            match outcome.and_then(|reply| framed_by_host(reply, id)) {
                Ok(reply) => reply,
                Err(failure) => failure_reply(&failure, &parts, id, config.error_details),
            }
        }
        Err(refused) => refused,
    }
}

/// A reply is deferred (see `handle`) only when its request ran for less than this.
const DEFER_ONLY_UNDER: std::time::Duration = std::time::Duration::from_millis(1);

fn too_large(max: usize) -> Reply {
    Reply::text(413, format!("request body larger than {max} bytes"))
}

/// Whether the host, not the reply, owns this header: it frames the message on the wire
/// (`content-length`, `transfer-encoding`, `trailer`) or concerns only this connection (the
/// hop-by-hop headers of RFC 9110 §7.6.1). A guest that set them could leave a client waiting
/// for bytes that never come, or append a second, forged response to a keep-alive connection.
fn is_host_owned(name: &HeaderName) -> bool {
    use hyper::header::{CONNECTION, CONTENT_LENGTH, TE, TRAILER, TRANSFER_ENCODING, UPGRADE};
    [
        CONTENT_LENGTH,
        TRANSFER_ENCODING,
        CONNECTION,
        UPGRADE,
        TE,
        TRAILER,
    ]
    .contains(name)
        || name.as_str() == "keep-alive"
        || name.as_str().starts_with("proxy-")
}

/// The reply as the host will frame it: every header the host owns is dropped (with a log line,
/// unless it was a `content-length` equal to the body's, which says nothing the host will not),
/// and a 1xx status, which cannot end an exchange, is a failure.
fn framed_by_host(mut reply: Reply, id: RequestId) -> Result<Reply, Failure> {
    if !(200..=999).contains(&reply.status) {
        return Err(Failure::new(
            500,
            format!(
                "reply status {} cannot end an exchange (give 200..=999)",
                reply.status
            ),
        ));
    }
    if !reply.headers.keys().any(is_host_owned) {
        return Ok(reply);
    }
    let owned: Vec<HeaderName> = reply
        .headers
        .keys()
        .filter(|n| is_host_owned(n))
        .cloned()
        .collect();
    let body_len = reply.body.len().to_string();
    let mut dropped = Vec::new();
    for name in owned {
        let values: Vec<HeaderValue> = reply.headers.get_all(&name).iter().cloned().collect();
        reply.headers.remove(&name);
        let same_length = name == hyper::header::CONTENT_LENGTH
            && values.len() == 1
            && values[0].as_bytes() == body_len.as_bytes();
        if !same_length {
            dropped.extend(values.iter().map(|v| format!("{name}: {v:?}")));
        }
    }
    if !dropped.is_empty() {
        log::incident(
            Incident::FramingHeader,
            id,
            format_args!(
                "dropped header(s) the host owns from the reply: {} (the host frames every response itself)",
                dropped.join(", ")
            ),
        );
    }
    Ok(reply)
}

/// Logs a failure in full and gives the client its status and a generic line naming the request
/// (the diagnosis too with `--error-details`).
fn failure_reply(
    failure: &Failure,
    request: &hyper::http::request::Parts,
    id: RequestId,
    details: bool,
) -> Reply {
    log::incident(
        Incident::GuestFailure,
        id,
        format_args!(
            "{} {}: {} {}",
            request.method,
            loggable(&request.uri),
            failure.status,
            failure.detail
        ),
    );
    let public = failure.public_message();
    Reply::text(
        failure.status,
        if details {
            format!("{public} (request {id}): {}\n", failure.detail)
        } else {
            format!("{public} (request {id})\n")
        },
    )
}

/// A request target short enough for a log line.
fn loggable(uri: &hyper::Uri) -> String {
    const MAX: usize = 200;
    let s = uri.path_and_query().map_or("/", |pq| pq.as_str());
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}… ({} bytes)", &s[..i], s.len()),
        None => s.to_owned(),
    }
}

fn response(status: u16, headers: hyper::HeaderMap, body: ResponseBody) -> Response<ResponseBody> {
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    *resp.headers_mut() = headers;
    resp
}
