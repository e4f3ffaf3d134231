//! wasmlab runner for the Wasmi interpreter: runs one WASI preview 1 command module and writes its phase
//! times; the protocol (arguments, phases file, exit statuses) is docs/engines.md's, implemented by
//! `wasmlab-engine-protocol`.
//!
//! ```text
//! wasmlab-engine-wasmi --version
//! wasmlab-engine-wasmi [--config NAME] --phases FILE MODULE.wasm [ARG...]
//! ```

use std::process::ExitCode;
use std::time::Instant;

use wasmi::{CompilationMode, Config, Engine, Linker, Module, Store};
use wasmi_wasi::{Dir, WasiCtx, WasiCtxBuilder, ambient_authority};
use wasmlab_engine_protocol::{
    Classify as _, Failure, Invocation, Outcome, Phases, Runner, Version,
};

const RUNNER: Runner<CompilationMode> = Runner {
    name: "wasmlab-engine-wasmi",
    engine: "wasmi",
    // The embedded `wasmi` crate's, read from Cargo.lock by build.rs.
    version: Version::Built(env!("WASMLAB_WASMI_VERSION")),
    // `--config NAME` picks Wasmi's compilation mode.
    configs: &[
        // Wasmi's default: validated eagerly, each function translated to Wasmi bytecode on its first call.
        ("default", CompilationMode::LazyTranslation),
        ("lazy-translation", CompilationMode::LazyTranslation),
        // Every function validated and translated in Module::new.
        ("eager", CompilationMode::Eager),
        // Validation and translation both deferred to a function's first call.
        ("lazy", CompilationMode::Lazy),
    ],
    options: &[],
};

fn main() -> ExitCode {
    wasmlab_engine_protocol::main(&RUNNER, run)
}

/// Runs the module to its end: its exit status (0 when `_start` returned, else its `proc_exit` code).
fn run(inv: &Invocation<CompilationMode>) -> Result<Outcome, Failure> {
    let bytes = inv.read_module()?;

    let mut config = Config::default();
    config.compilation_mode(inv.config);
    let engine = Engine::new(&config);

    // compile: validation and translation (as far as the compilation mode does them up front).
    let t0 = Instant::now();
    let module = Module::new(&engine, &bytes[..]).runner_failure("cannot compile the module")?;
    let t1 = Instant::now();

    // instantiate: WASI context (args, no environment, stdio, "." preopened), linker, instance, start.
    let mut wasi = WasiCtxBuilder::new();
    wasi.arg(&inv.argv0)
        .and_then(|b| b.args(&inv.args))
        .runner_failure("WASI arguments")?;
    let cwd = Dir::open_ambient_dir(".", ambient_authority())
        .runner_failure("cannot open the current directory")?;
    wasi.inherit_stdout()
        .inherit_stderr()
        .preopened_dir(cwd, ".")
        .runner_failure("cannot preopen the current directory")?;
    let mut store = Store::new(&engine, wasi.build());
    let mut linker = <Linker<WasiCtx>>::new(&engine);
    wasmi_wasi::add_to_linker(&mut linker, |ctx| ctx).runner_failure("cannot link WASI")?;
    // wasi-common turns a `proc_exit` status of 126 or more into a trap; a native program's
    // `exit(300)` is an exit (status 44), so every status is an exit here too.
    linker
        .allow_shadowing(true)
        .func_wrap(
            "wasi_snapshot_preview1",
            "proc_exit",
            |status: i32| -> Result<(), wasmi::Error> { Err(wasmi::Error::i32_exit(status)) },
        )
        .runner_failure("cannot link proc_exit")?;
    let instance = linker
        .instantiate_and_start(&mut store, &module)
        .runner_failure("cannot instantiate")?;
    let start = instance
        .get_typed_func::<(), ()>(&store, "_start")
        .runner_failure("no `_start` function")?;
    let t2 = Instant::now();

    // execute: `_start` until it returns or the program calls proc_exit.
    let outcome = start.call(&mut store, ());
    let t3 = Instant::now();

    let status = match outcome {
        Ok(()) => 0,
        Err(e) => match e.i32_exit_status() {
            Some(status) => status,
            None => return Err(Failure::program(format_args!("trap: {e}"))),
        },
    };
    Ok(Outcome {
        status,
        phases: Phases::between([t0, t1, t2, t3]),
    })
}
