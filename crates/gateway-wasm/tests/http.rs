//! The Wasm gateway binary on an ephemeral port, with each executor: every route and malformed
//! requests, as for the native gateway.

use wasmlab_gateway::test_support::{ServerProcess, check_every_route};

const BIN: &str = env!("CARGO_BIN_EXE_wasmlab-gateway-wasm");

fn check_executor(executor: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let up = rt
        .block_on(wasmlab_upstream::spawn("127.0.0.1:0".parse().unwrap()))
        .unwrap();
    let server = ServerProcess::start(
        BIN,
        &[
            "--executor",
            executor,
            "--upstream",
            &format!("http://{up}"),
        ],
    );
    check_every_route(server.addr, &wasmlab_upstream::echo_of("GET", "/proxy"));
}

#[test]
fn pooled_gateway_serves_every_route() {
    check_executor("pooled");
}

#[test]
fn naive_gateway_serves_every_route() {
    check_executor("naive");
}
