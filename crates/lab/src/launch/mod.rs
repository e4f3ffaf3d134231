//! The variant table and the one abstraction that launches, readies and stops every variant.
//!
//! Adding a variant is a row in [`VARIANTS`] (and, for a new kind of thing to start, a [`Launcher`]
//! arm). Everything downstream (verification, measurement, results) only sees a [`Running`] server.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::record::model::StartTimes;

/// How a variant is started.
#[derive(Debug, Clone, Copy)]
pub enum Launcher {
    /// One of wasmlab's gateway binaries, given `--port 0 --upstream URL` plus `args`.
    /// `core_guest`: it runs a core-module guest, which `wasmlab run --wasm PATH` replaces.
    Gateway {
        binary: &'static str,
        args: &'static [&'static str],
        core_guest: bool,
        /// Starts from the core guest precompiled to a `.cwasm` file (prepared once per run by
        /// `--precompile`) instead of compiling it at start.
        precompiled: bool,
    },
}

#[derive(Debug, Clone, Copy)]
pub struct Variant {
    /// Stable identifier in results.
    pub name: &'static str,
    pub about: &'static str,
    pub launcher: Launcher,
}

pub const NATIVE_GATEWAY: &str = "wasmlab-gateway-native";
pub const WASM_GATEWAY: &str = "wasmlab-gateway-wasm";

pub const VARIANTS: &[Variant] = &[
    Variant {
        name: "native",
        about: "handlers compiled into the gateway; keep-alive, one worker per core",
        launcher: Launcher::Gateway {
            binary: NATIVE_GATEWAY,
            args: &[],
            core_guest: false,
            precompiled: false,
        },
    },
    Variant {
        name: "native-close",
        about: "the gateway study's native server: one thread, one connection at a time, Connection: close",
        launcher: Launcher::Gateway {
            binary: NATIVE_GATEWAY,
            args: &["--connection-close", "--threads", "1"],
            core_guest: false,
            precompiled: false,
        },
    },
    Variant {
        name: "wasmtime-pooled",
        about: "fresh Wasmtime instance per request: pooling allocator, InstancePre, core-module guest",
        launcher: Launcher::Gateway {
            binary: WASM_GATEWAY,
            args: &["--executor", "pooled"],
            core_guest: true,
            precompiled: false,
        },
    },
    Variant {
        name: "wasmtime-pooled-cwasm",
        about: "wasmtime-pooled starting from the guest precompiled to a .cwasm file (no compile at start)",
        launcher: Launcher::Gateway {
            binary: WASM_GATEWAY,
            args: &["--executor", "pooled"],
            core_guest: true,
            precompiled: true,
        },
    },
    Variant {
        name: "wasmtime-naive",
        about: "the gateway study's embedded method: per request Linker + WASI ctx + Store + _start",
        launcher: Launcher::Gateway {
            binary: WASM_GATEWAY,
            args: &["--executor", "naive"],
            core_guest: false,
            precompiled: false,
        },
    },
];

pub fn find(name: &str) -> anyhow::Result<&'static Variant> {
    VARIANTS.iter().find(|v| v.name == name).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown variant {name:?}: known variants are {}",
            VARIANTS
                .iter()
                .map(|v| v.name)
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// The binaries a set of variants needs.
pub fn binaries<'a>(variants: impl IntoIterator<Item = &'a Variant>) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for v in variants {
        let Launcher::Gateway { binary, .. } = v.launcher;
        if !out.contains(&binary) {
            out.push(binary);
        }
    }
    out
}

/// What every launch needs to know.
pub struct LaunchContext<'a> {
    pub bin_dir: &'a Path,
    /// The CPUs servers run on.
    pub cpus: &'a crate::plan::cpus::CpuPlan,
    pub upstream: &'a str,
    pub start_timeout: Duration,
    /// The server's stderr goes here.
    pub log_path: PathBuf,
    /// A core-module guest to run instead of the built-in one (`wasmlab run --wasm`).
    pub core_guest: Option<&'a Path>,
    /// The core guest precompiled to `.cwasm` (see [`Variant::needs_precompiled`]).
    pub precompiled_guest: Option<&'a Path>,
}

/// A started server; stopped (and killed if need be) when dropped.
pub struct Running {
    pub addr: SocketAddr,
    pub start: StartTimes,
    child: Child,
}

impl Variant {
    /// Whether the variant starts from a precompiled guest, which the run prepares first.
    pub fn needs_precompiled(&self) -> bool {
        matches!(
            self.launcher,
            Launcher::Gateway {
                precompiled: true,
                ..
            }
        )
    }

