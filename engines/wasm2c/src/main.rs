//! wasmlab runner for wasm2c: translates one WASI preview 1 command module to C with wabt's `wasm2c`,
//! compiles it with a C compiler together with this runner's WASI host (`host.c`) and wabt's
//! runtime (`wasm-rt-impl.c`), runs the native program, which times its instantiation and execution,
//! and writes the phase times; the protocol (arguments, phases file, exit statuses) is
//! docs/engines.md's, implemented by `wasmlab-engine-protocol`.
//!
//! ```text
//! wasmlab-engine-wasm2c --version
//! wasmlab-engine-wasm2c [--config NAME] [--cache DIR] --phases FILE MODULE.wasm [ARG...]
//! ```

use std::fmt::Write as _;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmlab_engine_protocol::{
    Classify as _, ExtraOption, Failure, Invocation, Outcome, Phases, Runner, Version,
};

const RUNNER: Runner<Config> = Runner {
    name: "wasmlab-engine-wasm2c",
    engine: "wasm2c",
    // The installed wasm2c's and C compiler's: they make the code that runs.
    version: Version::Probed(version),
    configs: CONFIGS,
    options: &[ExtraOption {
        name: "--cache",
        value: "DIR",
        help: "keep the native program of each module in DIR (otherwise it is built on every run)",
    }],
};

/// The WASI host compiled into every program (main, and the WASI functions below).
const HOST_C: &str = include_str!("../host.c");

/// The imports `host.c` provides: a module that imports anything else is refused before it is
/// compiled.
const HOST_IMPORTS: &[&str] = &[
    "args_get",
    "args_sizes_get",
    "clock_res_get",
    "clock_time_get",
    "environ_get",
    "environ_sizes_get",
    "fd_close",
    "fd_fdstat_get",
    "fd_fdstat_set_flags",
    "fd_prestat_dir_name",
    "fd_prestat_get",
    "fd_read",
    "fd_seek",
    "fd_write",
    "path_open",
    "poll_oneoff",
    "proc_exit",
    "random_get",
];

/// wabt's runtime for wasm2c output, as Debian's `wabt` package installs it.
const RT_DIR: &str = "/usr/src/wasm2c";

/// A configuration: which C compiler builds the translated module, with which flags.
#[derive(Clone, Copy)]
struct Config {
    cc: &'static str,
    flags: &'static [&'static str],
}

/// The configurations. `clang` is the compiler and optimisation level of the lab's native builds
/// (scripts/build-libsodium.sh: clang-19 -O3, no -march); `clang-native` adds the host CPU's
/// features, as the JIT and AOT engines (Wasmtime, wamrc) use them.
const CONFIGS: &[(&str, Config)] = &[
    (
        "default",
        Config {
            cc: "clang-19",
            flags: &["-O3"],
        },
    ),
    (
        "clang",
        Config {
            cc: "clang-19",
            flags: &["-O3"],
        },
    ),
    (
        "clang-native",
        Config {
            cc: "clang-19",
            flags: &["-O3", "-march=native"],
        },
    ),
    (
        "gcc",
        Config {
            cc: "gcc",
            flags: &["-O3"],
        },
    ),
];

