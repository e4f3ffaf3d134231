//! The load generator's integration tests, one binary (see docs/testing.md): real servers on
//! loopback ports, measured as `wasmlab-load` measures them.

mod common;

mod count;
mod framing;
mod h2;
mod open_loop;
mod tls;
mod warm_up;
