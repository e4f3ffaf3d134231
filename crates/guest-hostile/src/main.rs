//! The hostile guest as a WASI command (for the naive executor).

#[cfg(target_arch = "wasm32")]
fn main() {
    wasmlab_guest_core::run_command(wasmlab_guest_hostile::hostile);
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("wasmlab-guest-hostile is a Wasm guest: it is built by wasmlab-guest-artifacts");
    std::process::exit(2);
}
