//! How a request runs in a core-module guest, decided here and only here: synchronously (to
//! completion on the thread that took it, [`GuestCalls::Sync`](crate::GuestCalls::Sync)) or
//! async on a fiber; how each is linked, instantiated, called and held to its deadline; and where
//! a synchronous guest runs once it turns out long.
//!
//! **Async** calls yield to the runtime at every epoch tick (time-slicing) and `proxy_get`
//! suspends the fiber. **Synchronous** calls make and switch no fiber, and nothing yields at epoch
//! ticks. Two things a fiber gave the async path are done another way:
//!
//! - **Fairness.** A guest that is still running one epoch tick after it started (10 ms with the
//!   default deadline) is moved off its runtime worker with tokio's `block_in_place`: the worker
//!   goes on serving its other connections on another thread, and the kernel, not the gateway,
//!   shares the CPU between it and the long guest. Long guests run in a lane of as many slots as
//!   the runtime has workers, first come first served, so they never outnumber the threads left
//!   for short requests, and a burst of them runs one after another rather than all at once
//!   (time-slicing would finish every one of them late). A guest waiting for a lane slot is off
//!   its worker already and still bound by its deadline.
//! - **Host calls that wait** (`proxy_get`). The import blocks its thread on the upstream future,
//!   again inside `block_in_place`, so the worker's other connections (and the upstream
//!   connection's own task) run on another thread meanwhile. That hand-over on every request cost
//!   more than a fiber, so only a path's first wait is done this way: its later requests are
//!   called async ([`WaitingPaths`]).
//!
//! Both need tokio's multi-thread runtime: the gateway starts one, of one worker on one core, for
//! synchronous guests. On a current-thread runtime a long guest keeps its thread until its
//! deadline, and `proxy_get` fails (500) rather than deadlock.
//!
//! The component and naive executors call async only (WASI's imports wait): they take
//! [`arm_async`] alone.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::{Instance, InstancePre, Store, TypedFunc, UpdateDeadline};

use crate::limits::{DeadlineExceeded, GuestCalls, GuestLimits};

/// How one request is called: synchronously, or async on a fiber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    Sync,
    Async,
}

/// The ways a guest is linked, each with its own `proxy_get` (see `imports::add_to_linker`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Linked {
    pub(crate) sync: bool,
    pub(crate) async_: bool,
}

impl Linked {
    /// Synchronously where calls are sync; async where they are, or where a sync guest imports a
    /// host call that waits (`waits`), for the paths that turn out to wait.
    pub(crate) fn for_guest(calls: GuestCalls, waits: bool) -> Self {
        Self {
            sync: calls.is_sync(),
            async_: !calls.is_sync() || waits,
        }
    }

    /// How the request for `target` is called: synchronously unless calls are async, or its path
    /// waited in a host call before.
    pub(crate) fn call_for(self, target: &str, waiting: &WaitingPaths) -> Call {
        match self {
            Self {
                sync: true,
                async_: true,
            } if waiting.waits(target) => Call::Async,
            Self { sync: true, .. } => Call::Sync,
            Self { sync: false, .. } => Call::Async,
        }
    }
}

impl Call {
    /// Arms `store` for this kind of call (see [`arm_sync`] and [`arm_async`]).
    pub(crate) fn arm<T: Send + 'static>(
        self,
        store: &mut Store<T>,
        view: fn(&mut T) -> SyncView<'_>,
        lane: &Arc<Lane>,
        limits: &GuestLimits,
    ) {
        match self {
            Call::Sync => arm_sync(store, view, lane.clone(), limits),
            Call::Async => arm_async(store, move |t| view(t).deadline),
        }
    }

    /// Instantiates `pre` in `store` (armed for this kind of call).
    pub(crate) async fn instantiate<T: Send>(
        self,
        pre: &InstancePre<T>,
        store: &mut Store<T>,
    ) -> wasmtime::Result<Instance> {
        match self {
            Call::Sync => pre.instantiate(store),
            Call::Async => pre.instantiate_async(store).await,
        }
    }

    /// Calls the guest's handler: to completion, or on a fiber.
    pub(crate) async fn handle<T: Send>(
        self,
        handle: &TypedFunc<(), u32>,
        store: &mut Store<T>,
    ) -> wasmtime::Result<u32> {
        match self {
            Call::Sync => handle.call(store, ()),
            Call::Async => handle.call_async(store, ()).await,
        }
    }
}

