//! `wasmlab-engine-wasmtime`: the lab's runner for Wasmtime. It runs one WASI preview 1 command module to
//! completion and writes its phase times; the protocol (arguments, phases file, exit statuses) is
//! docs/engines.md's, implemented by `wasmlab-engine-protocol`:
//!
//! ```text
//! wasmlab-engine-wasmtime --version
//! wasmlab-engine-wasmtime [--config cranelift|winch|pulley] --phases FILE MODULE.wasm [ARG...]
//! ```
//!
//! A trap, or a WASI host error that aborts the program, is a program failure (exit 70); reading, compiling,
//! linking or instantiating the module a runner failure (71). Either way the error chain goes to stderr.
//!
//! Phases (`Instant`, the monotonic clock):
//! - compile: `Module::new` on the bytes already read (validation and compilation; with parallel compilation
//!   on, the first use of the rayon pool, i.e. its start-up, is included). Creating the `Engine` (the
//!   configuration, the host CPU's feature detection) comes before and is in no phase.
//! - instantiate: a new `Linker` populated with WASI preview 1 (created inside the timed region, as a
//!   command-line runtime does per run), the WASI context (args, the preopen of the current directory), the
//!   `Store`, `Linker::instantiate` and the lookup of `_start`.
//! - execute: the call of `_start` until it returns, traps or the program calls `proc_exit`.

use std::process::ExitCode;
use std::time::Instant;

use wasmlab_engine_protocol::{
    Classify as _, Failure, Invocation, Outcome, Phases, Runner, Version, error_chain,
};
use wasmtime::{Config, Engine, Linker, Module, Store, Strategy};
use wasmtime_wasi::p1::{self, WasiP1Ctx};
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtxBuilder};

const RUNNER: Runner<Flavor> = Runner {
    name: "wasmlab-engine-wasmtime",
    engine: "wasmtime",
    // The embedded `wasmtime` crate's, read from Cargo.lock by build.rs.
    version: Version::Built(env!("WASMLAB_WASMTIME_VERSION")),
    configs: &[
        ("cranelift", Flavor::Cranelift),
        ("winch", Flavor::Winch),
        ("pulley", Flavor::Pulley),
    ],
    options: &[],
};

/// The engine configurations `--config` selects.
#[derive(Clone, Copy, Debug)]
enum Flavor {
    /// The optimizing compiler (the default).
    Cranelift,
    /// The baseline (single-pass) compiler.
    Winch,
    /// Cranelift compiling to Pulley bytecode, run by Wasmtime's portable interpreter.
    Pulley,
}

impl Flavor {
    fn engine(self) -> wasmtime::Result<Engine> {
        let mut config = Config::new();
        match self {
            Self::Cranelift => {
                config.strategy(Strategy::Cranelift);
            }
            Self::Winch => {
                config.strategy(Strategy::Winch);
            }
            Self::Pulley => {
                // Pulley is a Cranelift backend: selecting the pulley target (64-bit, host byte order, as
                // `wasmtime run --target pulley64` does) makes Wasmtime compile to Pulley bytecode and run it
                // in its interpreter (the `pulley` cargo feature).
                let target = if cfg!(target_endian = "big") {
                    "pulley64be"
                } else {
                    "pulley64"
                };
                config.strategy(Strategy::Cranelift);
                config.target(target)?;
            }
        }
        Engine::new(&config)
    }
}

fn main() -> ExitCode {
    wasmlab_engine_protocol::main(&RUNNER, run)
}

fn run(inv: &Invocation<Flavor>) -> Result<Outcome, Failure> {
    let engine = inv
        .config
        .engine()
        .runner_failure(format_args!("configuring Wasmtime ({:?})", inv.config))?;
    let bytes = inv.read_module()?;

    let t0 = Instant::now();
    let module = Module::new(&engine, &bytes).runner_failure("compiling the module")?;
    let compile = t0.elapsed();

    let t1 = Instant::now();
    let mut linker: Linker<WasiP1Ctx> = Linker::new(&engine);
    p1::add_to_linker_sync(&mut linker, |wasi| wasi).runner_failure("linking WASI")?;
    // wasmtime-wasi turns a `proc_exit` status of 126 or more into a trap; a native program's
    // `exit(300)` is an exit (status 44), so every status is an exit here too.
    linker
        .allow_shadowing(true)
        .func_wrap(
            "wasi_snapshot_preview1",
            "proc_exit",
            |status: i32| -> wasmtime::Result<()> { Err(I32Exit(status).into()) },
        )
        .runner_failure("linking proc_exit")?;
    // No environment variables and an empty (closed) stdin: the builder's defaults.
    let mut wasi = WasiCtxBuilder::new();
    wasi.arg(&inv.argv0)
        .args(&inv.args)
        .inherit_stdout()
        .inherit_stderr();
    wasi.preopened_dir(".", ".", FsPerms::ReadWrite)
        .runner_failure("preopening the current directory")?;
    let mut store = Store::new(&engine, wasi.build_p1());
    let instance = linker
        .instantiate(&mut store, &module)
        .runner_failure("instantiating the module")?;
    let start = instance
        .get_typed_func::<(), ()>(&mut store, "_start")
        .runner_failure(
            "the module has no `_start` function of type [] -> [] (not a WASI command?)",
        )?;
    let instantiate = t1.elapsed();

    let t2 = Instant::now();
    let result = start.call(&mut store, ());
    let execute = t2.elapsed();
    let status = match result {
        Ok(()) => 0,
        Err(e) => match e.downcast_ref::<I32Exit>() {
            Some(&I32Exit(code)) => code,
            None => return Err(Failure::program(error_chain(e))),
        },
    };
    Ok(Outcome {
        status,
        phases: Phases {
            compile,
            instantiate,
            execute,
        },
    })
}
