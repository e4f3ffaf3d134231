//! The peers (peers/: Node, Bun, Deno, Go, C at -O0 and -O3) and the socket servers (the Rust
//! socket server natively, as wasm32-wasip2 under the Wasmtime CLI and on WASIX sockets under
//! Wasmer), each started by the lab,
//! verified on every route (hello, compute's digest, state's counter, proxy through the lab's
//! upstream, echo, 404, 405) and measured for a moment. One whose tool is not here is skipped,
//! said so.

use crate::support;

use support::*;

#[test]
fn node_http() {
    verified_and_measured("node-http");
}

#[test]
fn bun_http() {
    verified_and_measured("bun-http");
}

#[test]
fn deno_http() {
    verified_and_measured("deno-http");
}

#[test]
fn go_http() {
    verified_and_measured("go-http");
}

/// With the results directory given relative (the default `results`), what a prepare step run in
/// the variant's source directory writes to `{prepared}` is in the run's directory, where its
/// start finds it: go-http's `go build -o {prepared}/go-http` in peers/go-http.
#[test]
fn a_relative_results_directory_holds_what_is_prepared() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = write(
        tmp.path(),
        "suite.toml",
        r#"name = "relative"
variants = ["go-http"]
workloads = ["hello"]
connections = [2]
duration_secs = 0.1
warmup_secs = 0.05
repetitions = 1
"#,
    );
    let out = std::process::Command::new(WASMLAB)
        .args(["run", "--suite", &suite, "--no-build", "--no-setup"])
        .args(["--results", "results"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let run = read_json(&only_run_dir(&tmp.path().join("results")).join("run.json"));
    if was_skipped(&run, "go-http") {
        return skipped("go-http is not ready here (Go 1.26 or later on PATH)");
    }
    assert!(out.status.success(), "{stderr}");
    assert_eq!(outcome(&run, "go-http")["status"], "measured", "{stderr}");
    let strays = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../peers/go-http/results"
    );
    assert!(
        !std::path::Path::new(strays).exists(),
        "written beside the sources: {strays}"
    );
}

#[test]
fn c_at_o0() {
    verified_and_measured("c-O0");
}

#[test]
fn c_at_o3() {
    verified_and_measured("c-O3");
}

#[test]
fn rust_socket() {
    verified_and_measured("rust-socket");
}

/// Skipped (the reason printed) until `wasmlab setup wasm-socket-wasmtime` has installed the
/// Wasmtime CLI: a 12-minute build is no test's to start.
#[test]
fn wasm_socket_wasmtime() {
    verified_and_measured("wasm-socket-wasmtime");
}

/// Skipped until `wasmlab setup wasm-socket-wasmer` has built the Wasmer runner.
#[test]
fn wasm_socket_wasmer() {
    verified_and_measured("wasm-socket-wasmer");
}

/// Skipped (unavailable) without LLVM 22's development files, else until `wasmlab setup
/// wasm-socket-wasmer-llvm` has built the runner with LLVM.
#[test]
fn wasm_socket_wasmer_llvm() {
    verified_and_measured("wasm-socket-wasmer-llvm");
}

