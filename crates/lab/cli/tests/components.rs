//! The wasi:http components, each started by the lab, verified on every route (hello, compute's
//! digest, state's counter on the upstream, proxy through the lab's upstream, echo, 404, 405) and
//! measured for a moment: wasmlab's Rust component in the Wasm gateway's component executor
//! (compiled at start and from a .cwasm, and recycled) and in `wasmtime serve` (and, built as a WASI 0.3
//! component, in the gateway's executor and `wasmtime serve`, both reusing instances), and the
//! JavaScript component in
//! both. One whose tool is not here is skipped, said so; the JavaScript ones are never set up by a
//! test (`--no-setup`): `wasmlab setup js-component` installs componentize-js.

mod support;

use support::*;

#[test]
fn component_pooled() {
    verified_and_measured("component-pooled");
}

#[test]
fn component_recycled() {
    verified_and_measured("component-recycled");
}

#[test]
fn component_pooled_from_a_precompiled_component() {
    verified_and_measured("component-pooled-cwasm");
}

/// Skipped (the reason printed) until `wasmlab setup component-wasmtime-serve` has installed the
/// Wasmtime CLI: a 12-minute build is no test's to start.
#[test]
fn component_wasmtime_serve() {
    verified_and_measured("component-wasmtime-serve");
}

/// The same handlers as a WASI 0.3 component, whose instances `wasmtime serve` reuses: every
/// route answers as a fresh instance's would (the counter is the upstream's).
#[test]
fn component_p3_wasmtime_serve() {
    verified_and_measured("component-p3-wasmtime-serve");
}

/// The same component in the gateway's executor that reuses instances as `wasmtime serve` does.
#[test]
fn component_p3_reused() {
    verified_and_measured("component-p3-reused");
}

/// The same, from the component the gateway precompiled with the reused executor's settings.
#[test]
fn component_p3_reused_from_a_precompiled_component() {
    verified_and_measured("component-p3-reused-cwasm");
}

/// Skipped until `wasmlab setup js-component` has installed componentize-js from npm.
#[test]
fn js_component() {
    verified_and_measured_with("js-component", &["--no-setup"]);
}

/// Skipped until componentize-js and the Wasmtime CLI are set up.
#[test]
fn js_component_wasmtime_serve() {
    verified_and_measured_with("js-component-wasmtime-serve", &["--no-setup"]);
}
