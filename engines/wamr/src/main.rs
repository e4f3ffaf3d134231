//! wasmlab runner for WAMR (the WebAssembly Micro Runtime): runs one WASI preview 1 command module
//! in WAMR's fast interpreter or as AOT code compiled by WAMR's compiler (wasmlab-wamrc, installed
//! beside this program), and writes its phase times, following the protocol in docs/engines.md.
//!
//! ```text
//! wasmlab-engine-wamr --version
//! wasmlab-engine-wamr [--config interp|aot] [--cache DIR] --phases FILE MODULE.wasm [ARG...]
//! ```

use std::ffi::{CStr, CString, OsString, c_char, c_void};
use std::fmt::Write as _;
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::ptr;
use std::time::Instant;

use sha2::{Digest, Sha256};

const NAME: &str = "wasmlab-engine-wamr";
const VERSION: &str = env!("WASMLAB_WAMR_VERSION");

/// Exit status for a usage error (an unknown `--config` among them).
const EXIT_USAGE: u8 = 2;
/// Exit status for a trap or any engine error.
const EXIT_ENGINE: u8 = 70;

/// The size of the execution environment's stack (the fast interpreter's frames and operand
/// stack; AOT code runs on the native stack). iwasm's default is 64 KiB; 1 MiB leaves the
/// interpreter room for libsodium's larger frames.
const STACK_SIZE: u32 = 1 << 20;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// WAMR's fast interpreter (the module is translated to its internal code by the loader).
    Interp,
    /// AOT code from wasmlab-wamrc, loaded by WAMR's AOT loader.
    Aot,
}

const CONFIGS: &[(&str, Mode)] = &[("aot", Mode::Aot), ("interp", Mode::Interp)];

// WAMR's embedding API (core/iwasm/include/wasm_export.h).
type Module = *mut c_void;
type Instance = *mut c_void;
type Function = *mut c_void;
type ExecEnv = *mut c_void;

unsafe extern "C" {
    fn wasm_runtime_init() -> bool;
    fn wasm_runtime_load(buf: *mut u8, size: u32, error: *mut c_char, error_size: u32) -> Module;
    fn wasm_runtime_set_wasi_args_ex(
        module: Module,
        dir_list: *const *const c_char,
        dir_count: u32,
        map_dir_list: *const *const c_char,
        map_dir_count: u32,
        env: *const *const c_char,
        env_count: u32,
        argv: *mut *mut c_char,
        argc: i32,
        stdinfd: i64,
        stdoutfd: i64,
        stderrfd: i64,
    );
    fn wasm_runtime_instantiate(
        module: Module,
        default_stack_size: u32,
        host_managed_heap_size: u32,
        error: *mut c_char,
        error_size: u32,
    ) -> Instance;
    fn wasm_runtime_lookup_wasi_start_function(instance: Instance) -> Function;
    fn wasm_runtime_create_exec_env(instance: Instance, stack_size: u32) -> ExecEnv;
    fn wasm_runtime_call_wasm(env: ExecEnv, function: Function, argc: u32, argv: *mut u32) -> bool;
    fn wasm_runtime_get_exception(instance: Instance) -> *const c_char;
    fn wasm_runtime_get_wasi_exit_code(instance: Instance) -> u32;
}

fn usage() -> String {
    let names: Vec<&str> = CONFIGS.iter().map(|(name, _)| *name).collect();
    format!(
        "usage: {NAME} --version\n       {NAME} [--config NAME] [--cache DIR] --phases FILE MODULE.wasm [ARG...]\n\
         configurations: {} (default: aot)",
        names.join(", ")
    )
}

struct Run {
    mode: Mode,
    cache: Option<PathBuf>,
    phases: Option<PathBuf>,
    module: PathBuf,
    args: Vec<OsString>,
}

enum Cmd {
    Version,
    Run(Run),
}

