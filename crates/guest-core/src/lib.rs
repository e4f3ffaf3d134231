//! The handlers behind the core-module handler ABI (see `wasmlab-guest-abi`): the fast path.
//!
//! Each request runs in a fresh instance, so allocations are never freed: the instance's memory is
//! dropped (or reset by the pooling allocator) when the request ends.

#[cfg(target_arch = "wasm32")]
mod import_host;
#[cfg(target_arch = "wasm32")]
pub use import_host::ImportHost;

// The command guest links this crate for `ImportHost` only, without these exports.
#[cfg(all(target_arch = "wasm32", feature = "handler-exports"))]
mod exports {
    use super::ImportHost;
    use wasmlab_guest_abi::{ABI_VERSION, ResponseDescriptor, encode_headers};
    use wasmlab_handlers::{Request, handle, run_ready};

    #[unsafe(no_mangle)]
    pub extern "C" fn wasmlab_abi_version() -> i32 {
        ABI_VERSION
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn wasmlab_alloc(len: usize) -> *mut u8 {
        Vec::<u8>::with_capacity(len).leak().as_mut_ptr()
    }

    /// # Safety
    /// The host wrote the three parts at the given addresses (from `wasmlab_alloc`) and lengths.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn wasmlab_handle(
        method_ptr: *const u8,
        method_len: usize,
        target_ptr: *const u8,
        target_len: usize,
        body_ptr: *const u8,
        body_len: usize,
    ) -> *const u8 {
        let part = |ptr: *const u8, len: usize| -> &'static [u8] {
            if len == 0 {
                &[]
            } else {
                unsafe { core::slice::from_raw_parts(ptr, len) }
            }
        };
        let text = |b: &'static [u8]| core::str::from_utf8(b).unwrap_or("");
        let req = Request::new(
            text(part(method_ptr, method_len)),
            text(part(target_ptr, target_len)),
            part(body_ptr, body_len),
        );
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
