//! wasmlab runner for the Wasm3 interpreter: runs one WASI preview 1 command module and writes its phase times,
//! following the protocol in docs/engines.md.
//!
//! ```text
//! wasmlab-engine-wasm3 --version
//! wasmlab-engine-wasm3 [--config NAME] --phases FILE MODULE.wasm [ARG...]
//! ```
//!
//! Wasm3 is driven through its C API (the `wasm3x-sys` bindings) with its built-in WASI (m3_api_wasi.c).

use std::ffi::{CStr, CString, OsString, c_char, c_int};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::ptr;
use std::time::Instant;

use wasm3x_sys as m3;

const NAME: &str = "wasmlab-engine-wasm3";

/// Exit status for a usage error (an unknown `--config` among them).
const EXIT_USAGE: u8 = 2;
/// Exit status for a trap or any engine error.
const EXIT_ENGINE: u8 = 70;

/// Size of Wasm3's value stack (the interpreter's operand and locals stack, not the module's shadow stack in
/// linear memory): 1 MiB, as the `wasm3x` wrapper's default.
const STACK_SIZE: u32 = 1024 * 1024;

#[derive(Clone, Copy, PartialEq)]
enum Compilation {
    /// Wasm3's own behaviour: a function is compiled on its first call.
    Lazy,
    /// Every function compiled before `_start` runs (m3_CompileModule).
    Eager,
}

/// The configurations: `--config NAME`.
const CONFIGS: &[(&str, Compilation)] = &[
    ("default", Compilation::Lazy),
    ("lazy", Compilation::Lazy),
    ("eager", Compilation::Eager),
];

fn usage() -> String {
    let names: Vec<&str> = CONFIGS.iter().map(|(name, _)| *name).collect();
    format!(
        "usage: {NAME} --version\n       {NAME} [--config NAME] --phases FILE MODULE.wasm [ARG...]\n\
         configurations: {} (default: default)",
        names.join(", ")
    )
}

/// The version of the Wasm3 C library compiled in (`M3_VERSION` in wasm3.h).
fn wasm3_version() -> &'static str {
    CStr::from_bytes_with_nul(m3::M3_VERSION)
        .ok()
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown")
}