/// Runs a tool to completion with its output captured; an error names it and shows its stderr.
fn run_tool(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: String = {
            let chars: Vec<char> = stderr.chars().collect();
            chars[chars.len().saturating_sub(4000)..].iter().collect()
        };
        return Err(format!("{what} failed ({}):\n{tail}", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The version word of a tool's `--version` first line (`wasm2c`: `1.0.32`; clang: the word after
/// `version`).
fn tool_version(tool: &str) -> Result<String, String> {
    let out = run_tool(Command::new(tool).arg("--version"), tool)?;
    let line = out.lines().next().unwrap_or("").trim();
    let words: Vec<&str> = line.split_whitespace().collect();
    Ok(match words.iter().position(|w| *w == "version") {
        Some(i) if i + 1 < words.len() => words[i + 1].to_owned(),
        _ => words.last().copied().unwrap_or("?").to_owned(),
    })
}

/// `--version`: wasm2c's, then the default configuration's compiler's and flags.
fn version() -> Result<String, String> {
    let wasm2c = tool_version("wasm2c")?;
    let (_, default) = CONFIGS[0];
    let cc = tool_version(default.cc)?;
    Ok(format!(
        "{wasm2c} ({} {cc} {})",
        default.cc,
        default.flags.join(" ")
    ))
}

/// Finds a program on PATH.
fn which(program: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{program} is not on PATH"))
}

/// What a compiled program depends on besides the module: the tools (path, size, modification
/// time), wabt's runtime sources, the host, the flags. It names the program in the cache.
fn cache_key(bytes: &[u8], config: &Config, wasm2c: &Path, cc: &Path) -> Result<String, String> {
    let mut h = Sha256::new();
    h.update(bytes);
    h.update(HOST_C.as_bytes());
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(config.flags.join(" ").as_bytes());
    let rt = Path::new(RT_DIR);
    for file in [
        wasm2c,
        cc,
        &rt.join("wasm-rt-impl.c"),
        &rt.join("wasm-rt-impl.h"),
        &rt.join("wasm-rt.h"),
    ] {
        let meta = fs::metadata(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        h.update(format!("{}\0{}\0{mtime}\0", file.display(), meta.len()).as_bytes());
    }
    Ok(h.finalize().iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    }))
}

/// The imports a wasm2c header declares (`/* import: 'MODULE' 'NAME' */`).
fn imports(header: &str) -> Vec<(String, String)> {
    header
        .lines()
        .filter_map(|l| l.trim().strip_prefix("/* import: '")?.strip_suffix("' */"))
        .filter_map(|l| {
            let (module, name) = l.split_once("' '")?;
            Some((module.to_owned(), name.to_owned()))
        })
        .collect()
}

/// Translates and compiles the module into `dir/prog`.
fn build(
    module: &Path,
    config: &Config,
    wasm2c: &Path,
    cc: &Path,
    dir: &Path,
) -> Result<PathBuf, String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let c = dir.join("module.c");
    run_tool(
        Command::new(wasm2c)
            .args(["-n", "m", "-o"])
            .arg(&c)
            .arg(module),
        "wasm2c",
    )?;
    let header = fs::read_to_string(dir.join("module.h"))
        .map_err(|e| format!("cannot read wasm2c's module.h: {e}"))?;
    let imports = imports(&header);
    let unsupported: Vec<String> = imports
        .iter()
        .filter(|(m, n)| m != "wasi_snapshot_preview1" || !HOST_IMPORTS.contains(&n.as_str()))
        .map(|(m, n)| format!("{m}.{n}"))
        .collect();
    if !unsupported.is_empty() {
        return Err(format!(
            "{} imports what this runner's WASI host does not provide: {}",
            module.display(),
            unsupported.join(", ")
        ));
    }
    for export in ["Z_mZ__start(", "Z_mZ_memory("] {
        if !header.contains(export) {
            return Err(format!(
                "{} is not a WASI command: it exports no `{}`",
                module.display(),
                if export.contains("start") {
                    "_start"
                } else {
                    "memory"
                }
            ));
        }
    }
    let host = dir.join("host.c");
    fs::write(&host, HOST_C).map_err(|e| format!("cannot write {}: {e}", host.display()))?;
    let prog = dir.join("prog");
    run_tool(
        Command::new(cc)
            .args(config.flags)
            .arg(format!(
                "-DHOST_IMPORTS_WASI={}",
                u8::from(!imports.is_empty())
            ))
            .arg("-I")
            .arg(dir)
            .arg("-I")
            .arg(RT_DIR)
            .arg("-o")
            .arg(&prog)
            .arg(&c)
            .arg(&host)
            .arg(Path::new(RT_DIR).join("wasm-rt-impl.c"))
            .arg("-lm"),
        config.cc,
    )?;
    Ok(prog)
}

/// CLOCK_MONOTONIC in nanoseconds, the clock the program reads too (Rust's `Instant` is the same
/// clock on Linux, but does not show its value).
fn monotonic_ns() -> u128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

/// Removes a directory when dropped (the per-run build of a run without a cache).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn main() -> ExitCode {
    wasmlab_engine_protocol::main(&RUNNER, run)
}