#[test]
fn compute_cells_of_a_peer_hashing_with_a_library_are_marked_in_every_output() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = r#"name = "compute-code"
variants = ["c-O3", "node-http"]
workloads = ["compute"]
connections = [2]
duration_secs = 0.3
"#;
    let (out, results) = run_suite(tmp.path(), suite, &[]);
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    if ["c-O3", "node-http"].iter().any(|v| was_skipped(&run, v)) {
        return;
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let mark = "compute is not the same code everywhere: node-http (OpenSSL, SHA extensions where the CPU has them) hash with a crypto library";
    assert!(stdout.contains(mark), "{stdout}");
    assert!(
        !stdout.contains("c-O3 ("),
        "the C server's SHA-256 is portable: {stdout}"
    );
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(summary.contains(mark), "{summary}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("compute is not the same code everywhere: node-http (OpenSSL"));
}

#[test]
fn a_peer_killed_mid_run_is_a_failed_variant_and_the_run_goes_on() {
    if !std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skipped("node is not installed");
        return;
    }
    // node-http as its variant file starts it, killed 1.5 s after it starts: during its first
    // measured cell (a 2 s one), after its verification.
    let tmp = tempfile::tempdir().unwrap();
    let suite = r#"name = "peer-killed"
variants = ["node-killed", "c-O3"]
workloads = ["hello"]
connections = [2]
duration_secs = 2.0

[[variant]]
name = "node-killed"
about = "node-http, killed 1.5 s after it starts"
[[variant.requires]]
tool = "node"
[[variant.requires]]
tool = "sh"
version_args = ["-c", "echo sh"]
[variant.start]
command = ["{tool:sh}", "-c", "(sleep 1.5; kill -9 $$) & exec \"$0\" \"$@\"", "{tool:node}", "{workspace}/peers/node-http/server.mjs", "--port", "{port}", "--upstream", "{upstream}"]
"#;
    let (out, results) = run_suite(tmp.path(), suite, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    let killed = outcome(&run, "node-killed");
    assert_eq!(killed["status"], "failed", "{killed}");
    let why = killed["reason"].as_str().unwrap();
    assert!(why.contains("exited during measurement"), "{why}");
    if was_skipped(&run, "c-O3") {
        // Only the failure was checked.
        return;
    }
    assert_eq!(outcome(&run, "c-O3")["status"], "measured");
    let csv = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    assert!(csv.lines().any(|l| l.starts_with("c-O3,hello,2,")), "{csv}");
}

#[test]
fn a_suite_naming_the_net_limits_study_sets_its_figures_beside_ours_against_c_o3() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = r#"name = "beside-net-limits"
variants = ["c-O0", "c-O3", "native"]
workloads = ["hello"]
connections = [8]
duration_secs = 0.3
study = "net-limits"
"#;
    let (out, results) = run_suite(tmp.path(), suite, &[]);
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    if was_skipped(&run, "c-O3") {
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("## The net-limits study beside this run"),
        "{summary}"
    );
    assert!(
        summary.contains("### hello, req/s at 400 connections (ours at 8 connections)"),
        "{summary}"
    );
    // Ours against c-O3 and native, in req/s and in capacity (responses per CPU-second).
    assert!(
        summary.contains(
            "| study × its C -O3 | this run × c-O3 | this run × native | resp/CPU-s | \
             resp/CPU-s × c-O3 | resp/CPU-s × native | the study's ratio here |"
        ),
        "{summary}"
    );
    let cells =
        |row: &str| -> Vec<String> { row.split('|').map(|c| c.trim().to_owned()).collect() };
    let c_o3 = summary
        .lines()
        .find(|l| l.starts_with("| c-O3 | 58,900 |"))
        .map(cells)
        .unwrap_or_else(|| panic!("{summary}"));
    // variant, study, ours, study ratio, ours ratio, × native, capacity, × c-O3, × native, verdict
    assert_eq!(c_o3[5], "1.000", "{c_o3:?}");
    // A capacity where the server set the pace (its ratio to itself 1), else what did.
    match c_o3[7].strip_prefix("none: ") {
        Some(why) => {
            assert!(
                why.starts_with("c-O3 ") && why.contains("-limited")
                    || why.contains("latency-bound"),
                "{c_o3:?}"
            );
            assert_eq!((c_o3[8].as_str(), c_o3[9].as_str()), ("–", "–"), "{c_o3:?}");
        }
        None => {
            assert_eq!(c_o3[8], "1.000", "{c_o3:?}");
            // `value [lo–hi] n=N`, or `value n=1`.
            let capacity: f64 = c_o3[7]
                .split(' ')
                .next()
                .unwrap()
                .replace(',', "")
                .parse()
                .unwrap();
            assert!(capacity > 0.0, "{c_o3:?}");
        }
    }
    let native = summary
        .lines()
        .find(|l| l.starts_with("| native | – |"))
        .map(cells)
        .unwrap_or_else(|| panic!("ours alone: {summary}"));
    assert_eq!(native[6], "1.000", "{native:?}");
    assert!(
        native[9] == "1.000" || native[7].starts_with("none: native "),
        "{native:?}"
    );
    let row = summary
        .lines()
        .find(|l| l.starts_with("| c-O0 | 56,900 |"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        row.contains("| 0.966 |"),
        "the study's ratio to its C -O3: {row}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("reproduced here by c-O3"),
        "the study's baseline named"
    );
}

#[test]
fn the_wasi_test_study_takes_native_for_its_native_rust_server_once() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = r#"name = "beside-wasi-test"
variants = ["native"]
workloads = ["hello"]
connections = [4]
duration_secs = 0.3
study = "wasi-test"
"#;
    let (out, results) = run_suite(tmp.path(), suite, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = std::fs::read_to_string(only_run_dir(&results).join("summary.md")).unwrap();
    assert!(
        summary.contains("| study × its native Rust (warp) | this run × native |"),
        "{summary}"
    );
    let rows = summary
        .lines()
        .filter(|l| l.starts_with("| native | 19,680 |"))
        .count();
    assert_eq!(rows, 1, "{summary}");
}
