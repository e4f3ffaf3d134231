//! The Wasm gateway binary on an ephemeral port, with each executor: every route and malformed
//! requests, as for the native gateway.

use rstest::rstest;
use wasmlab_test_support::{ServerProcess, check_every_route, echo_of, spawn_upstream};

const BIN: &str = env!("CARGO_BIN_EXE_wasmlab-gateway-wasm");

fn check_executor(executor: &str) {
    let (_rt, up) = spawn_upstream();
    let server = ServerProcess::start(BIN, &["--executor", executor, "--upstream", &up]);
    check_every_route(server.addr, &echo_of("GET", "/proxy"));
}

#[test]
fn pooled_gateway_serves_every_route() {
    check_executor("pooled");
}

#[test]
fn naive_gateway_serves_every_route() {
    check_executor("naive");
}

#[test]
fn recycled_gateway_serves_every_route() {
    check_executor("recycled");
}

#[test]
fn shared_gateway_serves_every_route() {
    check_executor("shared");
}

/// The component executor with the built-in component, or `wasm`, reaching the upstream `up`.
fn component_gateway(up: &str, wasm: Option<&str>) -> ServerProcess {
    executor_gateway("component", up, wasm)
}

/// `executor` (a component executor) with its built-in component, or `wasm`, reaching `up`.
fn executor_gateway(executor: &str, up: &str, wasm: Option<&str>) -> ServerProcess {
    let env = format!("WASMLAB_UPSTREAM={up}");
    let mut args = vec!["--executor", executor, "--upstream", up, "--env", &env];
    if let Some(w) = wasm {
        args.extend(["--wasm", w]);
    }
    ServerProcess::start(BIN, &args)
}

#[test]
fn component_gateway_serves_every_route() {
    let (_rt, up) = spawn_upstream();
    let server = component_gateway(&up, None);
    check_every_route(server.addr, &echo_of("GET", "/proxy"));
}

#[test]
fn a_component_precompiled_for_it_serves_every_route() {
    let tmp = tempfile::tempdir().unwrap();
    let component = &precompiled(tmp.path(), "component");
    let (_rt, up) = spawn_upstream();
    let server = component_gateway(&up, Some(component));
    check_every_route(server.addr, &echo_of("GET", "/proxy"));
    // Each executor refuses the other's precompiled kind, and a core module as Wasm.
    let module = &precompiled(tmp.path(), "pooled");
    let err = refused(&["--executor", "component", "--wasm", module]);
    assert!(err.contains("--executor pooled"), "{err}");
    let err = refused(&["--executor", "pooled", "--wasm", component]);
    assert!(err.contains("refused"), "{err}");
    let core = wasmlab_guest_artifacts::HOSTILE_CORE_PATH;
    let err = refused(&["--executor", "component", "--wasm", core]);
    assert!(err.contains("not a wasi:http component"), "{err}");
}

#[test]
fn the_reused_executor_serves_every_route_from_wasm_or_precompiled() {
    let tmp = tempfile::tempdir().unwrap();
    let service = &precompiled(tmp.path(), "component-reused");
    let (_rt, up) = spawn_upstream();
    for wasm in [None, Some(service.as_str())] {
        let server = executor_gateway("component-reused", &up, wasm);
        check_every_route(server.addr, &echo_of("GET", "/proxy"));
    }
    // It refuses a WASI 0.2 component, and the other component executors' precompiled files.
    let p2 = wasmlab_guest_artifacts::HTTP_PATH;
    let err = refused(&["--executor", "component-reused", "--wasm", p2]);
    assert!(err.contains("--executor component"), "{err}");
    let component = &precompiled(tmp.path(), "component");
    let err = refused(&["--executor", "component-reused", "--wasm", component]);
    assert!(
        err.contains("precompile it with --executor component-reused"),
        "{err}"
    );
}

#[test]
fn the_memory_reset_is_the_operators_choice() {
    let server = ServerProcess::start_logged(
        BIN,
        &[
            "--executor",
            "component",
            "--keep-resident-kib",
            "1024",
            "--pagemap-scan",
        ],
    );
    for _ in 0..3 {
        let r = wasmlab_test_support::request(server.addr, "GET", "/", b"");
        assert_eq!((r.status, r.text().as_str()), (200, "hello"));
    }
    assert!(
        server
            .log()
            .contains("keep_resident=1024 KiB pagemap_scan=yes"),
        "{}",
        server.log()
    );
    for bad in ["lots", "4194305"] {
        let err = refused(&["--keep-resident-kib", bad]);
        assert!(err.contains("--keep-resident-kib"), "{bad}: {err}");
    }
}