/// Builds (or finds) the native program of the module and runs it to its end: its exit status, its
/// compile phase measured here, and the other two as the program measured them.
fn run(inv: &Invocation<Config>) -> Result<Outcome, Failure> {
    let bytes = inv.read_module()?;
    let wasm2c =
        which("wasm2c").map_err(|e| Failure::runner(format_args!("{e} (apt-get install wabt)")))?;
    let cc = which(inv.config.cc).map_err(Failure::runner)?;
    if !Path::new(RT_DIR).join("wasm-rt-impl.c").is_file() {
        return Err(Failure::runner(format_args!(
            "{RT_DIR}/wasm-rt-impl.c is missing (Debian's wabt package installs it)"
        )));
    }

    // The cache's name for this module, before the clock starts: hashing the module to look a
    // program up is not compiling it.
    let cache = match inv.option("--cache").map(Path::new) {
        Some(cache) => Some((
            cache,
            cache_key(&bytes, &inv.config, &wasm2c, &cc).map_err(Failure::runner)?,
        )),
        None => None,
    };

    // compile: wasm2c and the C compiler, or the cached program of an earlier run.
    let t0 = Instant::now();
    let mut _temp = None;
    let prog = match cache {
        Some((cache, key)) => {
            let cached = cache.join(format!("{key}.prog"));
            if !cached.is_file() {
                let dir = cache.join(format!("build-{key}-{}", std::process::id()));
                let built = build(&inv.module, &inv.config, &wasm2c, &cc, &dir);
                let renamed = built.and_then(|prog| {
                    fs::rename(&prog, &cached).map_err(|e| {
                        format!("cannot move the program into {}: {e}", cache.display())
                    })
                });
                let _ = fs::remove_dir_all(&dir);
                renamed.map_err(Failure::runner)?;
            }
            cached
        }
        None => {
            let dir = std::env::temp_dir().join(format!("{}-{}", RUNNER.name, std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            _temp = Some(TempDir(dir.clone()));
            build(&inv.module, &inv.config, &wasm2c, &cc, &dir).map_err(Failure::runner)?
        }
    };
    let compile = t0.elapsed();

    // instantiate and execute: timed by the program itself (host.c), from the spawn below; it
    // writes them to `times` when it ends, not when it traps.
    let times = std::env::temp_dir().join(format!("{}-{}.times", RUNNER.name, std::process::id()));
    let _ = fs::remove_file(&times);
    let mut cmd = Command::new(&prog);
    cmd.arg(&times);
    let spawn_ns = monotonic_ns();
    let status = cmd
        .arg(spawn_ns.to_string())
        .args(inv.argv())
        .stdin(Stdio::null())
        .status()
        .runner_failure(format_args!("cannot run {}", prog.display()))?;
    let written = fs::read_to_string(&times);
    let _ = fs::remove_file(&times);
    let code = match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => {
            return Err(Failure::program(format_args!(
                "it was killed by signal {signal}"
            )));
        }
        (None, None) => return Err(Failure::program(format_args!("it ended with {status}"))),
    };
    let Ok(written) = written else {
        return Err(Failure::program(format_args!(
            "it exited with status {code} without finishing (see its message above)"
        )));
    };
    let (instantiate, execute) = parse_times(&written).ok_or_else(|| {
        Failure::runner(format_args!(
            "the program's times {written:?} are not two numbers"
        ))
    })?;
    Ok(Outcome {
        status: code,
        phases: Phases {
            compile,
            instantiate,
            execute,
        },
    })
}

/// host.c's times: `INSTANTIATE_NS EXECUTE_NS`.
fn parse_times(text: &str) -> Option<(Duration, Duration)> {
    let mut numbers = text
        .split_whitespace()
        .map(|n| n.parse().map(Duration::from_nanos));
    match (numbers.next(), numbers.next(), numbers.next()) {
        (Some(Ok(instantiate)), Some(Ok(execute)), None) => Some((instantiate, execute)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(
            parse_times("1423414 7563214\n"),
            Some((
                Duration::from_nanos(1_423_414),
                Duration::from_nanos(7_563_214)
            ))
        );
        for bad in ["", "1", "1 2 3", "1 x", "-1 2"] {
            assert_eq!(parse_times(bad), None, "{bad:?}");
        }
    }
}
