//! The handlers as a WASI preview1 command: the request on stdin, the response on stdout (framing in
//! `wasmlab-guest-abi`). This is the gateway study's guest shape, run once per request.

#[cfg(target_arch = "wasm32")]
fn main() {
    use wasmlab_handlers::{handle, run_ready};
    wasmlab_guest_core::run_command(|req| run_ready(handle(req, &wasmlab_guest_core::ImportHost)));
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "wasmlab-guest-command is a Wasm guest: it is built for wasm32-wasip1 by wasmlab-guest-artifacts"
    );
    std::process::exit(2);
}
