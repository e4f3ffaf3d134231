//! `wasmlab-gateway-native`: the gateway with the handlers compiled in (no Wasm engine linked).

fn main() -> std::process::ExitCode {
    wasmlab_gateway::cli::native_main()
}
