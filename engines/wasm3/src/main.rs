//! wasmlab runner for the Wasm3 interpreter: runs one WASI preview 1 command module and writes its phase times;
//! the protocol (arguments, phases file, exit statuses) is docs/engines.md's, implemented by
//! `wasmlab-engine-protocol`.
//!
//! ```text
//! wasmlab-engine-wasm3 --version
//! wasmlab-engine-wasm3 [--config NAME] --phases FILE MODULE.wasm [ARG...]
//! ```
//!
//! Wasm3 is driven through its C API (the `wasm3x-sys` bindings) with its built-in WASI (m3_api_wasi.c).

use std::ffi::{CStr, c_char, c_int};
use std::fs;
use std::process::ExitCode;
use std::ptr;
use std::time::Instant;

use wasm3x_sys as m3;
use wasmlab_engine_protocol::{
    Classify as _, Failure, Invocation, Outcome, Phases, Runner, Version,
};

const RUNNER: Runner<Compilation> = Runner {
    name: "wasmlab-engine-wasm3",
    engine: "wasm3",
    version: Version::Built(wasm3_version()),
    configs: &[
        ("default", Compilation::Lazy),
        ("lazy", Compilation::Lazy),
        ("eager", Compilation::Eager),
    ],
    options: &[],
};

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

/// The version of the Wasm3 C library compiled in (`M3_VERSION` in wasm3.h).
const fn wasm3_version() -> &'static str {
    match CStr::from_bytes_with_nul(m3::M3_VERSION) {
        Ok(version) => match version.to_str() {
            Ok(version) => version,
            Err(_) => "unknown",
        },
        Err(_) => "unknown",
    }
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
fn empty_stdin() -> Result<(), Failure> {
    use std::os::fd::AsRawFd;
    let null = fs::File::open("/dev/null").runner_failure("cannot open /dev/null")?;
    // SAFETY: dup2 on two valid descriptors; fd 0 is not used by the runner itself.
    if unsafe { dup2(null.as_raw_fd(), 0) } < 0 {
        return Err(std::io::Error::last_os_error()).runner_failure("cannot redirect stdin");
    }
    Ok(())
}

/// Turns an `M3Result` (NULL on success, else a static message) into a `Result`, with the runtime's error
/// details when there are any: a runner failure (`check` is not used on the call of `_start`).
///
/// # Safety
///
/// `result` is NULL or a NUL-terminated string; `runtime` is NULL or a live runtime.
unsafe fn check(result: m3::M3Result, runtime: m3::IM3Runtime, what: &str) -> Result<(), Failure> {
    if result.is_null() {
        return Ok(());
    }
    Err(Failure::runner(format_args!("{what}: {}", unsafe {
        describe(result, runtime)
    })))
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

fn main() -> ExitCode {
    wasmlab_engine_protocol::main(&RUNNER, run)
}

/// Runs the module to its end: its exit status (0 when `_start` returned, else its `proc_exit` code).
fn run(inv: &Invocation<Compilation>) -> Result<Outcome, Failure> {
    let bytes = inv.read_module()?;
    let size = u32::try_from(bytes.len())
        .map_err(|_| Failure::runner("the module is larger than 4 GiB"))?;
    let args = inv.c_argv();
    let argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
    let argc = u32::try_from(argv.len()).map_err(|_| Failure::runner("too many arguments"))?;
    empty_stdin()?;

    // SAFETY: the Wasm3 C API used as documented in wasm3.h. `bytes`, `args` and `argv` outlive every use
    // (Wasm3 keeps pointers into the module's bytes; its WASI context keeps `argv`); nothing is freed, the
    // process exits after the run.
    unsafe {
        let env = m3::m3_NewEnvironment();
        if env.is_null() {
            return Err(Failure::runner("cannot create a Wasm3 environment"));
        }

        // compile (1): parsing (and, in this Wasm3, its module validation). Function bodies are compiled
        // later: lazily on their first call, or all at once below for `eager`.
        let t0 = Instant::now();
        let mut module: m3::IM3Module = ptr::null_mut();
        check(
            m3::m3_ParseModule(env, &mut module, bytes.as_ptr(), size),
            ptr::null_mut(),
            "cannot parse the module",
        )?;
        let t1 = Instant::now();

        // instantiate (1): runtime (value stack), loading the module into it (memory, globals, tables,
        // data and element segments), WASI (arguments; no environment; stdio; "/" and "./" preopened as
        // the current directory).
        let runtime = m3::m3_NewRuntime(env, STACK_SIZE, ptr::null_mut());
        if runtime.is_null() {
            return Err(Failure::runner("cannot create a Wasm3 runtime"));
        }
        check(
            m3::m3_LoadModule(runtime, module),
            runtime,
            "cannot load the module",
        )?;
        check(m3_LinkWASI(module), runtime, "cannot link WASI")?;
        let wasi = m3_GetWasiContext();
        if wasi.is_null() {
            return Err(Failure::runner("Wasm3 has no WASI context"));
        }
        (*wasi).argc = argc;
        (*wasi).argv = argv.as_ptr();
        let t2 = Instant::now();

        // compile (2), `eager` only: every function body compiled to Wasm3 code (needs the loaded module).
        if inv.config == Compilation::Eager {
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
            return Err(Failure::program(format_args!(
                "trap: {}",
                describe(result, runtime)
            )));
        };
        Ok(Outcome {
            status,
            phases: Phases {
                compile: (t1 - t0) + (t3 - t2),
                instantiate: (t2 - t1) + (t4 - t3),
                execute: t5 - t4,
            },
        })
    }
}
