//! The fast path: a fresh instance per request from a pre-linked module and a pooling allocator.

use std::sync::Arc;

use tokio::sync::Semaphore;
use wasmlab_gateway::{Capabilities, ExecRequest, Executor, Reply};
use wasmlab_guest_abi as abi;
use wasmtime::{
    Config, Engine, Extern, InstanceAllocationStrategy, InstancePre, Linker, Module, ModuleExport,
    PoolingAllocationConfig, Store, TypedFunc,
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
    alloc: ModuleExport,
    handle: ModuleExport,
    slots: Semaphore,
    caps: Arc<Capabilities>,
}

type AllocFn = TypedFunc<u32, u32>;
type HandleFn = TypedFunc<(u32, u32, u32, u32, u32, u32), u32>;

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
            // Reset a reused slot by memset rather than madvise for the first pages a request
            // touches: cheaper for small guests.
            .linear_memory_keep_resident(128 << 10)
            .table_keep_resident(16 << 10);
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
        let (memory, alloc, handle) = (
            export(abi::EXPORT_MEMORY)?,
            export(abi::EXPORT_ALLOC)?,
            export(abi::EXPORT_HANDLE)?,
        );
        let mut linker = Linker::new(&engine);
        imports::add_to_linker(&mut linker, |ctx| ctx)?;
        let pre = linker.instantiate_pre(&module)?;
        Ok(Self {
            engine,
            pre,
            memory,
            alloc,
            handle,
            slots: Semaphore::new(limits.max_instances.max(1) as usize),
            caps,
        })
    }

    async fn run(&self, req: &ExecRequest) -> anyhow::Result<Reply> {
        let mut store = Store::new(&self.engine, HostCtx::new(self.caps.clone()));
        let instance = self.pre.instantiate_async(&mut store).await?;
        let get = |store: &mut Store<HostCtx>, e: &ModuleExport| {
            instance
                .get_module_export(store, e)
                .expect("export indices come from this module")
        };
        let Extern::Memory(memory) = get(&mut store, &self.memory) else {
            anyhow::bail!("guest export `memory` is not a memory");
        };
        let alloc: AllocFn = get(&mut store, &self.alloc)
            .into_func()
            .ok_or_else(|| anyhow::anyhow!("`{}` is not a function", abi::EXPORT_ALLOC))?
            .typed(&store)?;
        let handle: HandleFn = get(&mut store, &self.handle)
            .into_func()
            .ok_or_else(|| anyhow::anyhow!("`{}` is not a function", abi::EXPORT_HANDLE))?
            .typed(&store)?;

        // Method, target and body go into one guest allocation, back to back.
        let (method, target) = (req.method.as_str().as_bytes(), req.target.as_bytes());
        let total = method.len() + target.len() + req.body.len();
        let total32 = u32::try_from(total).map_err(|_| anyhow::anyhow!("request too large"))?;
        let base = alloc.call_async(&mut store, total32).await?;
        let mut at = base as usize;
        let mut parts = [(0u32, 0u32); 3];
        for (slot, bytes) in parts.iter_mut().zip([method, target, &req.body[..]]) {
            memory
                .write(&mut store, at, bytes)
                .map_err(|_| anyhow::anyhow!("guest allocation at {base} out of bounds"))?;
            *slot = (at as u32, bytes.len() as u32);
            at += bytes.len();
        }
        let [(mp, ml), (tp, tl), (bp, bl)] = parts;
        let desc = handle
            .call_async(&mut store, (mp, ml, tp, tl, bp, bl))
            .await?;
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
        self.run(&req)
            .await
            .unwrap_or_else(|e| Reply::text(500, format!("guest failed: {e:#}")))
    }
}