/// Arms a store for its request's deadline when the guest is called async: at every epoch tick
/// the guest yields to the async runtime (so a long guest cannot starve the other connections on
/// its worker thread), and once the deadline has passed it is interrupted (a trap the executors
/// answer with 504).
pub(crate) fn arm_async<T: Send + 'static>(
    store: &mut Store<T>,
    deadline_of: impl Fn(&mut T) -> Instant + Send + Sync + 'static,
) {
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |mut ctx| {
        Ok(if Instant::now() >= deadline_of(ctx.data_mut()) {
            UpdateDeadline::Interrupt
        } else {
            // tokio's yield_now resumes the task only after the I/O driver has been polled, so
            // even a single-threaded runtime accepts and serves others between ticks.
            UpdateDeadline::YieldCustom(1, Box::pin(tokio::task::yield_now()))
        })
    });
}

/// Where a request's guest runs.
#[derive(Debug, Default)]
pub(crate) enum Placement {
    /// On the runtime worker that took the request.
    #[default]
    Worker,
    /// Off the workers, in a slot of the long-guest lane (released when the request ends).
    Lane(#[allow(dead_code)] OwnedSemaphorePermit),
    /// Could not move (not on a multi-thread runtime's worker): runs where it is.
    Stays,
}

/// The slots long guests run in off the workers.
pub(crate) struct Lane {
    slots: Arc<Semaphore>,
}

impl Lane {
    /// As many slots as the current runtime has workers (one outside a runtime).
    pub(crate) fn for_current_runtime() -> Self {
        let workers = Handle::try_current().map_or(1, |h| h.metrics().num_workers());
        Self {
            slots: Arc::new(Semaphore::new(workers.max(1))),
        }
    }

    /// Moves the calling guest off its worker into a lane slot, waiting for one until `deadline`.
    fn move_off_worker(&self, deadline: Instant) -> Result<Placement, DeadlineExceeded> {
        let Some(handle) = multi_thread_runtime() else {
            return Ok(Placement::Stays);
        };
        tokio::task::block_in_place(|| {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let slot = handle.block_on(tokio::time::timeout(
                remaining,
                self.slots.clone().acquire_owned(),
            ));
            let Ok(Ok(slot)) = slot else {
                return Err(DeadlineExceeded);
            };
            // block_in_place has handed this worker's run queue to a thread it is waking; had this
            // closure returned before that thread took it, this thread would take it back and the
            // guest would go on blocking the worker. A task runs only on a thread holding a
            // worker, so once this one has run, on a one-worker runtime the hand-over is done.
            let (ran, wait) = std::sync::mpsc::sync_channel(1);
            handle.spawn(async move {
                let _ = ran.send(());
            });
            let remaining = deadline.saturating_duration_since(Instant::now());
            let _ = wait.recv_timeout(remaining);
            Ok(Placement::Lane(slot))
        })
    }
}

fn multi_thread_runtime() -> Option<Handle> {
    Handle::try_current()
        .ok()
        .filter(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread)
}

/// What a synchronous call's deadline needs of its store's data: when the request started in
/// the guest, when it must be done, and where the guest runs. The store's data gives it through a
/// projection (as the imports' `add_to_linker` is given its context), so this module needs no
/// host type.
pub(crate) struct SyncView<'a> {
    pub(crate) started: Instant,
    pub(crate) deadline: Instant,
    pub(crate) placement: &'a mut Placement,
}

