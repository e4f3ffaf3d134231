//! `wasmlab-gateway-native`: the gateway with the handlers compiled in (no Wasm engine linked).

use clap::Parser;
use wasmlab_gateway::NativeExecutor;
use wasmlab_gateway::cli::ServerArgs;

#[derive(Parser)]
#[command(
    version,
    about = "wasmlab gateway, native executor: the handlers compiled into the server"
)]
struct Args {
    #[command(flatten)]
    server: ServerArgs,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let result = args
        .server
        .run(|caps| async move { Ok(NativeExecutor::new(caps)) });
    wasmlab_gateway::cli::exit_code("wasmlab-gateway-native", result)
}
