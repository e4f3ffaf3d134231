//! The native gateway binary on an ephemeral port: every route, malformed requests, both modes.

use wasmlab_test_support::{ServerProcess, check_every_route, echo_of, request, spawn_upstream};

const BIN: &str = env!("CARGO_BIN_EXE_wasmlab-gateway-native");

#[test]
fn keep_alive_gateway_serves_every_route() {
    let (_rt, up) = spawn_upstream();
    let server = ServerProcess::start(BIN, &["--upstream", &up]);
    check_every_route(server.addr, &echo_of("GET", "/proxy"));
}

#[test]
fn connection_close_gateway_serves_every_route_and_closes() {
    let (_rt, up) = spawn_upstream();
    let server = ServerProcess::start(
        BIN,
        &["--upstream", &up, "--connection-close", "--threads", "1"],
    );
    check_every_route(server.addr, &echo_of("GET", "/proxy"));
    // Even a client asking for keep-alive gets Connection: close.
    let r = wasmlab_test_support::send_raw(
        server.addr,
        b"GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n",
    );
    assert_eq!(r.header("connection"), Some("close"));
}

#[test]
fn proxy_without_upstream_is_502_and_oversized_body_is_413() {
    let server = ServerProcess::start(BIN, &["--max-body-bytes", "1000"]);
    assert_eq!(request(server.addr, "GET", "/proxy", b"").status, 502);
    assert_eq!(
        request(server.addr, "POST", "/echo", &[b'x'; 1001]).status,
        413
    );
    assert_eq!(
        request(server.addr, "POST", "/echo", &[b'x'; 1000]).status,
        200
    );
}
