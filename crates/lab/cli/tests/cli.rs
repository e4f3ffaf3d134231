//! `wasmlab` end to end: a tiny suite against the real gateway binaries, the load command, and the
//! errors a user gets for bad input.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

mod support;

const WASMLAB: &str = env!("CARGO_BIN_EXE_wasmlab");

const THROUGHPUT_COLUMNS: &str = "variant,workload,connections,rps,p50_ms,p90_ms,p99_ms,p99_9_ms,max_ms,responses,errors,errors_connect,errors_read_write,errors_timeout,errors_non_2xx,duration_s,repetition,ttfb_p50_ms,generator_busy,generator_saturated,rss_peak_kib,rss_mean_kib,cpu_secs";

/// Every section report.html must hold.
const REPORT_SECTIONS: &[&str] = &[
    "summary",
    "ratios",
    "study",
    "throughput",
    "latency",
    "cold-start",
    "open-loop",
    "resources",
    "capacity",
    "environment",
    "method",
];

/// Checks report.html: one offline file with every section and inline SVG plots.
fn assert_report_complete(dir: &Path) {
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for id in REPORT_SECTIONS {
        assert!(
            html.contains(&format!("id=\"{id}\"")),
            "section {id} missing"
        );
    }
    assert!(html.contains("<svg"), "no inline plots");
    for external in ["src=\"http", "href=\"http", "<link", "<script src"] {
        assert!(!html.contains(external), "report.html loads {external}");
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.starts_with('#'), "{md}");
}

/// Runs `wasmlab report DIR`, expects success and a complete report; returns its output.
fn rebuild_report(dir: &Path) -> std::process::Output {
    let out = wasmlab(&["report", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_report_complete(dir);
    out
}

/// Every file of a results directory parses: JSON, JSON lines and CSV (same field count per row).
fn assert_files_parse(dir: &Path) {
    read_json(&dir.join("run.json"));
    for line in std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap()
        .lines()
    {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
    for csv in [
        "throughput.csv",
        "warm.csv",
        "open_loop.csv",
        "cold_start.csv",
    ] {
        let text = std::fs::read_to_string(dir.join(csv)).unwrap();
        let mut lines = text.lines();
        let n = lines.next().unwrap().split(',').count();
        for l in lines {
            assert_eq!(l.split(',').count(), n, "{csv}: {l}");
        }
    }
}

/// Temporary files left in a results directory (none after an orderly end; a SIGKILL between a
/// write and its rename may leave one, beside the intact previous version).
fn leftover_tmp_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        })
        .count()
}

fn wasmlab(args: &[&str]) -> std::process::Output {
    Command::new(WASMLAB).args(args).output().unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_owned()
}