    pub fn launch(&self, ctx: &LaunchContext<'_>) -> anyhow::Result<Running> {
        match self.launcher {
            Launcher::Gateway {
                binary,
                args,
                core_guest,
                precompiled,
            } => {
                let path = ctx.bin_dir.join(binary);
                anyhow::ensure!(
                    path.is_file(),
                    "{} not found (build it with `cargo build --release`, or pass --bin-dir)",
                    path.display()
                );
                let mut cmd = Command::new(&path);
                // --error-details: a failed verification then says why the guest failed.
                cmd.args(["--port", "0", "--upstream", ctx.upstream, "--error-details"])
                    .args(args);
                if precompiled {
                    let cwasm = ctx.precompiled_guest.ok_or_else(|| {
                        anyhow::anyhow!("{}: no precompiled guest was prepared", self.name)
                    })?;
                    cmd.arg("--wasm").arg(cwasm);
                } else if let (true, Some(guest)) = (core_guest, ctx.core_guest) {
                    cmd.arg("--wasm").arg(guest);
                }
                spawn_server(self.name, cmd, ctx, "/")
            }
        }
    }
}

/// Spawns a server that prints `listening on http://ADDR` on stdout, then waits until `ready_path`
/// answers 200.
pub fn spawn_server(
    name: &str,
    mut cmd: Command,
    ctx: &LaunchContext<'_>,
    ready_path: &str,
) -> anyhow::Result<Running> {
    let log = File::create(&ctx.log_path)
        .map_err(|e| anyhow::anyhow!("create {}: {e}", ctx.log_path.display()))?;
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(log);
    ctx.cpus.confine_server(&mut cmd);
    // SAFETY: prctl is async-signal-safe; the child dies with wasmlab, so none outlives it.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| anyhow::anyhow!("start {name} ({:?}): {e}", cmd.get_program()))?;
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(addr) = line.strip_prefix("listening on http://") {
                let _ = tx.send(addr.trim().to_owned());
            }
        }
    });
    let mut running = Running {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        start: StartTimes::default(),
        child,
    };
    let deadline = t0 + ctx.start_timeout;
    let addr = loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(a) => break a,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {}
        }
        if let Some(status) = running.child.try_wait()? {
            anyhow::bail!(
                "{name} exited ({status}) before listening: {}",
                log_tail(&ctx.log_path)
            );
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{name} did not print its address within {:?}; see {}",
            ctx.start_timeout,
            ctx.log_path.display()
        );
    };
    running.start.listening_ms = t0.elapsed().as_secs_f64() * 1e3;
    running.addr = addr
        .parse()
        .map_err(|e| anyhow::anyhow!("{name} printed a bad address {addr:?}: {e}"))?;
    loop {
        // A tight retry loop with a raw request: the first 200 is timed here, with no shell, curl
        // or client library in the window.
        if let Some(ready) = probe(running.addr, ready_path, t0) {
            if running.start.connected_ms == 0.0 {
                running.start.connected_ms = ready.connected_ms;
            }
            if ready.status == Some(200) {
                running.start.first_byte_ms = ready.first_byte_ms;
                break;
            }
        }
        if let Some(status) = running.child.try_wait()? {
            anyhow::bail!(
                "{name} exited ({status}) before answering; see {}",
                ctx.log_path.display()
            );
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{name} did not answer 200 on {ready_path} within {:?}",
            ctx.start_timeout
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    running.start.first_200_ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok(running)
}

struct Probe {
    connected_ms: f64,
    first_byte_ms: f64,
    /// The status of a complete response; None when it did not complete.
    status: Option<u16>,
}

/// One `GET path` on a fresh connection (`Connection: close`, read to the end), timed from `t0`.
/// None when the connection is refused.
fn probe(addr: SocketAddr, path: &str, t0: Instant) -> Option<Probe> {
    use std::io::{Read, Write};
    let ms = || t0.elapsed().as_secs_f64() * 1e3;
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    let connected_ms = ms();
    let mut p = Probe {
        connected_ms,
        first_byte_ms: 0.0,
        status: None,
    };
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return Some(p);
    }
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                if buf.is_empty() {
                    p.first_byte_ms = ms();
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            Err(_) => return Some(p),
        }
    }
    // "HTTP/1.1 200 OK": a complete response (the server closed after it).
    p.status = std::str::from_utf8(buf.get(9..12)?).ok()?.parse().ok();
    Some(p)
}

/// The last lines of a server's log, to say why it stopped.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    // From the last line that reports an error, else the last three lines.
    let from = lines
        .iter()
        .rposition(|l| l.contains("error"))
        .unwrap_or(lines.len().saturating_sub(3));
    let tail = lines[from..(from + 3).min(lines.len())].join(" | ");
    if tail.is_empty() {
        format!("no output; see {}", path.display())
    } else {
        format!("{tail} (log: {})", path.display())
    }
}

impl Running {
    /// `None` while running; the exit status once it has died.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then SIGKILL after a grace period.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        if self.exited().is_some() {
            return;
        }
        // SAFETY: signalling our own child by pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if self.exited().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.terminate();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for (i, v) in VARIANTS.iter().enumerate() {
            assert!(
                VARIANTS[i + 1..].iter().all(|w| w.name != v.name),
                "{}",
                v.name
            );
            assert_eq!(find(v.name).unwrap().name, v.name);
        }
        let e = find("wasmer").unwrap_err().to_string();
        assert!(e.contains("unknown variant") && e.contains("native"), "{e}");
    }
}
