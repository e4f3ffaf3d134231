//! The containerd variants end to end, under the lab's own containerds: each verified on every
//! route and measured (hello, state, proxy, cold start, resources); a shim killed mid-run fails its
//! variant while the run goes on; and nothing of the lab's containerd (container, task, snapshot,
//! mount, shim, daemon, directory) is left behind. SKIPPED where containerd cannot run (not root,
//! not installed) or the shim is not built (`wasmlab setup containerd-wasm`).

use crate::support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use support::*;

/// One containerd test at a time: each run starts a containerd of its own, and two at once on 2
/// cores would measure each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Where the wasmlab process `pid` keeps its containerd.
fn containerd_dir(pid: u32) -> PathBuf {
    std::env::temp_dir().join(format!("wasmlab-containerd-{pid}"))
}

/// Nothing of the lab's containerds left (the machine's, and containerd 1.7 of
/// containerd-wasm-artifact, `-PID-1`): their directories, mounts under them, daemons, shims or
/// containers' processes.
fn assert_nothing_left(pid: u32) {
    let first = containerd_dir(pid);
    let dirs = std::iter::once(first.clone())
        .chain((1..4).map(|n| PathBuf::from(format!("{}-{n}", first.display()))));
    for dir in dirs {
        assert!(!dir.exists(), "{} left behind", dir.display());
        let mounts = wasmlab_plan::containerd::mounts_under(&dir);
        assert!(mounts.is_empty(), "mounts left: {mounts:?}");
        let left = wasmlab_plan::containerd::leftover_processes(&dir.join("containerd.sock"), pid);
        assert!(left.is_empty(), "processes left: {left:?}");
    }
}

/// Runs `wasmlab run` on `suite` (written to `tmp`), returning its pid, its exit status, stderr
/// and the run directory; `during` is called with the pid and results directory while it runs.
fn run_containerd_suite(
    tmp: &std::path::Path,
    suite: &str,
    during: impl FnOnce(u32, &std::path::Path),
) -> (u32, std::process::ExitStatus, String, PathBuf) {
    let (args, results) = run_args(tmp, suite);
    let child = Command::new(env!("CARGO_BIN_EXE_wasmlab"))
        .args(&args)
        .arg("--no-setup")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    during(pid, &results);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let dir = only_run_dir(&results);
    (pid, out.status, stderr, dir)
}

#[test]
fn the_variants_run_under_the_labs_own_containerds_and_leave_nothing_behind() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let suite = r#"name = "containerd-e2e"
variants = ["containerd-native", "containerd-wasm", "containerd-wasm-artifact"]
workloads = ["hello", "state", "proxy"]
verify_only = ["compute", "echo", "not-found", "wrong-method"]
connections = [4]
duration_secs = 0.5
warmup_secs = 0.1

[cold_start]
runs = 2
"#;
    let (pid, status, stderr, dir) = run_containerd_suite(tmp.path(), suite, |_, _| {});
    let run = read_json(&dir.join("run.json"));
    let variants = [
        "containerd-native",
        "containerd-wasm",
        "containerd-wasm-artifact",
    ];
    let skipped: Vec<bool> = variants.iter().map(|v| was_skipped(&run, v)).collect();
    assert_nothing_left(pid);
    if skipped.iter().all(|&s| s) {
        return;
    }
    assert!(status.success(), "{stderr}");
    let measured: Vec<&str> = variants
        .into_iter()
        .filter(|v| outcome(&run, v)["status"] != "skipped")
        .collect();
    for variant in &measured {
        let o = outcome(&run, variant);
        assert_eq!(o["status"], "measured", "{o}");
        let checks = o["checks"].as_array().unwrap();
        assert!(
            checks.len() >= 7 && checks.iter().all(|c| c["ok"] == true),
            "{o}"
        );
    }
    // Every cell measured with its processes observed: the task's shim and the container.
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    for variant in &measured {
        let lines: Vec<serde_json::Value> = samples
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|s: &serde_json::Value| s["variant"] == *variant)
            .collect();
        let cells: Vec<&serde_json::Value> =
            lines.iter().filter(|s| s["kind"] == "throughput").collect();
        assert_eq!(cells.len(), 3, "{variant}: {lines:?}");
        for c in cells {
            let r = &c["resources"];
            assert!(r["cpu_secs"].as_f64().unwrap() > 0.0, "{variant}: {c}");
            // At least the shim and the server.
            assert!(r["processes_peak"].as_u64().unwrap() >= 2, "{variant}: {c}");
        }
        let cold: Vec<&serde_json::Value> =
            lines.iter().filter(|s| s["kind"] == "cold_start").collect();
        assert_eq!(cold.len(), 2, "{variant}");
        assert!(
            cold.iter()
                .all(|c| c["start"]["rss_kib"].as_u64().unwrap() > 0)
        );
    }
    let run_info = read_json(&dir.join("run.json"));
    assert!(
        run_info["containerd"]["snapshotter"].is_string(),
        "{}",
        run_info["containerd"]
    );
}

#[test]
fn a_shim_killed_mid_run_fails_its_variant_and_the_run_goes_on() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let suite = r#"name = "containerd-shim-dies"
variants = ["containerd-wasm", "native"]
workloads = ["hello", "state"]
connections = [4]
duration_secs = 1.5
warmup_secs = 0.1
repetitions = 2
seed = 1
"#;
    let mut killed = None;
    let (pid, status, stderr, dir) = run_containerd_suite(tmp.path(), suite, |pid, results| {
        let socket = containerd_dir(pid).join("containerd.sock");
        let started = Instant::now();
        let deadline = started + Duration::from_secs(120);
        // Once containerd-wasm has a measured cell, its next one is under way: kill its shim.
        while Instant::now() < deadline {
            let measured = std::fs::read_dir(results)
                .ok()
                .and_then(|mut d| d.next())
                .and_then(|d| std::fs::read_to_string(d.ok()?.path().join("samples.jsonl")).ok())
                .is_some_and(|s| {
                    s.lines().any(|l| {
                        l.contains("\"kind\":\"throughput\"")
                            && l.contains("\"variant\":\"containerd-wasm\"")
                    })
                });
            if measured {
                std::thread::sleep(Duration::from_millis(500));
                let shims: Vec<i32> = wasmlab_plan::containerd::leftover_processes(&socket, pid)
                    .into_iter()
                    .filter(|p| {
                        std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                            .is_ok_and(|c| c.contains("containerd-shim-wasmlab-v1"))
                    })
                    .collect();
                if let Some(&shim) = shims.iter().min() {
                    // SAFETY: SIGKILL to the shim this test's wasmlab started.
                    unsafe { libc::kill(shim, libc::SIGKILL) };
                    killed = Some(shim);
                    break;
                }
            }
            // No containerd 20 s in: the run skipped the variant (or ended), and never measures it.
            if started.elapsed() > Duration::from_secs(20) && !containerd_dir(pid).exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let run = read_json(&dir.join("run.json"));
    if was_skipped(&run, "containerd-wasm") {
        assert_nothing_left(pid);
        return;
    }
    assert!(killed.is_some(), "no shim to kill: {stderr}");
    let wasm = outcome(&run, "containerd-wasm");
    assert_eq!(wasm["status"], "failed", "{wasm}");
    assert!(
        wasm["reason"]
            .as_str()
            .unwrap()
            .contains("exited during measurement"),
        "{wasm}"
    );
    // The run went on: native measured in both repetitions.
    assert_eq!(outcome(&run, "native")["status"], "measured", "{stderr}");
    assert!(
        !status.success(),
        "a failed variant fails the run: {stderr}"
    );
    assert_nothing_left(pid);
}
