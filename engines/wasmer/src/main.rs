//! `wasmlab-engine-wasmer`: the lab's runner for Wasmer. It runs one WASI preview 1 command module to
//! completion and writes its phase times, following the protocol of docs/engines.md:
//!
//! ```text
//! wasmlab-engine-wasmer --version
//! wasmlab-engine-wasmer [--config cranelift|singlepass] --phases FILE MODULE.wasm [ARG...]
//! wasmlab-engine-wasmer-llvm [--config cranelift|singlepass|llvm] --phases FILE MODULE.wasm [ARG...]
//! ```
//!
//! The second is the same source built with the `llvm` feature (Wasmer's LLVM compiler, which links LLVM
//! 22.1) by the Cargo project in `llvm/`, so that the first builds without LLVM.
//!
//! Exit status: the program's `proc_exit` code, or 0 when `_start` returns; 2 for a usage error (an unknown
//! option or `--config`, a missing operand); 70 when the program fails while running (a trap, or a WASI host
//! error that aborts it); 71 when the runner fails before or after running it (reading, compiling or
//! instantiating the module; writing the phases file). On 70 and 71 the error goes to stderr and the phases
//! file is not written.
//!
//! WASI is Wasmer's own implementation, `wasmer-wasix` (WASI preview 1 plus the WASIX extensions; a
//! preview 1 command imports only the former). It is built on a virtual file system and a Tokio runtime:
//! the current directory is a host file system (`virtual_fs::host_fs`) rooted there, mounted as the WASI
//! root and preopened as `.`; stdout and stderr are Wasmer's host stdio files (written through Tokio);
//! stdin is a null file (reads return end-of-file).
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

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;
use std::{env, fs, io};

use wasmer::sys::{Cranelift, Singlepass};
use wasmer::{Engine, Module, RuntimeError, Store};
use wasmer_wasix::virtual_fs::{self, FileSystem, NullFile};
use wasmer_wasix::{WasiEnv, WasiError};

/// The version of the embedded `wasmer` crate, read from Cargo.lock by build.rs.
const WASMER_VERSION: &str = env!("WASMLAB_WASMER_VERSION");

/// `wasmlab-engine-wasmer`, or `wasmlab-engine-wasmer-llvm` for the build of `llvm/`.
const NAME: &str = env!("CARGO_BIN_NAME");
/// The configurations this build has (`--config`); the first is the default.
#[cfg(not(feature = "llvm"))]
const CONFIGS: &str = "cranelift|singlepass";
#[cfg(feature = "llvm")]
const CONFIGS: &str = "cranelift|singlepass|llvm";

const EXIT_USAGE: u8 = 2;
/// The program failed while running: a trap or a host error that aborted it.
const EXIT_PROGRAM: u8 = 70;
/// The runner failed: reading, compiling or instantiating the module, or writing the phases file.
const EXIT_RUNNER: u8 = 71;

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
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "cranelift" => Some(Self::Cranelift),
            "singlepass" => Some(Self::Singlepass),
            #[cfg(feature = "llvm")]
            "llvm" => Some(Self::Llvm),
            _ => None,
        }
    }

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

struct RunArgs {
    flavor: Flavor,
    phases: PathBuf,
    module: PathBuf,
    /// The module's arguments after `argv[0]`.
    args: Vec<String>,
}

enum Command {
    Version,
    Help,
    Run(RunArgs),
}

/// Parses the runner's arguments (without `argv[0]`). Options come before the module; everything after the
/// module is the module's own arguments. `--opt VALUE` and `--opt=VALUE` are both accepted.
fn parse_args(mut argv: impl Iterator<Item = OsString>) -> Result<Command, String> {
    let mut flavor = Flavor::Cranelift;
    let mut phases = None;
    let module = loop {
        let Some(arg) = argv.next() else {
            return Err("missing MODULE.wasm".into());
        };
        let Some(text) = arg.to_str() else {
            break PathBuf::from(arg);
        };
        if text == "--" {
            break PathBuf::from(argv.next().ok_or("missing MODULE.wasm after `--`")?);
        }
        if !text.starts_with('-') || text == "-" {
            break PathBuf::from(arg);
        }
        let (option, inline) = match text.split_once('=') {
            Some((option, value)) => (option, Some(OsString::from(value))),
            None => (text, None),
        };
        let mut value = |option: &str| {
            inline
                .clone()
                .or_else(|| argv.next())
                .ok_or_else(|| format!("{option} needs a value"))
        };
        match option {
            "--version" | "-V" => return Ok(Command::Version),
            "--help" | "-h" => return Ok(Command::Help),
            "--config" => {
                let name = value(option)?;
                let name = name.to_string_lossy();
                flavor = Flavor::from_name(&name).ok_or_else(|| {
                    format!("unknown --config {name:?} (expected one of {CONFIGS})")
                })?;
            }
            "--phases" => phases = Some(PathBuf::from(value(option)?)),
            _ => return Err(format!("unknown option {text:?}")),
        }
    };
    let phases = phases.ok_or("missing --phases FILE")?;
    let args = argv
        .map(|a| {
            a.into_string()
                .map_err(|a| format!("argument {a:?} is not UTF-8"))
        })
        .collect::<Result<_, _>>()?;
    Ok(Command::Run(RunArgs {
        flavor,
        phases,
        module,
        args,
    }))
}

