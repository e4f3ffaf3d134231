//! Executors that keep instances between requests, the two other points of the isolation spectrum
//! besides a fresh instance per request (`PooledExecutor`):
//!
//! - [`Reuse::Recycled`]: after each request the instance is reset to exactly the state a fresh
//!   one has (memory back to its initial image, every mutable global and table restored; see
//!   `reset.rs`). Requests are as isolated as with fresh instances; what is saved is making one.
//! - [`Reuse::Shared`]: nothing is reset, as Envoy's proxy-wasm filters and plugin hosts run: a
//!   request sees whatever earlier requests left in the instance. No isolation between requests;
//!   the bound on what an embedded Wasm handler can cost at all.
//!
//! Either way an instance that trapped, ran past its deadline or broke the ABI is discarded,
//! never reused (a recycled one also when its memory or a table grew), and a request whose client
//! went away takes its instance with it. Live instances are bounded like the pooled executor's,
//! with the same queue.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use wasmlab_gateway::{Capabilities, ExecRequest, Executor, Failure, Reply};
use wasmtime::{Engine, Store};

use crate::PooledExecutor;
use crate::guest::{Call, LinkedGuest, Ready};
use crate::imports::HostCtx;
use crate::instance_pool::{InstancePool, Keep};
use crate::limits::{GuestCalls, GuestLimits};
use crate::load::{Load, Source, core_module};
#[cfg(feature = "compiler")]
use crate::reset::instrument;
use crate::reset::{ResetNames, Snapshot};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    /// Reset to a fresh instance's state after every request.
    Recycled,
    /// Never reset: state carries over between requests.
    Shared,
}

pub struct KeptExecutor {
    guest: LinkedGuest,
    reuse: Reuse,
    /// What a recycled instance's reset needs to reach (its module was rewritten to export it).
    reset: Option<ResetNames>,
    /// Idle instances, by how they are called: synchronously, and async (for paths that wait in
    /// a host call, or all with async guest calls).
    idle: [InstancePool<Kept>; 2],
    /// Instances made, and instances discarded (after a trap, a timeout, growth).
    made: AtomicU64,
    discarded: AtomicU64,
}

/// An instance kept between requests, with its store.
struct Kept {
    store: Store<HostCtx>,
    ready: Ready,
    /// The fresh state, for a recycled instance.
    snapshot: Option<Snapshot>,
}

impl KeptExecutor {
    /// Compiles `wasm` (a core module implementing the handler ABI; text or binary) with the
    /// pooled executor's settings. A recycled guest is first rewritten to export its state.
    #[cfg(feature = "compiler")]
    pub fn new(
        wasm: &[u8],
        reuse: Reuse,
        caps: Arc<Capabilities>,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        // SAFETY: Wasm, not a precompiled file.
        unsafe { Self::load(Source::Wasm(wasm), reuse, caps, limits) }
    }

    /// Compiles `wasm` ahead of time for `reuse` (see [`Load::precompile`]).
    #[cfg(feature = "compiler")]
    pub fn precompile(wasm: &[u8], reuse: Reuse, limits: GuestLimits) -> anyhow::Result<Vec<u8>> {
        <Self as Load>::precompile(wasm, &reuse, limits)
    }

    /// Loads a module precompiled by [`Load::precompile`]; a recycled executor refuses one that
    /// was not rewritten for resetting.
    ///
    /// # Safety
    /// As [`Load::load`]: the file must be one `precompile` wrote.
    pub unsafe fn from_precompiled_file(
        path: &std::path::Path,
        reuse: Reuse,
        caps: Arc<Capabilities>,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        // SAFETY: passed on to the caller.
        unsafe { Self::load(Source::Precompiled(path), reuse, caps, limits) }
    }

    /// Instances made so far, and how many of them were discarded.
    pub fn instances(&self) -> (u64, u64) {
        (
            self.made.load(Ordering::Relaxed),
            self.discarded.load(Ordering::Relaxed),
        )
    }

