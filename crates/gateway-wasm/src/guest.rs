//! A core-module guest compiled and linked once, ready to instantiate: what every executor of the
//! handler ABI shares, whether it makes a fresh instance per request or keeps instances.

use std::sync::Arc;

use bytes::Bytes;
use wasmlab_gateway::admission::Admission;
use wasmlab_gateway::{Capabilities, Failure, Reply};
use wasmlab_guest_abi as abi;
use wasmtime::{
    Engine, Extern, Instance, InstancePre, Linker, Memory, Module, ModuleExport, Store, TypedFunc,
};

pub(crate) use crate::calls::Call;
use crate::calls::{Lane, Linked, WaitingPaths};
use crate::imports::{self, HostCtx};
use crate::limits::{EpochTicker, GuestCalls, GuestLimits, guest_failure};

type HandleFn = TypedFunc<(), u32>;

pub(crate) struct LinkedGuest {
    pub engine: Engine,
    /// Linked for synchronous calls (`proxy_get` blocks its thread), with guest calls `Sync`.
    sync_pre: Option<InstancePre<HostCtx>>,
    /// Linked for async calls (`proxy_get` suspends the fiber), with guest calls `Async`, or
    /// `Sync` and a guest that imports `proxy_get` (for the paths that wait).
    async_pre: Option<InstancePre<HostCtx>>,
    linked: Linked,
    pub(crate) waiting: WaitingPaths,
    memory: ModuleExport,
    handle: ModuleExport,
    limits: GuestLimits,
    /// Keeps live instances within the pool, so instantiation never fails for want of a slot.
    admission: Admission,
    /// Where synchronous calls run once they turn out long.
    lane: Arc<Lane>,
    _ticker: EpochTicker,
}

/// An instance with its exports resolved.
pub(crate) struct Ready {
    pub instance: Instance,
    pub memory: Memory,
    handle: HandleFn,
    call: Call,
}

impl LinkedGuest {
    /// Checks `module` against the handler ABI and links it with the host's imports, for calls as
    /// `limits.calls` says (`Auto` taken as `default_calls`). Called inside the runtime that will
    /// serve it: synchronous calls get a lane as wide as its workers.
    pub(crate) fn new(
        engine: Engine,
        module: Module,
        caps: &Arc<Capabilities>,
        limits: &GuestLimits,
        default_calls: Option<GuestCalls>,
    ) -> anyhow::Result<Self> {
        let limits = GuestLimits {
            calls: limits.calls.or(default_calls.unwrap_or(GuestCalls::Async)),
            ..*limits
        };
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
        let link = |calls| {
            let mut linker = Linker::new(&engine);
            imports::add_to_linker(&mut linker, |ctx| ctx, caps, calls)?;
            linker.instantiate_pre(&module)
        };
        let waits = module
            .imports()
            .any(|i| i.module() == abi::IMPORT_MODULE && i.name() == abi::IMPORT_PROXY_GET);
        let linked = Linked::for_guest(limits.calls, waits);
        let sync_pre = linked.sync.then(|| link(GuestCalls::Sync));
        let async_pre = linked.async_.then(|| link(GuestCalls::Async));
        let ticker = EpochTicker::start(&engine, limits.tick())?;
        Ok(Self {
            _ticker: ticker,
            engine,
            sync_pre: sync_pre.transpose()?,
            async_pre: async_pre.transpose()?,
            linked,
            waiting: WaitingPaths::default(),
            memory,
            handle,
            admission: limits.admission(),
            limits,
            lane: Arc::new(Lane::for_current_runtime()),
        })
    }

    /// The limits requests run under, guest calls chosen.
    pub(crate) fn limits(&self) -> &GuestLimits {
        &self.limits
    }

    /// Runs a request once admitted (within the live instances allowed, after a bounded wait),
    /// a guest's fault turned into the failure it answers (504, 500).
    pub(crate) async fn admit<F: Future<Output = anyhow::Result<Reply>>>(
        &self,
        run: impl FnOnce() -> F,
    ) -> Result<Reply, Failure> {
        self.admission
            .admit(|| async { run().await.map_err(|e| guest_failure(&e, &self.limits)) })
            .await
    }

    /// How to call the request for `target` (see [`Linked::call_for`]).
    pub(crate) fn call_for(&self, target: &str) -> Call {
        self.linked.call_for(target, &self.waiting)
    }

    /// After a request: remembers its path if its synchronous call waited in a host call.
    pub(crate) fn note_waiting(&self, store: &Store<HostCtx>) {
        if let Some(path) = store.data().waited_on_path() {
            self.waiting.remember(path);
        }
    }

    /// A store for one or more requests called as `call` says: the memory limiter and the
    /// deadline armed.
    pub(crate) fn store(&self, ctx: HostCtx, call: Call) -> Store<HostCtx> {
        let mut store = Store::new(&self.engine, ctx);
        store.limiter(|ctx| &mut ctx.limits);
        call.arm(&mut store, HostCtx::sync_view, &self.lane, &self.limits);
        store
    }

    /// Instantiates the guest in `store` (made for `call`) and resolves its exports by index.
    pub(crate) async fn instantiate(
        &self,
        store: &mut Store<HostCtx>,
        call: Call,
    ) -> anyhow::Result<Ready> {
        let pre = match call {
            Call::Sync => &self.sync_pre,
            Call::Async => &self.async_pre,
        };
        let pre = pre
            .as_ref()
            .expect("linked for every call `call_for` gives");
        let instance = call.instantiate(pre, &mut *store).await?;
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
            call,
        })
    }
}

impl Ready {
    /// Runs the request held by the store's [`HostCtx`]: one call (synchronous or on a fiber, as
    /// the guest was linked), and the response read back and checked.
    pub(crate) async fn call(&self, store: &mut Store<HostCtx>) -> anyhow::Result<Reply> {
        let desc = self.call.handle(&self.handle, &mut *store).await?;
        let resp = abi::view_response(self.memory.data(&*store), desc)?;
        let body = Bytes::copy_from_slice(resp.body);
        Reply::from_parts(resp.status, resp.headers(), body).map_err(anyhow::Error::msg)
    }
}