/// Arms a store for synchronous calls: at each epoch tick the guest goes on (no yield), moved off
/// its worker once it has run a tick, and is interrupted (504) once its deadline has passed.
pub(crate) fn arm_sync<T: 'static>(
    store: &mut Store<T>,
    view: fn(&mut T) -> SyncView<'_>,
    lane: Arc<Lane>,
    limits: &GuestLimits,
) {
    let long_after = limits.tick();
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |mut ctx| {
        let call = view(ctx.data_mut());
        let now = Instant::now();
        if now >= call.deadline {
            return Ok(UpdateDeadline::Interrupt);
        }
        if matches!(call.placement, Placement::Worker) && now >= call.started + long_after {
            match lane.move_off_worker(call.deadline) {
                Ok(placement) => *call.placement = placement,
                Err(DeadlineExceeded) => return Ok(UpdateDeadline::Interrupt),
            }
        }
        Ok(UpdateDeadline::Continue(1))
    });
}

/// Waits for a host call's future from synchronous guest code, off the worker (see the module's
/// documentation).
pub(crate) fn block_on_host_call<F: Future>(future: F) -> wasmtime::Result<F::Output> {
    let Some(handle) = multi_thread_runtime() else {
        wasmtime::bail!(
            "a host call that waits (proxy_get) from a synchronous guest call needs tokio's multi-thread runtime"
        );
    };
    Ok(tokio::task::block_in_place(|| handle.block_on(future)))
}

/// The paths whose synchronous run waited in a host call: from then on their requests are called
/// async, on a fiber that waits for the upstream without moving the worker (a `block_in_place`
/// per request costs more than a fiber under load: docs/pooled-cost.md). A path that waits only
/// sometimes is still answered correctly either way; only its cost differs.
#[derive(Default)]
pub(crate) struct WaitingPaths {
    paths: RwLock<HashSet<Box<str>>>,
}

impl WaitingPaths {
    /// Paths remembered at most: a guest or its clients cannot grow the set without bound.
    const MAX: usize = 1024;

    /// Whether `target`'s path has waited before.
    pub(crate) fn waits(&self, target: &str) -> bool {
        let path = target.split_once('?').map_or(target, |(path, _)| path);
        self.paths.read().expect("never poisoned").contains(path)
    }

    pub(crate) fn remember(&self, path: &str) {
        let mut paths = self.paths.write().expect("never poisoned");
        if paths.len() < Self::MAX {
            paths.insert(path.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_is_linked_and_called_as_its_calls_and_its_waits_say() {
        let linked = |calls, waits| {
            let l = Linked::for_guest(calls, waits);
            (l.sync, l.async_)
        };
        assert_eq!(linked(GuestCalls::Sync, false), (true, false));
        assert_eq!(linked(GuestCalls::Sync, true), (true, true));
        assert_eq!(linked(GuestCalls::Async, false), (false, true));
        assert_eq!(linked(GuestCalls::Async, true), (false, true));
        let waiting = WaitingPaths::default();
        waiting.remember("/proxy");
        let both = Linked::for_guest(GuestCalls::Sync, true);
        assert_eq!(both.call_for("/proxy?n=1", &waiting), Call::Async);
        assert_eq!(both.call_for("/", &waiting), Call::Sync);
        // Linked for sync calls alone, a path that waited is still called synchronously.
        let sync = Linked::for_guest(GuestCalls::Sync, false);
        assert_eq!(sync.call_for("/proxy", &waiting), Call::Sync);
        let async_only = Linked::for_guest(GuestCalls::Async, false);
        assert_eq!(async_only.call_for("/", &waiting), Call::Async);
    }

    #[test]
    fn a_path_is_remembered_without_its_query_and_the_set_is_bounded() {
        let w = WaitingPaths::default();
        assert!(!w.waits("/proxy"));
        w.remember("/proxy");
        assert!(w.waits("/proxy") && w.waits("/proxy?x=1"));
        assert!(!w.waits("/") && !w.waits("/proxy/more"));
        for i in 0..2 * WaitingPaths::MAX {
            w.remember(&format!("/p{i}"));
        }
        assert_eq!(w.paths.read().unwrap().len(), WaitingPaths::MAX);
    }
}
