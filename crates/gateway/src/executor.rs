//! What runs a request: the trait every executor implements, and the native executor.

use std::sync::Arc;

use bytes::Bytes;
use hyper::HeaderMap;
use hyper::header::{HeaderName, HeaderValue};

use wasmlab_capabilities::Capabilities;

/// A request as handed to an executor: owned, body already read (within the size limit).
#[derive(Debug, Clone)]
pub struct ExecRequest {
    pub method: hyper::Method,
    /// Path and query.
    pub target: String,
    /// As the client sent them, with `host` set from the URI's authority where the request line
    /// carried it (HTTP/2's `:authority`). The handlers read none; a `wasi:http` component may.
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl ExecRequest {
    /// A request without headers.
    pub fn new(method: hyper::Method, target: impl Into<String>, body: impl Into<Bytes>) -> Self {
        Self {
            method,
            target: target.into(),
            headers: HeaderMap::new(),
            body: body.into(),
        }
    }
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
    pub fn from_handler(resp: wasmlab_handlers::Response) -> Result<Self, Failure> {
        let headers = resp.headers.iter().map(|(k, v)| (*k, v.as_str()));
        Self::from_parts(resp.status, headers, resp.body)
            .map_err(|e| Failure::new(500, format!("handler produced {e}")))
    }
}

/// A request an executor could not answer with a reply of the handler's: the guest trapped, ran
/// past its deadline, broke the ABI or returned something HTTP cannot carry. The client is told
/// only `status` and a generic line ([`Failure::public_message`]); `detail` is the diagnosis for
/// the gateway's log, and for the client too when the gateway runs with `--error-details`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// 500, or 504 when the request ran out of time.
    pub status: u16,
    pub detail: String,
}

impl Failure {
    pub fn new(status: u16, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
        }
    }

    /// A guest that trapped or broke the ABI: 500, with the root cause (a trap's kind, an ABI
    /// violation) but not the guest's backtrace.
    pub fn guest_failed(e: &anyhow::Error) -> Self {
        Self::new(500, format!("guest failed: {}", e.root_cause()))
    }

    /// What the client may know: nothing about the guest's insides.
    pub fn public_message(&self) -> &'static str {
        match self.status {
            504 => "the handler did not finish in time",
            _ => "the handler failed",
        }
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
    /// A reply (which may itself be an error the handler chose, such as 404, or the executor's
    /// own refusal, such as 503 when it is full), or a [`Failure`] the server logs.
    fn execute(&self, req: ExecRequest) -> impl Future<Output = Result<Reply, Failure>> + Send;

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

    async fn execute(&self, req: ExecRequest) -> Result<Reply, Failure> {
        let hreq = wasmlab_handlers::Request::new(req.method.as_str(), &req.target, &req.body);
        Reply::from_handler(wasmlab_handlers::handle(hreq, self.caps.as_ref()).await)
    }
}
