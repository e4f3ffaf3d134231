//! `wasmlab-engine-wasmer`: the lab's runner for Wasmer. It runs one WASI preview 1 command module to
//! completion and writes its phase times; the protocol (arguments, phases file, exit statuses) is
//! docs/engines.md's, implemented by `wasmlab-engine-protocol`:
//!
//! ```text
//! wasmlab-engine-wasmer --version
//! wasmlab-engine-wasmer [--config cranelift|singlepass] [--net host] --phases FILE MODULE.wasm [ARG...]
//! wasmlab-engine-wasmer-llvm [--config cranelift|singlepass|llvm] [--net host] --phases FILE MODULE.wasm [ARG...]
//! ```
//!
//! The second is the same source built with the `llvm` feature (Wasmer's LLVM compiler, which links LLVM
//! 22.1) by the Cargo project in `llvm/`, so that the first builds without LLVM.
//!
//! A trap, or a WASI host error that aborts the program, is a program failure (exit 70); reading, compiling or
//! instantiating the module a runner failure (71).
//!
//! WASI is Wasmer's own implementation, `wasmer-wasix` (WASI preview 1 plus the WASIX extensions; a
//! preview 1 command imports only the former). It is built on a virtual file system and a Tokio runtime:
//! the current directory is a host file system (`virtual_fs::host_fs`) rooted there, mounted as the WASI
//! root and preopened as `.`; stdout and stderr are Wasmer's host stdio files (written through Tokio);
//! stdin is a null file (reads return end-of-file). The program has no network unless `--net host` gives it
//! the host's (WASIX sockets on the host's stack, `virtual_net::host::LocalNetworking`): the socket server
//! under Wasmer, a WASIX program that owns its listening socket, runs so.
//!
//! Phases (`Instant`, the monotonic clock):
//! - compile: `Module::new` on the bytes already read (validation and compilation; both compilers compile
//!   the functions on a rayon pool of one thread per available core, built inside `Module::new`, so its
//!   start-up is included). Creating the `Engine` (the compiler's configuration, the host CPU's feature
//!   detection) and the Tokio runtime comes before and is in no phase.
//! - instantiate: the `Store`, the host file system of the current directory, the `WasiEnv` (its builder:
//!   arguments, preopen, stdio; the WASI runtime and process), the import object, `Instance::new`, the WASI
//!   environment's initialisation (`WasiEnvBuilder::instantiate` does these) and the lookup of `_start`.
//! - execute: the call of `_start` until it returns, traps or the program calls `proc_exit`. The WASI
//!   environment's clean-up (closing its files, flushing stdout) follows and is in no phase.

use std::env;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use wasmer::sys::{Cranelift, Singlepass};
use wasmer::{Engine, Module, RuntimeError, Store};
use wasmer_wasix::runtime::PluggableRuntime;
use wasmer_wasix::runtime::task_manager::tokio::TokioTaskManager;
use wasmer_wasix::virtual_fs::{self, FileSystem, NullFile};
use wasmer_wasix::virtual_net::host::LocalNetworking;
use wasmer_wasix::{UnsupportedVirtualNetworking, WasiEnv, WasiError};
use wasmlab_engine_protocol::{
    Classify as _, ExtraOption, Failure, Invocation, Outcome, Phases, Runner, Version,
};

const RUNNER: Runner<Flavor> = Runner {
    // `wasmlab-engine-wasmer`, or `wasmlab-engine-wasmer-llvm` for the build of `llvm/`.
    name: env!("CARGO_BIN_NAME"),
    engine: "wasmer",
    // The embedded `wasmer` crate's, read from Cargo.lock by build.rs.
    version: Version::Built(env!("WASMLAB_WASMER_VERSION")),
    configs: &[
        ("cranelift", Flavor::Cranelift),
        ("singlepass", Flavor::Singlepass),
        #[cfg(feature = "llvm")]
        ("llvm", Flavor::Llvm),
    ],
    options: &[ExtraOption {
        name: "--net",
        value: "host",
        help: "give the program the host's network (WASIX sockets); without it, it has none",
    }],
};

/// The engine configurations `--config` selects: Wasmer's compilers.
#[derive(Clone, Copy, Debug)]
enum Flavor {
    /// Cranelift, the optimising compiler (the default).
    Cranelift,
    /// Singlepass, the baseline compiler (one pass over each function).
    Singlepass,
    /// LLVM's optimiser and code generator (only in the build of `engines/wasmer/llvm`).
    #[cfg(feature = "llvm")]
    Llvm,
}

