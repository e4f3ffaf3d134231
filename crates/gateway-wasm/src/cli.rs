//! The command line of `wasmlab-gateway-wasm`: the gateway running the handlers in Wasmtime: a core module in a fresh,
//! recycled or shared instance per request, a `wasi:http` component in a fresh or recycled one (or,
//! WASI 0.3, one reused for many requests), or the gateway study's naive method.

use clap::{Parser, ValueEnum};
use std::time::Duration;
use wasmlab_gateway::cli::ServerArgs;

use crate::{GuestCalls, GuestLimits, KeptExecutor, Load, PooledExecutor, Reuse, Source};

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
    /// A wasi:http/proxy component, a fresh instance per request (`ProxyPre`, pooling allocator),
    /// as `wasmtime serve` runs one.
    Component,
    /// A wasi:http/proxy component, instances kept and reset to a fresh instance's memory and
    /// globals after every request (one that traps, times out, grows or keeps a resource is
    /// discarded); resource handle numbers continue from the last request's.
    ComponentRecycled,
    /// A WASI 0.3 wasi:http/service component, one instance serving up to 128 requests one after
    /// another, as `wasmtime serve` reuses one: requests share the instance's memory (one that
    /// traps, times out or fails to answer is discarded).
    ComponentReused,
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
    /// (docs/guest-abi.md) for `pooled`, `recycled` and `shared`, a WASI command for `naive`, any
    /// wasi:http/proxy component for `component` and `component-recycled`, any WASI 0.3
    /// wasi:http/service component for `component-reused`.
    #[arg(long, value_name = "PATH")]
    wasm: Option<std::path::PathBuf>,
    /// An environment variable every component instance sees (`component`; repeatable), as
    /// `wasmtime serve --env`. wasmlab's component finds its upstream in WASMLAB_UPSTREAM.
    #[arg(long, value_name = "KEY=VALUE", value_parser = env_pair)]
    env: Vec<(String, String)>,
    /// Give component instances the gateway's stdout and stderr (`component`; by default what a
    /// guest prints is discarded).
    #[arg(long)]
    inherit_stdio: bool,
    /// Compile the guest ahead of time to this `.cwasm` file and exit (pooled, recycled, shared:
    /// with the same --executor, --max-instances and --max-memory-mib as it will run with). Give
    /// it back with `--wasm FILE.cwasm` to start without compiling. The file is native code for
    /// this build of the gateway only: load only files you made yourself.
    #[arg(long, value_name = "OUT")]
    precompile: Option<std::path::PathBuf>,
    /// Compile a .wasm guest in this process. By default a child process compiles it (this
    /// program with --precompile), so the server never holds the compiler's code and memory.
    #[arg(long)]
    compile_in_process: bool,
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
    /// KiB of each linear memory the pool resets in place when an instance ends (by memset, or
    /// with --pagemap-scan only the dirtied pages); beyond it memory is returned to the kernel
    /// and faulted in again by the next instance. Raise it for a guest with a large memory image
    /// (up to 4 GiB, a 32-bit memory's whole).
    #[arg(
        long,
        default_value_t = (GuestLimits::default().keep_resident_bytes >> 10) as u32,
        value_parser = clap::value_parser!(u32).range(0..=4 << 20)
    )]
    keep_resident_kib: u32,
    /// Reset only the pages an instance dirtied (Linux's PAGEMAP_SCAN ioctl) instead of all of
    /// the resident part: for guests whose memory image is megabytes (a JavaScript engine's).
    #[arg(long)]
    pagemap_scan: bool,
    /// How pooled, recycled and shared call into the guest: `sync` runs a request to completion
    /// with no fiber (a guest running past one epoch tick is moved off its worker thread);
    /// `async` runs it on a fiber that yields at every tick; `auto` is the executor's default,
    /// the cheaper in docs/pooled-cost.md's A/B.
    #[arg(long, value_enum, default_value = "auto")]
    guest_calls: GuestCalls,
}

fn env_pair(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() && !k.contains('\0') && !v.contains('\0') => {
            Ok((k.to_owned(), v.to_owned()))
        }
        _ => Err(format!(
            "{s:?} is not KEY=VALUE (a non-empty name, an `=`, then the value)"
        )),
    }
}

