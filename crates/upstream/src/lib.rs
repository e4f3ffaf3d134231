//! The upstream echo server that `/proxy` forwards to. It answers every request with the request's
//! body, or with `METHOD TARGET` when the body is empty, so the lab can check that a proxied
//! response really came from here (`GET /proxy` → body `GET /proxy`).
//!
//! One route is not an echo: `POST /wasmlab/counter` (with no body) increments a counter and
//! answers its new value. It is the `/state` counter of guests that keep nothing between requests
//! and have no host import for it: a `wasi:http` component reaches it with an outgoing request,
//! as such a component reaches any state that outlives its request (a key-value service).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Largest body echoed.
pub const MAX_BODY: usize = 16 << 20;

/// The path of the counter (`POST`, no body): the one route that is not an echo.
pub const COUNTER_PATH: &str = "/wasmlab/counter";

/// The body the upstream answers to a request without a body.
pub fn echo_of(method: &str, target: &str) -> String {
    format!("{method} {target}")
}

/// Serves until the task is dropped.
pub async fn serve(listener: TcpListener) -> std::io::Result<()> {
    // One counter for the server's whole life, shared by its connections.
    let counter = Arc::new(AtomicU64::new(0));
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let counter = counter.clone();
        tokio::spawn(async move {
            let service = service_fn(|req| echo(req, &counter));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Binds `addr` (port 0 for an ephemeral one), spawns the server on the current runtime and
/// returns the bound address.
pub async fn spawn(addr: SocketAddr) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tokio::spawn(serve(listener));
    Ok(local)
}

async fn echo(
    req: Request<Incoming>,
    counter: &AtomicU64,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_owned();
    let resp = match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => {
            let body = body.to_bytes();
            let body =
                if body.is_empty() && parts.method == hyper::Method::POST && target == COUNTER_PATH
                {
                    Bytes::from((counter.fetch_add(1, Ordering::Relaxed) + 1).to_string())
                } else if body.is_empty() {
                    Bytes::from(echo_of(parts.method.as_str(), &target))
                } else {
                    body
                };
            Response::new(Full::new(body))
        }
        Err(_) => {
            let mut r = Response::new(Full::new(Bytes::from_static(
                b"body too large or unreadable",
            )));
            *r.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
            r
        }
    };
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;

    async fn send(addr: SocketAddr, method: &str, path: &str, body: &'static str) -> String {
        let client =
            Client::builder(TokioExecutor::new()).build_http::<http_body_util::Full<Bytes>>();
        let req = Request::builder()
            .method(method)
            .uri(format!("http://{addr}{path}"))
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap();
        let resp = client.request(req).await.unwrap();
        assert_eq!(resp.status(), 200);
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn echoes_and_counts_only_on_the_counter_route() {
        let addr = spawn("127.0.0.1:0".parse().unwrap()).await.unwrap();
        assert_eq!(send(addr, "GET", "/proxy", "").await, "GET /proxy");
        assert_eq!(send(addr, "POST", "/echo", "abc").await, "abc");
        assert_eq!(send(addr, "POST", COUNTER_PATH, "").await, "1");
        assert_eq!(send(addr, "POST", COUNTER_PATH, "").await, "2");
        // Anything else on that path is an echo, and leaves the counter alone.
        assert_eq!(
            send(addr, "GET", COUNTER_PATH, "").await,
            format!("GET {COUNTER_PATH}")
        );
        assert_eq!(send(addr, "POST", COUNTER_PATH, "x").await, "x");
        assert_eq!(send(addr, "POST", COUNTER_PATH, "").await, "3");
    }
}
