//! The fast path: a fresh instance per request from a pre-linked module and a pooling allocator.

use std::sync::Arc;

use bytes::Bytes;

use wasmlab_gateway::admission::Admission;
use wasmlab_gateway::{Capabilities, ExecRequest, Executor, Failure, Reply};
use wasmlab_guest_abi as abi;
use wasmtime::{
    Config, Enabled, Engine, Extern, InstanceAllocationStrategy, InstancePre, Linker, Module,
    ModuleExport, PoolingAllocationConfig, Store, TypedFunc,
};

use crate::imports::{self, HostCtx};
use crate::limits::{EpochTicker, GuestLimits, arm_deadline, guest_failure};

pub struct PooledExecutor {
    engine: Engine,
    pre: InstancePre<HostCtx>,
    memory: ModuleExport,
    handle: ModuleExport,
    /// Keeps live instances within the pool, so instantiation never fails for want of a slot.
    admission: Admission,
    limits: GuestLimits,
    _ticker: EpochTicker,
}

type HandleFn = TypedFunc<(), u32>;

impl PooledExecutor {
    /// Compiles `wasm` (a core module implementing the handler ABI) and links it once.
    pub fn new(wasm: &[u8], caps: Arc<Capabilities>, limits: GuestLimits) -> anyhow::Result<Self> {
        let engine = Engine::new(&Self::config(limits))?;
        let module = Module::new(&engine, wasm)?;
        Self::from_module(engine, module, caps, limits)
    }

    /// Loads a module precompiled by [`PooledExecutor::precompile`] (a `.cwasm` file), mapping it
    /// instead of compiling: the cold-start path of a cached module.
    ///
    /// # Safety
    /// The file must be one written by `precompile` (of any trusted build): Wasmtime checks that
    /// its version and settings match, but trusts the machine code inside.
    pub unsafe fn from_precompiled_file(
        path: &std::path::Path,
        caps: Arc<Capabilities>,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        let engine = Engine::new(&Self::config(limits))?;
        // SAFETY: passed on to the caller (see above).
        let module = unsafe { Module::deserialize_file(&engine, path)? };
        Self::from_module(engine, module, caps, limits)
    }

    /// Compiles `wasm` ahead of time with the settings the pooled executor runs it with: the bytes
    /// of a `.cwasm` file for [`PooledExecutor::from_precompiled_file`].
    pub fn precompile(wasm: &[u8], limits: GuestLimits) -> anyhow::Result<Vec<u8>> {
        let engine = Engine::new(&Self::config(limits))?;
        Ok(engine.precompile_module(wasm)?)
    }

    /// Whether `bytes` are a module precompiled by Wasmtime (rather than Wasm or WAT).
    pub fn is_precompiled(bytes: &[u8]) -> bool {
        Engine::detect_precompiled(bytes).is_some()
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
            .max_memory_size(limits.max_memory_bytes)
            // Reset a reused slot by memset rather than madvise: no syscall, and no page faults
            // when the slot is reused. PAGEMAP_SCAN (reset only dirtied pages) was measured slower
            // here for a one-page guest: its ioctl costs more than a 64 KiB memset.
            .linear_memory_keep_resident(128 << 10)
            .table_keep_resident(64 << 10)
            .pagemap_scan(Enabled::No);

        let mut config = Config::new();
        config
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
            .epoch_interruption(true);
        config
    }

    fn from_module(
        engine: Engine,
        module: Module,
        caps: Arc<Capabilities>,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        let export = |name: &str| {
            module
                .get_export_index(name)
                .ok_or_else(|| anyhow::anyhow!("the guest does not export `{name}` (handler ABI)"))
        };
        let (memory, handle) = (export(abi::EXPORT_MEMORY)?, export(abi::EXPORT_HANDLE)?);
        // Checked once here, so each request can skip the check (see `run`).
        let handle_ty = module
            .get_export(abi::EXPORT_HANDLE)
            .and_then(|e| e.func().cloned());
        anyhow::ensure!(
            handle_ty.is_some_and(
                |t| t.params().len() == 0 && t.results().map(|r| r.is_i32()).eq([true])
            ),
            "the guest's `{}` must be a function of type () -> i32 (handler ABI)",
            abi::EXPORT_HANDLE
        );
        anyhow::ensure!(
            module
                .get_export(abi::EXPORT_MEMORY)
                .is_some_and(|e| e.memory().is_some()),
            "the guest's `{}` export must be a memory (handler ABI)",
            abi::EXPORT_MEMORY
        );
        let mut linker = Linker::new(&engine);
        imports::add_to_linker(&mut linker, |ctx| ctx, &caps)?;
        let pre = linker.instantiate_pre(&module)?;
        let ticker = EpochTicker::start(&engine, limits.tick())?;
        Ok(Self {
            _ticker: ticker,
            admission: Admission::new(
                limits.max_instances.max(1) as usize,
                limits.max_queue,
                limits.queue_timeout,
            ),
            limits,
            engine,
            pre,
            memory,
            handle,
        })
    }

    async fn run(&self, req: ExecRequest) -> anyhow::Result<Reply> {
        // The guest pulls the request through the `request_*` imports during its one call.
        let mut store = Store::new(&self.engine, HostCtx::with_request(req, &self.limits));
        store.limiter(|ctx| &mut ctx.limits);
        arm_deadline(&mut store, HostCtx::deadline);
        let instance = self.pre.instantiate_async(&mut store).await?;
        let export = |store: &mut Store<HostCtx>, e| {
            instance
                .get_module_export(store, e)
                .expect("export indices come from this module")
        };
        let Extern::Memory(memory) = export(&mut store, &self.memory) else {
            unreachable!("export types checked in from_module");
        };
        let Extern::Func(handle) = export(&mut store, &self.handle) else {
            unreachable!("export types checked in from_module");
        };
        store.data_mut().set_memory(memory);
        // SAFETY: `from_module` checked that the export is a `() -> i32` function.
        let handle: HandleFn = unsafe { TypedFunc::new_unchecked(&store, handle) };
        let desc = handle.call_async(&mut store, ()).await?;
        let resp = abi::view_response(memory.data(&store), desc)?;
        let body = Bytes::copy_from_slice(resp.body);
        Reply::from_parts(resp.status, resp.headers(), body).map_err(anyhow::Error::msg)
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
        let _slot = match self.admission.enter().await {
            Ok(slot) => slot,
            Err(busy) => return Ok(busy),
        };
        self.run(req)
            .await
            .map_err(|e| guest_failure(&e, &self.limits))
    }
}