/// The gateway's command line, as the binary `program` (the full build's, or the one built
/// without its compiler under its own name): parses the arguments, serves, and says why it
/// stopped.
pub fn main(program: &str) -> std::process::ExitCode {
    wasmlab_gateway::cli::exit_code(program, run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<()> {
    let limits = GuestLimits {
        max_instances: args.max_instances,
        max_memory_bytes: args.max_memory_mib << 20,
        deadline: Duration::from_millis(args.deadline_ms),
        max_queue: args.max_queue,
        queue_timeout: Duration::from_millis(args.queue_timeout_ms),
        keep_resident_bytes: (args.keep_resident_kib as usize) << 10,
        pagemap_scan: args.pagemap_scan,
        calls: args.guest_calls,
    };
    let cannot_read = |path: &std::path::Path, e: &dyn std::fmt::Display| {
        anyhow::anyhow!("cannot read --wasm {}: {e}", path.display())
    };
    // A precompiled file is mapped by the executor, never read whole here.
    let precompiled = match &args.wasm {
        Some(path) => {
            PooledExecutor::is_precompiled_file(path).map_err(|e| cannot_read(path, &e))?
        }
        None => false,
    };
    let wasm = match &args.wasm {
        _ if precompiled => Vec::new(),
        Some(path) => std::fs::read(path).map_err(|e| cannot_read(path, &e))?,
        None => built_in_guest(args.executor)?,
    };
    let name = args
        .wasm
        .as_ref()
        .map_or_else(|| "built-in".to_owned(), |p| p.display().to_string());
    anyhow::ensure!(
        matches!(
            args.executor,
            ExecutorKind::Component
                | ExecutorKind::ComponentRecycled
                | ExecutorKind::ComponentReused
        ) || (args.env.is_empty() && !args.inherit_stdio),
        "--env and --inherit-stdio are for --executor component: a core module has no environment or stdio"
    );
    let guest = Guest {
        name,
        wasm,
        precompiled,
    };
    match args.executor {
        ExecutorKind::Pooled => serve::<PooledExecutor>(args, guest, limits, ()),
        ExecutorKind::Recycled => serve::<KeptExecutor>(args, guest, limits, Reuse::Recycled),
        ExecutorKind::Shared => serve::<KeptExecutor>(args, guest, limits, Reuse::Shared),
        #[cfg(feature = "components")]
        ExecutorKind::Component | ExecutorKind::ComponentRecycled => {
            let options = crate::ComponentOptions {
                env: args.env.clone(),
                upstream: args.server.upstream.clone(),
                inherit_stdio: args.inherit_stdio,
                recycled: matches!(args.executor, ExecutorKind::ComponentRecycled),
            };
            serve::<crate::ComponentExecutor>(args, guest, limits, options)
        }
        #[cfg(feature = "components-p3")]
        ExecutorKind::ComponentReused => {
            let options = crate::ComponentOptions {
                env: args.env.clone(),
                upstream: args.server.upstream.clone(),
                inherit_stdio: args.inherit_stdio,
                recycled: false,
            };
            serve::<crate::ReusedComponentExecutor>(args, guest, limits, options)
        }
        #[cfg(not(feature = "components"))]
        ExecutorKind::Component | ExecutorKind::ComponentRecycled => anyhow::bail!(
            "this gateway was built without its component executor (the `components` cargo feature)"
        ),
        #[cfg(not(feature = "components-p3"))]
        ExecutorKind::ComponentReused => anyhow::bail!(
            "this gateway was built without its WASI 0.3 executor (the `components-p3` cargo feature)"
        ),
        #[cfg(feature = "compiler")]
        ExecutorKind::Naive => serve::<crate::NaiveExecutor>(args, guest, limits, ()),
        #[cfg(not(feature = "compiler"))]
        ExecutorKind::Naive => {
            anyhow::bail!("{NO_COMPILER}; the naive executor compiles at every start")
        }
    }
}

/// The guest as given: its name for messages, its Wasm (empty when it is precompiled: the
/// executor maps the file), and whether it is precompiled.
struct Guest {
    name: String,
    wasm: Vec<u8>,
    precompiled: bool,
}

/// Serves `guest` with executor `E`, made with `options`: with `--precompile`, compiles it to
/// the file and exits; otherwise says the start banner and loads the module to serve (the
/// operator's precompiled file, one compiled for this start in a child process into a temporary
/// directory removed once it is mapped, or with --compile-in-process, or for an executor that
/// compiles at every start, the Wasm itself).
fn serve<E: Load>(
    mut args: Args,
    guest: Guest,
    limits: GuestLimits,
    options: E::Options,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        E::DEFAULT_CALLS.is_some() || limits.calls == GuestCalls::Auto,
        "--guest-calls is for --executor pooled, recycled and shared: the component and naive executors call async, as WASI's imports wait"
    );
    if let Some(why) = E::COMPILES_AT_START {
        anyhow::ensure!(args.precompile.is_none() && !guest.precompiled, "{why}");
    }
    let Guest {
        name,
        wasm,
        precompiled,
    } = guest;
    if let Some(out) = &args.precompile {
        anyhow::ensure!(!precompiled, "{name} is precompiled already");
        let bytes = precompile::<E>(&wasm, &options, limits)?;
        std::fs::write(out, &bytes).map_err(|e| anyhow::anyhow!("write {}: {e}", out.display()))?;
        eprintln!(
            "precompiled {name} to {} ({} bytes)",
            out.display(),
            bytes.len()
        );
        return Ok(());
    }
    eprintln!(
        "guest={name}{} limits: {limits}",
        if precompiled { " (precompiled)" } else { "" }
    );
    let refused = |e: anyhow::Error| e.context(format!("guest {name} refused"));
    let compiled = match (&args.wasm, precompiled) {
        (Some(path), true) => Compiled::Precompiled(path.clone()),
        _ => compile::<E>(&args, wasm, &limits).map_err(refused)?,
    };
    if let Some(default) = E::DEFAULT_CALLS {
        let calls = limits.calls.or(default);
        eprintln!(
            "guest calls: {}",
            match calls {
                GuestCalls::Sync => "sync (async for paths that waited in a host call)",
                _ => "async",
            }
        );
        // Synchronous guests move off a worker with block_in_place, which the current-thread
        // runtime lacks; with one worker the multi-thread runtime measured no dearer
        // (docs/pooled-cost.md).
        args.server.multi_thread_runtime = calls.is_sync();
    }
    args.server.run(|caps| async move {
        // SAFETY: a precompiled file is this gateway's own, or one the operator passed as such
        // (see --precompile's help); Wasmtime checks its version and settings.
        let executor = unsafe { E::load(compiled.source(), options, caps, limits) };
        // The module is mapped now, and a mapped file outlives its name: the directory a child
        // compiled it into goes at once, so a server stopped by a signal leaves nothing behind.
        drop(compiled);
        executor.map_err(refused)?.ready().await.map_err(refused)
    })
}

/// The module a start serves, compiled or mapped.
enum Compiled {
    /// Wasm the executor compiles in this process.
    #[cfg(feature = "compiler")]
    InProcess(Vec<u8>),
    /// The operator's precompiled file.
    Precompiled(std::path::PathBuf),
    /// Compiled for this start by a child process, into a temporary directory removed once the
    /// module is mapped.
    #[cfg(feature = "compiler")]
    InChild {
        file: std::path::PathBuf,
        _dir: tempfile::TempDir,
    },
}

impl Compiled {
    fn source(&self) -> Source<'_> {
        match self {
            #[cfg(feature = "compiler")]
            Compiled::InProcess(wasm) => Source::Wasm(wasm),
            Compiled::Precompiled(path) => Source::Precompiled(path),
            #[cfg(feature = "compiler")]
            Compiled::InChild { file, .. } => Source::Precompiled(file),
        }
    }
}

