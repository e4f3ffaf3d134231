//! The handlers behind the core-module handler ABI (see `wasmlab-guest-abi`): the fast path.
//!
//! Each request runs in a fresh instance, so allocations are never freed: the instance's memory is
//! dropped (or reset by the pooling allocator) when the request ends.

#[cfg(all(target_arch = "wasm32", feature = "handler-exports"))]
mod arena;
#[cfg(target_arch = "wasm32")]
mod import_host;
#[cfg(target_arch = "wasm32")]
pub use import_host::ImportHost;

// The command guest links this crate for `ImportHost` only, without these exports.
#[cfg(all(target_arch = "wasm32", feature = "handler-exports"))]
mod exports {
    use crate::ImportHost;
    use wasmlab_guest_abi::{ABI_VERSION, ResponseDescriptor, encode_headers};
    use wasmlab_handlers::{Request, handle, run_ready};

    #[unsafe(no_mangle)]
    pub extern "C" fn wasmlab_abi_version() -> i32 {
        ABI_VERSION
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn wasmlab_handle() -> *const u8 {
        let (method, target, body) = crate::import_host::read_request();
        let text = |b: &'static [u8]| core::str::from_utf8(b).unwrap_or("");
        let req = Request::new(text(method.leak()), text(target.leak()), body.leak());
        let resp = run_ready(handle(req, &ImportHost));
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
}
