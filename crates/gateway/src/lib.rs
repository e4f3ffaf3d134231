//! The wasmlab gateway: an HTTP server (HTTP/1.1; HTTP/2 and TLS when asked) on hyper 1 and
//! tokio that hands each request to an [`Executor`]. This crate holds the server, the host
//! capabilities and the native executor; it links no Wasm engine, so the native binary's size and
//! cold start pay nothing for Wasm. The Wasm executors live in `wasmlab-gateway-wasm` and plug
//! into the same server.

pub mod admission;
pub mod cli;
mod connections;
pub mod executor;
pub mod idle;
pub mod log;
mod memory;
pub mod process;
mod protocol;
pub mod send;
pub mod server;
pub mod tls;

pub use executor::{ExecRequest, Executor, Failure, NativeExecutor, Reply};
pub use server::{ServerConfig, serve, serve_connection};
pub use wasmlab_capabilities::Capabilities;
