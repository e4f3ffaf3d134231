//! The HTTP/1.1 server: accept loop, connection settings, request → executor → response.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Body as _;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use crate::executor::{ExecRequest, Executor, Reply};

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Keep connections open between requests (HTTP/1.1 keep-alive). Off reproduces the gateway
    /// study's server: `Connection: close` on every response, one connection at a time per loop.
    pub keep_alive: bool,
    /// Concurrent accept loops; only matters with keep-alive off (otherwise each connection is a task).
    pub accept_loops: usize,
    /// Request bodies above this answer 413.
    pub max_body_bytes: usize,
    /// A client must send its whole request head within this time.
    pub header_timeout: Duration,
    /// Largest request head (request line and headers); larger ones get 431.
    pub max_header_bytes: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            keep_alive: true,
            accept_loops: 1,
            max_body_bytes: 1 << 20,
            header_timeout: Duration::from_secs(10),
            max_header_bytes: 64 << 10,
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
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..loops {
        tasks.spawn(accept_loop(
            listener.clone(),
            executor.clone(),
            config.clone(),
        ));
    }
    while let Some(res) = tasks.join_next().await {
        res.expect("accept loop panicked")?;
    }
    Ok(())
}

async fn accept_loop<E: Executor>(
    listener: Arc<TcpListener>,
    executor: Arc<E>,
    config: Arc<ServerConfig>,
) -> std::io::Result<()> {
    loop {
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
        let conn = serve_connection(stream, executor.clone(), config.clone());
        if config.keep_alive {
            tokio::spawn(conn);
        } else {
            conn.await;
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

/// Serves one connection (any byte stream: a TCP socket, or an in-memory pipe in the fuzz target)
/// until the client or the server closes it.
pub async fn serve_connection<E, S>(stream: S, executor: Arc<E>, config: Arc<ServerConfig>)
where
    E: Executor,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let max_body = config.max_body_bytes;
    let service = service_fn(move |req: Request<Incoming>| {
        let executor = executor.clone();
        async move { Ok::<_, Infallible>(handle(req, executor.as_ref(), max_body).await) }
    });
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(config.keep_alive)
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        // hyper answers 431 when the head outgrows its read buffer (it needs at least 8 KiB).
        .max_buf_size(config.max_header_bytes.max(8192));
    // Errors here are the client's (reset, malformed request answered by hyper with 400, timeout).
    let _ = builder
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn handle<E: Executor>(
    req: Request<Incoming>,
    executor: &E,
    max_body: usize,
) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
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
        match Limited::new(body, max_body).collect().await {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large(max_body)),
            Err(e) => Err(Reply::text(
                400,
                format!("could not read the request body: {e}"),
            )),
        }
    };
    let reply = match body {
        Ok(body) => {
            let req = ExecRequest {
                method: parts.method,
                target,
                body,
            };
            let reply = executor.execute(req).await;
            // A busy worker lets its other ready requests run before this reply is written: the
            // executor's work then runs back to back (its code and data stay in cache) and the
            // replies leave in a burst, so the client side is woken once per burst rather than
            // once per reply. An idle worker answers at once: the pass through the scheduler
            // would only add latency (~15 µs at c=1 on the 2-core VM).
            if executor.defer_replies_when_busy() && crate::idle::finished_while_busy() {
                tokio::task::yield_now().await;
            }
            reply
        }
        Err(refused) => refused,
    };
    into_response(reply)
}

fn too_large(max: usize) -> Reply {
    Reply::text(413, format!("request body larger than {max} bytes"))
}

fn into_response(reply: Reply) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(reply.body));
    *resp.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    *resp.headers_mut() = reply.headers;
    resp
}
