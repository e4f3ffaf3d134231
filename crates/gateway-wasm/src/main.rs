//! `wasmlab-gateway-wasm`: the gateway running the handlers in Wasmtime (see [`cli`]).

use wasmlab_gateway_wasm::cli;

fn main() -> std::process::ExitCode {
    cli::main("wasmlab-gateway-wasm")
}