struct Run {
    compilation: Compilation,
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
    let compilation = CONFIGS
        .iter()
        .find(|(name, _)| *name == config)
        .map(|(_, compilation)| *compilation)
        .ok_or_else(|| format!("unknown configuration {config:?}"))?;
    let args = argv
        .map(|a| {
            a.into_string()
                .map_err(|a| format!("argument {a:?} is not UTF-8"))
        })
        .collect::<Result<_, _>>()?;
    Ok(Command::Run(Run {
        compilation,
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

unsafe extern "C" {
    fn dup2(oldfd: c_int, newfd: c_int) -> c_int;
}

/// `m3_wasi_context_t` from m3_api_wasi.h, which the `wasm3x-sys` bindings do not cover (the crate compiles
/// m3_api_wasi.c with its `wasi` feature but generates bindings for wasm3.h only).
#[repr(C)]
struct WasiContext {
    exit_code: i32,
    argc: u32,
    argv: *const *const c_char,
}

unsafe extern "C" {
    /// Links Wasm3's WASI functions (namespaces `wasi_snapshot_preview1` and `wasi_unstable`) into the module;
    /// opens the preopened directories; creates the WASI context on its first call.
    fn m3_LinkWASI(module: m3::IM3Module) -> m3::M3Result;
    fn m3_GetWasiContext() -> *mut WasiContext;
}

/// Wasm3's WASI reads the host's file descriptor 0 itself: point it at /dev/null so that the program's stdin is
/// empty whatever the runner was given.
fn empty_stdin() -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let null = fs::File::open("/dev/null").map_err(|e| format!("cannot open /dev/null: {e}"))?;
    // SAFETY: dup2 on two valid descriptors; fd 0 is not used by the runner itself.
    if unsafe { dup2(null.as_raw_fd(), 0) } < 0 {
        return Err(format!(
            "cannot redirect stdin: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Turns an `M3Result` (NULL on success, else a static message) into a `Result`, with the runtime's error
/// details when there are any.
///
/// # Safety
///
/// `result` is NULL or a NUL-terminated string; `runtime` is NULL or a live runtime.
unsafe fn check(result: m3::M3Result, runtime: m3::IM3Runtime, what: &str) -> Result<(), String> {
    if result.is_null() {
        return Ok(());
    }
    Err(format!("{what}: {}", unsafe { describe(result, runtime) }))
}

/// # Safety
///
/// As for [`check`], `result` not NULL.
unsafe fn describe(result: m3::M3Result, runtime: m3::IM3Runtime) -> String {
    let mut text = unsafe { CStr::from_ptr(result) }
        .to_string_lossy()
        .into_owned();
    if !runtime.is_null() {
        let mut info = std::mem::MaybeUninit::<m3::M3ErrorInfo>::zeroed();
        unsafe { m3::m3_GetErrorInfo(runtime, info.as_mut_ptr()) };
        let info = unsafe { info.assume_init() };
        if !info.message.is_null() {
            let message = unsafe { CStr::from_ptr(info.message) }.to_string_lossy();
            if !message.is_empty() {
                text = format!("{text} ({message})");
            }
        }
    }
    text
}

/// Runs the module; returns its exit status (0 when `_start` returned, else its `proc_exit` code).
fn run(run: &Run) -> Result<i32, String> {
    let bytes =
        fs::read(&run.module).map_err(|e| format!("cannot read {}: {e}", run.module.display()))?;
    let size = u32::try_from(bytes.len()).map_err(|_| "module larger than 4 GiB".to_string())?;
    let argv0 = run
        .module
        .file_name()
        .unwrap_or(run.module.as_os_str())
        .to_string_lossy()
        .into_owned();
    let args = std::iter::once(&argv0)
        .chain(&run.args)
        .map(|a| CString::new(a.as_str()).map_err(|_| format!("argument {a:?} contains NUL")))
        .collect::<Result<Vec<_>, _>>()?;
    let argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
    let argc = u32::try_from(argv.len()).map_err(|_| "too many arguments".to_string())?;
    empty_stdin()?;

    // SAFETY: the Wasm3 C API used as documented in wasm3.h. `bytes`, `args` and `argv` outlive every use
    // (Wasm3 keeps pointers into the module's bytes; its WASI context keeps `argv`); nothing is freed, the
    // process exits after the run.
    unsafe {
        let env = m3::m3_NewEnvironment();
        if env.is_null() {
            return Err("cannot create a Wasm3 environment".into());
        }

        // compile (1): parsing (and, in this Wasm3, its module validation). Function bodies are compiled
        // later: lazily on their first call, or all at once below for `eager`.
        let t0 = Instant::now();
        let mut module: m3::IM3Module = ptr::null_mut();
        check(
            m3::m3_ParseModule(env, &mut module, bytes.as_ptr(), size),
            ptr::null_mut(),
            &format!("cannot parse {}", run.module.display()),
        )?;
        let t1 = Instant::now();

        // instantiate (1): runtime (value stack), loading the module into it (memory, globals, tables,
        // data and element segments), WASI (arguments; no environment; stdio; "/" and "./" preopened as
        // the current directory).
        let runtime = m3::m3_NewRuntime(env, STACK_SIZE, ptr::null_mut());
        if runtime.is_null() {
            return Err("cannot create a Wasm3 runtime".into());
        }
        check(
            m3::m3_LoadModule(runtime, module),
            runtime,
            "cannot load the module",
        )?;
        check(m3_LinkWASI(module), runtime, "cannot link WASI")?;
        let wasi = m3_GetWasiContext();
        if wasi.is_null() {
            return Err("Wasm3 has no WASI context".into());
        }
        (*wasi).argc = argc;
        (*wasi).argv = argv.as_ptr();
        let t2 = Instant::now();

        // compile (2), `eager` only: every function body compiled to Wasm3 code (needs the loaded module).
        if run.compilation == Compilation::Eager {
            check(
                m3::m3_CompileModule(module),
                runtime,
                "cannot compile the module",
            )?;
        }
        let t3 = Instant::now();

        // instantiate (2): the start function, if any, and looking up `_start` (which compiles it when lazy).
        check(m3::m3_RunStart(module), runtime, "start function")?;
        let mut start: m3::IM3Function = ptr::null_mut();
        check(
            m3::m3_FindFunction(&mut start, runtime, c"_start".as_ptr()),
            runtime,
            "no usable `_start` function",
        )?;
        let t4 = Instant::now();

        // execute: `_start` until it returns or the program calls proc_exit.
        let result = m3::m3_Call(start, 0, ptr::null_mut());
        let t5 = Instant::now();

        let status = if result.is_null() {
            0
        } else if ptr::eq(result, m3::m3Err_trapExit) {
            (*wasi).exit_code
        } else {
            return Err(format!("trap: {}", describe(result, runtime)));
        };
        if let Some(path) = &run.phases {
            write_phases(
                path,
                &Phases {
                    compile_ns: ((t1 - t0) + (t3 - t2)).as_nanos(),
                    instantiate_ns: ((t2 - t1) + (t4 - t3)).as_nanos(),
                    execute_ns: (t5 - t4).as_nanos(),
                },
            )?;
        }
        Ok(status)
    }
}

fn main() -> ExitCode {
    match parse(std::env::args_os().skip(1)) {
        Err(message) => {
            eprintln!("{NAME}: {message}\n{}", usage());
            ExitCode::from(EXIT_USAGE)
        }
        Ok(Command::Version) => {
            println!("wasm3 {}", wasm3_version());
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
