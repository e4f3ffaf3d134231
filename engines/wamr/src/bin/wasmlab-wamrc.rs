//! WAMR's AOT compiler as the runner uses it: `wasmlab-wamrc -o OUT.aot IN.wasm` does what
//! `wamrc -o OUT.aot IN.wasm` does (wamrc's default options; see wamrc/driver.c), and
//! `wasmlab-wamrc --version` prints `wamrc VERSION (LLVM VERSION)`.

use std::ffi::{CString, OsString, c_char};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

unsafe extern "C" {
    fn wasmlab_wamrc_version(major: *mut u32, minor: *mut u32, patch: *mut u32);
    fn wasmlab_wamrc_compile(
        wasm: *mut u8,
        size: u32,
        out_path: *const c_char,
        error: *mut c_char,
        error_size: u32,
    ) -> i32;
}

const USAGE: &str = "usage: wasmlab-wamrc --version\n       wasmlab-wamrc -o OUT.aot IN.wasm";

fn compile(input: &Path, output: &Path) -> Result<(), String> {
    let mut wasm =
        std::fs::read(input).map_err(|e| format!("cannot read {}: {e}", input.display()))?;
    let size = u32::try_from(wasm.len()).map_err(|_| "the module is larger than 4 GiB")?;
    let out =
        CString::new(output.as_os_str().as_bytes()).map_err(|_| "a NUL in the output path")?;
    let mut error = vec![0u8; 1024];
    // SAFETY: the buffers live across the call and their sizes are the ones given.
    let ok = unsafe {
        wasmlab_wamrc_compile(
            wasm.as_mut_ptr(),
            size,
            out.as_ptr(),
            error.as_mut_ptr().cast(),
            error.len() as u32,
        )
    };
    if ok == 1 {
        return Ok(());
    }
    let end = error.iter().position(|&b| b == 0).unwrap_or(error.len());
    Err(format!(
        "cannot compile {}: {}",
        input.display(),
        String::from_utf8_lossy(&error[..end])
    ))
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match args
        .iter()
        .map(|a| a.to_str())
        .collect::<Vec<_>>()
        .as_slice()
    {
        [Some("--version")] => {
            let (mut major, mut minor, mut patch) = (0, 0, 0);
            // SAFETY: the function writes three integers.
            unsafe { wasmlab_wamrc_version(&mut major, &mut minor, &mut patch) };
            println!(
                "wamrc {major}.{minor}.{patch} (LLVM {})",
                env!("WASMLAB_LLVM_VERSION")
            );
            ExitCode::SUCCESS
        }
        [Some("-o"), _, _] => match compile(&PathBuf::from(&args[2]), &PathBuf::from(&args[1])) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("wasmlab-wamrc: {message}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
