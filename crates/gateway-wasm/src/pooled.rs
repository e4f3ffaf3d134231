//! The fast path: a fresh instance per request from a pre-linked module and a pooling allocator.

use std::sync::Arc;

use tokio::sync::Semaphore;
use wasmlab_gateway::{Capabilities, ExecRequest, Executor, Reply};
use wasmlab_guest_abi as abi;
use wasmtime::{
    Config, Enabled, Engine, Extern, InstanceAllocationStrategy, InstancePre, Linker, Module,
    ModuleExport, PoolingAllocationConfig, Store, TypedFunc,
};

use crate::imports::{self, HostCtx};

/// How much the instance pool may hold.
#[derive(Debug, Clone, Copy)]
pub struct PoolLimits {
    /// Instances alive at once; requests beyond this wait for a slot.
    pub max_instances: u32,
    /// Largest linear memory one instance may grow to (bytes).
    pub max_memory_bytes: usize,
}

impl Default for PoolLimits {
    fn default() -> Self {
        Self {
            max_instances: 1024,
            max_memory_bytes: 64 << 20,
        }
    }
}

pub struct PooledExecutor {
    engine: Engine,
    pre: InstancePre<HostCtx>,
    memory: ModuleExport,
    handle: ModuleExport,
    slots: Semaphore,
    caps: Arc<Capabilities>,
}

type HandleFn = TypedFunc<(), u32>;

impl PooledExecutor {
    /// Compiles `wasm` (a core module implementing the handler ABI) and links it once.
    pub fn new(wasm: &[u8], caps: Arc<Capabilities>, limits: PoolLimits) -> anyhow::Result<Self> {
        let engine = Engine::new(&Self::config(limits))?;
        let module = Module::new(&engine, wasm)?;
        Self::from_module(engine, module, caps, limits)
    }

    fn config(limits: PoolLimits) -> Config {
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
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        config
    }

    fn from_module(
        engine: Engine,
        module: Module,
        caps: Arc<Capabilities>,
        limits: PoolLimits,
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
        imports::add_to_linker(&mut linker, |ctx| ctx)?;
        let pre = linker.instantiate_pre(&module)?;
        Ok(Self {
            engine,
            pre,
            memory,
            handle,
            slots: Semaphore::new(limits.max_instances.max(1) as usize),
            caps,
        })
    }

    async fn run(&self, req: ExecRequest) -> anyhow::Result<Reply> {
        // The guest pulls the request through the `request_*` imports during its one call.
        let mut store = Store::new(&self.engine, HostCtx::with_request(self.caps.clone(), req));
        let instance = self.pre.instantiate_async(&mut store).await?;
        let Some(Extern::Memory(memory)) = instance.get_module_export(&mut store, &self.memory)
        else {
            anyhow::bail!("guest export `{}` is not a memory", abi::EXPORT_MEMORY);
        };
        let handle: HandleFn = instance
            .get_module_export(&mut store, &self.handle)
            .and_then(Extern::into_func)
            .ok_or_else(|| {
                anyhow::anyhow!("guest export `{}` is not a function", abi::EXPORT_HANDLE)
            })?
            .typed(&store)?;
        let desc = handle.call_async(&mut store, ()).await?;
        let resp = abi::read_response(memory.data(&store), desc)?;
        let headers = resp.headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        Reply::from_parts(resp.status, headers, resp.body).map_err(anyhow::Error::msg)
    }
}

impl Executor for PooledExecutor {
    fn name(&self) -> &'static str {
        "wasmtime-pooled"
    }

    async fn execute(&self, req: ExecRequest) -> Reply {
        // The semaphore keeps live instances within the pool, so instantiation never fails for
        // want of a slot; waiting requests queue here.
        let Ok(_slot) = self.slots.acquire().await else {
            return Reply::text(503, "executor shut down");
        };
        self.run(req)
            .await
            .unwrap_or_else(|e| Reply::guest_failed(&e))
    }
}
