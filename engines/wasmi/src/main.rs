//! wasmlab runner for the Wasmi interpreter: runs one WASI preview 1 command module and writes its phase
//! times, following the protocol in docs/engines.md.
//!
//! ```text
//! wasmlab-engine-wasmi --version
//! wasmlab-engine-wasmi [--config NAME] --phases FILE MODULE.wasm [ARG...]
//! ```

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use wasmi::{CompilationMode, Config, Engine, Linker, Module, Store};
use wasmi_wasi::{Dir, WasiCtx, WasiCtxBuilder, ambient_authority};

const NAME: &str = "wasmlab-engine-wasmi";
const VERSION: &str = env!("WASMLAB_WASMI_VERSION");

/// Exit status for a usage error (an unknown `--config` among them).
const EXIT_USAGE: u8 = 2;
/// Exit status for a trap or any engine error.
const EXIT_ENGINE: u8 = 70;

/// The configurations: `--config NAME` picks Wasmi's compilation mode.
const CONFIGS: &[(&str, CompilationMode)] = &[
    // Wasmi's default: validated eagerly, each function translated to Wasmi bytecode on its first call.
    ("default", CompilationMode::LazyTranslation),
    ("lazy-translation", CompilationMode::LazyTranslation),
    // Every function validated and translated in Module::new.
    ("eager", CompilationMode::Eager),
    // Validation and translation both deferred to a function's first call.
    ("lazy", CompilationMode::Lazy),
];

fn usage() -> String {
    let names: Vec<&str> = CONFIGS.iter().map(|(name, _)| *name).collect();
    format!(
        "usage: {NAME} --version\n       {NAME} [--config NAME] --phases FILE MODULE.wasm [ARG...]\n\
         configurations: {} (default: default)",
        names.join(", ")
    )
}

struct Run {
    mode: CompilationMode,
    phases: Option<PathBuf>,
    module: PathBuf,
    args: Vec<String>,
}

enum Command {
    Version,
    Run(Run),
}

fn parse(mut argv: impl Iterator<Item = OsString>) -> Result<Command, String> {
    let mut config: Option<String> = None;
    let mut phases: Option<PathBuf> = None;
    let module = loop {
        let arg = argv.next().ok_or("no module given")?;
        match arg.to_str() {
            Some("--version") => return Ok(Command::Version),
            Some("--config") => {
                let value = argv.next().ok_or("--config needs a value")?;
                config = Some(value.into_string().map_err(|_| "--config: not UTF-8")?);
            }
            Some("--phases") => {
                phases = Some(argv.next().ok_or("--phases needs a value")?.into());
            }
            Some(other) if other.starts_with('-') && other != "-" => {
                return Err(format!("unknown option {other}"));
            }
            _ => break PathBuf::from(arg),
        }
    };
    let config = config.as_deref().unwrap_or("default");
    let mode = CONFIGS
        .iter()
        .find(|(name, _)| *name == config)
        .map(|(_, mode)| *mode)
        .ok_or_else(|| format!("unknown configuration {config:?}"))?;
    let args = argv
        .map(|a| {
            a.into_string()
                .map_err(|a| format!("argument {a:?} is not UTF-8"))
        })
        .collect::<Result<_, _>>()?;
    Ok(Command::Run(Run {
        mode,
        phases,
        module,
        args,
    }))
}

struct Phases {
    compile_ns: u128,
    instantiate_ns: u128,
    execute_ns: u128,
}

fn write_phases(path: &Path, p: &Phases) -> Result<(), String> {
    let json = format!(
        "{{\"compile_ns\": {}, \"instantiate_ns\": {}, \"execute_ns\": {}}}\n",
        p.compile_ns, p.instantiate_ns, p.execute_ns
    );
    fs::write(path, json).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Runs the module; returns its exit status (0 when `_start` returned, else its `proc_exit` code).
fn run(run: &Run) -> Result<i32, String> {
    let bytes =
        fs::read(&run.module).map_err(|e| format!("cannot read {}: {e}", run.module.display()))?;
    let argv0 = run
        .module
        .file_name()
        .unwrap_or(run.module.as_os_str())
        .to_string_lossy()
        .into_owned();

    let mut config = Config::default();
    config.compilation_mode(run.mode);
    let engine = Engine::new(&config);

    // compile: validation and translation (as far as the compilation mode does them up front).
    let t0 = Instant::now();
    let module = Module::new(&engine, &bytes[..])
        .map_err(|e| format!("cannot compile {}: {e}", run.module.display()))?;
    let t1 = Instant::now();

    // instantiate: WASI context (args, no environment, stdio, "." preopened), linker, instance, start.
    let mut wasi = WasiCtxBuilder::new();
    wasi.arg(&argv0)
        .and_then(|b| b.args(&run.args))
        .map_err(|e| format!("WASI arguments: {e}"))?;
    let cwd = Dir::open_ambient_dir(".", ambient_authority())
        .map_err(|e| format!("cannot open the current directory: {e}"))?;
    wasi.inherit_stdout()
        .inherit_stderr()
        .preopened_dir(cwd, ".")
        .map_err(|e| format!("cannot preopen the current directory: {e}"))?;
    let mut store = Store::new(&engine, wasi.build());
    let mut linker = <Linker<WasiCtx>>::new(&engine);
    wasmi_wasi::add_to_linker(&mut linker, |ctx| ctx)
        .map_err(|e| format!("cannot link WASI: {e}"))?;
    let instance = linker
        .instantiate_and_start(&mut store, &module)
        .map_err(|e| format!("cannot instantiate: {e}"))?;
    let start = instance
        .get_typed_func::<(), ()>(&store, "_start")
        .map_err(|e| format!("no `_start` function: {e}"))?;
    let t2 = Instant::now();

    // execute: `_start` until it returns or the program calls proc_exit.
    let outcome = start.call(&mut store, ());
    let t3 = Instant::now();

    let status = match outcome {
        Ok(()) => 0,
        Err(e) => match e.i32_exit_status() {
            Some(status) => status,
            None => return Err(format!("trap: {e}")),
        },
    };
    if let Some(path) = &run.phases {
        write_phases(
            path,
            &Phases {
                compile_ns: (t1 - t0).as_nanos(),
                instantiate_ns: (t2 - t1).as_nanos(),
                execute_ns: (t3 - t2).as_nanos(),
            },
        )?;
    }
    Ok(status)
}

fn main() -> ExitCode {
    match parse(std::env::args_os().skip(1)) {
        Err(message) => {
            eprintln!("{NAME}: {message}\n{}", usage());
            ExitCode::from(EXIT_USAGE)
        }
        Ok(Command::Version) => {
            println!("wasmi {VERSION}");
            ExitCode::SUCCESS
        }
        Ok(Command::Run(r)) => match run(&r) {
            Ok(status) => std::process::exit(status),
            Err(message) => {
                eprintln!("{NAME}: {message}");
                ExitCode::from(EXIT_ENGINE)
            }
        },
    }
}
