//! The fast path: a fresh instance per request from a pre-linked module and a pooling allocator.

use std::sync::Arc;

use wasmlab_gateway::{Capabilities, ExecRequest, Executor, Failure, Reply};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::guest::LinkedGuest;
use crate::imports::HostCtx;
use crate::limits::{GuestCalls, GuestLimits};
use crate::load::{Load, Source, core_module};

pub struct PooledExecutor {
    guest: LinkedGuest,
}

impl PooledExecutor {
    /// Compiles `wasm` (a core module implementing the handler ABI) and links it once.
    #[cfg(feature = "compiler")]
    pub fn new(wasm: &[u8], caps: Arc<Capabilities>, limits: GuestLimits) -> anyhow::Result<Self> {
        // SAFETY: Wasm, not a precompiled file.
        unsafe { Self::load(Source::Wasm(wasm), (), caps, limits) }
    }

    /// Loads a module precompiled by [`Load::precompile`] (a `.cwasm` file), mapping it instead
    /// of compiling: the cold-start path of a cached module.
    ///
    /// # Safety
    /// As [`Load::load`]: the file must be one `precompile` wrote.
    pub unsafe fn from_precompiled_file(
        path: &std::path::Path,
        caps: Arc<Capabilities>,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        // SAFETY: passed on to the caller.
        unsafe { Self::load(Source::Precompiled(path), (), caps, limits) }
    }

    /// Compiles `wasm` ahead of time (see [`Load::precompile`]).
    #[cfg(feature = "compiler")]
    pub fn precompile(wasm: &[u8], limits: GuestLimits) -> anyhow::Result<Vec<u8>> {
        <Self as Load>::precompile(wasm, &(), limits)
    }

    /// Whether `bytes` are a module precompiled by Wasmtime (rather than Wasm or WAT).
    pub fn is_precompiled(bytes: &[u8]) -> bool {
        Engine::detect_precompiled(bytes).is_some()
    }

    /// Whether the file at `path` is a module or component precompiled by Wasmtime, read from its
    /// header only (a precompiled JavaScript engine is tens of megabytes, mapped rather than read).
    pub fn is_precompiled_file(path: &std::path::Path) -> std::io::Result<bool> {
        use std::io::Read;
        // Precompiled files are ELF objects: anything else (Wasm, WAT, a short file) is not one.
        let mut magic = [0u8; 4];
        let mut file = std::fs::File::open(path)?;
        if file.read_exact(&mut magic).is_err() || magic != *b"\x7fELF" {
            return Ok(false);
        }
        Ok(matches!(Engine::detect_precompiled_file(path), Ok(Some(_))))
    }

    /// The Wasmtime settings the executor runs guests with (pooling allocator sized by `limits`,
    /// epoch interruption): for tools that compile or measure outside the executor.
    pub fn config(limits: GuestLimits) -> Config {
        let n = limits.max_instances.max(1);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_core_instances(n)
            .total_memories(n)
            .total_tables(n)
            .total_stacks(n)
            .total_component_instances(0)
            .max_memory_size(limits.max_memory_bytes);
        // By default a reused slot is reset by memset rather than madvise: no syscall, and no
        // page faults when the slot is reused. PAGEMAP_SCAN (reset only dirtied pages) was
        // measured slower here for a one-page guest: its ioctl costs more than a 64 KiB memset.
        limits.reset_slots(&mut pool);

        let mut config = Config::new();
        config
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
            .epoch_interruption(true);
        // Core modules only. The component executor and wasmtime-wasi (the naive executor) turn
        // Wasmtime's component-model feature on, and a module compiled with it on would not load
        // in the gateway built without them, where it is off.
        #[cfg(any(feature = "compiler", feature = "components"))]
        config.wasm_component_model(false);
        // Nothing runs concurrently in a core module's store. The reused component executor
        // turns Wasmtime's component-model-async feature on, whose default would give every
        // store that bookkeeping, and a module compiled with it would not load in the build
        // without the feature.
        config.concurrency_support(false);
        config
    }

    async fn run(&self, req: ExecRequest) -> anyhow::Result<Reply> {
        // The guest pulls the request through the `request_*` imports during its one call.
        let call = self.guest.call_for(&req.target);
        let ctx = HostCtx::with_request(req, self.guest.limits());
        let mut store = self.guest.store(ctx, call);
        let ready = self.guest.instantiate(&mut store, call).await?;
        let reply = ready.call(&mut store).await;
        self.guest.note_waiting(&store);
        reply
    }
}

impl Executor for PooledExecutor {
    fn name(&self) -> &'static str {
        "wasmtime-pooled"
    }

    /// A fresh instance costs microseconds: under load, replies in bursts pay (see the server).
    fn defer_replies_when_busy(&self) -> bool {
        true
    }

    async fn execute(&self, req: ExecRequest) -> Result<Reply, Failure> {
        self.guest.admit(|| self.run(req)).await
    }
}

impl Load for PooledExecutor {
    type Options = ();
    /// The cheaper in the A/B of docs/pooled-cost.md.
    const DEFAULT_CALLS: Option<GuestCalls> = Some(GuestCalls::Sync);

    unsafe fn load(
        source: Source<'_>,
        (): (),
        caps: Arc<Capabilities>,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        let engine = Engine::new(&Self::config(limits))?;
        // SAFETY: passed on to the caller.
        let module = unsafe { core_module(&engine, source)? };
        let guest = LinkedGuest::new(engine, module, &caps, &limits, Self::DEFAULT_CALLS)?;
        Ok(Self { guest })
    }

    #[cfg(feature = "compiler")]
    fn precompile(wasm: &[u8], (): &(), limits: GuestLimits) -> anyhow::Result<Vec<u8>> {
        let engine = Engine::new(&Self::config(limits))?;
        Ok(engine.precompile_module(wasm)?)
    }
}

#[cfg(all(test, feature = "compiler"))]
mod tests {
    use super::*;
    use crate::guest::Call;

    #[test]
    fn a_path_that_waited_in_a_host_call_is_called_async_from_then_on() {
        let (_upstream_rt, up) = wasmlab_test_support::spawn_upstream();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let _in_runtime = rt.enter();
        let caps = Arc::new(Capabilities::new(Some(&up)).unwrap());
        let limits = GuestLimits {
            max_instances: 4,
            calls: GuestCalls::Sync,
            ..GuestLimits::default()
        };
        let ex = PooledExecutor::new(wasmlab_guest_artifacts::CORE, caps, limits).unwrap();
        let get = |target: &str| {
            let req = ExecRequest::new(hyper::Method::GET, target, bytes::Bytes::new());
            rt.block_on(ex.execute(req)).unwrap().status
        };
        assert_eq!(ex.guest.call_for("/proxy"), Call::Sync);
        // Synchronous: it waits for the upstream off the worker, and its path is remembered.
        assert_eq!(get("/proxy?n=1"), 200);
        assert_eq!(ex.guest.call_for("/proxy"), Call::Async);
        assert_eq!(ex.guest.call_for("/"), Call::Sync);
        assert_eq!((get("/proxy"), get("/")), (200, 200));

        // A guest that imports nothing that waits is never linked for async calls.
        let wat = r#"(module
            (memory (export "memory") 1)
            (func (export "wasmlab_handle") (result i32) (i32.const 0)))"#;
        let caps = Arc::new(Capabilities::new(None).unwrap());
        let ex = PooledExecutor::new(wat.as_bytes(), caps, limits).unwrap();
        ex.guest.waiting.remember("/anything");
        assert_eq!(ex.guest.call_for("/anything"), Call::Sync);
    }
}
