//! What runs a request: the trait every executor implements, and the native executor.

use std::sync::Arc;

use bytes::Bytes;
use hyper::HeaderMap;
use hyper::header::{HeaderName, HeaderValue};

use crate::host::Capabilities;

/// A request as handed to an executor: owned, body already read (within the size limit).
#[derive(Debug, Clone)]
pub struct ExecRequest {
    pub method: hyper::Method,
    /// Path and query.
    pub target: String,
    pub body: Bytes,
}

/// An executor's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    /// The server moves these into the response as they are (it adds content-length and date).
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// A plain-text reply produced by the gateway itself (errors, limits).
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        let mut headers = HeaderMap::with_capacity(1);
        headers.insert(
            hyper::header::CONTENT_TYPE,
            HeaderValue::from_static(wasmlab_handlers::TEXT_PLAIN),
        );
        Self {
            status,
            headers,
            body: Bytes::from(body.into()),
        }
    }

    /// The answer when a guest traps or breaks the ABI: 500, with the root cause (a trap's kind,
    /// an ABI violation) but not the guest's backtrace.
    pub fn guest_failed(e: &anyhow::Error) -> Self {
        Self::text(500, format!("guest failed: {}", e.root_cause()))
    }

    /// Converts headers given as strings; a header that is not valid HTTP fails the whole reply.
    pub fn from_parts<'a>(
        status: u16,
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        body: impl Into<Bytes>,
    ) -> Result<Self, String> {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("invalid header name {k:?}"))?;
            let value = header_value(v).ok_or_else(|| format!("invalid header value {v:?}"))?;
            map.append(name, value);
        }
        Ok(Self {
            status,
            headers: map,
            body: body.into(),
        })
    }

    /// The reply of a handler run natively.
    pub fn from_handler(resp: wasmlab_handlers::Response) -> Self {
        let headers = resp.headers.iter().map(|(k, v)| (*k, v.as_str()));
        Self::from_parts(resp.status, headers, resp.body)
            .unwrap_or_else(|e| Reply::text(500, format!("handler produced {e}")))
    }
}

/// `v` as a header value; the values the handlers give on every response are shared rather than
/// copied and checked again each time.
fn header_value(v: &str) -> Option<HeaderValue> {
    // Built at compile time: a clone of one is a pointer copy, no check and no allocation.
    const COMMON: [HeaderValue; 2] = [
        HeaderValue::from_static(wasmlab_handlers::TEXT_PLAIN),
        HeaderValue::from_static(wasmlab_handlers::OCTET_STREAM),
    ];
    match COMMON.iter().find(|c| c.as_bytes() == v.as_bytes()) {
        Some(c) => Some(c.clone()),
        None => HeaderValue::from_str(v).ok(),
    }
}

/// Runs one request. Implementations are shared by every connection of the server.
pub trait Executor: Send + Sync + 'static {
    /// A short name for logs and the start banner.
    fn name(&self) -> &'static str;
    fn execute(&self, req: ExecRequest) -> impl Future<Output = Reply> + Send;

    /// Whether a request costs enough that, while the worker is busy, its reply should wait until
    /// the worker has run its other ready requests (see `server::handle`). Off by default: for a
    /// cheap executor the extra pass through the scheduler costs more than it saves.
    fn defer_replies_when_busy(&self) -> bool {
        false
    }
}

/// Calls the handlers directly.
pub struct NativeExecutor {
    caps: Arc<Capabilities>,
}

impl NativeExecutor {
    pub fn new(caps: Arc<Capabilities>) -> Self {
        Self { caps }
    }
}

impl Executor for NativeExecutor {
    fn name(&self) -> &'static str {
        "native"
    }

    async fn execute(&self, req: ExecRequest) -> Reply {
        let hreq = wasmlab_handlers::Request::new(req.method.as_str(), &req.target, &req.body);
        Reply::from_handler(wasmlab_handlers::handle(hreq, self.caps.as_ref()).await)
    }
}
