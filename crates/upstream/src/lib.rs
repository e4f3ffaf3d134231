//! The upstream echo server that `/proxy` forwards to. It answers every request with the request's
//! body, or with `METHOD TARGET` when the body is empty, so the lab can check that a proxied
//! response really came from here (`GET /proxy` → body `GET /proxy`).

use std::convert::Infallible;
use std::net::SocketAddr;

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

/// The body the upstream answers to a request without a body.
pub fn echo_of(method: &str, target: &str) -> String {
    format!("{method} {target}")
}

/// Serves until the task is dropped.
pub async fn serve(listener: TcpListener) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(echo))
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

async fn echo(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_owned();
    let resp = match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => {
            let body = body.to_bytes();
            let body = if body.is_empty() {
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
