//! The handlers as a `wasi:http/proxy` component, the shape today's Wasm HTTP platforms host
//! (`wasmtime serve`, Spin, wasmCloud, Fastly Compute): built for wasm32-unknown-unknown and made a
//! component by `wasmlab-guest-artifacts` (so it imports nothing of wasi-libc's), it exports
//! `wasi:http/incoming-handler` and runs `wasmlab_handlers::handle` on every request, in whatever
//! instance the host gives it (a fresh one per request on every platform above).
//!
//! With the `p3` feature instead of `p2` it is the same handlers as a WASI 0.3 component
//! (`wasi:http/service`): its `handle` is async, so a host may run many requests in one instance,
//! one after another or at once, as `wasmtime serve` does for such components (src/service.rs).
//!
//! What the handlers need from outside, it reaches the way such a component reaches anything: by
//! an outgoing `wasi:http` request to the upstream named by the environment variable
//! [`UPSTREAM_ENV`] (`wasmtime serve -S cli --env WASMLAB_UPSTREAM=http://…`, the gateway's
//! `--env`). `/proxy` forwards there; `/state`'s counter lives there too (`POST
//! /wasmlab/counter`), since a component instance made for one request keeps nothing for the next
//! and the proxy world has no host counter to import. So a component's `/state` costs an upstream
//! round trip, as `/proxy` does.
//!
//! [`export_http_handler!`] is the glue for any guest of this repository (the hostile one too):
//! the request read whole, a handler called, its response written with its length declared.

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
mod allocator;
#[cfg(all(target_arch = "wasm32", feature = "p2"))]
mod component;
#[cfg(all(target_arch = "wasm32", feature = "p2"))]
pub use component::{UpstreamHost, serve};
#[cfg(all(target_arch = "wasm32", feature = "p2"))]
#[doc(hidden)]
pub use wasip2;
#[cfg(all(target_arch = "wasm32", feature = "p3"))]
pub mod service;
#[cfg(all(target_arch = "wasm32", feature = "p3"))]
#[doc(hidden)]
pub use wasip3;

#[cfg(all(target_arch = "wasm32", feature = "p2", feature = "p3"))]
compile_error!(
    "one glue at a time: build the p3 component with --no-default-features --features p3"
);

/// The environment variable that names the upstream's base URL (`http://host:port`).
pub const UPSTREAM_ENV: &str = "WASMLAB_UPSTREAM";

/// The upstream's counter (`POST`, no body): the `/state` of a component (see the crate's doc).
/// The same path as `wasmlab_upstream::COUNTER_PATH`, which this guest cannot link (a test keeps
/// them equal).
pub const COUNTER_PATH: &str = "/wasmlab/counter";

/// How long an upstream exchange may take before the handler answers 502, as the native gateway's
/// client waits (`wasmlab_capabilities::UPSTREAM_TIMEOUT`); a host's own deadline may come first.
pub const UPSTREAM_TIMEOUT_NS: u64 = 10_000_000_000;

/// The most a component writes in one call to its response's body stream (`blocking-write-and-
/// flush` takes at most 4096 bytes at a time).
pub const WRITE_CHUNK: usize = 4096;

/// A response's header fields as wasi:http's `fields.from-list` takes them: the handler's headers
/// and a `content-length`, so that a host need not chunk the body.
pub fn response_fields(resp: &wasmlab_handlers::Response) -> Vec<(String, Vec<u8>)> {
    let mut fields: Vec<(String, Vec<u8>)> = resp
        .headers
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone().into_bytes()))
        .collect();
    fields.push((
        "content-length".to_owned(),
        resp.body.len().to_string().into_bytes(),
    ));
    fields
}

/// Whether a request's body is taken: a GET's or HEAD's means nothing (RFC 9110, 9.3.1) and no
/// handler reads one, so a component saves the host calls and resources of reading it.
pub fn takes_body(method: &str) -> bool {
    method != "GET" && method != "HEAD"
}

/// The upstream's base URL, from the component's environment (wasi:cli's own, not std's: the
/// component has no libc to hold it).
pub fn upstream_url(env: Vec<(String, String)>) -> Result<String, String> {
    env.into_iter()
        .find_map(|(k, v)| (k == UPSTREAM_ENV).then_some(v))
        .ok_or_else(|| format!("no upstream configured (the environment has no {UPSTREAM_ENV})"))
}

