//! The handlers as a WASI preview1 command for an engine's own CLI (`wasmtime run`, `wasmedge`):
//! the request on stdin, the host's capabilities over stdin and stdout, the response on stdout
//! (framing in `wasmlab_guest_abi::pipe`). It imports nothing but WASI, so any CLI can run it.
//! Built natively it does the same, which makes it the stand-in for a CLI in tests.

fn main() {
    use wasmlab_handlers::{handle, run_ready};
    wasmlab_guest_core::run_pipe_command(|req| {
        run_ready(handle(req, &wasmlab_guest_core::PipeHost))
    });
}