fn main() -> ExitCode {
    let run_args = match parse_args(env::args_os().skip(1)) {
        Ok(Command::Version) => {
            println!("wasmer {WASMER_VERSION}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Help) => {
            println!("{}", usage());
            return ExitCode::SUCCESS;
        }
        Ok(Command::Run(run_args)) => run_args,
        Err(msg) => {
            eprintln!("{NAME}: {msg}\n{}", usage());
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let code = match run(&run_args) {
        Ok(status) => status,
        Err(Failure::Program(msg)) => {
            eprintln!(
                "{NAME}: {}: the program failed: {msg}",
                run_args.module.display()
            );
            EXIT_PROGRAM
        }
        Err(Failure::Runner(msg)) => {
            eprintln!("{NAME}: {}: {msg}", run_args.module.display());
            EXIT_RUNNER
        }
    };
    let _ = io::stdout().flush();
    ExitCode::from(code)
}

fn usage() -> String {
    format!(
        "usage: {NAME} --version\n       {NAME} [--config {CONFIGS}] --phases FILE MODULE.wasm [ARG...]"
    )
}

enum Failure {
    /// The program trapped or was aborted by a host error while running.
    Program(String),
    /// Anything else.
    Runner(String),
}

/// `context: error`, then the error's sources, one a line.
fn runner_error(context: &str, e: &dyn std::error::Error) -> Failure {
    Failure::Runner(format!("{context}: {}", error_chain(e)))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // Wasmer's errors often repeat their source in their own message.
        if !text.contains(&cause_text) {
            text.push_str("\n  caused by: ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Runs the module; on success returns its exit status (0 or its `proc_exit` code), having written the
/// phases file.
fn run(args: &RunArgs) -> Result<u8, Failure> {
    let engine = args.flavor.engine();
    // wasmer-wasix needs a Tokio runtime: its task manager, host file system and stdio run on it. A
    // multi-threaded one, as Wasmer's own `WasiRunner` (and so the `wasmer` CLI) builds when there is none.
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| runner_error("starting the Tokio runtime", &e))?;
    let _entered = tokio.enter();
    let argv0 = file_name(&args.module)?;
    let cwd = env::current_dir().map_err(|e| runner_error("the current directory", &e))?;
    let bytes = fs::read(&args.module)
        .map_err(|e| runner_error(&format!("cannot read {}", args.module.display()), &e))?;

    let t0 = Instant::now();
    let module =
        Module::new(&engine, &bytes).map_err(|e| runner_error("compiling the module", &e))?;
    let compile_ns = t0.elapsed().as_nanos();

    let t1 = Instant::now();
    let mut store = Store::new(engine.clone());
    // The current directory as the WASI root file system, preopened as `.`.
    let host_fs = virtual_fs::host_fs::FileSystem::new(tokio.handle().clone(), &cwd)
        .map_err(|e| runner_error("opening the current directory", &e))?;
    let (instance, wasi_env) = WasiEnv::builder(argv0)
        .engine(engine)
        .args(&args.args)
        .stdin(Box::new(NullFile::default()))
        .fs(Arc::new(host_fs) as Arc<dyn FileSystem + Send + Sync>)
        .map_dir(".", "/")
        .map_err(|e| runner_error("preopening the current directory", &e))?
        .instantiate(module, &mut store)
        .map_err(|e| runner_error("instantiating the module", &e))?;
    let start = instance
        .exports
        .get_typed_function::<(), ()>(&store, "_start")
        .map_err(|e| {
            runner_error(
                "the module has no `_start` function of type [] -> [] (not a WASI command?)",
                &e,
            )
        })?;
    let instantiate_ns = t1.elapsed().as_nanos();

    let t2 = Instant::now();
    let result = start.call(&mut store);
    let execute_ns = t2.elapsed().as_nanos();
    let status = exit_status(result);
    // Closes the program's files and flushes its stdout and stderr.
    let code = match &status {
        Ok(code) => wasmer_wasix::wasmer_wasix_types::wasi::ExitCode::from(i32::from(*code)),
        Err(_) => wasmer_wasix::wasmer_wasix_types::wasi::Errno::Noexec.into(),
    };
    wasi_env.on_exit(&mut store, Some(code));
    let status = status?;

    let json = format!(
        "{{\"compile_ns\": {compile_ns}, \"instantiate_ns\": {instantiate_ns}, \"execute_ns\": {execute_ns}}}\n"
    );
    fs::write(&args.phases, json).map_err(|e| {
        runner_error(
            &format!("cannot write the phases file {}", args.phases.display()),
            &e,
        )
    })?;
    Ok(status)
}

/// The program's exit status from the result of `_start`: 0 when it returns, the `proc_exit` code (which
/// wasmer-wasix raises as a `WasiError::Exit` through the Wasm frames), or the failure.
fn exit_status(result: Result<(), RuntimeError>) -> Result<u8, Failure> {
    let Err(e) = result else {
        return Ok(0);
    };
    match e.downcast_ref::<WasiError>() {
        Some(WasiError::Exit(code)) => u8::try_from(code.raw()).map_err(|_| {
            Failure::Runner(format!("proc_exit status {} outside 0..=255", code.raw()))
        }),
        Some(other) => Err(Failure::Program(format!("WASI: {other}"))),
        None => Err(Failure::Program(e.to_string())),
    }
}

/// The module's file name without its directory: the program's `argv[0]`.
fn file_name(module: &Path) -> Result<&str, Failure> {
    let name = module
        .file_name()
        .ok_or_else(|| Failure::Runner(format!("{} has no file name", module.display())))?;
    name.to_str()
        .ok_or_else(|| Failure::Runner(format!("the file name {name:?} is not UTF-8")))
}
