//! wasmlab runner for WAMR (the WebAssembly Micro Runtime): runs one WASI preview 1 command module
//! in WAMR's fast interpreter or as AOT code compiled by WAMR's compiler (wasmlab-wamrc, installed
//! beside this program), and writes its phase times; the protocol (arguments, phases file, exit statuses)
//! is docs/engines.md's, implemented by `wasmlab-engine-protocol`.
//!
//! ```text
//! wasmlab-engine-wamr --version
//! wasmlab-engine-wamr [--config interp|aot] [--cache DIR] --phases FILE MODULE.wasm [ARG...]
//! ```

use std::ffi::{CStr, c_char, c_void};
use std::fmt::Write as _;
use std::fs;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::ptr;
use std::time::Instant;

use sha2::{Digest, Sha256};
use wasmlab_engine_protocol::{
    Classify as _, ExtraOption, Failure, Invocation, Outcome, Phases, Runner, Version,
};

/// WAMR's version, from its sources' core/version.h (build.rs).
const VERSION: &str = env!("WASMLAB_WAMR_VERSION");

const RUNNER: Runner<Mode> = Runner {
    name: "wasmlab-engine-wamr",
    engine: "wamr",
    version: Version::Built(VERSION),
    configs: &[("aot", Mode::Aot), ("interp", Mode::Interp)],
    options: &[ExtraOption {
        name: "--cache",
        value: "DIR",
        help: "keep the AOT code of each module in DIR (otherwise it is compiled on every run)",
    }],
};

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

/// Where the AOT file will come from: the compiler, and with a cache the file it is kept as.
/// Settled before the clock starts: finding the compiler and hashing the module to look a file up
/// are not compiling.
struct AotPlan {
    compiler: PathBuf,
    cached: Option<(PathBuf, PathBuf)>,
}

impl AotPlan {
    fn new(cache: Option<&Path>, bytes: &[u8]) -> Result<Self, String> {
        let compiler = wamrc()?;
        let cached = match cache {
            Some(cache) => {
                let file = cache.join(format!("{}.aot", cache_key(bytes, &compiler)?));
                Some((cache.to_owned(), file))
            }
            None => None,
        };
        Ok(Self { compiler, cached })
    }

    /// The AOT file of the module: from the cache, or compiled now.
    fn aot_file(&self, module: &Path) -> Result<Vec<u8>, String> {
        let read = |p: &Path| fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
        match &self.cached {
            Some((cache, cached)) => {
                if !cached.is_file() {
                    fs::create_dir_all(cache)
                        .map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
                    let partial = cached.with_extension(format!("aot.{}", std::process::id()));
                    let compiled = compile_aot(&self.compiler, module, &partial).and_then(|()| {
                        fs::rename(&partial, cached).map_err(|e| {
                            format!("cannot move the AOT file into {}: {e}", cache.display())
                        })
                    });
                    if compiled.is_err() {
                        let _ = fs::remove_file(&partial);
                    }
                    compiled?;
                }
                read(cached)
            }
            None => {
                let out = std::env::temp_dir().join(format!(
                    "{}-{}.aot",
                    RUNNER.name,
                    std::process::id()
                ));
                let compiled = compile_aot(&self.compiler, module, &out).and_then(|()| read(&out));
                let _ = fs::remove_file(&out);
                compiled
            }
        }
    }
}

fn error_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn main() -> ExitCode {
    wasmlab_engine_protocol::main(&RUNNER, run)
}

/// Runs the module to its end: its exit status (0 when `_start` returned, else its `proc_exit` code).
fn run(inv: &Invocation<Mode>) -> Result<Outcome, Failure> {
    let bytes = inv.read_module()?;
    let args = inv.c_argv();
    let stdin = fs::File::open("/dev/null").runner_failure("cannot open /dev/null")?;
    let mut error = vec![0u8; 256];
    let aot = match inv.config {
        Mode::Interp => None,
        Mode::Aot => Some(
            AotPlan::new(inv.option("--cache").map(Path::new), &bytes).map_err(Failure::runner)?,
        ),
    };

    // SAFETY: WAMR's embedding API, called as documented in wasm_export.h: the runtime is
    // initialised once; the module's buffer (`code`), the WASI strings (`args`, `dot`) and the
    // error buffer outlive every call that uses them (they are dropped after the last call).
    unsafe {
        if !wasm_runtime_init() {
            return Err(Failure::runner("cannot initialise the WAMR runtime"));
        }

        // compile: the loader (validation and, for the fast interpreter, its translation), after
        // wasmlab-wamrc for AOT (or the cached AOT file's read).
        let t0 = Instant::now();
        let mut code = match &aot {
            None => bytes,
            Some(plan) => plan.aot_file(&inv.module).map_err(Failure::runner)?,
        };
        let size = u32::try_from(code.len())
            .map_err(|_| Failure::runner("the module is larger than 4 GiB"))?;
        let module = wasm_runtime_load(
            code.as_mut_ptr(),
            size,
            error.as_mut_ptr().cast(),
            error.len() as u32,
        );
        if module.is_null() {
            return Err(Failure::runner(format_args!(
                "cannot load {}: {}",
                inv.module.display(),
                error_text(&error)
            )));
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
            return Err(Failure::runner(format_args!(
                "cannot instantiate: {}",
                error_text(&error)
            )));
        }
        let start = wasm_runtime_lookup_wasi_start_function(instance);
        if start.is_null() {
            return Err(Failure::runner("the module exports no `_start` function"));
        }
        let env = wasm_runtime_create_exec_env(instance, STACK_SIZE);
        if env.is_null() {
            return Err(Failure::runner("cannot create an execution environment"));
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
                return Err(Failure::program(format_args!("trap: {text}")));
            }
            wasm_runtime_get_wasi_exit_code(instance) as i32
        };
        drop(code);
        Ok(Outcome {
            status,
            phases: Phases::between([t0, t1, t2, t3]),
        })
    }
}
