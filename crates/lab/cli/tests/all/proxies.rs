//! Where else Wasm serves HTTP: Envoy alone (its native routes) and wasmlab's handlers as a
//! proxy-wasm filter in each runtime Envoy's build has, and a Go service running the core guest
//! through wazero, each started by the lab, verified on every route it serves and measured for a
//! moment; a runtime Envoy's build lacks is skipped in Envoy's words; a filter that traps is
//! answered 503 and Envoy goes on; interrupted, neither host leaves anything running. Envoy's
//! tests are skipped, said why, until `wasmlab setup envoy-native` has installed it (a test sets
//! nothing up: `--no-setup`); wazero's need Go.

use crate::platforms::interrupted_leaves_nothing_running;
use crate::support::*;

#[test]
fn envoy_wasm_v8() {
    verified_and_measured_with("envoy-wasm-v8", &["--no-setup"]);
}

/// A Go service running the core guest through wazero: every route, the guest's imports in Go.
#[test]
fn wazero_gateway() {
    verified_and_measured_with("wazero-gateway", &["--no-setup"]);
}

#[test]
fn wazero_gateway_interrupted_leaves_nothing_running() {
    interrupted_leaves_nothing_running("wazero-gateway");
}

/// The Go host with its instances kept and reused as they are (`--reuse`): every route.
#[test]
fn wazero_gateway_shared() {
    verified_and_measured_with("wazero-gateway-shared", &["--no-setup"]);
}

