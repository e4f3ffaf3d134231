//! What machine and software a run measured: recorded in run.json so a figure can be traced.

use std::process::Command;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_kib: Option<u64>,
    pub kernel: String,
    /// Whether the CPU has SHA extensions. The handlers are built with sha2's portable code
    /// (`force-soft`) natively and in Wasm, so `/compute` never uses them.
    pub cpu_sha_extensions: bool,
    pub compute_sha256: String,
    pub tools: Tools,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tools {
    pub wasmlab: String,
    pub rustc: Option<String>,
    pub wasmtime: Option<String>,
    pub hyper: Option<String>,
    pub tokio: Option<String>,
}

pub fn describe(workspace: Option<&std::path::Path>) -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
    };
    let flags = field("flags").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let lock = workspace.and_then(|w| std::fs::read_to_string(w.join("Cargo.lock")).ok());
    let locked = |krate: &str| lock.as_deref().and_then(|l| locked_version(l, krate));
    Machine {
        cpu_model: field("model name").unwrap_or_else(|| "unknown".into()),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_kib: meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok()),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into()),
        cpu_sha_extensions: flags.split_whitespace().any(|f| f == "sha_ni"),
        compute_sha256: "portable (sha2 force-soft) in native and Wasm builds".into(),
        tools: Tools {
            wasmlab: env!("CARGO_PKG_VERSION").into(),
            rustc: command_line("rustc", &["--version"]),
            wasmtime: locked("wasmtime"),
            hyper: locked("hyper"),
            tokio: locked("tokio"),
        },
    }
}

/// The version of `krate` in a Cargo.lock.
fn locked_version(lock: &str, krate: &str) -> Option<String> {
    let needle = format!("name = \"{krate}\"\nversion = \"");
    let start = lock.find(&needle)? + needle.len();
    let end = lock[start..].find('"')?;
    Some(lock[start..start + end].to_owned())
}

pub fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The checked-out commit, with `-dirty` when the tree has changes.
pub fn git_sha(workspace: Option<&std::path::Path>) -> Option<String> {
    let dir = workspace?.to_str()?;
    let sha = command_line("git", &["-C", dir, "rev-parse", "HEAD"])?;
    let dirty =
        command_line("git", &["-C", dir, "status", "--porcelain"]).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{sha}-dirty") } else { sha })
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_locked_versions() {
        let lock = "[[package]]\nname = \"hyper\"\nversion = \"1.2.3\"\n\n[[package]]\nname = \"hyper-util\"\nversion = \"0.1.0\"\n";
        assert_eq!(
            super::locked_version(lock, "hyper").as_deref(),
            Some("1.2.3")
        );
        assert_eq!(
            super::locked_version(lock, "hyper-util").as_deref(),
            Some("0.1.0")
        );
        assert_eq!(super::locked_version(lock, "tokio"), None);
    }
}
