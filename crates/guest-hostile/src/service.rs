//! The hostile guest as a WASI 0.3 `wasi:http/service` component: every route of [`hostile`],
//! those that wait in the host or reach outside (`/block`, `/random`, `/fetch`), and the ways a
//! WASI 0.3 handler can fail to give a whole response (an error code, a body shorter than it
//! declared, a trap in the task writing its body). (A handler that waits on nothing is trapped by
//! the bindings' own runtime, so a handler that never returns is `/block`'s.)

use wasmlab_guest_http::service::{no_trailers, read_whole, respond, serve_with, unit_future};
use wasmlab_guest_http::wasip3;
use wasmlab_handlers::{Request, Response};

use wasip3::http::client;
use wasip3::http::types::{
    ErrorCode, Fields, Request as HttpRequest, Response as HttpResponse, Scheme,
};
use wasip3::wit_stream;

use crate::hostile;

struct Hostile;

impl wasip3::exports::http::handler::Guest for Hostile {
    async fn handle(request: HttpRequest) -> Result<HttpResponse, ErrorCode> {
        let target = request.get_path_with_query().unwrap_or_default();
        // Only the target is read here: the request goes on whole to `serve_with`.
        let head = Request::new("GET", &target, &[]);
        match head.path() {
            "/block" => {
                wasip3::clocks::monotonic_clock::wait_for(3_600_000_000_000).await;
                respond(Response::text(200, "woke"))
            }
            "/random" => {
                let (hi, lo) = wasip3::random::insecure_seed::get_insecure_seed();
                let bytes: String = wasip3::random::insecure::get_insecure_random_bytes(8)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                respond(Response::text(
                    200,
                    format!("seed={hi:016x}{lo:016x} bytes={bytes}"),
                ))
            }
            "/fetch" => {
                let authority = head.query_param("authority").unwrap_or_default();
                respond(match fetch(authority).await {
                    Ok(body) => Response::bytes(200, body),
                    Err(e) => Response::text(502, e),
                })
            }
            "/error" => Err(ErrorCode::InternalError(Some("refused on purpose".into()))),
            "/unfinished" => {
                let headers = Fields::new();
                let _ = headers.append("content-length", b"1000");
                let (mut writer, reader) = wit_stream::new();
                wasip3::spawn_local(async move {
                    let _ = writer
                        .write_all(b"the first part, and no more".to_vec())
                        .await;
                    // The writer dropped: the body ends 973 bytes short of what it declared.
                });
                Ok(HttpResponse::new(headers, Some(reader), no_trailers()).0)
            }
            "/trap-in-body" => {
                let (mut writer, reader) = wit_stream::new();
                wasip3::spawn_local(async move {
                    let _ = writer.write_all(b"the first part".to_vec()).await;
                    core::arch::wasm32::unreachable();
                });
                Ok(HttpResponse::new(Fields::new(), Some(reader), no_trailers()).0)
            }
            _ => serve_with(request, hostile).await,
        }
    }
}

wasip3::http::service::export!(Hostile);

/// `GET http://AUTHORITY/`, the body of its answer or the error.
async fn fetch(authority: &str) -> Result<Vec<u8>, String> {
    let (request, _sent) = HttpRequest::new(Fields::new(), None, no_trailers(), None);
    let _ = request.set_scheme(Some(&Scheme::Http));
    let _ = request.set_authority(Some(authority));
    let _ = request.set_path_with_query(Some("/"));
    let response = client::send(request).await.map_err(|e| format!("{e:?}"))?;
    let (body, trailers) = HttpResponse::consume_body(response, unit_future());
    read_whole(body, trailers).await
}
