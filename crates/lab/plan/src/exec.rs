//! Finding and running this machine's programs: the tools directory, a name on PATH, a command
//! with a deadline. What every probe of the plan (tools, containers, containerd) uses.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The project's tools directory: `WASMLAB_TOOLS` if set, else `tools/` in the source tree
/// (git-ignored), else `~/.local/share/wasmlab/tools`.
pub fn tools_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("WASMLAB_TOOLS") {
        return PathBuf::from(d);
    }
    if let Some(ws) = crate::workspace_dir() {
        return ws.join("tools");
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".local/share/wasmlab/tools")
}

/// `name` on PATH, as a path.
pub fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Runs a command to completion within `timeout`; its stdout (and stderr, if stdout is empty)
/// when it succeeds.
pub fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Result<String, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let deadline = std::time::Instant::now() + timeout;
    loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(_) => break,
            None if std::time::Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {timeout:?}"));
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    if !out.status.success() {
        return Err(format!(
            "{}: {}",
            out.status,
            if stderr.is_empty() { &stdout } else { &stderr }
        ));
    }
    Ok(if stdout.is_empty() { stderr } else { stdout })
}

/// This program's path, to start another of its commands (the upstream, a load generator). When
/// a build meanwhile put a new link at the same path (`cargo build-wasmlab` re-links
/// target/release/wasmlab even when nothing changed), Linux names the one running
/// "PATH (deleted)": the path itself then holds the program, as built now.
pub fn own_exe() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    if !exe.exists()
        && let Some(name) = exe.to_str().and_then(|s| s.strip_suffix(" (deleted)"))
        && Path::new(name).is_file()
    {
        return Ok(PathBuf::from(name));
    }
    Ok(exe)
}
