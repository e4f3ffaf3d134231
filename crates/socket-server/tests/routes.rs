//! The socket server natively (this workspace's build), started on an ephemeral loopback port:
//! every route as the gateways answer it, its limits, and keep-alive with each response framed
//! right. Its wasm32-wasip2 build is verified by the lab's tests (crates/lab/cli/tests/peers.rs)
//! when the Wasmtime CLI is set up.

use wasmlab_test_support::{
    KeepAlive, ServerProcess, check_every_route, echo_of, request, spawn_upstream,
};

const BIN: &str = env!("CARGO_BIN_EXE_wasmlab-socket-server");

#[test]
fn answers_every_route_as_the_gateways_do() {
    let (_rt, upstream) = spawn_upstream();
    let server = ServerProcess::start(BIN, &["--upstream", &upstream]);
    check_every_route(server.addr, &echo_of("GET", "/proxy"));
}

#[test]
fn keeps_the_connection_alive_and_frames_every_response() {
    let server = ServerProcess::start(BIN, &[]);
    let mut conn = KeepAlive::connect(server.addr);
    for n in 1..=3u64 {
        let r = conn.get("/state");
        assert_eq!((r.status, r.text()), (200, n.to_string()));
    }
    assert_eq!(conn.get("/").text(), "hello");
    assert!(conn.leftover().is_empty());
}

#[test]
fn refuses_a_body_over_its_limit_and_proxies_nowhere_without_an_upstream() {
    let server = ServerProcess::start(BIN, &["--max-body-bytes", "16"]);
    let r = request(server.addr, "POST", "/echo", &[b'x'; 17]);
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(
        request(server.addr, "POST", "/echo", &[b'x'; 16]).status,
        200
    );
    let r = request(server.addr, "GET", "/proxy", b"");
    assert_eq!(r.status, 502);
    assert!(r.text().contains("no upstream"), "{}", r.text());
}

#[test]
fn bad_arguments_are_refused() {
    let out = std::process::Command::new(BIN)
        .args(["--host", "localhost:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not an IP address"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = std::process::Command::new(BIN)
        .args(["--upstream", "ftp://x"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be an http://host:port URL"));
}