/// A guest given as Wasm: compiled in a child process (see [`compile_in_child`]), or with
/// --compile-in-process, or for an executor that compiles at every start, left for the executor
/// to compile.
#[cfg(feature = "compiler")]
fn compile<E: Load>(args: &Args, wasm: Vec<u8>, limits: &GuestLimits) -> anyhow::Result<Compiled> {
    if args.compile_in_process || E::COMPILES_AT_START.is_some() {
        return Ok(Compiled::InProcess(wasm));
    }
    let dir = compile_in_child(args.executor, args.wasm.as_deref(), &wasm, limits)?;
    Ok(Compiled::InChild {
        file: dir.path().join("guest.cwasm"),
        _dir: dir,
    })
}

#[cfg(not(feature = "compiler"))]
fn compile<E: Load>(_: &Args, _: Vec<u8>, _: &GuestLimits) -> anyhow::Result<Compiled> {
    anyhow::bail!("{NO_COMPILER}")
}

#[cfg(feature = "compiler")]
fn precompile<E: Load>(
    wasm: &[u8],
    options: &E::Options,
    limits: GuestLimits,
) -> anyhow::Result<Vec<u8>> {
    E::precompile(wasm, options, limits)
}

#[cfg(not(feature = "compiler"))]
fn precompile<E: Load>(_: &[u8], _: &E::Options, _: GuestLimits) -> anyhow::Result<Vec<u8>> {
    anyhow::bail!("{NO_COMPILER}")
}

