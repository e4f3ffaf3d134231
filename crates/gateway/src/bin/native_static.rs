//! `wasmlab-gateway-native-static`: `wasmlab-gateway-native` linked statically, for a FROM-scratch
//! container image. Its own name, so that linking it never replaces the dynamically linked
//! binary the `native` variant runs; built by the container variants alone (Cargo.toml says how).

fn main() -> std::process::ExitCode {
    wasmlab_gateway::cli::native_main()
}
