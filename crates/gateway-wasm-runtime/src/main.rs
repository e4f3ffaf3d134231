//! `wasmlab-gateway-wasm-runtime`: `wasmlab-gateway-wasm` built without its compiler (no
//! Cranelift: it serves guests a full build precompiled with `--precompile`).

fn main() -> std::process::ExitCode {
    wasmlab_gateway_wasm::cli::main("wasmlab-gateway-wasm-runtime")
}
