//! `wasmlab-gateway-wasm`: the gateway running the handlers in Wasmtime, one fresh instance per
//! request.

use clap::{Parser, ValueEnum};
use std::time::Duration;
use wasmlab_gateway::cli::ServerArgs;

use wasmlab_gateway_wasm::{GuestLimits, KeptExecutor, NaiveExecutor, PooledExecutor, Reuse};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ExecutorKind {
    /// Pooling allocator, module linked once, fresh Store + instance per request (core-module guest).
    Pooled,
    /// Instances kept and reset to a fresh instance's state after every request: memory, mutable
    /// globals, tables (core-module guest; one that traps, times out or grows is discarded).
    Recycled,
    /// Instances kept and never reset: state carries over between requests, no isolation (core-
    /// module guest; one that traps or times out is discarded).
    Shared,
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
    /// Run this guest instead of the built-in one: a core module implementing the handler ABI
    /// (docs/guest-abi.md) for `pooled`, `recycled` and `shared`, a WASI command for `naive`.
    #[arg(long, value_name = "PATH")]
    wasm: Option<std::path::PathBuf>,
    /// Compile the guest ahead of time to this `.cwasm` file and exit (pooled). Give it back with
    /// `--wasm FILE.cwasm` to start without compiling. The file is native code for this build of
    /// the gateway only: load only files you made yourself.
    #[arg(long, value_name = "OUT")]
    precompile: Option<std::path::PathBuf>,
    /// Instances alive at once (pooled); requests beyond this wait for a slot.
    #[arg(long, default_value_t = GuestLimits::default().max_instances)]
    max_instances: u32,
    /// Largest linear memory one instance may grow to, in MiB; growing past it answers 500.
    #[arg(long, default_value_t = GuestLimits::default().max_memory_bytes >> 20)]
    max_memory_mib: usize,
    /// Longest a request may run in the guest, in ms; past it the answer is 504.
    #[arg(long, default_value_t = GuestLimits::default().deadline.as_millis() as u64)]
    deadline_ms: u64,
    /// Requests allowed to wait for an instance (pooled); more are answered 503 at once.
    #[arg(long, default_value_t = GuestLimits::default().max_queue)]
    max_queue: usize,
    /// Longest wait for an instance (pooled), in ms, before 503.
    #[arg(long, default_value_t = GuestLimits::default().queue_timeout.as_millis() as u64)]
    queue_timeout_ms: u64,
}

fn main() -> std::process::ExitCode {
    wasmlab_gateway::cli::exit_code("wasmlab-gateway-wasm", run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<()> {
    let limits = GuestLimits {
        max_instances: args.max_instances,
        max_memory_bytes: args.max_memory_mib << 20,
        deadline: Duration::from_millis(args.deadline_ms),
        max_queue: args.max_queue,
        queue_timeout: Duration::from_millis(args.queue_timeout_ms),
    };
    let wasm = match &args.wasm {
        Some(path) => std::fs::read(path)
            .map_err(|e| anyhow::anyhow!("cannot read --wasm {}: {e}", path.display()))?,
        None => match args.executor {
            ExecutorKind::Naive => wasmlab_guest_artifacts::COMMAND.to_vec(),
            _ => wasmlab_guest_artifacts::CORE.to_vec(),
        },
    };
    let guest = args
        .wasm
        .as_ref()
        .map_or_else(|| "built-in".to_owned(), |p| p.display().to_string());
    let precompiled = PooledExecutor::is_precompiled(&wasm);
    if let Some(out) = &args.precompile {
        anyhow::ensure!(
            matches!(args.executor, ExecutorKind::Pooled),
            "--precompile is for the pooled executor"
        );
        anyhow::ensure!(!precompiled, "{guest} is precompiled already");
        let bytes = PooledExecutor::precompile(&wasm, limits)?;
        std::fs::write(out, &bytes).map_err(|e| anyhow::anyhow!("write {}: {e}", out.display()))?;
        eprintln!(
            "precompiled {guest} to {} ({} bytes)",
            out.display(),
            bytes.len()
        );
        return Ok(());
    }
    eprintln!(
        "guest={guest}{} limits: {limits}",
        if precompiled { " (precompiled)" } else { "" }
    );
    let refused = |e: anyhow::Error| e.context(format!("guest {guest} refused"));
    match (args.executor, args.wasm.filter(|_| precompiled)) {
        (ExecutorKind::Pooled, Some(path)) => {
            drop(wasm);
            args.server.run(|caps| async move {
                // SAFETY: the operator passed this file as a module precompiled by
                // --precompile (see the flag's help); Wasmtime checks version and settings.
                unsafe { PooledExecutor::from_precompiled_file(&path, caps, limits) }
                    .map_err(refused)
            })
        }
        (kind @ (ExecutorKind::Naive | ExecutorKind::Recycled | ExecutorKind::Shared), Some(_)) => {
            anyhow::bail!(
                "the {} executor compiles from Wasm (only pooled starts from a precompiled module); give it a .wasm",
                format!("{kind:?}").to_lowercase()
            )
        }
        (ExecutorKind::Pooled, None) => args
            .server
            .run(|caps| async move { PooledExecutor::new(&wasm, caps, limits).map_err(refused) }),
        (ExecutorKind::Naive, None) => args
            .server
            .run(|caps| async move { NaiveExecutor::new(&wasm, caps, limits).map_err(refused) }),
        (kind @ (ExecutorKind::Recycled | ExecutorKind::Shared), None) => {
            let reuse = match kind {
                ExecutorKind::Recycled => Reuse::Recycled,
                _ => Reuse::Shared,
            };
            args.server.run(|caps| async move {
                KeptExecutor::new(&wasm, reuse, caps, limits).map_err(refused)
            })
        }
    }
}
