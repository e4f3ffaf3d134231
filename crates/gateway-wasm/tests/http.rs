//! The Wasm gateway binary on an ephemeral port, with each executor: every route and malformed
//! requests, as for the native gateway.

use wasmlab_gateway::test_support::{ServerProcess, check_every_route, echo_of, spawn_upstream};

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
    let r = wasmlab_gateway::test_support::request(server.addr, "GET", "/trap", b"");
    assert_eq!(r.status, 500);
    let r = wasmlab_gateway::test_support::request(server.addr, "GET", "/loop", b"");
    assert_eq!(r.status, 504);
    let r = wasmlab_gateway::test_support::request(server.addr, "GET", "/", b"");
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
