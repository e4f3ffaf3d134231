//! A run that meets faults: interrupted by a signal or killed partway, and variants that hang
//! at start, crash while measured or answer wrongly. What was measured stays complete and
//! readable, and the run goes on with the others.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support;

use support::*;

#[test]
fn sigint_leaves_finished_files_complete() {
    signal_leaves_finished_files_complete(libc::SIGINT);
}

#[test]
fn sigterm_leaves_finished_files_complete() {
    signal_leaves_finished_files_complete(libc::SIGTERM);
}

/// The pids of processes whose parent is `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|st| {
                    // Fields after the parenthesised command name: state, ppid, …
                    let rest = &st[st.rfind(')')? + 2..];
                    rest.split(' ').nth(1)?.parse::<u32>().ok()
                })
                == Some(parent)
        })
        .collect()
}

/// Asserts that none of `pids` is alive a second after wasmlab exited: a killed process, and the
/// watchdog that kills the servers wasmlab left, may take a moment to be gone.
fn assert_gone_soon(pids: &[u32]) {
    let alive = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| !st.contains(") Z "))
    };
    let gone_by = std::time::Instant::now() + std::time::Duration::from_secs(1);
    while pids.iter().any(alive) && std::time::Instant::now() < gone_by {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let left: Vec<&u32> = pids.iter().filter(|p| alive(p)).collect();
    assert!(left.is_empty(), "servers {left:?} outlived wasmlab");
}

