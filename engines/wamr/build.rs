//! Builds the two WAMR programs of this runner from the WAMR sources that the `wamrx-sys` crate
//! publishes (WAMR 2.4.3; its own build, the fast interpreter alone, is not linked):
//!
//! - the runtime the runner links (`wasmlab-engine-wamr`): WAMR's own CMake build of `vmlib` with
//!   the fast interpreter, the AOT loader and WAMR's WASI (libc-wasi), as iwasm has them on Linux;
//! - the AOT compiler (`wasmlab-wamrc`): the sources wamrc is made of, built as wamrc builds them
//!   (`wamrc/CMakeLists.txt`), with this runner's driver (`wamrc/driver.c`), linked to the system's
//!   LLVM (llvm-config-19, or `LLVM_CONFIG`).
//!
//! The runner and the compiler each get their own library with `rustc-link-arg-bin`: two builds of
//! WAMR's sources cannot share one binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let wamr = wamr_sources();
    println!("cargo::rerun-if-changed=wamrc");
    println!("cargo::rerun-if-env-changed=LLVM_CONFIG");

    let version = wamr_version(&wamr);
    println!("cargo::rustc-env=WASMLAB_WAMR_VERSION={version}");

    // The runtime: fast interpreter + AOT loader + libc-wasi. SIMD stays off: WAMR's fast
    // interpreter takes SIMD from SIMDe, which its CMake fetches from GitHub (not reachable here);
    // the libsodium programs use no SIMD, and wamrc leaves SIMD out of a module that has none.
    let runtime = cmake::Config::new(&wamr)
        .out_dir(out.join("runtime"))
        .profile("Release")
        .define("WAMR_BUILD_PLATFORM", "linux")
        .define("WAMR_BUILD_TARGET", "X86_64")
        .define("WAMR_BUILD_INTERP", "1")
        .define("WAMR_BUILD_FAST_INTERP", "1")
        .define("WAMR_BUILD_AOT", "1")
        .define("WAMR_BUILD_JIT", "0")
        .define("WAMR_BUILD_FAST_JIT", "0")
        .define("WAMR_BUILD_LIBC_WASI", "1")
        .define("WAMR_BUILD_LIBC_BUILTIN", "0")
        .define("WAMR_BUILD_SIMD", "0")
        .define("WAMR_BUILD_LIB_SIMDE", "0")
        .define("WAMR_BUILD_BULK_MEMORY", "1")
        .define("WAMR_BUILD_REF_TYPES", "1")
        .build_target("vmlib")
        .build();
    let runtime_lib = runtime.join("build/libiwasm.a");
    assert!(
        runtime_lib.is_file(),
        "{} was not built",
        runtime_lib.display()
    );
    for arg in [
        runtime_lib.display().to_string(),
        "-lm".into(),
        "-ldl".into(),
        "-lpthread".into(),
    ] {
        println!("cargo::rustc-link-arg-bin=wasmlab-engine-wamr={arg}");
    }

    // The compiler, on the system's LLVM. Its CMake config files (Debian's llvm-19-dev) name
    // targets and paths that the package does not ship (LibEdit::LibEdit, CURL::libcurl, the libc
    // sources of LibcTableGenUtil), so WAMR's find_package(LLVM) is given a small LLVMConfig.cmake
    // written here from llvm-config's answers; the binary links libLLVM itself.
    let llvm_config = env::var("LLVM_CONFIG").unwrap_or_else(|_| "llvm-config-19".into());
    let ask = |flag: &str| -> String {
        let out = Command::new(&llvm_config)
            .arg(flag)
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run {llvm_config} (apt-get install llvm-19-dev): {e}")
            });
        assert!(out.status.success(), "{llvm_config} {flag} failed");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let llvm_version = ask("--version");
    let shim = out.join("llvm-shim");
    fs::create_dir_all(&shim).unwrap();
    let definitions: Vec<String> = ask("--cppflags")
        .split_whitespace()
        .filter(|f| f.starts_with("-D"))
        .map(str::to_owned)
        .collect();
    fs::write(
        shim.join("LLVMConfig.cmake"),
        format!(
            "set(LLVM_PACKAGE_VERSION {llvm_version})\nset(LLVM_INCLUDE_DIRS {})\n\
             set(LLVM_DEFINITIONS {})\nset(LLVM_AVAILABLE_LIBS \"\")\n",
            ask("--includedir"),
            definitions.join(" ")
        ),
    )
    .unwrap();
    println!("cargo::rustc-env=WASMLAB_LLVM_VERSION={llvm_version}");

    let compiler = cmake::Config::new(manifest.join("wamrc"))
        .out_dir(out.join("wamrc"))
        .profile("Release")
        .define("WAMR_ROOT", &wamr)
        .define("LLVM_DIR", &shim)
        .build_target("wasmlab_wamrc")
        .build();
    let compiler_lib = compiler.join("build/libwasmlab_wamrc.a");
    assert!(
        compiler_lib.is_file(),
        "{} was not built",
        compiler_lib.display()
    );
    let libdir = ask("--libdir");
    let mut args = vec![compiler_lib.display().to_string(), format!("-L{libdir}")];
    args.extend(ask("--libs").split_whitespace().map(str::to_owned));
    args.extend(ask("--system-libs").split_whitespace().map(str::to_owned));
    args.extend(["-lstdc++", "-lm", "-ldl", "-lpthread"].map(str::to_owned));
    args.push(format!("-Wl,-rpath,{libdir}"));
    for arg in args {
        println!("cargo::rustc-link-arg-bin=wasmlab-wamrc={arg}");
    }
}

/// The WAMR source tree of the `wamrx-sys` package: its build script runs WAMR's CMake (through
/// the `cmake` crate, which reports the build's directory as `DEP_IWASM_ROOT`), whose cache
/// names the source directory.
fn wamr_sources() -> PathBuf {
    let root = env::var("DEP_IWASM_ROOT").expect("DEP_IWASM_ROOT: the wamrx-sys build did not run");
    let cache = Path::new(&root).join("build/CMakeCache.txt");
    let text = fs::read_to_string(&cache)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", cache.display()));
    let dir = text
        .lines()
        .find_map(|l| l.strip_prefix("CMAKE_HOME_DIRECTORY:INTERNAL="))
        .unwrap_or_else(|| panic!("{} names no source directory", cache.display()));
    let dir = PathBuf::from(dir);
    assert!(
        dir.join("core/iwasm/compilation/aot_compiler.c").is_file(),
        "{} holds no WAMR sources",
        dir.display()
    );
    dir
}

/// WAMR's version, from core/version.h.
fn wamr_version(wamr: &Path) -> String {
    let text = fs::read_to_string(wamr.join("core/version.h")).expect("core/version.h");
    let part = |name: &str| -> String {
        text.lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix(&format!("#define WAMR_VERSION_{name} "))
            })
            .unwrap_or_else(|| panic!("no WAMR_VERSION_{name} in core/version.h"))
            .trim()
            .to_owned()
    };
    format!("{}.{}.{}", part("MAJOR"), part("MINOR"), part("PATCH"))
}
