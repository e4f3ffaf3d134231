//! Wasmtime executors for the wasmlab gateway.
//!
//! - [`PooledExecutor`]: the fast path. One `Engine` with the pooling allocator, the module linked
//!   once (`InstancePre`), export handles resolved once, and per request a fresh `Store` and
//!   instance of the core-module guest: full isolation between requests.
//! - [`KeptExecutor`]: instances kept between requests, either reset to a fresh instance's state
//!   after each ([`Reuse::Recycled`]: the same isolation, without making an instance) or not at
//!   all ([`Reuse::Shared`]: no isolation, as plugin hosts run).
//! - [`ComponentExecutor`]: `wasi:http/proxy` components, a fresh instance per request, as
//!   `wasmtime serve` runs them, under the pooled executor's limits and rules; or instances kept
//!   and reset to a fresh instance's memory and globals after each request (`component-recycled`,
//!   `component_reset/`: the 1 KiB blocks each request wrote, in every core module).
//! - [`ReusedComponentExecutor`]: WASI 0.3 `wasi:http/service` components, one instance serving
//!   up to [`REQUESTS_PER_INSTANCE`] requests one after another, as `wasmtime serve` reuses them:
//!   requests share an instance's memory.
//! - [`NaiveExecutor`]: the gateway study's method, kept to show what it costs. Per request a new
//!   `Linker` with WASI, an in-memory stdin/stdout, a `Store`, instantiation and `_start` of the
//!   WASI command guest.

mod calls;
pub mod cli;
#[cfg(feature = "components")]
mod component;
#[cfg(all(feature = "components", feature = "compiler"))]
mod component_reset;
#[cfg(feature = "components-p3")]
mod component_reused;
pub mod differential;
mod guest;
mod imports;
mod instance_pool;
mod kept;
mod limits;
mod load;
#[cfg(feature = "compiler")]
mod naive;
mod pooled;
pub mod reset;
#[cfg(feature = "components")]
mod resettable;

#[cfg(feature = "components")]
pub use component::{ComponentExecutor, ComponentOptions};
#[cfg(feature = "components-p3")]
pub use component_reused::{REQUESTS_PER_INSTANCE, ReusedComponentExecutor};
pub use imports::HostCtx;
pub use kept::{KeptExecutor, Reuse};
pub use limits::{GuestCalls, GuestLimits};
pub use load::{Load, Source};
#[cfg(feature = "compiler")]
pub use naive::NaiveExecutor;
pub use pooled::PooledExecutor;
