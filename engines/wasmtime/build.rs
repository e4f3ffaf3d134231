//! `--version` names the `wasmtime` crate this runner is built with, as Cargo.lock has it.

fn main() {
    wasmlab_engine_protocol::emit_locked_version("wasmtime", "WASMLAB_WASMTIME_VERSION");
}
