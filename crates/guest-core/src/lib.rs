//! The guest side of the handler ABI (see `wasmlab-guest-abi`), and the core-module guest that runs
//! the handlers behind it: the fast path.
//!
//! [`respond`] and [`run_command`] are the glue any guest built from this repo uses: the first for
//! a core module (one call per request, response left in memory), the second for a WASI command
//! (stdin to stdout). Each request runs in a fresh instance, so allocations are never freed: the
//! instance's memory is dropped (or reset by the pooling allocator) when the request ends.

#[cfg(all(target_arch = "wasm32", feature = "arena"))]
mod arena;
#[cfg(target_arch = "wasm32")]
mod import_host;
#[cfg(target_arch = "wasm32")]
pub use import_host::ImportHost;
// Plain std I/O: also built natively, where it stands in for a CLI engine in tests.
mod pipe_host;
pub use pipe_host::{PipeHost, run_pipe_command};

#[cfg(target_arch = "wasm32")]
mod glue {
    use wasmlab_guest_abi::{ResponseDescriptor, encode_headers};
    use wasmlab_handlers::{Request, Response};

    /// Reads the instance's request from the host, runs `handler` and leaves the response in
    /// memory; returns the response descriptor's address for `wasmlab_handle` to return.
    pub fn respond(handler: impl FnOnce(Request<'static>) -> Response) -> *const u8 {
        // The previous request's response (if this instance served one) has been read by now.
        #[cfg(feature = "arena")]
        crate::arena::reset();
        let (method, target, body) = crate::import_host::read_request();
        let text = |b: &'static [u8]| core::str::from_utf8(b).unwrap_or("");
        let req = Request::new(text(method.leak()), text(target.leak()), body.leak());
        let resp = handler(req);
        let headers: &'static [u8] =
            encode_headers(resp.headers.iter().map(|(k, v)| (*k, v.as_str()))).leak();
        let body: &'static [u8] = resp.body.leak();
        let desc = ResponseDescriptor {
            status: resp.status.into(),
            headers_ptr: headers.as_ptr() as u32,
            headers_len: headers.len() as u32,
            body_ptr: body.as_ptr() as u32,
            body_len: body.len() as u32,
        };
        Box::leak(Box::new(desc.to_bytes())).as_ptr()
    }

    /// A WASI command's whole life: the request from stdin, `handler`, the response to stdout.
    pub fn run_command(handler: impl FnOnce(Request<'_>) -> Response) {
        use std::io::{Read, Write};
        use wasmlab_guest_abi::{decode_command_request, encode_command_response};

        let mut input = Vec::new();
        std::io::stdin()
            .read_to_end(&mut input)
            .expect("read stdin");
        let output = match decode_command_request(&input) {
            Ok((method, target, body)) => {
                let resp = handler(Request::new(method, target, body));
                let headers = resp.headers.iter().map(|(k, v)| (*k, v.as_str()));
                encode_command_response(resp.status, headers, &resp.body)
            }
            Err(e) => encode_command_response(400, [], e.to_string().as_bytes()),
        };
        std::io::stdout().write_all(&output).expect("write stdout");
    }
}

#[cfg(target_arch = "wasm32")]
pub use glue::{respond, run_command};

pub use wasmlab_guest_abi::ABI_VERSION;

/// Exports the handler ABI (`wasmlab_abi_version`, `wasmlab_handle`) around `$handler`, a
/// `fn(Request) -> Response`. Any core-module guest built from this repo uses it.
#[macro_export]
macro_rules! export_handler {
    ($handler:expr) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            #[unsafe(no_mangle)]
            pub extern "C" fn wasmlab_abi_version() -> i32 {
                $crate::ABI_VERSION
            }

            #[unsafe(no_mangle)]
            pub extern "C" fn wasmlab_handle() -> *const u8 {
                $crate::respond($handler)
            }
        };
    };
}

// The core-module guest: the handlers behind the ABI. Off for crates that link this one for its
// glue and export their own handler.
#[cfg(feature = "handler-exports")]
export_handler!(|req| wasmlab_handlers::run_ready(wasmlab_handlers::handle(
    req,
    &crate::ImportHost
)));