impl Flavor {
    /// An engine for the host, with the compiler's default settings (Cranelift: `OptLevel::Speed`; LLVM:
    /// `OptimizationLevel::Aggressive`, i.e. -O3).
    fn engine(self) -> Engine {
        match self {
            Self::Cranelift => Engine::from(Cranelift::default()),
            Self::Singlepass => Engine::from(Singlepass::default()),
            #[cfg(feature = "llvm")]
            Self::Llvm => Engine::from(wasmer::sys::LLVM::default()),
        }
    }
}

fn main() -> ExitCode {
    wasmlab_engine_protocol::main(&RUNNER, run)
}

fn run(inv: &Invocation<Flavor>) -> Result<Outcome, Failure> {
    let host_network = match inv.option("--net") {
        None => false,
        Some(net) if net == "host" => true,
        Some(other) => {
            return Err(Failure::runner(format_args!(
                "--net {}: the only network is `host`",
                other.display()
            )));
        }
    };
    let engine = inv.config.engine();
    // wasmer-wasix needs a Tokio runtime: its task manager, host file system and stdio run on it. A
    // multi-threaded one, as Wasmer's own `WasiRunner` (and so the `wasmer` CLI) builds when there is none.
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .runner_failure("starting the Tokio runtime")?;
    let _entered = tokio.enter();
    let cwd = env::current_dir().runner_failure("the current directory")?;
    let bytes = inv.read_module()?;

    let t0 = Instant::now();
    let module = Module::new(&engine, &bytes).runner_failure("compiling the module")?;
    let compile = t0.elapsed();

    let t1 = Instant::now();
    let mut store = Store::new(engine.clone());
    // The runtime WasiEnvBuilder would make, with the network chosen here rather than by the crate's
    // features (`host-vnet` makes the host's the default).
    let mut runtime = PluggableRuntime::new(Arc::new(TokioTaskManager::new(tokio.handle().clone())));
    runtime.set_engine(engine.clone());
    if host_network {
        runtime.set_networking_implementation(LocalNetworking::new());
    } else {
        runtime.set_networking_implementation(UnsupportedVirtualNetworking::default());
    }
    // The current directory as the WASI root file system, preopened as `.`.
    let host_fs = virtual_fs::host_fs::FileSystem::new(tokio.handle().clone(), &cwd)
        .runner_failure("opening the current directory")?;
    let (instance, wasi_env) = WasiEnv::builder(&inv.argv0)
        .runtime(Arc::new(runtime))
        .args(&inv.args)
        .stdin(Box::new(NullFile::default()))
        .fs(Arc::new(host_fs) as Arc<dyn FileSystem + Send + Sync>)
        .map_dir(".", "/")
        .runner_failure("preopening the current directory")?
        .instantiate(module, &mut store)
        .runner_failure("instantiating the module")?;
    let start = instance
        .exports
        .get_typed_function::<(), ()>(&store, "_start")
        .runner_failure(
            "the module has no `_start` function of type [] -> [] (not a WASI command?)",
        )?;
    let instantiate = t1.elapsed();

    let t2 = Instant::now();
    let result = start.call(&mut store);
    let execute = t2.elapsed();
    let status = exit_status(result);
    // Closes the program's files and flushes its stdout and stderr.
    let code = match &status {
        Ok(code) => wasmer_wasix::wasmer_wasix_types::wasi::ExitCode::from(*code),
        Err(_) => wasmer_wasix::wasmer_wasix_types::wasi::Errno::Noexec.into(),
    };
    wasi_env.on_exit(&mut store, Some(code));
    Ok(Outcome {
        status: status?,
        phases: Phases {
            compile,
            instantiate,
            execute,
        },
    })
}

/// The program's exit status from the result of `_start`: 0 when it returns, the `proc_exit` code (which
/// wasmer-wasix raises as a `WasiError::Exit` through the Wasm frames), or the failure.
fn exit_status(result: Result<(), RuntimeError>) -> Result<i32, Failure> {
    let Err(e) = result else {
        return Ok(0);
    };
    match e.downcast_ref::<WasiError>() {
        Some(WasiError::Exit(code)) => Ok(code.raw()),
        Some(other) => Err(Failure::program(format_args!("WASI: {other}"))),
        None => Err(Failure::program(e)),
    }
}