/// An upstream exchange's outcome: its body on a 2xx, a message otherwise.
pub fn upstream_body(status: u16, body: Vec<u8>) -> Result<Vec<u8>, String> {
    if (200..300).contains(&status) {
        Ok(body)
    } else {
        Err(format!("upstream answered {status}"))
    }
}

/// The counter's new value, from the body the upstream's counter answered with.
pub fn counter_value(body: &[u8]) -> Result<u64, String> {
    std::str::from_utf8(body)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| {
            format!(
                "the upstream's counter answered {:?}",
                String::from_utf8_lossy(body)
            )
        })
}

/// An upstream base URL taken apart for an outgoing request: whether it is HTTPS, and its
/// authority (`host:port`).
pub fn parse_upstream(url: &str) -> Result<(bool, &str), String> {
    let (https, rest) = if let Some(rest) = url.strip_prefix("http://") {
        (false, rest)
    } else if let Some(rest) = url.strip_prefix("https://") {
        (true, rest)
    } else {
        return Err(format!(
            "{UPSTREAM_ENV}={url:?} is not an http:// or https:// URL"
        ));
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() || authority.contains(['/', '?', '#', '@', ' ']) {
        return Err(format!(
            "{UPSTREAM_ENV}={url:?} must be a base URL, scheme://host:port and nothing after"
        ));
    }
    Ok((https, authority))
}

/// Exports `$handler` (a function or closure of `(wasmlab_handlers::Request, &UpstreamHost) ->
/// wasmlab_handlers::Response`) as the component's `wasi:http/incoming-handler`.
#[macro_export]
macro_rules! export_http_handler {
    ($handler:expr) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct Component;

            impl $crate::wasip2::exports::http::incoming_handler::Guest for Component {
                fn handle(
                    request: $crate::wasip2::http::types::IncomingRequest,
                    out: $crate::wasip2::http::types::ResponseOutparam,
                ) {
                    $crate::serve(request, out, $handler);
                }
            }

            $crate::wasip2::http::proxy::export!(Component);
        };
    };
}

#[cfg(all(feature = "handler-exports", feature = "p2"))]
export_http_handler!(|req, host| wasmlab_handlers::run_ready(wasmlab_handlers::handle(req, host)));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_is_where_the_upstream_keeps_it() {
        assert_eq!(COUNTER_PATH, wasmlab_upstream::COUNTER_PATH);
    }

    #[test]
    fn a_response_declares_its_length_after_its_own_headers() {
        let mut resp = wasmlab_handlers::Response::text(405, "no");
        resp.headers.push(("allow", "GET".to_owned()));
        let fields = response_fields(&resp);
        let names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["content-type", "allow", "content-length"]);
        assert_eq!(fields[1].1, b"GET");
        assert_eq!(fields[2].1, b"2");
    }

    #[test]
    fn only_a_get_or_head_leaves_its_body() {
        assert!(!takes_body("GET") && !takes_body("HEAD"));
        assert!(takes_body("POST") && takes_body("PUT") && takes_body("get"));
    }

    #[test]
    fn the_upstream_is_named_by_the_environment() {
        let env = |kv: &[(&str, &str)]| {
            kv.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(
            upstream_url(env(&[("A", "b"), (UPSTREAM_ENV, "http://h:1")])),
            Ok("http://h:1".to_owned())
        );
        assert!(
            upstream_url(env(&[("A", "b")]))
                .unwrap_err()
                .contains(UPSTREAM_ENV)
        );
    }

    #[test]
    fn upstream_answers() {
        assert_eq!(upstream_body(204, b"x".to_vec()), Ok(b"x".to_vec()));
        assert_eq!(
            upstream_body(503, b"x".to_vec()),
            Err("upstream answered 503".to_owned())
        );
        assert_eq!(counter_value(b"41\n"), Ok(41));
        assert!(counter_value(b"many").unwrap_err().contains("\"many\""));
    }

    #[test]
    fn upstream_urls() {
        assert_eq!(
            parse_upstream("http://127.0.0.1:9000"),
            Ok((false, "127.0.0.1:9000"))
        );
        assert_eq!(
            parse_upstream("http://127.0.0.1:9000/"),
            Ok((false, "127.0.0.1:9000"))
        );
        assert_eq!(
            parse_upstream("https://up.example"),
            Ok((true, "up.example"))
        );
        for bad in [
            "",
            "127.0.0.1:9000",
            "ftp://x",
            "http://",
            "http://a/b",
            "http://u@h",
            "http://h?x",
        ] {
            assert!(parse_upstream(bad).is_err(), "{bad:?}");
        }
    }
}