#[test]
fn the_component_flags_are_checked() {
    let err = refused(&["--env", "A=1"]);
    assert!(err.contains("are for --executor component"), "{err}");
    let err = refused(&["--executor", "pooled", "--inherit-stdio"]);
    assert!(err.contains("are for --executor component"), "{err}");
    for bad in ["A", "=1", ""] {
        let err = refused(&["--executor", "component", "--env", bad]);
        assert!(err.contains("is not KEY=VALUE"), "{bad:?}: {err}");
    }
    let err = refused(&["--executor", "component", "--upstream", "ftp://x"]);
    assert!(err.contains("http://host:port"), "{err}");
}

/// Precompiles the built-in guest for `executor` into `dir`; returns the .cwasm's path.
fn precompiled(dir: &std::path::Path, executor: &str) -> String {
    let cwasm = dir.join(format!("{executor}.cwasm"));
    let out = std::process::Command::new(BIN)
        .args(["--executor", executor, "--precompile"])
        .arg(&cwasm)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    cwasm.to_str().unwrap().to_owned()
}

#[test]
fn a_recycled_guest_precompiled_for_it_serves_every_route() {
    let tmp = tempfile::tempdir().unwrap();
    let path = &precompiled(tmp.path(), "recycled");
    let (_rt, up) = spawn_upstream();
    let server = ServerProcess::start(
        BIN,
        &["--executor", "recycled", "--wasm", path, "--upstream", &up],
    );
    check_every_route(server.addr, &echo_of("GET", "/proxy"));
}

