//! The handlers as a proxy-wasm HTTP filter: the extension ABI of Envoy (and of the gateways built
//! on it), whose Wasm runtimes (V8, Wasmtime, WAMR) run one instance of the filter per worker
//! thread, shared by every request that thread serves.
//!
//! The filter answers each request itself with a local reply, as `direct_response` does for
//! Envoy's native routes: it reads the request (headers, then the whole body where there is one),
//! runs the shared handlers and sends their response. `/proxy` is an HTTP call to the cluster
//! named [`UPSTREAM_CLUSTER`], answered later by the host, so the handler's future is kept between
//! the two callbacks ([`Exchange`]); `/state`'s counter is the host's shared data, which every
//! instance with the same VM id sees.
//!
//! [`Exchange`] is plain Rust, tested natively; the filter around it is built for Wasm only.

mod exchange;
#[cfg(target_arch = "wasm32")]
mod filter;

pub use exchange::{Calls, Exchange};

/// The cluster a proxy-wasm host must define for `/proxy`: the lab's upstream.
pub const UPSTREAM_CLUSTER: &str = "wasmlab_upstream";

/// The shared-data key of `/state`'s counter (a little-endian u64).
pub const COUNTER_KEY: &str = "wasmlab.state";

/// The plugin configuration that adds the hostile route [`TRAP_PATH`]: for the tests of a host's
/// behaviour when a filter traps, never set by the lab's variants.
pub const TRAP_CONFIGURATION: &str = "trap-route";

/// With [`TRAP_CONFIGURATION`], a request for this path makes the filter trap.
pub const TRAP_PATH: &str = "/wasmlab/trap";
