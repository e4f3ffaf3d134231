//! `wasmlab-gateway-wasm`: the gateway running the handlers in Wasmtime, one fresh instance per
//! request.

use clap::{Parser, ValueEnum};
use wasmlab_gateway::cli::ServerArgs;
use wasmlab_gateway_wasm::{NaiveExecutor, PoolLimits, PooledExecutor};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ExecutorKind {
    /// Pooling allocator, module linked once, fresh Store + instance per request (core-module guest).
    Pooled,
    /// The gateway study's method: per request a new Linker, WASI context, Store and `_start`
    /// (WASI command guest).
    Naive,
}

#[derive(Parser)]
#[command(
    version,
    about = "wasmlab gateway, Wasmtime executors: a fresh guest instance per request"
)]
struct Args {
    #[command(flatten)]
    server: ServerArgs,
    #[arg(long, value_enum, default_value = "pooled")]
    executor: ExecutorKind,
    /// Instances alive at once (pooled); requests beyond this wait for a slot.
    #[arg(long, default_value_t = PoolLimits::default().max_instances)]
    max_instances: u32,
    /// Largest linear memory one instance may grow to, in MiB (pooled).
    #[arg(long, default_value_t = PoolLimits::default().max_memory_bytes >> 20)]
    max_memory_mib: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let limits = PoolLimits {
        max_instances: args.max_instances,
        max_memory_bytes: args.max_memory_mib << 20,
    };
    match args.executor {
        ExecutorKind::Pooled => args.server.run(|caps| async move {
            eprintln!(
                "pool: max_instances={} max_memory={} MiB",
                limits.max_instances,
                limits.max_memory_bytes >> 20
            );
            PooledExecutor::new(wasmlab_guest_artifacts::CORE, caps, limits)
        }),
        ExecutorKind::Naive => args
            .server
            .run(|caps| async move { NaiveExecutor::new(wasmlab_guest_artifacts::COMMAND, caps) }),
    }
}
