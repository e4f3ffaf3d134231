//! `wasmlab-gateway-native-static`: `wasmlab-gateway-native` linked statically, for a FROM-scratch
//! container image (scripts/rustc-workspace-wrapper links it so). Its own name, so that the
//! dynamically linked binary the `native` variant runs stays as it is.

fn main() -> std::process::ExitCode {
    wasmlab_gateway::cli::native_main()
}
