//! A core-module guest compiled and linked once, ready to instantiate: what every executor of the
//! handler ABI shares, whether it makes a fresh instance per request or keeps instances.

use std::sync::Arc;

use bytes::Bytes;
use wasmlab_gateway::{Capabilities, Reply};
use wasmlab_guest_abi as abi;
use wasmtime::{
    Engine, Extern, Instance, InstancePre, Linker, Memory, Module, ModuleExport, Store, TypedFunc,
};

use crate::imports::{self, HostCtx};
use crate::limits::{EpochTicker, GuestLimits, arm_deadline};

type HandleFn = TypedFunc<(), u32>;

pub(crate) struct LinkedGuest {
    pub engine: Engine,
    pre: InstancePre<HostCtx>,
    memory: ModuleExport,
    handle: ModuleExport,
    _ticker: EpochTicker,
}

/// An instance with its exports resolved.
pub(crate) struct Ready {
    pub instance: Instance,
    pub memory: Memory,
    handle: HandleFn,
}

impl LinkedGuest {
    /// Checks `module` against the handler ABI and links it with the host's imports.
    pub fn new(
        engine: Engine,
        module: Module,
        caps: &Arc<Capabilities>,
        limits: &GuestLimits,
    ) -> anyhow::Result<Self> {
        let export = |name: &str| {
            module
                .get_export_index(name)
                .ok_or_else(|| anyhow::anyhow!("the guest does not export `{name}` (handler ABI)"))
        };
        let (memory, handle) = (export(abi::EXPORT_MEMORY)?, export(abi::EXPORT_HANDLE)?);
        // Checked once here, so each request can skip the check (see `instantiate`).
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
        imports::add_to_linker(&mut linker, |ctx| ctx, caps)?;
        let pre = linker.instantiate_pre(&module)?;
        let ticker = EpochTicker::start(&engine, limits.tick())?;
        Ok(Self {
            _ticker: ticker,
            engine,
            pre,
            memory,
            handle,
        })
    }

    /// A store for one or more requests: the memory limiter and the deadline armed.
    pub fn store(&self, ctx: HostCtx) -> Store<HostCtx> {
        let mut store = Store::new(&self.engine, ctx);
        store.limiter(|ctx| &mut ctx.limits);
        arm_deadline(&mut store, HostCtx::deadline);
        store
    }

    /// Instantiates the guest in `store` and resolves its exports by index.
    pub async fn instantiate(&self, store: &mut Store<HostCtx>) -> anyhow::Result<Ready> {
        let instance = self.pre.instantiate_async(&mut *store).await?;
        let mut export = |e| {
            instance
                .get_module_export(&mut *store, e)
                .expect("export indices come from this module")
        };
        let Extern::Memory(memory) = export(&self.memory) else {
            unreachable!("export types checked in LinkedGuest::new");
        };
        let Extern::Func(handle) = export(&self.handle) else {
            unreachable!("export types checked in LinkedGuest::new");
        };
        store.data_mut().set_memory(memory);
        // SAFETY: `new` checked that the export is a `() -> i32` function.
        let handle: HandleFn = unsafe { TypedFunc::new_unchecked(&*store, handle) };
        Ok(Ready {
            instance,
            memory,
            handle,
        })
    }
}

impl Ready {
    /// Runs the request held by the store's [`HostCtx`]: one call, and the response read back and
    /// checked.
    pub async fn call(&self, store: &mut Store<HostCtx>) -> anyhow::Result<Reply> {
        let desc = self.handle.call_async(&mut *store, ()).await?;
        let resp = abi::view_response(self.memory.data(&*store), desc)?;
        let body = Bytes::copy_from_slice(resp.body);
        Reply::from_parts(resp.status, resp.headers(), body).map_err(anyhow::Error::msg)
    }
}