fn parse(mut argv: impl Iterator<Item = OsString>) -> Result<Cmd, String> {
    let mut config: Option<String> = None;
    let mut cache: Option<PathBuf> = None;
    let mut phases: Option<PathBuf> = None;
    let module = loop {
        let arg = argv.next().ok_or("no module given")?;
        match arg.to_str() {
            Some("--version") => return Ok(Cmd::Version),
            Some("--config") => {
                let value = argv.next().ok_or("--config needs a value")?;
                config = Some(value.into_string().map_err(|_| "--config: not UTF-8")?);
            }
            Some("--cache") => cache = Some(argv.next().ok_or("--cache needs a value")?.into()),
            Some("--phases") => phases = Some(argv.next().ok_or("--phases needs a value")?.into()),
            Some(other) if other.starts_with('-') && other != "-" => {
                return Err(format!("unknown option {other}"));
            }
            _ => break PathBuf::from(arg),
        }
    };
    let name = config.as_deref().unwrap_or("aot");
    let mode = CONFIGS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, mode)| *mode)
        .ok_or_else(|| format!("unknown configuration {name:?}"))?;
    Ok(Cmd::Run(Run {
        mode,
        cache,
        phases,
        module,
        args: argv.collect(),
    }))
}

/// The compiler, installed beside this program.
fn wamrc() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let path = me.with_file_name("wasmlab-wamrc");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} is missing (it is built and installed with this runner)",
            path.display()
        ))
    }
}

/// What an AOT file depends on: the module, the compiler (path, size, modification time), the
/// WAMR version. It names the file in the cache.
fn cache_key(bytes: &[u8], compiler: &Path) -> Result<String, String> {
    let meta = fs::metadata(compiler).map_err(|e| format!("{}: {e}", compiler.display()))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let mut h = Sha256::new();
    h.update(bytes);
    h.update(format!("{VERSION}\0{}\0{}\0{mtime}", compiler.display(), meta.len()).as_bytes());
    Ok(h.finalize().iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    }))
}

/// Compiles the module with wasmlab-wamrc into `out`.
fn compile_aot(compiler: &Path, module: &Path, out: &Path) -> Result<(), String> {
    let result = Command::new(compiler)
        .arg("-o")
        .arg(out)
        .arg(module)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", compiler.display()))?;
    if !result.status.success() {
        return Err(format!(
            "wasmlab-wamrc failed ({}): {}{}",
            result.status,
            String::from_utf8_lossy(&result.stdout).trim(),
            String::from_utf8_lossy(&result.stderr).trim()
        ));
    }
    Ok(())
}

/// The AOT file of the module: from the cache, or compiled now.
fn aot_file(run: &Run, bytes: &[u8]) -> Result<Vec<u8>, String> {
    let compiler = wamrc()?;
    let read = |p: &Path| fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    match &run.cache {
        Some(cache) => {
            let cached = cache.join(format!("{}.aot", cache_key(bytes, &compiler)?));
            if !cached.is_file() {
                fs::create_dir_all(cache)
                    .map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
                let partial = cached.with_extension(format!("aot.{}", std::process::id()));
                let compiled = compile_aot(&compiler, &run.module, &partial).and_then(|()| {
                    fs::rename(&partial, &cached).map_err(|e| {
                        format!("cannot move the AOT file into {}: {e}", cache.display())
                    })
                });
                if compiled.is_err() {
                    let _ = fs::remove_file(&partial);
                }
                compiled?;
            }
            read(&cached)
        }
        None => {
            let out = std::env::temp_dir().join(format!("{NAME}-{}.aot", std::process::id()));
            let compiled = compile_aot(&compiler, &run.module, &out).and_then(|()| read(&out));
            let _ = fs::remove_file(&out);
            compiled
        }
    }
}

fn error_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
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

fn cstring(bytes: &[u8], what: &str) -> Result<CString, String> {
    CString::new(bytes).map_err(|_| format!("{what} contains a NUL byte"))
}

