//! `wasmlab-engine-wasmtime`: the lab's runner for Wasmtime. It runs one WASI preview 1 command module to
//! completion and writes its phase times, following the protocol of docs/engines.md:
//!
//! ```text
//! wasmlab-engine-wasmtime --version
//! wasmlab-engine-wasmtime [--config cranelift|winch|pulley] --phases FILE MODULE.wasm [ARG...]
//! ```
//!
//! Exit status: the program's `proc_exit` code, or 0 when `_start` returns; 2 for a usage error (an unknown
//! option or `--config`, a missing operand); 70 when the program fails while running (a trap, or a WASI host
//! error that aborts it); 71 when the runner fails before or after running it (reading, compiling, linking or
//! instantiating the module; writing the phases file). On 70 and 71 the error chain goes to stderr and the
//! phases file is not written.
//!
//! Phases (`Instant`, the monotonic clock):
//! - compile: `Module::new` on the bytes already read (validation and compilation; with parallel compilation
//!   on, the first use of the rayon pool, i.e. its start-up, is included). Creating the `Engine` (the
//!   configuration, the host CPU's feature detection) comes before and is in no phase.
//! - instantiate: a new `Linker` populated with WASI preview 1 (created inside the timed region, as a
//!   command-line runtime does per run), the WASI context (args, the preopen of the current directory), the
//!   `Store`, `Linker::instantiate` and the lookup of `_start`.
//! - execute: the call of `_start` until it returns, traps or the program calls `proc_exit`.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use std::{env, fs, io};

// wasmtime::Error is not a std::error::Error: `.map_err(anyhow::Error::from)` before `.context(..)`.
use anyhow::{Context as _, anyhow};
use wasmtime::{Config, Engine, Linker, Module, Store, Strategy};
use wasmtime_wasi::p1::{self, WasiP1Ctx};
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtxBuilder};

/// The version of the embedded `wasmtime` crate, read from Cargo.lock by build.rs.
const WASMTIME_VERSION: &str = env!("WASMLAB_WASMTIME_VERSION");

const NAME: &str = "wasmlab-engine-wasmtime";
const USAGE: &str = "usage: wasmlab-engine-wasmtime --version
       wasmlab-engine-wasmtime [--config cranelift|winch|pulley] --phases FILE MODULE.wasm [ARG...]";

const EXIT_USAGE: u8 = 2;
/// The program failed while running: a trap or a host error that aborted it.
const EXIT_PROGRAM: u8 = 70;
/// The runner failed: reading, compiling, linking or instantiating the module, or writing the phases file.
const EXIT_RUNNER: u8 = 71;

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
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "cranelift" => Some(Self::Cranelift),
            "winch" => Some(Self::Winch),
            "pulley" => Some(Self::Pulley),
            _ => None,
        }
    }

    fn engine(self) -> anyhow::Result<Engine> {
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
        Ok(Engine::new(&config)?)
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
                    format!("unknown --config {name:?} (expected cranelift, winch or pulley)")
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
            println!("wasmtime {WASMTIME_VERSION}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Run(run_args)) => run_args,
        Err(msg) => {
            eprintln!("{NAME}: {msg}\n{USAGE}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let code = match run(&run_args) {
        Ok(status) => status,
        Err(Failure::Program(e)) => {
            let e = anyhow::Error::from(e);
            eprintln!(
                "{NAME}: {}: the program failed: {}",
                run_args.module.display(),
                error_chain(&e)
            );
            EXIT_PROGRAM
        }
        Err(Failure::Runner(e)) => {
            eprintln!("{NAME}: {}: {}", run_args.module.display(), error_chain(&e));
            EXIT_RUNNER
        }
    };
    // The guest's stdout goes through std's (line-buffered) stdout: make sure all of it is out.
    let _ = io::stdout().flush();
    ExitCode::from(code)
}

/// The error and its causes, one per line, as anyhow's `{:?}` shows them but without the Rust backtrace
/// that `RUST_BACKTRACE=1` adds (a trap's wasm backtrace is one of the causes and stays).
fn error_chain(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    let mut causes = e.chain().skip(1).peekable();
    if causes.peek().is_some() {
        text.push_str("\n\nCaused by:");
        for cause in causes {
            text.push_str("\n    ");
            text.push_str(&cause.to_string().replace('\n', "\n    "));
        }
    }
    text
}

enum Failure {
    /// The program trapped or was aborted by a host error while running.
    Program(wasmtime::Error),
    /// Anything else.
    Runner(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Self::Runner(e)
    }
}

impl From<wasmtime::Error> for Failure {
    fn from(e: wasmtime::Error) -> Self {
        Self::Runner(e.into())
    }
}

/// Runs the module; on success returns its exit status (0 or its `proc_exit` code), having written the
/// phases file.
fn run(args: &RunArgs) -> Result<u8, Failure> {
    let engine = args
        .flavor
        .engine()
        .with_context(|| format!("configuring Wasmtime ({:?})", args.flavor))?;
    let argv0 = file_name(&args.module)?;
    let bytes =
        fs::read(&args.module).with_context(|| format!("cannot read {}", args.module.display()))?;

    let t0 = Instant::now();
    let module = Module::new(&engine, &bytes)
        .map_err(anyhow::Error::from)
        .context("compiling the module")?;
    let compile_ns = t0.elapsed().as_nanos();

    let t1 = Instant::now();
    let mut linker: Linker<WasiP1Ctx> = Linker::new(&engine);
    p1::add_to_linker_sync(&mut linker, |wasi| wasi)?;
    // No environment variables and an empty (closed) stdin: the builder's defaults.
    let mut wasi = WasiCtxBuilder::new();
    wasi.arg(argv0)
        .args(&args.args)
        .inherit_stdout()
        .inherit_stderr();
    wasi.preopened_dir(".", ".", FsPerms::ReadWrite)
        .map_err(anyhow::Error::from)
        .context("preopening the current directory")?;
    let mut store = Store::new(&engine, wasi.build_p1());
    let instance = linker
        .instantiate(&mut store, &module)
        .map_err(anyhow::Error::from)
        .context("instantiating the module")?;
    let start = instance
        .get_typed_func::<(), ()>(&mut store, "_start")
        .map_err(anyhow::Error::from)
        .context("the module has no `_start` function of type [] -> [] (not a WASI command?)")?;
    let instantiate_ns = t1.elapsed().as_nanos();

    let t2 = Instant::now();
    let result = start.call(&mut store, ());
    let execute_ns = t2.elapsed().as_nanos();
    let status = match result {
        Ok(()) => 0,
        Err(e) => match e.downcast_ref::<I32Exit>() {
            // wasmtime-wasi only lets `proc_exit` through for statuses in 0..126.
            Some(&I32Exit(code)) => u8::try_from(code)
                .map_err(|_| anyhow!("proc_exit status {code} outside 0..=255"))?,
            None => return Err(Failure::Program(e)),
        },
    };

    let json = format!(
        "{{\"compile_ns\": {compile_ns}, \"instantiate_ns\": {instantiate_ns}, \"execute_ns\": {execute_ns}}}\n"
    );
    fs::write(&args.phases, json)
        .with_context(|| format!("cannot write the phases file {}", args.phases.display()))?;
    Ok(status)
}

/// The module's file name without its directory: the program's `argv[0]`.
fn file_name(module: &Path) -> anyhow::Result<&str> {
    let name = module
        .file_name()
        .with_context(|| format!("{} has no file name", module.display()))?;
    name.to_str()
        .with_context(|| format!("the file name {name:?} is not UTF-8"))
}
