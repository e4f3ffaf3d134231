//! Each fuzz target builds and runs its seed input once (a libFuzzer binary given a file runs it
//! and exits 0 when no check failed). Fuzzing proper is `cargo +nightly fuzz run TARGET`.

fn run_seed(binary: &str, seed: &str) {
    let seed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("seeds")
        .join(seed);
    let out = std::process::Command::new(binary)
        .arg(&seed)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{binary} on {}: {}",
        seed.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn guest_abi_response_runs_its_seed() {
    run_seed(
        env!("CARGO_BIN_EXE_guest_abi_response"),
        "guest_abi_response.bin",
    );
}

#[test]
fn gateway_request_runs_its_seed() {
    run_seed(env!("CARGO_BIN_EXE_gateway_request"), "gateway_request.bin");
}

#[test]
fn recycled_equals_fresh_runs_its_seed() {
    run_seed(
        env!("CARGO_BIN_EXE_recycled_equals_fresh"),
        "recycled_equals_fresh.bin",
    );
}

#[test]
fn component_recycled_equals_fresh_runs_its_seed() {
    run_seed(
        env!("CARGO_BIN_EXE_component_recycled_equals_fresh"),
        "component_recycled_equals_fresh.bin",
    );
}