/// The Go host itself, built here with the machine's Go and run on the hostile guest: at most
/// --max-instances instances at once (a request past them and the queue is answered 503 at
/// once), a guest past --deadline-ms answered 504; with --reuse, what a request left in a kept
/// instance is there for the next, and an instance whose call trapped is closed (the next request
/// gets a fresh one); without it, every request's instance is fresh.
#[test]
fn the_go_host_bounds_its_instances_and_keeps_them_only_when_asked() {
    use wasmlab_test_support::request;
    let Some(go) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("go"))
            .find(|g| g.is_file())
    }) else {
        return skipped("no `go` on PATH: the Go host is built with the machine's Go");
    };
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("wazero-gateway");
    let built = std::process::Command::new(go)
        .args(["build", "-trimpath", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../platforms/wazero-gateway"
        ))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let upstream = Listening::upstream();
    let start = |extra: &[&str]| {
        let mut args = vec![
            "--port",
            "0",
            "--upstream",
            &upstream.url,
            "--wasm",
            wasmlab_guest_artifacts::HOSTILE_CORE_PATH,
        ];
        args.extend(extra);
        let g = Listening::spawn(&bin, &args);
        let addr: std::net::SocketAddr = g.url.trim_start_matches("http://").parse().unwrap();
        (g, addr)
    };
    let body = |addr, target: &str| {
        let r = request(addr, "GET", target, b"");
        (r.status, String::from_utf8_lossy(&r.body).into_owned())
    };

    // One instance, no queue: while /loop holds it, another request is refused at once.
    let (_g, addr) = start(&[
        "--max-instances",
        "1",
        "--max-queue",
        "0",
        "--deadline-ms",
        "1500",
    ]);
    let looping = std::thread::spawn(move || request(addr, "GET", "/loop", b"").status);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let refused = std::time::Instant::now();
    assert_eq!(body(addr, "/anything"), (503, "no instance free".into()));
    assert!(refused.elapsed() < std::time::Duration::from_millis(500));
    assert_eq!(looping.join().unwrap(), 504);
    assert_eq!(body(addr, "/anything"), (200, "ok".into()));

    // Kept instances: the secret crosses requests until a trap closes the instance holding it.
    let (_g, addr) = start(&["--reuse", "--max-instances", "1"]);
    assert_eq!(
        body(addr, "/secret/write?s=hunter2"),
        (200, "stored".into())
    );
    assert_eq!(body(addr, "/secret/read"), (200, "hunter2".into()));
    assert_eq!(body(addr, "/trap").0, 500);
    assert_eq!(body(addr, "/secret/read"), (200, String::new()));

    // Fresh instances: never.
    let (_g, addr) = start(&[]);
    assert_eq!(
        body(addr, "/secret/write?s=hunter2"),
        (200, "stored".into())
    );
    assert_eq!(body(addr, "/secret/read"), (200, String::new()));

    // Bad limits: refused, saying which.
    let out = std::process::Command::new(&bin)
        .args([
            "--max-instances",
            "0",
            "--wasm",
            wasmlab_guest_artifacts::HOSTILE_CORE_PATH,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-instances"));
}

/// Fastly Compute's local runtime on the handlers built with the fastly crate: every route.
/// Skipped until `wasmlab setup fastly-viceroy` has built Viceroy (about 9 minutes).
#[test]
fn fastly_viceroy() {
    verified_and_measured_with("fastly-viceroy", &["--no-setup"]);
}

#[test]
fn fastly_viceroy_interrupted_leaves_nothing_running() {
    interrupted_leaves_nothing_running("fastly-viceroy");
}

#[test]
fn envoy_wasm_v8_interrupted_leaves_nothing_running() {
    interrupted_leaves_nothing_running("envoy-wasm-v8");
}

/// Envoy alone serves hello and proxy (and answers 404 and 405 with wasmlab's bodies); compute,
/// state and echo it does not serve: left out of its verification and cells, said in the terminal,
/// and the run succeeds.
#[test]
fn envoy_native_serves_its_routes_and_says_which_it_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = r#"name = "envoy"
variants = ["envoy-native"]
workloads = ["hello", "compute", "proxy", "echo"]
verify_only = ["state", "not-found", "wrong-method"]
connections = [4]
duration_secs = 0.3
warmup_secs = 0.1
"#;
    let (out, results) = run_suite(tmp.path(), suite, &["--no-setup"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let run = read_json(&only_run_dir(&results).join("run.json"));
    if was_skipped(&run, "envoy-native") {
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let o = outcome(&run, "envoy-native");
    assert_eq!(o["status"], "measured", "{o}");
    let checks: Vec<&str> = o["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["ok"], true, "{c}");
            c["what"].as_str().unwrap()
        })
        .collect();
    assert_eq!(checks, ["hello", "proxy", "not-found", "wrong-method"]);
    assert!(
        stderr.contains("envoy-native: not verified or measured on what it does not serve: compute (Envoy has no SHA-256"),
        "{stderr}"
    );
    let throughput =
        std::fs::read_to_string(only_run_dir(&results).join("throughput.csv")).unwrap();
    for served in ["hello", "proxy"] {
        assert_served(&throughput, "envoy-native", served, 4);
    }
    for unserved in ["compute", "echo"] {
        assert!(
            !throughput.contains(&format!("envoy-native,{unserved},")),
            "{throughput}"
        );
    }
    let left = processes_naming(tmp.path());
    assert!(left.is_empty(), "{left:?} outlived the run");
}

/// The official Envoy build has V8 alone: a variant that selects another runtime is skipped, not
/// failed, with Envoy's own words (measured, should a build have it), and the run goes on with
/// Envoy alone.
#[test]
fn a_runtime_envoy_s_build_lacks_is_skipped_in_its_words() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = r#"name = "runtimes"
variants = ["envoy-native", "envoy-wasm-wasmtime", "envoy-wasm-wamr"]
workloads = ["hello"]
connections = [4]
duration_secs = 0.2
"#;
    let (out, results) = run_suite(tmp.path(), suite, &["--no-setup"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let run = read_json(&only_run_dir(&results).join("run.json"));
    for (variant, runtime) in [
        ("envoy-wasm-wasmtime", "wasmtime"),
        ("envoy-wasm-wamr", "wamr"),
    ] {
        let o = outcome(&run, variant);
        let reason = o["reason"].as_str().unwrap_or_default();
        if reason.starts_with("needs setup") {
            skipped(&format!("{variant}: {reason}"));
            continue;
        }
        if o["status"] == "measured" {
            continue;
        }
        assert_eq!(o["status"], "skipped", "{o}\n{stderr}");
        assert_eq!(
            reason,
            format!(
                "unavailable here: Failed to create Wasm VM using envoy.wasm.runtime.{runtime} runtime. Envoy was compiled without support for it"
            ),
            "{o}"
        );
    }
    if !was_skipped(&run, "envoy-native") {
        assert!(out.status.success(), "{stderr}");
    }
}

/// The filter with its hostile route (the plugin configuration `trap-route`, in a variant file
/// made from envoy-wasm-v8's): the request that traps is answered 503, Envoy loads a fresh
/// instance, and the variant is measured after it with no errors.
#[test]
fn a_filter_that_traps_is_answered_503_and_envoy_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let builtin = include_str!("../../../../../variants/envoy-wasm-v8.toml");
    let from = "                failure_policy: FAIL_RELOAD\n";
    assert_eq!(builtin.matches(from).count(), 1);
    let hostile = builtin
        .replace(
            "name = \"envoy-wasm-v8\"",
            "name = \"envoy-wasm-v8-trap\"",
        )
        .replace(
            from,
            &format!(
                "{from}                configuration:\n                  \"@type\": type.googleapis.com/google.protobuf.StringValue\n                  value: trap-route\n"
            ),
        );
    let file = tmp.path().join("trap.toml");
    std::fs::write(&file, hostile).unwrap();
    let suite = r#"name = "trap"
variants = ["envoy-wasm-v8-trap"]
workloads = ["hello"]
verify_only = ["trap"]
connections = [4]
duration_secs = 0.3
# Envoy loads the fresh instance within about a second of the trap (1.0 s here, 2026-11-30).
warmup_secs = 1.5

[[workload]]
name = "trap"
request = { path = "/wasmlab/trap" }
expect = { status = 503 }
"#;
    let (out, results) = run_suite(
        tmp.path(),
        suite,
        &["--no-setup", "--variant-file", file.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    if was_skipped(&run, "envoy-wasm-v8-trap") {
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let o = outcome(&run, "envoy-wasm-v8-trap");
    assert_eq!(o["status"], "measured", "{o}");
    let log = std::fs::read_to_string(dir.join("envoy-wasm-v8-trap.log")).unwrap();
    assert!(log.contains("the hostile route traps"), "{log}");
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    assert_served(&throughput, "envoy-wasm-v8-trap", "hello", 4);
}

/// The hostile core guest in the Go host (`--wasm`): a trap, memory exhausted, the stack
/// overflowed and a status HTTP cannot end an exchange with each answer 500; a secret written in
/// one request is gone in the next (a fresh instance each); a header that frames the message is
/// the host's; and the host serves without an error after all of them.
#[test]
fn the_go_host_survives_a_hostile_guest_and_keeps_requests_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = r#"name = "hostile"
variants = ["wazero-gateway"]
workloads = ["ok"]
verify_only = ["trap", "grow", "stack", "status-1xx", "secret-write", "secret-read", "framing"]
connections = [4]
duration_secs = 0.3
warmup_secs = 0.1

[[workload]]
name = "ok"
request = { path = "/anything" }
expect = { status = 200, body = "ok" }

[[workload]]
name = "trap"
request = { path = "/trap" }
expect = { status = 500 }

[[workload]]
name = "grow"
request = { path = "/grow" }
expect = { status = 500 }

[[workload]]
name = "stack"
request = { path = "/stack" }
expect = { status = 500 }

[[workload]]
name = "status-1xx"
request = { path = "/status?code=101" }
expect = { status = 500 }

[[workload]]
name = "secret-write"
request = { path = "/secret/write?s=hunter2" }
expect = { status = 200, body = "stored" }

[[workload]]
name = "secret-read"
request = { path = "/secret/read" }
expect = { status = 200, body = "" }

[[workload]]
name = "framing"
request = { path = "/header?name=content-length&value=999" }
expect = { status = 200, body = "framed by the host" }
"#;
    let (out, results) = run_suite(
        tmp.path(),
        suite,
        &[
            "--no-setup",
            "--wasm",
            wasmlab_guest_artifacts::HOSTILE_CORE_PATH,
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let dir = only_run_dir(&results);
    let run = read_json(&dir.join("run.json"));
    if was_skipped(&run, "wazero-gateway") {
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let o = outcome(&run, "wazero-gateway");
    assert_eq!(o["status"], "measured", "{o}");
    assert_eq!(o["checks"].as_array().unwrap().len(), 8, "{o}");
    let throughput = std::fs::read_to_string(dir.join("throughput.csv")).unwrap();
    assert_served(&throughput, "wazero-gateway", "ok", 4);
    let log = std::fs::read_to_string(dir.join("wazero-gateway.log")).unwrap();
    assert!(log.contains("GET /trap: 500 guest failed"), "{log}");
}

/// A variant that does not serve the suite's first workload (which readiness and cold starts wait
/// for) is skipped with why, and the run goes on with the others.
#[test]
fn a_variant_that_does_not_serve_the_first_workload_is_skipped_with_why() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = r#"name = "first"
variants = ["native", "envoy-native"]
workloads = ["compute", "hello"]
connections = [2]
duration_secs = 0.2
"#;
    let (out, results) = run_suite(tmp.path(), suite, &["--no-setup"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let run = read_json(&only_run_dir(&results).join("run.json"));
    let o = outcome(&run, "envoy-native");
    if o["reason"]
        .as_str()
        .is_some_and(|r| r.starts_with("needs setup"))
    {
        return skipped(&format!("envoy-native: {}", o["reason"]));
    }
    assert!(out.status.success(), "{stderr}");
    assert_eq!(o["status"], "skipped", "{o}");
    assert!(
        o["reason"].as_str().unwrap().starts_with(
            "does not serve compute, the suite's first workload, which readiness and cold starts wait for: Envoy has no SHA-256"
        ),
        "{o}"
    );
    assert_eq!(outcome(&run, "native")["status"], "measured");
}
