//! The Wasm gateway's integration tests, one binary: as ten binaries, each compiled Wasmtime's
//! generic code again (25-55 s each on 2 cores; see docs/testing.md).

mod common;

mod components;
mod executors;
mod fairness;
mod framing;
mod hostile;
mod http;
mod isolation;
#[cfg(feature = "components-p3")]
mod reused;
mod runaway;
mod soak;
