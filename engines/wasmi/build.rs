//! `--version` names the `wasmi` crate this runner is built with, as Cargo.lock has it.

fn main() {
    wasmlab_engine_protocol::emit_locked_version("wasmi", "WASMLAB_WASMI_VERSION");
}
