//! Wasmtime executors for the wasmlab gateway.
//!
//! - [`PooledExecutor`]: the fast path. One `Engine` with the pooling allocator, the module linked
//!   once (`InstancePre`), export handles resolved once, and per request a fresh `Store` and
//!   instance of the core-module guest: full isolation between requests.
//! - [`NaiveExecutor`]: the gateway study's method, kept to show what it costs. Per request a new
//!   `Linker` with WASI, an in-memory stdin/stdout, a `Store`, instantiation and `_start` of the
//!   WASI command guest.

mod imports;
mod limits;
mod naive;
mod pooled;

pub use imports::HostCtx;
pub use limits::GuestLimits;
pub use naive::NaiveExecutor;
pub use pooled::PooledExecutor;
