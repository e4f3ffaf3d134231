//! Describing the machine a run measures (run.json's `machine`), and the commands that tell
//! versions: the git commit, rustc's host triple.

use std::process::Command;

use wasmlab_model::machine::{Machine, Tools};

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
        native_code: native_code(),
        tools: Tools {
            wasmlab: env!("CARGO_PKG_VERSION").into(),
            rustc: command_line("rustc", &["--version"]),
            wasmtime: locked("wasmtime"),
            hyper: locked("hyper"),
            tokio: locked("tokio"),
        },
    }
}

/// The extensions this binary was compiled to use, of those that matter to the handlers' code:
/// they tell a build for this CPU (`target-cpu=native`) from rustc's portable baseline.
fn native_code() -> String {
    let enabled: Vec<&str> = [
        ("sse4.2", cfg!(target_feature = "sse4.2")),
        ("popcnt", cfg!(target_feature = "popcnt")),
        ("avx", cfg!(target_feature = "avx")),
        ("avx2", cfg!(target_feature = "avx2")),
        ("fma", cfg!(target_feature = "fma")),
        ("bmi1", cfg!(target_feature = "bmi1")),
        ("bmi2", cfg!(target_feature = "bmi2")),
        ("lzcnt", cfg!(target_feature = "lzcnt")),
        ("avx512f", cfg!(target_feature = "avx512f")),
        ("neon", cfg!(target_feature = "neon")),
        ("sha2", cfg!(target_feature = "sha2")),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect();
    let arch = std::env::consts::ARCH;
    if enabled.is_empty() {
        format!("{arch}, the portable baseline (no extensions beyond it)")
    } else {
        format!("{arch} with {}", enabled.join(", "))
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

/// The host's Rust target triple (for builds of a variant's own), from rustc when it is there.
pub fn host_triple() -> String {
    command_line("rustc", &["-vV"])
        .and_then(|out| {
            out.lines()
                .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        })
        .unwrap_or_else(|| format!("{}-unknown-linux-gnu", std::env::consts::ARCH))
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