    async fn make(&self, call: Call) -> anyhow::Result<Kept> {
        let mut store = self.guest.store(HostCtx::new(self.guest.limits()), call);
        let ready = self.guest.instantiate(&mut store, call).await?;
        let snapshot = match &self.reset {
            Some(i) => Some(Snapshot::take(
                &mut store,
                &ready.instance,
                ready.memory,
                i,
            )?),
            None => None,
        };
        self.made.fetch_add(1, Ordering::Relaxed);
        Ok(Kept {
            store,
            ready,
            snapshot,
        })
    }

    async fn run(&self, req: ExecRequest) -> anyhow::Result<Reply> {
        let call = self.guest.call_for(&req.target);
        let idle = &self.idle[call as usize];
        let (mut kept, served) = match idle.take() {
            Some(k) => k,
            None => (self.make(call).await?, 0),
        };
        kept.store.data_mut().begin(req, self.guest.limits());
        // The epoch deadline counts from now, for this request.
        kept.store.set_epoch_deadline(1);
        let outcome = kept.ready.call(&mut kept.store).await;
        self.guest.note_waiting(&kept.store);
        kept.store.data_mut().end();
        if outcome.is_err() {
            self.discarded.fetch_add(1, Ordering::Relaxed);
            return outcome;
        }
        let reusable = match &kept.snapshot {
            Some(s) => s.restore(&mut kept.store, kept.ready.memory)?,
            None => true,
        };
        if reusable {
            idle.give_back(kept, served);
        } else {
            self.discarded.fetch_add(1, Ordering::Relaxed);
        }
        outcome
    }
}

impl Executor for KeptExecutor {
    fn name(&self) -> &'static str {
        match self.reuse {
            Reuse::Recycled => "wasmtime-recycled",
            Reuse::Shared => "wasmtime-shared",
        }
    }

    /// Off: a kept instance's request costs little more than native's, and, as for native,
    /// deferring replies measured no better (docs/pooled-cost.md).
    fn defer_replies_when_busy(&self) -> bool {
        false
    }

    async fn execute(&self, req: ExecRequest) -> Result<Reply, Failure> {
        self.guest.admit(|| self.run(req)).await
    }
}

impl Load for KeptExecutor {
    type Options = Reuse;
    /// Recycled and shared alike: the cheaper in the A/B of docs/pooled-cost.md.
    const DEFAULT_CALLS: Option<GuestCalls> = Some(GuestCalls::Sync);

    /// The pooled executor's settings; a recycled guest given as Wasm is first rewritten to
    /// export its state, and one given precompiled must have been.
    unsafe fn load(
        source: Source<'_>,
        reuse: Reuse,
        caps: Arc<Capabilities>,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        let engine = Engine::new(&PooledExecutor::config(limits))?;
        let (module, reset) = match (reuse, source) {
            #[cfg(feature = "compiler")]
            (Reuse::Recycled, Source::Wasm(wasm)) => {
                let i = instrument(wasm)?;
                (wasmtime::Module::new(&engine, &i.wasm)?, Some(i.names))
            }
            (Reuse::Recycled, source) => {
                // SAFETY: passed on to the caller.
                let module = unsafe { core_module(&engine, source)? };
                let names = ResetNames::of_module(&module)?;
                (module, Some(names))
            }
            // SAFETY: passed on to the caller.
            (Reuse::Shared, source) => (unsafe { core_module(&engine, source)? }, None),
        };
        Ok(Self {
            guest: LinkedGuest::new(engine, module, &caps, &limits, Self::DEFAULT_CALLS)?,
            reuse,
            reset,
            idle: [
                InstancePool::new(Keep::Always),
                InstancePool::new(Keep::Always),
            ],
            made: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
        })
    }

    #[cfg(feature = "compiler")]
    fn precompile(wasm: &[u8], reuse: &Reuse, limits: GuestLimits) -> anyhow::Result<Vec<u8>> {
        match reuse {
            Reuse::Recycled => PooledExecutor::precompile(&instrument(wasm)?.wasm, limits),
            Reuse::Shared => PooledExecutor::precompile(wasm, limits),
        }
    }
}
