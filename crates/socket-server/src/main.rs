//! The handlers as a whole server that owns its listening socket: HTTP/1.1 with keep-alive on one
//! thread (tokio's current-thread runtime, hyper), the way a Rust user writes a small server.
//!
//! The same source is built natively (`rust-socket`), for `wasm32-wasip2` (`wasm-socket-wasmtime`,
//! run by the Wasmtime CLI with network access) and for `wasm32-wasip1` with WASIX sockets
//! (`wasm-socket-wasmer`, run by Wasmer), so the variants differ only in the engine and in how a
//! socket is opened: the wasi-test study's question (a Rust server natively and compiled to Wasm)
//! and the net-limits study's (a Wasm server on WASIX sockets), with one thread everywhere because
//! a WASI program has one.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use wasmlab_handlers::Response as Answer;

#[cfg(not(all(target_os = "wasi", target_env = "p1")))]
use wasmlab_capabilities::Capabilities;
#[cfg(all(target_os = "wasi", target_env = "p1"))]
mod wasix;
#[cfg(all(target_os = "wasi", target_env = "p1"))]
use wasix::Capabilities;

#[derive(Parser, Debug)]
#[command(
    version,
    about = "wasmlab's routes as a single-threaded HTTP/1.1 server: natively, as a wasm32-wasip2 program (wasi:sockets) or as a wasm32-wasip1 one (WASIX sockets)"
)]
struct Args {
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to bind (0: an ephemeral one, printed once bound).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Base URL /proxy forwards to, e.g. http://127.0.0.1:9000.
    #[arg(long)]
    upstream: Option<String>,
    /// Largest request body accepted (bytes); larger ones get 413.
    #[arg(long, default_value_t = 1 << 20)]
    max_body_bytes: usize,
    /// Seconds a client has to send a whole request head, and on an idle keep-alive connection
    /// to start its next one; then the connection is closed.
    #[arg(long, default_value_t = 10.0, value_parser = positive_secs)]
    header_timeout_secs: f64,
    /// Seconds a client has to send a request's whole body after its head; then 408 and close.
    #[arg(long, default_value_t = 10.0, value_parser = positive_secs)]
    body_timeout_secs: f64,
    /// Largest request head (request line and headers) in bytes; larger ones are refused (431).
    #[arg(long, default_value_t = 64 << 10, value_parser = clap::value_parser!(u32).range(8192..))]
    max_header_bytes: u32,
    /// Connections open at once; past it the server accepts no more until one closes (they
    /// wait in the kernel's accept queue).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
}

fn positive_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds between 0 and 86400 (e.g. 10 or 0.5)"
        )),
    }
}

/// What each request must keep to.
#[derive(Debug, Clone, Copy)]
struct Limits {
    max_body: usize,
    body_timeout: Duration,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let caps = Arc::new(Capabilities::new(args.upstream.as_deref())?);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(serve(args, caps))
}

async fn serve(args: Args, caps: Arc<Capabilities>) -> anyhow::Result<()> {
    let ip = args
        .host
        .parse()
        .map_err(|e| anyhow::anyhow!("--host {:?} is not an IP address: {e}", args.host))?;
    let (listener, bound) = listen(SocketAddr::new(ip, args.port))
        .await
        .map_err(|e| anyhow::anyhow!("bind {}:{}: {e}", args.host, args.port))?;
    let limits = Limits {
        max_body: args.max_body_bytes,
        body_timeout: Duration::from_secs_f64(args.body_timeout_secs),
    };
    let header_timeout = Duration::from_secs_f64(args.header_timeout_secs);
    let max_header = args.max_header_bytes as usize;
    eprintln!(
        "max_connections={} max_body_bytes={} max_header_bytes={max_header} header_timeout={header_timeout:?} body_timeout={:?}",
        args.max_connections, limits.max_body, limits.body_timeout
    );
    println!("listening on http://{bound}");
    // One task a connection on one thread: a counter is the whole connection cap.
    let open = Rc::new(Cell::new(0u32));
    let slot_freed = Rc::new(tokio::sync::Notify::new());
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            loop {
                while open.get() >= args.max_connections {
                    slot_freed.notified().await;
                }
                let stream = match listener.accept().await {
                    Ok((stream, _)) => stream,
                    // Out of descriptors or a connection reset before it was accepted: the next may do.
                    Err(e) => {
                        eprintln!("accept: {e}");
                        tokio::task::yield_now().await;
                        continue;
                    }
                };
                // Nagle's algorithm would hold a response's last segment back until the client ACKs the
                // one before. On wasm32-wasip2 this fails: WASI 0.2's sockets have no such option and
                // Wasmtime leaves Nagle on (see `writev(false)` below).
                let _ = set_nodelay(&stream);
                let caps = caps.clone();
                open.set(open.get() + 1);
                let slot = Slot(open.clone(), slot_freed.clone());
                tokio::task::spawn_local(async move {
                    let _slot = slot;
                    let service = service_fn(move |req| {
                        let caps = caps.clone();
                        async move {
                            Ok::<_, std::convert::Infallible>(respond(req, &caps, limits).await)
                        }
                    });
                    // A client that goes away mid-request is its own business.
                    let _ = http1::Builder::new()
                        // Each response in one write: hyper's vectored write of head and body became two
                        // sends under wasi-libc, and with Nagle on (above) the body waited for the
                        // client's delayed ACK of the head: 44 ms a response, 1,148 req/s at 50
                        // connections (docs/systems.md, "Wasm servers that own their socket").
                        .writev(false)
                        .timer(TokioTimer::new())
                        .header_read_timeout(header_timeout)
                        .max_buf_size(max_header)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        })
        .await
}

/// A connection's place under `--max-connections`, given back when its task ends.
struct Slot(Rc<Cell<u32>>, Rc<tokio::sync::Notify>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
        self.1.notify_one();
    }
}

#[cfg(not(all(target_os = "wasi", target_env = "p1")))]
async fn listen(addr: SocketAddr) -> std::io::Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    Ok((listener, bound))
}

#[cfg(all(target_os = "wasi", target_env = "p1"))]
async fn listen(addr: SocketAddr) -> std::io::Result<(tokio::net::TcpListener, SocketAddr)> {
    wasix::listen(addr)
}

#[cfg(not(all(target_os = "wasi", target_env = "p1")))]
fn set_nodelay(stream: &tokio::net::TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)
}

#[cfg(all(target_os = "wasi", target_env = "p1"))]
use wasix::set_nodelay;

async fn respond(
    req: Request<Incoming>,
    caps: &Capabilities,
    limits: Limits,
) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let max_body = limits.max_body;
    let collect = tokio::time::timeout(limits.body_timeout, Limited::new(body, max_body).collect());
    let answer = match collect.await {
        Err(_) => {
            let mut late = Answer::text(
                408,
                format!(
                    "request body not received within {} ms",
                    limits.body_timeout.as_millis()
                ),
            );
            late.headers.push(("connection", "close".into()));
            late
        }
        Ok(Ok(body)) => {
            let body = body.to_bytes();
            let target = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
            let request = wasmlab_handlers::Request::new(parts.method.as_str(), target, &body);
            wasmlab_handlers::handle(request, caps).await
        }
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            Answer::text(413, format!("request body larger than {max_body} bytes"))
        }
        Ok(Err(e)) => Answer::text(400, format!("could not read the request body: {e}")),
    };
    let mut resp = Response::new(Full::new(Bytes::from(answer.body)));
    *resp.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in answer.headers {
        if let Ok(value) = HeaderValue::try_from(value) {
            resp.headers_mut()
                .append(HeaderName::from_static(name), value);
        }
    }
    resp
}