/// The arguments of `wasmlab run --no-build` on the suite `toml` (written to `dir`), with results
/// under `dir/results`; returns them and that results directory.
fn run_args(dir: &Path, toml: &str) -> (Vec<String>, std::path::PathBuf) {
    let suite = write(dir, "suite.toml", toml);
    let results = dir.join("results");
    let args = [
        "run",
        "--suite",
        &suite,
        "--no-build",
        "--results",
        results.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    (args, results)
}

/// `wasmlab run --no-build` on the suite `toml`, results under `dir/results`, plus `extra` flags.
fn run_suite(dir: &Path, toml: &str, extra: &[&str]) -> (std::process::Output, std::path::PathBuf) {
    let (args, results) = run_args(dir, toml);
    let out = Command::new(WASMLAB)
        .args(&args)
        .args(extra)
        .output()
        .unwrap();
    (out, results)
}

/// The one run directory under `results`.
fn only_run_dir(results: &Path) -> std::path::PathBuf {
    let runs: Vec<_> = std::fs::read_dir(results).unwrap().collect();
    assert_eq!(runs.len(), 1);
    runs[0].as_ref().unwrap().path()
}

/// Runs wasmlab, expects a non-zero exit and `needle` in its stderr.
fn assert_fails_with(args: &[&str], needle: &str) {
    let out = wasmlab(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(err.contains(needle), "{args:?}: {err}");
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// With at least 2 CPUs the load generator and the servers ran on disjoint CPUs, and each gateway
/// (whose default worker count is the CPUs it may use) started one worker per server CPU.
fn assert_servers_ran_on_their_own_cpus(run: &serde_json::Value, dir: &Path) {
    let cpus = |k: &str| -> Vec<u64> {
        run["cpus"][k]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect()
    };
    let (load, server) = (cpus("load"), cpus("server"));
    assert!(!load.is_empty(), "{}", run["cpus"]);
    if run["cpus"]["shared_because"].is_string() {
        assert!(server.is_empty(), "{}", run["cpus"]);
        return;
    }
    assert!(!server.is_empty() && server.iter().all(|c| !load.contains(c)));
    assert_eq!(
        run["machine"]["cores"].as_u64().unwrap(),
        (load.len() + server.len()) as u64,
        "the machine is described before the lab pins itself"
    );
    let log = std::fs::read_to_string(dir.join("native.log")).unwrap();
    assert!(
        log.contains(&format!("threads={} ", server.len())),
        "native.log: {log}"
    );
}

#[test]
fn tiny_suite_writes_results_with_expected_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, results) = run_suite(
        tmp.path(),
        r#"name = "tiny"
variants = ["native", "wasmtime-pooled", "wasmtime-naive"]
workloads = ["hello", "proxy", "echo"]
connections = [2]
duration_secs = 0.3
warmup_secs = 0.1
repetitions = 2
seed = 7

[cold_start]
runs = 2
variants = ["native", "wasmtime-pooled", "wasmtime-pooled-cwasm"]

[warm]
duration_secs = 0.2

[open_loop]
fractions = [0.25, 0.5]
duration_secs = 0.3
connections = 4
workloads = ["hello"]
"#,
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stderr: {stderr}\nstdout: {stdout}");
    assert!(stdout.contains("× native"), "table printed: {stdout}");

    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    assert_eq!(run["state"], "complete");
    assert_eq!(run["suite"]["name"], "tiny");
    assert_eq!(run["seed"], 7);
    assert!(run["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(run["machine"]["cpu_model"].is_string());
    assert!(run["machine"]["kernel"].is_string());
    assert!(run["command"].as_array().unwrap().len() > 2);
    assert_servers_ran_on_their_own_cpus(&run, &dir);
    // Each repetition ran every variant once, in a seeded order.
    let orders = run["orders"].as_array().unwrap();
    assert_eq!(orders.len(), 2);
    for o in orders {
        assert_eq!(o.as_array().unwrap().len(), 3);
    }
    let artifacts: Vec<&str> = run["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    for want in ["wasmlab-gateway-native", "core guest (.wasm)", ".cwasm"] {
        assert!(artifacts.iter().any(|a| a.contains(want)), "{artifacts:?}");
    }
    let variants = run["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 4);
    for v in variants {
        assert_eq!(v["status"], "measured", "{v}");
        assert!(
            v["checks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["ok"] == true)
        );
    }

    let csv = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap(), THROUGHPUT_COLUMNS);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 18, "3 variants x 3 workloads x 2 runs");
    for r in &rows {
        assert_eq!(r.len(), THROUGHPUT_COLUMNS.split(',').count());
        assert_eq!(r[2], "2");
        let rps: f64 = r[3].parse().unwrap();
        assert!(rps > 0.0, "{r:?}");
        assert_eq!(r[10], "0", "no errors expected: {r:?}");
        let rss: u64 = r[20].parse().unwrap();
        assert!(rss > 1000, "the variant's RSS was sampled: {r:?}");
    }
    let cold = std::fs::read_to_string(dir.join("cold_start.csv")).unwrap();
    assert_eq!(cold.lines().count(), 1 + 3 * 2);
    assert_eq!(
        std::fs::read_to_string(dir.join("warm.csv"))
            .unwrap()
            .lines()
            .count(),
        1 + 3 * 3 * 2
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("open_loop.csv"))
            .unwrap()
            .lines()
            .count(),
        1 + 3 * 2 * 2
    );

    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    let samples: Vec<serde_json::Value> = samples
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let count = |kind: &str| samples.iter().filter(|s| s["kind"] == kind).count();
    assert_eq!(count("throughput"), 18);
    assert_eq!(count("cold_start"), 6);
    assert!(samples.iter().all(|s| s["schema"] == 2));
    for s in samples.iter().filter(|s| s["kind"] == "open_loop") {
        let o = &s["load"]["open_loop"];
        assert!(o["target_rate"].as_f64().unwrap() > 0.0, "{o}");
        assert!(!s["uncorrected_histogram"].as_array().unwrap().is_empty());
    }
    for s in samples.iter().filter(|s| s["kind"] == "cold_start") {
        let t = &s["start"];
        let ms = |k: &str| t[k].as_f64().unwrap();
        assert!(ms("listening_ms") > 0.0);
        assert!(ms("listening_ms") <= ms("connected_ms"), "{t}");
        assert!(ms("connected_ms") <= ms("first_byte_ms"), "{t}");
        assert!(ms("first_byte_ms") <= ms("first_200_ms"), "{t}");
    }
    assert_files_parse(&dir);
    assert_eq!(leftover_tmp_files(&dir), 0);
    assert_report_complete(&dir);

    // `wasmlab report` rebuilds the same tables from the raw samples alone.
    let before = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    for f in [
        "throughput.csv",
        "warm.csv",
        "open_loop.csv",
        "cold_start.csv",
        "report.html",
        "summary.md",
    ] {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    rebuild_report(&dir);
    assert_eq!(
        std::fs::read_to_string(dir.join("throughput.csv")).unwrap(),
        before
    );
}

#[test]
fn bad_suite_file_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = write(tmp.path(), "bad.toml", "name = \"bad\"\nvariants = [\n");
    let results = tmp.path().to_str().unwrap();
    assert_fails_with(
        &["run", "--suite", &suite, "--no-build", "--results", results],
        "bad.toml",
    );

    assert_fails_with(
        &["run", "--suite", "no-such-suite", "--no-build"],
        "unknown suite",
    );
}

#[test]
fn unknown_variant_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().to_str().unwrap();
    assert_fails_with(
        &[
            "run",
            "--variant",
            "no-such-variant",
            "--no-build",
            "--results",
            results,
        ],
        "unknown variant \"no-such-variant\"",
    );
    // Nothing was measured, so no run directory was made.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn load_command_reports_json() {
    let mut up = Command::new(WASMLAB)
        .args(["upstream", "--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let line = BufReader::new(up.stdout.take().unwrap())
        .lines()
        .next()
        .unwrap()
        .unwrap();
    let url = line.strip_prefix("listening on ").unwrap().to_owned();
    let out = wasmlab(&[
        "load",
        &format!("{url}/x"),
        "-c",
        "4",
        "-n",
        "300",
        "--json",
    ]);
    let _ = up.kill();
    let _ = up.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["responses"], 300);
    assert_eq!(r["ok"], 300);
    assert_eq!(r["errors"]["connect"], 0);
    assert_eq!(r["body_bytes"], 300 * "GET /x".len());

    assert_fails_with(&["load", "ftp://127.0.0.1/", "-n", "1"], "only http://");
}

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
    for pid in servers {
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|st| !st.contains(") Z "));
        assert!(!alive, "server {pid} outlived wasmlab");
    }

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

#[test]
fn a_run_killed_partway_leaves_every_file_parseable() {
    // SIGKILL: no handler runs. What was written must still parse, and rebuild a report.
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
    child.kill().unwrap();
    child.wait().unwrap();
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
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let real = Path::new(WASMLAB)
        .parent()
        .unwrap()
        .join("wasmlab-gateway-native");
    std::os::unix::fs::symlink(&real, bin.join("wasmlab-gateway-native")).unwrap();
    let fake = bin.join("wasmlab-gateway-wasm");
    let script = script.replace("NATIVE", real.to_str().unwrap());
    std::fs::write(&fake, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
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
fn run_with_your_own_guest() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = "name = \"byo\"\nvariants = [\"wasmtime-pooled\"]\nworkloads = [\"hello\"]\nconnections = [1]\nduration_secs = 0.2\n";
    // The documented minimal guest runs, and is verified like any guest: it says "hello from wat",
    // not "hello", so it is not measured.
    let wat = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../docs/examples/minimal-guest.wat"
    );
    let (out, results) = run_suite(tmp.path(), toml, &["--wasm", wat]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = read_json(&only_run_dir(&results).join("run.json"));
    assert!(
        run["core_guest"]
            .as_str()
            .unwrap()
            .ends_with("minimal-guest.wat")
    );
    let reason = run["variants"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("hello from wat"), "{reason}");

    // A file that is not Wasm: the gateway refuses it at start, and the reason says why.
    let tmp = tempfile::tempdir().unwrap();
    let junk = write(tmp.path(), "junk.wasm", "not wasm");
    let (out, results) = run_suite(tmp.path(), toml, &["--wasm", &junk]);
    assert_eq!(out.status.code(), Some(1));
    let run = read_json(&only_run_dir(&results).join("run.json"));
    let reason = run["variants"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("refused"), "{reason}");

    assert_fails_with(
        &["run", "--wasm", "/no/such/guest.wasm", "--no-build"],
        "no such file",
    );
}

#[test]
fn a_variant_refused_by_verification_is_in_no_table_and_listed_as_failed_in_every_output() {
    // The minimal guest answers "hello from wat" everywhere: verification refuses
    // wasmtime-pooled, which the suite also names for cold starts, warm latency and the open loop.
    let tmp = tempfile::tempdir().unwrap();
    let wat = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../docs/examples/minimal-guest.wat"
    );
    let (out, results) = run_suite(
        tmp.path(),
        r#"name = "refused"
variants = ["native", "wasmtime-pooled"]
workloads = ["hello"]
connections = [2]
duration_secs = 0.2
warmup_secs = 0.1

[cold_start]
runs = 2
variants = ["native", "wasmtime-pooled"]

[warm]
duration_secs = 0.2

[open_loop]
fractions = [0.5]
duration_secs = 0.2
connections = 2
workloads = ["hello"]
"#,
        &["--wasm", wat],
    );
    assert_eq!(out.status.code(), Some(1));
    let dir = only_run_dir(&results);
    let refused = |text: &str| text.contains("wasmtime-pooled");
    // Terminal: every table has native's rows and none of wasmtime-pooled; the reason follows.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (tables, after) = stdout
        .split_once("not measured (in no table above)")
        .unwrap_or_else(|| panic!("no table of what was not measured in {stdout}"));
    assert!(!refused(tables), "{tables}");
    let line = after
        .lines()
        .find(|l| l.starts_with("wasmtime-pooled: not measured (failed): verification failed"))
        .unwrap_or_else(|| panic!("no failure line in {after}"));
    assert!(line.contains("hello from wat"), "{line}");
    for title in ["cold start", "warm latency", "open loop"] {
        assert!(tables.contains(title), "no {title} table in {tables}");
    }
    // CSVs: native's rows only.
    for csv in [
        "throughput.csv",
        "warm.csv",
        "open_loop.csv",
        "cold_start.csv",
    ] {
        let text = std::fs::read_to_string(dir.join(csv)).unwrap();
        assert!(text.lines().count() > 1, "{csv} has no rows");
        assert!(!refused(&text), "{csv}: {text}");
    }
    // summary.md and report.html name it only where they list what failed.
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let md_mentions: Vec<&str> = md.lines().filter(|l| refused(l)).collect();
    assert_eq!(md_mentions.len(), 1, "{md_mentions:?}");
    assert!(md_mentions[0].contains("failed"), "{}", md_mentions[0]);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let svg_mentions = html
        .split("<svg")
        .skip(1)
        .filter(|svg| refused(svg.split("</svg>").next().unwrap()))
        .count();
    assert_eq!(svg_mentions, 0, "a plot shows the refused variant");
    // Beyond the plots: only where the report lists outcomes, the suite and the run order.
    for line in html.lines().filter(|l| refused(l)) {
        assert!(
            ["failed", "<th>Variants</th>", "<th>Cold starts</th>", " → "]
                .iter()
                .any(|ok| line.contains(ok)),
            "report.html shows the refused variant in {line}"
        );
    }
    // `wasmlab report` rebuilds the same from the raw data.
    let rebuilt = rebuild_report(&dir);
    assert!(rebuilt.status.success());
    let rebuilt = String::from_utf8_lossy(&rebuilt.stdout);
    let (tables, _) = rebuilt
        .split_once("not measured (in no table above)")
        .unwrap();
    assert!(!refused(tables), "{tables}");
}

/// A copy of the committed fixture run (tests/fixtures/small-run: a real two-variant run, two
/// repetitions, with cold starts, warm and open-loop cells) in a temporary directory.
fn fixture_copy(tmp: &Path, name: &str) -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small-run");
    let dst = tmp.join(name);
    std::fs::create_dir(&dst).unwrap();
    for f in ["run.json", "samples.jsonl"] {
        std::fs::copy(src.join(f), dst.join(f)).unwrap();
    }
    dst
}

#[test]
fn report_from_a_fixture_holds_every_section() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixture_copy(tmp.path(), "run");
    let out = rebuild_report(&dir);
    assert_files_parse(&dir);
    // Cold starts of all three launched variants, and the ratio of the run's throughput to
    // native, are in the summary.
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    for v in ["native", "wasmtime-pooled", "wasmtime-pooled-cwasm"] {
        assert!(
            md.contains(&format!("| {v} |")),
            "{v} missing from summary.md"
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("× native per CPU [95% CI]"), "{stdout}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.len() < 2_000_000,
        "report.html is {} bytes",
        html.len()
    );

    assert_fails_with(&["report", tmp.path().to_str().unwrap()], "run.json");
}

#[test]
fn compare_marks_significant_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let a = fixture_copy(tmp.path(), "a");
    let b = fixture_copy(tmp.path(), "b");
    // B: wasmtime-pooled served half as much in every throughput run, for twice the CPU; native
    // is unchanged.
    let samples = std::fs::read_to_string(b.join("samples.jsonl")).unwrap();
    let halved: Vec<String> = samples
        .lines()
        .map(|l| {
            let mut s: serde_json::Value = serde_json::from_str(l).unwrap();
            if s["kind"] == "throughput" && s["variant"] == "wasmtime-pooled" {
                let rps = s["load"]["rps"].as_f64().unwrap();
                s["load"]["rps"] = serde_json::json!(rps / 2.0);
                let cpu = s["resources"]["cpu_secs"].as_f64().unwrap();
                s["resources"]["cpu_secs"] = serde_json::json!(cpu * 2.0);
            }
            s.to_string()
        })
        .collect();
    std::fs::write(b.join("samples.jsonl"), halved.join("\n") + "\n").unwrap();

    let out = wasmlab(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = |needle: &str| {
        stdout
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // req/s, and the headline's figure too: responses per CPU-second.
    for figure in ["throughput", "capacity"] {
        let pooled = row(&format!("{figure} wasmtime-pooled hello"));
        assert_eq!(pooled.len(), 2, "{stdout}");
        assert!(
            pooled
                .iter()
                .all(|l| l.contains("yes: worse") && l.contains("0.500")),
            "{stdout}"
        );
    }
    let native = row("throughput native hello");
    assert_eq!(native.len(), 2, "{stdout}");
    assert!(native.iter().all(|l| l.contains(" no ")), "{stdout}");
    assert!(
        stdout.contains("0 significantly better in B, 4 significantly worse"),
        "{stdout}"
    );
}

/// The release build of wasmlab's binaries, where the user variant files below find the native
/// gateway (`{bin}` is the directory of the `wasmlab` under test).
const TINY: &str = r#"name = "tiny"
workloads = ["hello", "state"]
connections = [2]
duration_secs = 0.2
warmup_secs = 0.1

[cold_start]
runs = 2
"#;

#[test]
fn a_user_variant_file_and_a_suite_variant_are_verified_and_measured() {
    let tmp = tempfile::tempdir().unwrap();
    // A server the lab starts on a port it picks (the native gateway, as a stand-in for any
    // server of the user's), with a tool requirement whose version is recorded.
    let file = write(
        tmp.path(),
        "mine.toml",
        r#"name = "mine"
about = "the native gateway, started on a port the lab picks"
[[requires]]
tool = "sh"
version_args = ["-c", "echo sh from the test"]
[[prepare]]
about = "make a file"
run = ["sh", "-c", "echo prepared > {prepared}/marker"]
[[artifacts]]
name = "marker file"
path = "{prepared}/marker"
[start]
command = ["{bin}/wasmlab-gateway-native", "--host", "127.0.0.1", "--port", "{port}", "--upstream", "{upstream}"]
address = "port"
"#,
    );
    let suite = format!(
        r#"variants = ["mine", "inline-one"]
{TINY}
[[variant]]
name = "inline-one"
about = "the native gateway, defined in the suite"
[variant.start]
command = ["{{bin}}/wasmlab-gateway-native", "--port", "{{port}}", "--upstream", "{{upstream}}"]
"#
    );
    let (out, results) = run_suite(tmp.path(), &suite, &["--variant-file", &file]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    for (i, name) in ["mine", "inline-one"].iter().enumerate() {
        assert_eq!(run["variants"][i]["name"], *name);
        assert_eq!(
            run["variants"][i]["status"], "measured",
            "{}",
            run["variants"]
        );
        assert_eq!(run["variant_specs"][i]["name"], *name);
    }
    assert_eq!(run["variant_tools"][0]["version"], "sh from the test");
    assert!(
        run["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "marker file" && a["bytes"] == 9),
        "{}",
        run["artifacts"]
    );
    let csv = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    for name in ["mine,hello,", "mine,state,", "inline-one,hello,"] {
        assert!(csv.contains(name), "{csv}");
    }
    let cold = std::fs::read_to_string(dir.join("cold_start.csv")).unwrap();
    assert_eq!(cold.lines().filter(|l| l.starts_with("mine,")).count(), 2);
}

#[test]
fn variants_that_cannot_run_here_are_skipped_with_the_reason_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = write(
        tmp.path(),
        "missing.toml",
        r#"name = "needs-a-tool"
about = "needs a tool nobody has"
[[requires]]
tool = "wasmlab-test-no-such-tool"
hint = "get it from the moon"
[start]
command = ["{tool:wasmlab-test-no-such-tool}"]
"#,
    );
    let long = write(
        tmp.path(),
        "long.toml",
        r#"name = "needs-a-long-setup"
about = "needs a tool wasmlab could install, slowly"
[[requires]]
tool = "wasmlab-test-slow-tool"
install = { from = "cargo", package = "wasmlab-test-slow-tool", version = "1.0.0", minutes = 30 }
[start]
command = ["{tool:wasmlab-test-slow-tool}"]
"#,
    );
    let suite =
        format!("variants = [\"native\", \"needs-a-tool\", \"needs-a-long-setup\"]\n{TINY}");
    let (out, results) = run_suite(
        tmp.path(),
        &suite,
        &["--variant-file", &missing, "--variant-file", &long],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Skipped is not a failure: native was measured.
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    let outcome = |name: &str| {
        run["variants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(outcome("native")["status"], "measured");
    let tool = outcome("needs-a-tool");
    assert_eq!(tool["status"], "skipped");
    let why = tool["reason"].as_str().unwrap();
    assert!(
        why.contains("unavailable here") && why.contains("get it from the moon"),
        "{why}"
    );
    let slow = outcome("needs-a-long-setup");
    assert_eq!(slow["status"], "skipped");
    let why = slow["reason"].as_str().unwrap();
    assert!(
        why.contains("`wasmlab setup needs-a-long-setup`") && why.contains("30 min"),
        "{why}"
    );
    // The terminal, summary.md and report.html all say so.
    for (what, text) in [
        ("terminal", stdout.to_string()),
        (
            "summary.md",
            std::fs::read_to_string(dir.join("summary.md")).unwrap(),
        ),
        (
            "report.html",
            std::fs::read_to_string(dir.join("report.html")).unwrap(),
        ),
    ] {
        for needle in [
            "needs-a-tool",
            "get it from the moon",
            "wasmlab setup needs-a-long-setup",
        ] {
            assert!(text.contains(needle), "{what} lacks {needle:?}");
        }
        assert!(text.contains("skipped"), "{what}");
    }
    // Nothing was measured of them.
    let csv = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    assert!(!csv.contains("needs-a"), "{csv}");
}

#[test]
fn variants_lists_every_variant_with_its_state_and_checks_a_users_file() {
    let out = wasmlab(&["variants"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "native:",
        "native-close:",
        "native-container:",
        "wasmtime-pooled:",
        "wasmtime-pooled-cwasm:",
        "wasmtime-naive:",
        "wasmtime-cli:",
        "wasmtime-cli-cwasm:",
        "wasmedge-cli:",
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no state line for {name} in {text}"));
        assert!(
            ["ready", "needs setup: `wasmlab setup", "unavailable here: "]
                .iter()
                .any(|s| line[name.len()..].trim_start().starts_with(s)),
            "{line}"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let bad = write(
        tmp.path(),
        "bad.toml",
        "name = \"bad\"\nabout = \"x\"\n[start]\ncommand = [\"{nope}\"]\n",
    );
    assert_fails_with(
        &["variants", "--variant-file", &bad],
        "unknown placeholder {nope}",
    );
    assert_fails_with(
        &["run", "--variant-file", "/no/such/file.toml", "--no-build"],
        "cannot read variant file /no/such/file.toml",
    );
}

#[test]
fn setup_says_what_it_would_install_and_what_no_registry_has() {
    let tools = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(WASMLAB)
            .args(args)
            .env("WASMLAB_TOOLS", tools.path())
            .output()
            .unwrap()
    };
    let out = run(&["setup", "--dry-run", "wasmtime-cli"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("would install wasmtime: cargo install wasmtime-cli")
            || text.contains("wasmtime is installed"),
        "{text}"
    );
    let out = run(&["setup", "wasmedge-cli"]);
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("wasmedge is installed") {
        support::skipped("the unavailable case needs a machine without wasmedge");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("cannot set up wasmedge-cli"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be installed by wasmlab"));
}

/// Runs one built-in variant alone on a tiny suite (building what it needs); returns its
/// outcome and the run directory, or None (with the reason printed) when it cannot run here.
fn run_builtin_alone(
    variant: &str,
) -> Option<(serde_json::Value, std::path::PathBuf, tempfile::TempDir)> {
    let tmp = tempfile::tempdir().unwrap();
    let suite = format!("variants = [\"{variant}\"]\n{TINY}");
    let (args, results) = run_args(tmp.path(), &suite);
    // Not --no-build: a variant may build (a static gateway for a container image).
    let args: Vec<String> = args.into_iter().filter(|a| a != "--no-build").collect();
    let out = Command::new(WASMLAB)
        .args(&args)
        .arg("--no-setup")
        .output()
        .unwrap();
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    let outcome = run["variants"][0].clone();
    if outcome["status"] == "skipped" {
        support::skipped(&format!("{variant} cannot run here: {}", outcome["reason"]));
        return None;
    }
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    Some((run, dir, tmp))
}

#[test]
fn the_container_variant_runs_end_to_end_where_an_engine_works() {
    let Some((run, dir, _tmp)) = run_builtin_alone("native-container") else {
        return;
    };
    assert_eq!(run["variants"][0]["status"], "measured");
    assert!(
        run["container_engine"]["version"].is_string(),
        "{}",
        run["container_engine"]
    );
    let image = run["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "native-container image")
        .unwrap_or_else(|| panic!("no image size in {}", run["artifacts"]));
    assert!(image["bytes"].as_u64().unwrap() > 100_000, "{image}");
    // The container's own processes (conmon and the gateway) are sampled with `podman run`.
    for line in std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap()
        .lines()
    {
        let s: serde_json::Value = serde_json::from_str(line).unwrap();
        if s["kind"] == "throughput" {
            assert!(
                s["resources"]["processes_peak"].as_u64().unwrap() >= 2,
                "{s}"
            );
        }
    }
    let cold = std::fs::read_to_string(dir.join("cold_start.csv")).unwrap();
    assert_eq!(cold.lines().count(), 3, "{cold}");
}

#[test]
fn the_wasmtime_cli_variant_runs_end_to_end_where_it_is_set_up() {
    let Some((run, dir, _tmp)) = run_builtin_alone("wasmtime-cli") else {
        return;
    };
    assert_eq!(run["variants"][0]["status"], "measured");
    assert!(
        run["variant_tools"][0]["version"]
            .as_str()
            .unwrap()
            .contains("48.0.8")
    );
    let csv = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    assert!(csv.contains("wasmtime-cli,state,"), "{csv}");
}
