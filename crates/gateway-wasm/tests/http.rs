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
