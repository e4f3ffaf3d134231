//! `--version` names the `wasmer` crate this runner is built with, as Cargo.lock has it (the lock beside the
//! manifest: this project's, or llvm/'s, which builds this source too).

fn main() {
    wasmlab_engine_protocol::emit_locked_version("wasmer", "WASMLAB_WASMER_VERSION");
}
