//! The component's side of `wasi:http`: the incoming request read whole, the response written
//! with its length declared, and the host's capabilities as outgoing requests to the upstream.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, IncomingRequest, Method, OutgoingBody, OutgoingRequest,
    OutgoingResponse, RequestOptions, ResponseOutparam, Scheme,
};
use wasip2::io::streams::StreamError;
use wasmlab_handlers::{Host, Request, Response};

use crate::{
    COUNTER_PATH, UPSTREAM_TIMEOUT_NS, WRITE_CHUNK, counter_value, parse_upstream, response_fields,
    takes_body, upstream_body, upstream_url,
};

/// Serves one request: reads it whole, runs `handler`, writes its response.
pub fn serve(
    request: IncomingRequest,
    out: ResponseOutparam,
    handler: impl FnOnce(Request<'_>, &UpstreamHost) -> Response,
) {
    let method = method_name(&request.method());
    let target = request.path_with_query().unwrap_or_else(|| "/".to_owned());
    // Not taking a GET's body saves four host calls and two resources.
    let body = if takes_body(&method) {
        match request.consume() {
            Ok(body) => read_whole(body),
            Err(()) => Err("the request's body was taken already".to_owned()),
        }
    } else {
        Ok(Vec::new())
    };
    let body = match body {
        Ok(body) => body,
        Err(e) => {
            ResponseOutparam::set(out, Err(ErrorCode::InternalError(Some(e))));
            return;
        }
    };
    drop(request);
    let resp = handler(Request::new(&method, &target, &body), &UpstreamHost);
    respond(out, resp);
}

fn method_name(m: &Method) -> String {
    match m {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
        Method::Connect => "CONNECT",
        Method::Options => "OPTIONS",
        Method::Trace => "TRACE",
        Method::Patch => "PATCH",
        Method::Other(s) => s,
    }
    .to_owned()
}

/// A body's every byte, then its end (trailers are not read).
fn read_whole(body: IncomingBody) -> Result<Vec<u8>, String> {
    let stream = body
        .stream()
        .map_err(|()| "the body's stream was taken already".to_owned())?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 << 10) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(format!("reading a body failed: {}", e.to_debug_string()));
            }
        }
    }
    // The stream is a child of the body: it goes first. Dropping the body, rather than
    // finishing it for trailers never read, saves a host call and a resource.
    drop(stream);
    drop(body);
    Ok(bytes)
}

/// Sends `resp`: its headers and a `content-length` (so a host need not chunk it), its status,
/// its body. A status or header the host refuses answers the request with an error instead,
/// which the host turns into a 500.
fn respond(out: ResponseOutparam, resp: Response) {
    let fields = response_fields(&resp);
    // One host call for all of them; a header the host forbids (such as `connection`) fails the
    // list, and is then left out on its own while the others go.
    let headers = Fields::from_list(&fields).unwrap_or_else(|_| {
        let headers = Fields::new();
        for (k, v) in &fields {
            let _ = headers.append(k, v);
        }
        headers
    });
    let response = OutgoingResponse::new(headers);
    // A new response's status is 200: setting it again would be a host call for nothing.
    if resp.status != 200 && response.set_status_code(resp.status).is_err() {
        let msg = format!("status {} is not one HTTP can answer with", resp.status);
        ResponseOutparam::set(out, Err(ErrorCode::InternalError(Some(msg))));
        return;
    }
    let body = response
        .body()
        .expect("a new response's body is there to take");
    ResponseOutparam::set(out, Ok(response));
    let stream = body.write().expect("a new body's stream is there to take");
    for chunk in resp.body.chunks(WRITE_CHUNK) {
        if stream.blocking_write_and_flush(chunk).is_err() {
            // The host stopped reading (its client went away): nothing left to do.
            return;
        }
    }
    drop(stream);
    let _ = OutgoingBody::finish(body, None);
}

/// The handlers' [`Host`] for a component: each capability an outgoing request to the upstream.
pub struct UpstreamHost;

impl UpstreamHost {
    /// `METHOD path` on the upstream, with no body: its body on a 2xx, a message otherwise.
    fn exchange(&self, method: Method, path: &str) -> Result<Vec<u8>, String> {
        let url = upstream_url(wasip2::cli::environment::get_environment())?;
        let (https, authority) = parse_upstream(&url)?;
        let request = OutgoingRequest::new(Fields::new());
        let set = [
            request.set_method(&method),
            request.set_scheme(Some(&if https { Scheme::Https } else { Scheme::Http })),
            request.set_authority(Some(authority)),
            request.set_path_with_query(Some(path)),
        ];
        if set.iter().any(Result::is_err) {
            return Err(format!("the host refused the request {path:?} to {url}"));
        }
        // The body, empty, taken and finished: a host may hold the request until its body is
        // finished (jco's preview2-shim waits for it, and with it every other request), where
        // Wasmtime sends a request whose body was never taken as one without a body.
        let body = request
            .body()
            .map_err(|()| "the request's body was taken already".to_owned())?;
        let options = RequestOptions::new();
        let _ = options.set_first_byte_timeout(Some(UPSTREAM_TIMEOUT_NS));
        let _ = options.set_between_bytes_timeout(Some(UPSTREAM_TIMEOUT_NS));
        let pending = outgoing_handler::handle(request, Some(options)).map_err(describe)?;
        OutgoingBody::finish(body, None).map_err(describe)?;
        let response = loop {
            match pending.get() {
                Some(outcome) => break outcome,
                None => pending.subscribe().block(),
            }
        };
        let response = response
            .map_err(|()| "the upstream's response was taken already".to_owned())?
            .map_err(describe)?;
        let status = response.status();
        let body = match response.consume() {
            Ok(body) => read_whole(body)?,
            Err(()) => return Err("the upstream's body was taken already".to_owned()),
        };
        upstream_body(status, body)
    }
}

fn describe(e: ErrorCode) -> String {
    format!("{e:?}")
}

impl Host for UpstreamHost {
    async fn state_increment(&self) -> Result<u64, String> {
        let body = self.exchange(Method::Post, COUNTER_PATH)?;
        counter_value(&body)
    }

    async fn proxy_get(&self, target: &str) -> Result<Vec<u8>, String> {
        self.exchange(Method::Get, target)
    }
}
