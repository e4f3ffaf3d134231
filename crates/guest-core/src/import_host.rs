//! The host's capabilities, reached through the `wasmlab` imports (see `wasmlab-guest-abi`).

use wasmlab_handlers::Host;

#[link(wasm_import_module = "wasmlab")]
unsafe extern "C" {
    fn state_increment() -> i64;
    fn proxy_get(target_ptr: *const u8, target_len: usize) -> i64;
    fn proxy_take(dst_ptr: *mut u8, dst_len: usize) -> usize;
    fn request_sizes(out: *mut u32);
    fn request_read(method: *mut u8, target: *mut u8, body: *mut u8);
}

/// The instance's request: method, target and body, pulled from the host.
pub fn read_request() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let mut sizes = [0u32; 3];
    // SAFETY: the host writes 12 bytes to `sizes`, then at most each buffer's length to each buffer.
    unsafe {
        request_sizes(sizes.as_mut_ptr());
        let [mut m, mut t, mut b] = sizes.map(|n| vec![0u8; n as usize]);
        request_read(m.as_mut_ptr(), t.as_mut_ptr(), b.as_mut_ptr());
        (m, t, b)
    }
}

pub struct ImportHost;

impl Host for ImportHost {
    async fn state_increment(&self) -> Result<u64, String> {
        // SAFETY: a host import with no arguments.
        Ok(unsafe { state_increment() as u64 })
    }

    async fn proxy_get(&self, target: &str) -> Result<Vec<u8>, String> {
        // SAFETY: the host reads `target` within its bounds and writes at most `len` bytes to `buf`.
        unsafe {
            let n = proxy_get(target.as_ptr(), target.len());
            let (len, ok) = if n >= 0 {
                (n as usize, true)
            } else {
                ((-n - 1) as usize, false)
            };
            let mut buf = vec![0u8; len];
            let copied = proxy_take(buf.as_mut_ptr(), len);
            buf.truncate(copied);
            if ok {
                Ok(buf)
            } else {
                Err(String::from_utf8_lossy(&buf).into_owned())
            }
        }
    }
}