/// Runs the module; returns its exit status (0 when `_start` returned, else its `proc_exit` code).
fn run(run: &Run) -> Result<i32, String> {
    let bytes =
        fs::read(&run.module).map_err(|e| format!("cannot read {}: {e}", run.module.display()))?;
    let argv0 = run
        .module
        .file_name()
        .unwrap_or(run.module.as_os_str())
        .as_bytes()
        .to_owned();
    let mut args = vec![cstring(&argv0, "the module name")?];
    for a in &run.args {
        args.push(cstring(a.as_bytes(), "an argument")?);
    }
    let stdin = fs::File::open("/dev/null").map_err(|e| format!("cannot open /dev/null: {e}"))?;
    let mut error = vec![0u8; 256];

    // SAFETY: WAMR's embedding API, called as documented in wasm_export.h: the runtime is
    // initialised once; the module's buffer (`code`), the WASI strings (`args`, `dot`) and the
    // error buffer outlive every call that uses them (they are dropped after the last call).
    unsafe {
        if !wasm_runtime_init() {
            return Err("cannot initialise the WAMR runtime".into());
        }

        // compile: the loader (validation and, for the fast interpreter, its translation), after
        // wasmlab-wamrc for AOT (or the cached AOT file's read).
        let t0 = Instant::now();
        let mut code = match run.mode {
            Mode::Interp => bytes,
            Mode::Aot => aot_file(run, &bytes)?,
        };
        let size = u32::try_from(code.len()).map_err(|_| "the module is larger than 4 GiB")?;
        let module = wasm_runtime_load(
            code.as_mut_ptr(),
            size,
            error.as_mut_ptr().cast(),
            error.len() as u32,
        );
        if module.is_null() {
            return Err(format!(
                "cannot load {}: {}",
                run.module.display(),
                error_text(&error)
            ));
        }
        let t1 = Instant::now();

        // instantiate: WASI (arguments, no environment, "." preopened, stdin empty), the instance,
        // `_start`, an execution environment.
        let dot = c".";
        let dirs = [dot.as_ptr()];
        let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr().cast_mut()).collect();
        wasm_runtime_set_wasi_args_ex(
            module,
            dirs.as_ptr(),
            1,
            ptr::null(),
            0,
            ptr::null(),
            0,
            argv.as_mut_ptr(),
            argv.len() as i32,
            i64::from(stdin.as_raw_fd()),
            1,
            2,
        );
        let instance = wasm_runtime_instantiate(
            module,
            STACK_SIZE,
            0,
            error.as_mut_ptr().cast(),
            error.len() as u32,
        );
        if instance.is_null() {
            return Err(format!("cannot instantiate: {}", error_text(&error)));
        }
        let start = wasm_runtime_lookup_wasi_start_function(instance);
        if start.is_null() {
            return Err("the module exports no `_start` function".into());
        }
        let env = wasm_runtime_create_exec_env(instance, STACK_SIZE);
        if env.is_null() {
            return Err("cannot create an execution environment".into());
        }
        let t2 = Instant::now();

        // execute: `_start` until it returns or the program calls proc_exit.
        let returned = wasm_runtime_call_wasm(env, start, 0, ptr::null_mut());
        let t3 = Instant::now();

        let status = if returned {
            0
        } else {
            let exception = wasm_runtime_get_exception(instance);
            let text = if exception.is_null() {
                String::new()
            } else {
                CStr::from_ptr(exception).to_string_lossy().into_owned()
            };
            if !text.contains("wasi proc exit") {
                return Err(format!("trap: {text}"));
            }
            wasm_runtime_get_wasi_exit_code(instance) as i32
        };
        drop(code);
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
}

fn main() -> ExitCode {
    match parse(std::env::args_os().skip(1)) {
        Err(message) => {
            eprintln!("{NAME}: {message}\n{}", usage());
            ExitCode::from(EXIT_USAGE)
        }
        Ok(Cmd::Version) => {
            println!("wamr {VERSION}");
            ExitCode::SUCCESS
        }
        Ok(Cmd::Run(r)) => match run(&r) {
            // stdout is written by WAMR's WASI straight to fd 1 (no Rust buffer to flush).
            Ok(status) => std::process::exit(status),
            Err(message) => {
                eprintln!("{NAME}: {message}");
                ExitCode::from(EXIT_ENGINE)
            }
        },
    }
}