/// Starts `wasmlab ARGS` in the background, its output discarded.
fn spawn_quietly(args: &[String]) -> std::process::Child {
    Command::new(WASMLAB)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits (30 s at most) until the run directory under `results` holds `n` throughput samples;
/// returns that directory.
fn wait_for_throughput_samples(results: &Path, n: usize) -> std::path::PathBuf {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no cell finished in time"
        );
        let dir = std::fs::read_dir(results)
            .ok()
            .and_then(|mut d| d.next())
            .map(|e| e.unwrap().path());
        if let Some(dir) = dir {
            let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap_or_default();
            if samples.matches("\"throughput\"").count() >= n {
                return dir;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn signal_leaves_finished_files_complete(signal: libc::c_int) {
    let tmp = tempfile::tempdir().unwrap();
    let (args, results) = run_args(
        tmp.path(),
        r#"name = "long"
variants = ["native", "wasmtime-pooled"]
workloads = ["hello", "state"]
connections = [2]
duration_secs = 1.5
"#,
    );
    let mut child = spawn_quietly(&args);
    // Interrupt once the first cell is written, while the second is being measured.
    let dir = wait_for_throughput_samples(&results, 1);
    let servers = children_of(child.id());
    assert!(
        !servers.is_empty(),
        "the variant and the upstream run as children"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_gone_soon(&servers);

    let run = read_json(&dir.join("run.json"));
    assert_eq!(run["state"], "interrupted");
    assert!(run["finished_utc"].is_string());
    let csv = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    let rows = csv.lines().skip(1).count();
    assert!((1..4).contains(&rows), "{csv}");
    assert_files_parse(&dir);
    assert_eq!(leftover_tmp_files(&dir), 0);
    assert_report_complete(&dir);
}

/// The first SIGINT asks the run to stop and says how to stop at once; a second, while the run
/// waits out a server that ignores SIGTERM (3 s of grace, then the report), kills the servers and
/// exits 130 at once, without the report: what was measured stays readable, and `wasmlab report`
/// makes the report of it.
#[test]
fn a_second_sigint_stops_the_run_at_once() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let bin = bin_dir_with_fake_wasm_gateway(
        tmp.path(),
        "trap '' TERM\nNATIVE \"$1\" \"$2\" \"$3\" \"$4\" &\nwhile :; do sleep 0.05; done",
    );
    let (mut args, results) = run_args(
        tmp.path(),
        r#"name = "stubborn"
variants = ["wasmtime-pooled"]
workloads = ["hello", "state"]
connections = [1]
duration_secs = 0.5
repetitions = 4
"#,
    );
    args.extend(["--bin-dir".to_owned(), bin.display().to_string()]);
    let mut child = Command::new(WASMLAB)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    // The first cell written: the variant is measuring its second, and will then be stopped.
    let dir = wait_for_throughput_samples(&results, 1);
    let servers = children_of(child.id());
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut said = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !said.contains("Ctrl-C again stops at once") {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => said += &format!("{line}\n"),
            Err(_) => panic!("the first SIGINT said nothing of stopping at once: {said}"),
        }
    }
    let second = std::time::Instant::now();
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let took = second.elapsed();
    while let Ok(line) = rx.recv_timeout(std::time::Duration::from_secs(1)) {
        said += &format!("{line}\n");
    }
    assert_eq!(status.code(), Some(130), "{said}");
    // The server's 3 s of grace alone would take longer.
    assert!(took.as_secs_f64() < 2.0, "{took:?}: {said}");
    assert!(said.contains("stopped at once"), "{said}");
    assert!(!servers.is_empty());
    assert_gone_soon(&servers);
    let left = processes_naming(&bin);
    assert!(left.is_empty(), "{left:?} outlived wasmlab");
    assert!(!dir.join("report.html").exists(), "the report was written");
    assert_files_parse(&dir);
    rebuild_report(&dir);
    assert!(dir.join("report.html").exists());
}

#[test]
fn a_run_killed_partway_leaves_every_file_parseable() {
    // SIGKILL: no handler runs. What was written must still parse, and rebuild a report; the
    // servers, which wasmlab could not stop, are killed by its watchdog.
    let tmp = tempfile::tempdir().unwrap();
    let (args, results) = run_args(
        tmp.path(),
        r#"name = "killed"
variants = ["native", "wasmtime-pooled"]
workloads = ["hello", "state"]
connections = [1, 2]
duration_secs = 0.4
repetitions = 3

[cold_start]
runs = 3
"#,
    );
    let mut child = spawn_quietly(&args);
    let dir = wait_for_throughput_samples(&results, 3);
    let servers = children_of(child.id());
    assert!(
        servers.len() >= 2,
        "a variant and the upstream run as children: {servers:?}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_gone_soon(&servers);
    assert_eq!(read_json(&dir.join("run.json"))["state"], "running");
    assert_files_parse(&dir);
    rebuild_report(&dir);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("running"),
        "the report says the run did not finish"
    );
}

/// A bin dir with the real native gateway and, as `wasmlab-gateway-wasm`, a shell script.
fn bin_dir_with_fake_wasm_gateway(dir: &Path, script: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let (bin, real) = bin_dir_with_native(dir);
    let fake = bin.join("wasmlab-gateway-wasm");
    let script = script.replace("NATIVE", real.to_str().unwrap());
    std::fs::write(&fake, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// A binaries directory holding only the real native gateway (a link to it); returns the
/// directory and the gateway's path.
fn bin_dir_with_native(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let real = Path::new(WASMLAB)
        .parent()
        .unwrap()
        .join("wasmlab-gateway-native");
    std::os::unix::fs::symlink(&real, bin.join("wasmlab-gateway-native")).unwrap();
    (bin, real)
}

/// Runs a two-variant suite whose `wasmtime-pooled` is a fake; checks that the fake is reported
/// as failed for `reason` and that `native` is measured after it; returns the run.json and the CSV.
fn run_with_faulty_variant(
    script: &str,
    extra_toml: &str,
    reason: &str,
) -> (serde_json::Value, String) {
    let tmp = tempfile::tempdir().unwrap();
    let bin = bin_dir_with_fake_wasm_gateway(tmp.path(), script);
    let (out, results) = run_suite(
        tmp.path(),
        &format!(
            "name = \"f\"\nvariants = [\"wasmtime-pooled\", \"native\"]\nworkloads = [\"hello\"]\nconnections = [1]\n{extra_toml}"
        ),
        &["--bin-dir", bin.to_str().unwrap()],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("wasmtime-pooled: not measured"));
    let dir = only_run_dir(&results);
    let csv = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    let run = read_json(&dir.join("run.json"));
    let v = &run["variants"];
    assert_eq!(v[0]["name"], "wasmtime-pooled");
    assert_eq!(v[0]["status"], "failed");
    let why = v[0]["reason"].as_str().unwrap();
    assert!(why.contains(reason), "{why}");
    assert_eq!(v[1]["status"], "measured");
    (run, csv)
}

#[test]
fn a_variant_that_hangs_at_start_is_reported_and_the_run_goes_on() {
    let t = std::time::Instant::now();
    let (_, csv) = run_with_faulty_variant(
        "exec sleep 60",
        "duration_secs = 0.3\nstart_timeout_secs = 1.0\n",
        "did not print its address",
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(csv.lines().count(), 2);
}

#[test]
fn a_variant_that_crashes_mid_run_is_reported_and_the_run_goes_on() {
    // The real gateway (given only `--port 0 --upstream URL`), killed half a second into its
    // first measured cell.
    let (_, csv) = run_with_faulty_variant(
        "(sleep 0.6; kill -9 $$) & exec NATIVE \"$1\" \"$2\" \"$3\" \"$4\"",
        "duration_secs = 2.0\n",
        "exited during measurement",
    );
    assert!(
        csv.lines().nth(1).unwrap().starts_with("native,hello,"),
        "{csv}"
    );
}

#[test]
fn variant_answering_wrong_bodies_is_reported_and_the_run_goes_on() {
    // A "Wasm gateway" that is really the echo upstream: it starts and answers 200, with the wrong bodies.
    let (run, csv) = run_with_faulty_variant(
        &format!("exec {WASMLAB} upstream --port 0"),
        "duration_secs = 0.2\n",
        "verification failed",
    );
    assert_eq!(run["state"], "complete");
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 1);
    assert!(rows[0].starts_with("native,hello,1,"));
}

#[test]
fn a_variant_whose_binary_was_not_built_is_skipped_saying_how_to_build_it() {
    // `--no-build` with a gateway missing (a variant set up after the last build): the variant
    // cannot start, so it is skipped before anything is measured, and the run goes on.
    let tmp = tempfile::tempdir().unwrap();
    let (bin, _) = bin_dir_with_native(tmp.path());
    let (out, results) = run_suite(
        tmp.path(),
        "name = \"f\"\nvariants = [\"wasmtime-pooled\", \"native\"]\nworkloads = [\"hello\"]\nconnections = [1]\nduration_secs = 0.2\n",
        &["--bin-dir", bin.to_str().unwrap()],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = read_json(&only_run_dir(&results).join("run.json"));
    let v = &run["variants"];
    assert_eq!(v[0]["name"], "wasmtime-pooled");
    assert_eq!(v[0]["status"], "skipped", "{v}");
    let why = v[0]["reason"].as_str().unwrap();
    let missing = bin.join("wasmlab-gateway-wasm");
    assert!(
        why.contains("not built")
            && why.contains(missing.to_str().unwrap())
            && why.contains("--no-build was given"),
        "{why}"
    );
    assert!(
        stdout.contains("wasmtime-pooled: not measured (skipped)"),
        "{stdout}"
    );
    assert_eq!(v[1]["status"], "measured", "{v}");
}