#[cfg(not(feature = "compiler"))]
const NO_COMPILER: &str = "this gateway was built without its compiler (wasmlab-gateway-wasm-runtime, or cargo's --no-default-features): it only maps modules a full build precompiled (`wasmlab-gateway-wasm --precompile FILE.cwasm`, then `--wasm FILE.cwasm`)";

#[cfg(feature = "compiler")]
fn built_in_guest(kind: ExecutorKind) -> anyhow::Result<Vec<u8>> {
    Ok(match kind {
        ExecutorKind::Naive => wasmlab_guest_artifacts::COMMAND.to_vec(),
        ExecutorKind::Component | ExecutorKind::ComponentRecycled => {
            wasmlab_guest_artifacts::HTTP.to_vec()
        }
        ExecutorKind::ComponentReused => wasmlab_guest_artifacts::HTTP_P3.to_vec(),
        _ => wasmlab_guest_artifacts::CORE.to_vec(),
    })
}

#[cfg(not(feature = "compiler"))]
fn built_in_guest(_: ExecutorKind) -> anyhow::Result<Vec<u8>> {
    anyhow::bail!("{NO_COMPILER}; it has no built-in guest")
}

/// Compiles the guest in a child process (this program with `--precompile`) into a temporary
/// directory, as `guest.cwasm`. The server then only maps the compiled module: Cranelift's code
/// and the compiler's memory never enter its resident set (about 7 MiB of idle RSS), and a module
/// that makes the compiler fail or blow up takes down the child, not the server.
#[cfg(feature = "compiler")]
fn compile_in_child(
    kind: ExecutorKind,
    path: Option<&std::path::Path>,
    wasm: &[u8],
    limits: &GuestLimits,
) -> anyhow::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix("wasmlab-gateway-")
        .tempdir()
        .map_err(|e| anyhow::anyhow!("cannot make a directory to compile the guest in: {e}"))?;
    let input = match path {
        Some(p) => p.to_path_buf(),
        None => {
            let p = dir.path().join("guest.wasm");
            std::fs::write(&p, wasm).map_err(|e| anyhow::anyhow!("write {}: {e}", p.display()))?;
            p
        }
    };
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot find this program to compile the guest: {e}"))?;
    let executor = kind
        .to_possible_value()
        .expect("no variant is skipped")
        .get_name()
        .to_owned();
    // The settings the engine config depends on (`PooledExecutor::config`): a module compiled
    // with others would not load.
    let out = std::process::Command::new(exe)
        .arg("--executor")
        .arg(executor)
        .arg("--max-instances")
        .arg(limits.max_instances.to_string())
        .arg("--max-memory-mib")
        .arg((limits.max_memory_bytes >> 20).to_string())
        .arg("--wasm")
        .arg(&input)
        .arg("--precompile")
        .arg(dir.path().join("guest.cwasm"))
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| anyhow::anyhow!("cannot start the compiler process: {e}"))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        let said = said
            .trim()
            .trim_start_matches("wasmlab-gateway-wasm: error: ");
        anyhow::bail!("compiling it failed ({}): {said}", out.status);
    }
    Ok(dir)
}