#[rstest]
fn a_guest_that_cannot_compile_is_refused_with_the_compilers_reason(
    #[values("pooled", "component")] executor: &str,
) {
    // Valid enough to pass the precompiled-module check, not valid Wasm: the child compiling it
    // fails, and the gateway says why, in and out of process alike.
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.wasm");
    std::fs::write(&bad, b"\0asm\x01\0\0\0\x01\xff").unwrap();
    let bad = bad.to_str().unwrap();
    for extra in [&[][..], &["--compile-in-process"][..]] {
        let mut args = vec!["--executor", executor, "--wasm", bad];
        args.extend_from_slice(extra);
        let err = refused(&args);
        assert!(err.contains("refused"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        // The start banner once: the compiling child does not say it again.
        assert!(err.matches("limits:").count() <= 1, "{err}");
    }
}

#[test]
fn precompiled_guest_serves_every_route() {
    let tmp = tempfile::tempdir().unwrap();
    let path = &precompiled(tmp.path(), "pooled");
    let (_rt, up) = spawn_upstream();
    let server = ServerProcess::start(BIN, &["--wasm", path, "--upstream", &up]);
    check_every_route(server.addr, &echo_of("GET", "/proxy"));
    // Not for the naive executor, which compiles at every start as the study did; a recycled
    // executor refuses a module not rewritten for resetting; nothing is precompiled twice.
    assert!(refused(&["--executor", "naive", "--wasm", path]).contains("naive"));
    let err = refused(&["--executor", "recycled", "--wasm", path]);
    assert!(err.contains("not rewritten"), "{err}");
    let again = std::process::Command::new(BIN)
        .args(["--wasm", path, "--precompile", "/dev/null"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("precompiled already"));
}

/// A guest compiled at start by a child process leaves nothing in the temporary directory once
/// the server listens: a server killed by a signal (as the lab and the tests stop them) leaves
/// no compiled module behind.
#[rstest]
fn a_guest_compiled_at_start_leaves_no_file_behind(
    #[values("pooled", "component")] executor: &str,
) {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(BIN)
        .args(["--port", "0", "--executor", executor])
        .env("TMPDIR", tmp.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let listening = stdout
        .lines()
        .map_while(Result::ok)
        .any(|l| l.starts_with("listening on"));
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(listening, "{executor}: never listened");
    assert!(left.is_empty(), "{executor}: left {left:?}");
}

/// Starts the gateway expecting it to refuse to start; returns what it printed on stderr.
fn refused(args: &[&str]) -> String {
    let out = std::process::Command::new(BIN)
        .args(["--port", "0"])
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "started with {args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bring_your_own_guest() {
    // The hostile guest implements the ABI: it is accepted and runs under the same limits.
    let hostile = wasmlab_guest_artifacts::HOSTILE_CORE_PATH;
    let server = ServerProcess::start(BIN, &["--wasm", hostile, "--deadline-ms", "200"]);
    let r = wasmlab_test_support::request(server.addr, "GET", "/trap", b"");
    assert_eq!(r.status, 500);
    let r = wasmlab_test_support::request(server.addr, "GET", "/loop", b"");
    assert_eq!(r.status, 504);
    let r = wasmlab_test_support::request(server.addr, "GET", "/", b"");
    assert_eq!((r.status, r.text().as_str()), (200, "ok"));

    let err = refused(&["--wasm", "/nonexistent/guest.wasm"]);
    assert!(
        err.contains("cannot read --wasm /nonexistent/guest.wasm"),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("wasmlab-byo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let not_wasm = dir.join("not.wasm");
    std::fs::write(&not_wasm, b"hello").unwrap();
    let err = refused(&["--wasm", not_wasm.to_str().unwrap()]);
    assert!(err.contains("refused"), "{err}");
    let no_abi = dir.join("no-abi.wasm");
    std::fs::write(&no_abi, b"\0asm\x01\0\0\0").unwrap();
    let err = refused(&["--wasm", no_abi.to_str().unwrap()]);
    assert!(err.contains("does not export `memory`"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn over_the_pool_and_queue_clients_get_503_and_service_resumes() {
    let hostile = wasmlab_guest_artifacts::HOSTILE_CORE_PATH;
    let server = ServerProcess::start(
        BIN,
        &[
            "--wasm",
            hostile,
            "--max-instances",
            "1",
            "--max-queue",
            "1",
            "--queue-timeout-ms",
            "100",
            "--deadline-ms",
            "600",
        ],
    );
    let addr = server.addr;
    let rss_before = server.rss_kib();
    // The only instance spins until its deadline...
    let busy =
        std::thread::spawn(move || wasmlab_test_support::request(addr, "GET", "/loop", b"").status);
    std::thread::sleep(std::time::Duration::from_millis(100));
    // ...so of 20 clients at once, one may wait in the queue (and time out), the rest are turned away.
    let clients: Vec<_> = (0..20)
        .map(|_| {
            std::thread::spawn(move || wasmlab_test_support::request(addr, "GET", "/", b"").status)
        })
        .collect();
    let statuses: Vec<u16> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    assert!(statuses.iter().all(|&s| s == 503), "{statuses:?}");
    assert_eq!(busy.join().unwrap(), 504);
    let r = wasmlab_test_support::request(addr, "GET", "/", b"");
    assert_eq!(r.status, 200);
    eprintln!(
        "pool overflow: RSS {rss_before} KiB before, {} KiB after",
        server.rss_kib()
    );
}

#[test]
fn a_spinning_guest_does_not_starve_other_connections() {
    // One server thread, async guest calls: while a guest spins toward its deadline it yields
    // at every epoch tick, so the same thread still serves others. (Synchronous calls: see
    // tests/fairness.rs.)
    let hostile = wasmlab_guest_artifacts::HOSTILE_CORE_PATH;
    let server = ServerProcess::start(
        BIN,
        &[
            "--wasm",
            hostile,
            "--threads",
            "1",
            "--deadline-ms",
            "1500",
            "--guest-calls",
            "async",
        ],
    );
    let addr = server.addr;
    let busy =
        std::thread::spawn(move || wasmlab_test_support::request(addr, "GET", "/loop", b"").status);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let t = std::time::Instant::now();
    let r = wasmlab_test_support::request(addr, "GET", "/", b"");
    let took = t.elapsed();
    assert_eq!(r.status, 200);
    assert!(
        took < std::time::Duration::from_millis(500),
        "served only after {took:?}"
    );
    assert_eq!(busy.join().unwrap(), 504);
}
