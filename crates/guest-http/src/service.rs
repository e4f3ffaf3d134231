//! The component's side of `wasi:http` 0.3 (the `service` world): the request's body read whole,
//! the handlers run, the response given back with its length declared and its body written after
//! it, and the host's capabilities as outgoing requests to the upstream. Everything is async: while
//! one request waits for its upstream or for the client to read its body, the instance may serve
//! another.

use wasip3::http::client;
use wasip3::http::types::{
    ErrorCode, Fields, Method, Request as HttpRequest, RequestOptions, Response as HttpResponse,
    Scheme,
};
use wasip3::wit_bindgen::rt::async_support::{FutureReader, StreamReader};
use wasip3::{wit_future, wit_stream};
use wasmlab_handlers::{Host, Request, Response};

use crate::{
    COUNTER_PATH, UPSTREAM_TIMEOUT_NS, counter_value, parse_upstream, response_fields, takes_body,
    upstream_body, upstream_url,
};

#[cfg(feature = "handler-exports")]
struct Component;

#[cfg(feature = "handler-exports")]
impl wasip3::exports::http::handler::Guest for Component {
    async fn handle(request: HttpRequest) -> Result<HttpResponse, ErrorCode> {
        serve(request).await
    }
}

#[cfg(feature = "handler-exports")]
wasip3::http::service::export!(Component);

/// Serves one request with wasmlab's handlers.
pub async fn serve(request: HttpRequest) -> Result<HttpResponse, ErrorCode> {
    let (method, target, body) = read_request(request).await?;
    let resp = wasmlab_handlers::handle(Request::new(&method, &target, &body), &UpstreamHost).await;
    respond(resp)
}

/// Serves one request with `handler`, a handler that needs no host (the hostile guest's).
pub async fn serve_with(
    request: HttpRequest,
    handler: impl FnOnce(Request<'_>) -> Response,
) -> Result<HttpResponse, ErrorCode> {
    let (method, target, body) = read_request(request).await?;
    respond(handler(Request::new(&method, &target, &body)))
}

/// A request's method, target and body (read whole; a GET's or HEAD's is not read).
async fn read_request(request: HttpRequest) -> Result<(String, String, Vec<u8>), ErrorCode> {
    let method = method_name(&request.get_method());
    let target = request
        .get_path_with_query()
        .unwrap_or_else(|| "/".to_owned());
    let body = if takes_body(&method) {
        let (body, trailers) = HttpRequest::consume_body(request, unit_future());
        read_whole(body, trailers)
            .await
            .map_err(|e| ErrorCode::InternalError(Some(e)))?
    } else {
        Vec::new()
    };
    Ok((method, target, body))
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

/// The future `consume-body` takes to hear how the body's reading ended: it ends well once its
/// writer is dropped unwritten.
pub fn unit_future() -> FutureReader<Result<(), ErrorCode>> {
    wit_future::new(|| Ok(())).1
}

/// A future of no trailers, for a body that has none.
pub fn no_trailers() -> FutureReader<Result<Option<Fields>, ErrorCode>> {
    wit_future::new(|| Ok(None)).1
}

/// A body's every byte, then whether it arrived whole (its trailers' future; the trailers
/// themselves are not read).
pub async fn read_whole(
    body: StreamReader<u8>,
    trailers: FutureReader<Result<Option<Fields>, ErrorCode>>,
) -> Result<Vec<u8>, String> {
    let bytes = body.collect().await;
    match trailers.await {
        Ok(_) => Ok(bytes),
        Err(e) => Err(format!("reading a body failed: {e:?}")),
    }
}

/// The response to give back: `resp`'s headers and a `content-length` (so a host need not chunk
/// it), its status, and its body, written by a task of its own once the host reads it (a stream
/// takes what is written only as its reader asks). A status the host refuses answers with an
/// error instead, which the host turns into a 500.
pub fn respond(resp: Response) -> Result<HttpResponse, ErrorCode> {
    let fields = response_fields(&resp);
    // One host call for all of them; a header the host forbids fails the list, and is then left
    // out on its own while the others go.
    let headers = Fields::from_list(&fields).unwrap_or_else(|_| {
        let headers = Fields::new();
        for (k, v) in &fields {
            let _ = headers.append(k, v);
        }
        headers
    });
    let contents = (!resp.body.is_empty()).then(|| {
        let (mut writer, reader) = wit_stream::new();
        let body = resp.body;
        wasip3::spawn_local(async move {
            // What is left unwritten is what a client that went away did not read.
            let _ = writer.write_all(body).await;
        });
        reader
    });
    let (response, _sent) = HttpResponse::new(headers, contents, no_trailers());
    // A new response's status is 200: setting it again would be a host call for nothing.
    if resp.status != 200 && response.set_status_code(resp.status).is_err() {
        let msg = format!("status {} is not one HTTP can answer with", resp.status);
        return Err(ErrorCode::InternalError(Some(msg)));
    }
    Ok(response)
}

/// The handlers' [`Host`] for a component: each capability an outgoing request to the upstream.
pub struct UpstreamHost;

impl UpstreamHost {
    /// `METHOD path` on the upstream, with no body: its body on a 2xx, a message otherwise.
    async fn exchange(&self, method: Method, path: &str) -> Result<Vec<u8>, String> {
        let url = upstream_url(wasip3::cli::environment::get_environment())?;
        let (https, authority) = parse_upstream(&url)?;
        let options = RequestOptions::new();
        let _ = options.set_first_byte_timeout(Some(UPSTREAM_TIMEOUT_NS));
        let _ = options.set_between_bytes_timeout(Some(UPSTREAM_TIMEOUT_NS));
        let (request, _sent) = HttpRequest::new(Fields::new(), None, no_trailers(), Some(options));
        let set = [
            request.set_method(&method),
            request.set_scheme(Some(&if https { Scheme::Https } else { Scheme::Http })),
            request.set_authority(Some(authority)),
            request.set_path_with_query(Some(path)),
        ];
        if set.iter().any(Result::is_err) {
            return Err(format!("the host refused the request {path:?} to {url}"));
        }
        let response = client::send(request).await.map_err(describe)?;
        let status = response.get_status_code();
        let (body, trailers) = HttpResponse::consume_body(response, unit_future());
        upstream_body(status, read_whole(body, trailers).await?)
    }
}

fn describe(e: ErrorCode) -> String {
    format!("{e:?}")
}

impl Host for UpstreamHost {
    async fn state_increment(&self) -> Result<u64, String> {
        let body = self.exchange(Method::Post, COUNTER_PATH).await?;
        counter_value(&body)
    }

    async fn proxy_get(&self, target: &str) -> Result<Vec<u8>, String> {
        self.exchange(Method::Get, target).await
    }
}
