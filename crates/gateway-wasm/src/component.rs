//! `wasi:http/proxy` components, a fresh instance per request: the way `wasmtime serve`, Spin and
//! wasmCloud run them (`ProxyPre` linked once, pooling allocator, a new `Store` per request),
//! under the same rules as the pooled executor runs core modules: a deadline (504), a memory
//! limit and bounded instances with a bounded queue (503), a trap is a 500, the host frames every
//! response, and a client never sees the guest's insides.
//!
//! Or (`component-recycled`) instances kept between requests and put back after each to a fresh
//! instance's state: the component is rewritten to export a reset of every core instance's memory
//! (the pages the request wrote) and mutable globals (`component_reset`), which the executor calls
//! after each request, and the host gives each request new random generators, HTTP context and
//! resource table. An instance is reused only after a request that returned with its response
//! whole, its memories and tables never grown and its reset run to its end; any other is
//! discarded. What is not reset: the numbers the component model gives the next request's
//! resource handles, which follow the order in which the last request dropped its own, and the
//! handles a guest never dropped (JavaScript's, until its garbage collector runs), whose numbers
//! stay taken but which reach nothing of the request that left them (its resources went with its
//! table; used again, such a handle names whatever the current request's table holds at that
//! place, the guest's own); an instance holding more than `MAX_LEFT_HANDLES` of them is discarded
//! (Wasmtime has no way to reset an instance's handle table).
//!
//! Where it differs from `wasmtime serve`, by design:
//! - the response is read whole (up to the guest's memory limit) and sent with its length, as
//!   every other executor's; a streamed body is buffered, and trailers are dropped; a body that
//!   does not match the `content-length` the guest declared is a 500 (wasi:http binds a
//!   component to it, and Wasmtime aborts the body);
//! - outgoing requests go only to the gateway's `--upstream`, over kept-alive connections;
//!   anything else is refused (`HTTP-request-denied`);
//! - the guest's stdout and stderr are discarded unless `--inherit-stdio` asks for them.

use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Instant;

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::Uri;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use wasmlab_gateway::admission::Admission;
use wasmlab_gateway::{Capabilities, ExecRequest, Executor, Failure, Reply};
use wasmtime::component::{
    Component, ComponentExportIndex, Linker, Resource, ResourceTable, TypedFunc,
};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ResourceLimiter, Store,
    StoreLimits,
};
use wasmtime_wasi::random::WasiRandomCtx;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::p2::bindings::http::outgoing_handler;
use wasmtime_wasi_http::p2::bindings::http::types::{ErrorCode, Scheme};
use wasmtime_wasi_http::p2::bindings::{Proxy, ProxyPre};
use wasmtime_wasi_http::p2::body::{HostOutgoingBody, StreamContext};
use wasmtime_wasi_http::p2::types::HostOutgoingRequest;
use wasmtime_wasi_http::{
    RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView,
};

use crate::calls::arm_async;
use crate::instance_pool::{InstancePool, Keep};
use crate::limits::{DeadlineExceeded, EpochTicker, GuestCalls, GuestLimits, guest_failure};
use crate::load::{Load, Source};
use crate::resettable::{RECYCLED_MIN_MEMORY_MIB, RESET_EXPORT};

/// Redefines `wasi:http/outgoing-handler.handle` as wasmtime-wasi-http's, but deleting the request
/// options the guest gives up with its request: Wasmtime (48 to 50) reads them and leaves them in the
/// store's table, where a recycled instance's check would find a resource after every outgoing
/// request (/proxy, a component's /state) and discard the instance.
fn delete_given_request_options(linker: &mut Linker<ComponentCtx>) -> anyhow::Result<()> {
    type Given = (
        Resource<HostOutgoingRequest>,
        Option<Resource<RequestOptions>>,
    );
    linker.allow_shadowing(true);
    linker.instance(OUTGOING_HANDLER)?.func_wrap(
        "handle",
        |mut store, (request, options): Given| {
            let http = &mut store.data_mut().http();
            // An owned handle: the guest holds it no more once it has passed it.
            let given = options
                .as_ref()
                .map(|o| Resource::<RequestOptions>::new_own(o.rep()));
            let response = outgoing_handler::Host::handle(http, request, options);
            if let Some(options) = given {
                let _ = http.table.delete(options);
            }
            Ok((match response {
                Ok(future) => Ok(future),
                Err(e) => Err(e.downcast()?),
            },))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// The interface [`delete_given_request_options`] redefines a function of, at the version
/// wasmtime-wasi-http links (a component importing an older 0.2 gets it too).
const OUTGOING_HANDLER: &str = "wasi:http/outgoing-handler@0.2.12";

/// What one component instance may hold at most: enough for a Rust component (a main module and
/// the component tooling's two small ones), or a JavaScript one (an engine, the WASI adapter and
/// the same two). The pool is made of `max_instances` times this.
pub(crate) const CORE_INSTANCES_PER_COMPONENT: u32 = 16;
pub(crate) const MEMORIES_PER_COMPONENT: u32 = 2;
pub(crate) const TABLES_PER_COMPONENT: u32 = 8;

/// How the guest's instances are given what they use: environment, stdio, outgoing requests.
#[derive(Debug, Clone, Default)]
pub struct ComponentOptions {
    /// `KEY=VALUE` pairs every instance sees in `wasi:cli/environment`.
    pub env: Vec<(String, String)>,
    /// The one origin (`http://host:port`) outgoing requests may go to; none: every outgoing
    /// request is refused.
    pub upstream: Option<String>,
    /// Give the guest the gateway's stdout and stderr (for debugging a component).
    pub inherit_stdio: bool,
    /// Keep instances between requests, each reset to a fresh instance's state after its request
    /// (`component-recycled`), instead of a fresh instance per request.
    pub recycled: bool,
}

/// Whether `component` was rewritten to reset its instances: the index of the export that does it.
fn reset_export(component: &Component) -> Option<ComponentExportIndex> {
    component.get_export_index(None, RESET_EXPORT)
}

/// What every component executor has: the engine, the limits and admission, what an instance is
/// given (environment, stdio, outgoing requests), the instances made and discarded, the ticker.
pub(crate) struct ComponentHost {
    pub(crate) engine: Engine,
    pub(crate) admission: Admission,
    pub(crate) limits: GuestLimits,
    env: Arc<[(String, String)]>,
    inherit_stdio: bool,
    outbound: Arc<Outbound>,
    made: AtomicU64,
    discarded: AtomicU64,
    _ticker: EpochTicker,
}

impl ComponentHost {
    pub(crate) fn new(
        engine: Engine,
        options: &ComponentOptions,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        let outbound = Arc::new(Outbound::new(options.upstream.as_deref())?);
        let ticker = EpochTicker::start(&engine, limits.tick())?;
        Ok(Self {
            engine,
            admission: limits.admission(),
            limits,
            env: options.env.clone().into(),
            inherit_stdio: options.inherit_stdio,
            outbound,
            made: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
            _ticker: ticker,
        })
    }

    /// What an instance sees of WASI: the environment, and stdio if asked for.
    pub(crate) fn wasi(&self) -> WasiCtx {
        let mut wasi = WasiCtxBuilder::new();
        wasi.envs(&self.env);
        if self.inherit_stdio {
            wasi.inherit_stdout().inherit_stderr();
        }
        wasi.build()
    }

    /// A store for a new instance seeing `wasi`: its memory limit, its request's `deadline`.
    pub(crate) fn store(&self, wasi: WasiCtx, deadline: Instant) -> Store<ComponentCtx> {
        let ctx = ComponentCtx::new(wasi, &self.outbound, &self.limits, deadline);
        let mut store = Store::new(&self.engine, ctx);
        store.limiter(|ctx| &mut ctx.limits);
        arm_async(&mut store, |ctx: &mut ComponentCtx| ctx.deadline);
        store
    }

    /// Counts an instance made, or one discarded.
    pub(crate) fn made_one(&self) {
        self.made.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn discarded_one(&self) {
        self.discarded.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn instances(&self) -> (u64, u64) {
        (
            self.made.load(Ordering::Relaxed),
            self.discarded.load(Ordering::Relaxed),
        )
    }

    /// Why a first instance could not be made at start: the limits it had to fit.
    pub(crate) fn cannot_make_one(&self, e: &wasmtime::Error) -> anyhow::Error {
        anyhow::anyhow!(
            "an instance of the component cannot be made within the limits (max {} MiB of memory, {CORE_INSTANCES_PER_COMPONENT} modules, {MEMORIES_PER_COMPONENT} memories, {TABLES_PER_COMPONENT} tables): {e:#}",
            self.limits.max_memory_bytes >> 20
        )
    }
}

/// The component `source` for `engine`: Wasm compiled (rewritten first if `options` recycle
/// instances), or a precompiled file mapped (`hint`: what to do when it was precompiled for
/// another executor).
///
/// # Safety
/// As [`Load::load`].
pub(crate) unsafe fn load_component(
    engine: &Engine,
    source: Source<'_>,
    #[cfg_attr(not(feature = "compiler"), allow(unused_variables))] options: &ComponentOptions,
    hint: &str,
) -> anyhow::Result<Component> {
    Ok(match source {
        #[cfg(feature = "compiler")]
        Source::Wasm(wasm) => {
            refuse_core_module(wasm)?;
            Component::new(engine, for_executor(wasm, options)?)
                .map_err(|e| anyhow::anyhow!("it cannot be compiled as a component: {e:#}"))?
        }
        // SAFETY: passed on to the caller.
        Source::Precompiled(path) => unsafe { Component::deserialize_file(engine, path) }
            .map_err(|e| anyhow::anyhow!("{e:#} ({hint})"))?,
    })
}

pub struct ComponentExecutor {
    host: ComponentHost,
    pre: ProxyPre<ComponentCtx>,
    /// Idle instances, for `component-recycled`; none kept for a fresh instance per request.
    kept: InstancePool<Kept>,
    /// The rewritten component's reset, for `component-recycled`.
    reset: Option<ComponentExportIndex>,
    /// WASI contexts of stores that ended, for later stores (see [`Self::retire`]).
    spare_wasi: Mutex<Vec<WasiCtx>>,
    /// How many of the next resets are interrupted as a deadline interrupts one: the tests'
    /// way to a reset that fails at run time.
    #[cfg(test)]
    interrupt_resets: AtomicU64,
}

/// An instance kept between requests, with its store.
struct Kept {
    store: Store<ComponentCtx>,
    proxy: Proxy,
    /// Puts the instance back as a fresh one (`component-recycled`).
    reset: Option<TypedFunc<(), ()>>,
    /// Handles its requests left undropped, so far.
    left: usize,
}

/// How many undropped handles a recycled instance may accumulate before it is discarded: each is
/// a few bytes in the instance's handle table.
const MAX_LEFT_HANDLES: usize = 4096;

impl ComponentExecutor {
    /// Compiles `wasm` (a `wasi:http/proxy` component) and links it once.
    #[cfg(feature = "compiler")]
    pub fn new(
        wasm: &[u8],
        options: ComponentOptions,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        // SAFETY: Wasm, not a precompiled file.
        unsafe { Self::from_source(Source::Wasm(wasm), options, limits) }
    }

    /// Loads a component precompiled by [`Load::precompile`] (a `.cwasm` file).
    ///
    /// # Safety
    /// As [`Load::load`]: the file must be one `precompile` wrote.
    pub unsafe fn from_precompiled_file(
        path: &std::path::Path,
        options: ComponentOptions,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        // SAFETY: passed on to the caller.
        unsafe { Self::from_source(Source::Precompiled(path), options, limits) }
    }

    /// Compiles `wasm` ahead of time (see [`Load::precompile`]).
    #[cfg(feature = "compiler")]
    pub fn precompile(wasm: &[u8], limits: GuestLimits) -> anyhow::Result<Vec<u8>> {
        <Self as Load>::precompile(wasm, &ComponentOptions::default(), limits)
    }

    /// The Wasmtime settings: components, a pool sized for `max_instances` of them, epoch
    /// interruption. As the pooled executor's, with room for a component's several modules.
    pub fn config(limits: GuestLimits) -> Config {
        let n = limits.max_instances.max(1);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(n)
            .total_core_instances(n * CORE_INSTANCES_PER_COMPONENT)
            .total_memories(n * MEMORIES_PER_COMPONENT)
            .total_tables(n * TABLES_PER_COMPONENT)
            .total_stacks(n)
            .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
            .max_memories_per_component(MEMORIES_PER_COMPONENT)
            // A recycled component's memory module also defines its page marks.
            .max_memories_per_module(MEMORIES_PER_COMPONENT)
            .max_tables_per_component(TABLES_PER_COMPONENT)
            .max_memory_size(limits.max_memory_bytes);
        // As the pooled executor's; a component whose memory image is megabytes (JavaScript's)
        // wants more kept resident and PAGEMAP_SCAN (docs/pooled-cost.md).
        limits.reset_slots(&mut pool);
        let mut config = Config::new();
        config
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
            .wasm_component_model(true)
            // A WASI 0.2 component calls nothing concurrently: its stores need none of the
            // bookkeeping for it (the reused executor's, for WASI 0.3, turn it on).
            .concurrency_support(false)
            .epoch_interruption(true);
        config
    }

    /// The executor for `source` (see [`Load::load`]; it takes no core capabilities).
    ///
    /// # Safety
    /// As [`Load::load`].
    unsafe fn from_source(
        source: Source<'_>,
        options: ComponentOptions,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(
            !options.recycled
                || u64::try_from(limits.max_memory_bytes).unwrap_or(u64::MAX)
                    >= RECYCLED_MIN_MEMORY_MIB << 20,
            "component-recycled needs --max-memory-mib {RECYCLED_MIN_MEMORY_MIB} or more (given {} MiB): the marks of what each request writes are a memory of 4 MiB beside the component's",
            limits.max_memory_bytes >> 20
        );
        let engine = Engine::new(&Self::config(limits))?;
        // SAFETY: passed on to the caller.
        let component = unsafe {
            load_component(
                &engine,
                source,
                &options,
                "a precompiled core module needs --executor pooled",
            )
        }?;
        // A component not rewritten for resetting is refused there.
        Self::from_component(engine, component, options, limits)
    }

    fn from_component(
        engine: Engine,
        component: Component,
        options: ComponentOptions,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        let mut linker = Linker::<ComponentCtx>::new(&engine);
        // All of WASI 0.2 (as `wasmtime serve -S cli`), not only the proxy world's part: the
        // component tooling's adapters import the CLI world's interfaces (environment, exit,
        // terminals, a filesystem) even where the guest's code never calls them. None of them
        // reaches anything: no preopened directory, no network, an empty stdin.
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        delete_given_request_options(&mut linker)?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            anyhow::anyhow!(
                "the component imports what this gateway does not give: {e:#} (it gives WASI 0.2: wasi:http, wasi:cli, wasi:io, wasi:clocks, wasi:random, wasi:filesystem and wasi:sockets)"
            )
        })?;
        let pre = ProxyPre::new(pre).map_err(|e| {
            anyhow::anyhow!(
                "the component is not a wasi:http proxy: it must export wasi:http/incoming-handler@0.2 ({e:#})"
            )
        })?;
        Ok(Self {
            host: ComponentHost::new(engine, &options, limits)?,
            reset: if options.recycled {
                Some(reset_export(&component).context(
                    "the component was not rewritten for resetting: precompile it with --executor component-recycled",
                )?)
            } else {
                None
            },
            pre,
            kept: InstancePool::new(if options.recycled {
                Keep::Always
            } else {
                Keep::Never
            }),
            spare_wasi: Mutex::default(),
            #[cfg(test)]
            interrupt_resets: AtomicU64::new(0),
        })
    }

    /// Makes one instance and drops it, so that a component the pool cannot hold (too many
    /// modules, memories or tables, a memory larger than the limit) is refused at start rather
    /// than at its first request. Instantiating runs none of the guest's code.
    pub async fn checked(self) -> anyhow::Result<Self> {
        let mut store = self.store(Instant::now() + self.host.limits.deadline);
        let instance = self.pre.instance_pre().instantiate_async(&mut store).await;
        drop(store);
        match instance {
            Ok(_) => Ok(self),
            Err(e) => Err(self.host.cannot_make_one(&e)),
        }
    }

    /// A store for one request: what the instance sees of WASI, its memory limit, its deadline.
    fn store(&self, deadline: Instant) -> Store<ComponentCtx> {
        let spare = self.spare_wasi.lock().expect("never poisoned").pop();
        let wasi = match spare {
            Some(mut wasi) => {
                *wasi.random() = WasiRandomCtx::default();
                wasi
            }
            None => self.host.wasi(),
        };
        self.host.store(wasi, deadline)
    }

    /// Ends a store: its instance goes back to the pool and whatever the guest held is dropped.
    /// Its WASI context is kept for a later store, which gives it new random generators: the
    /// rest of it (the environment, stdio, clocks; no files, no sockets) is what every instance
    /// is given and no guest call changes, and building a new one costs two of everything
    /// (`WasiCtxBuilder::build` leaves a new default builder behind).
    fn retire(&self, store: Store<ComponentCtx>) {
        let ctx = store.into_data();
        let mut spare = self.spare_wasi.lock().expect("never poisoned");
        if spare.len() < self.host.limits.max_instances as usize {
            spare.push(ctx.wasi);
        }
    }

    /// Instances made so far, and how many of them were discarded rather than reused (always
    /// none for a fresh instance per request).
    pub fn instances(&self) -> (u64, u64) {
        self.host.instances()
    }

    /// An instance for a request ending at `deadline`: an idle one given new contexts, or a new one.
    /// With it, how many requests it has served.
    async fn instance(&self, deadline: Instant) -> anyhow::Result<(Kept, u32)> {
        if let Some((mut k, served)) = self.kept.take() {
            let ctx = k.store.data_mut();
            // A new table: a handle the last request left undropped reaches nothing of it. New
            // random generators and HTTP state make this one's a fresh instance's (the rest of
            // the WASI context is kept, as `retire` says why).
            ctx.table = ResourceTable::new();
            *ctx.wasi.random() = WasiRandomCtx::default();
            ctx.http = WasiHttpCtx::new();
            ctx.deadline = deadline;
            k.store.set_epoch_deadline(1);
            return Ok((k, served));
        }
        let mut store = self.store(deadline);
        let (proxy, reset) = match &self.reset {
            None => (self.pre.instantiate_async(&mut store).await?, None),
            Some(index) => {
                let instance = self
                    .pre
                    .instance_pre()
                    .instantiate_async(&mut store)
                    .await?;
                let proxy = Proxy::new(&mut store, &instance)?;
                let reset = instance.get_typed_func::<(), ()>(&mut store, index)?;
                (proxy, Some(reset))
            }
        };
        store.data_mut().limits.instantiated = true;
        self.host.made_one();
        Ok((
            Kept {
                store,
                proxy,
                reset,
                left: 0,
            },
            0,
        ))
    }

    async fn run(&self, req: ExecRequest) -> Result<Reply, Failure> {
        let limits = &self.host.limits;
        let deadline = Instant::now() + limits.deadline;
        let (
            Kept {
                mut store,
                proxy,
                reset,
                mut left,
            },
            served,
        ) = self
            .instance(deadline)
            .await
            .map_err(|e| guest_failure(&e, limits))?;
        let (sender, receiver) = tokio::sync::oneshot::channel();
        // Set the moment the guest sets its response, in its call: whether the guest gave one
        // must not depend on when the receiver is next polled (tokio's cooperative budget may
        // make a ready receiver wait a turn).
        let response_set = Arc::new(AtomicBool::new(false));
        let (request, out) = {
            let set = response_set.clone();
            let mut http = store.data_mut().http();
            let request = http.new_incoming_request(Scheme::Http, incoming(req));
            let out = http.new_response_outparam_from_callback(move |response| {
                set.store(true, Ordering::Release);
                // The receiver is gone only when this request was given up (a timeout).
                let _ = sender.send(response);
            });
            match (request, out) {
                (Ok(r), Ok(o)) => (r, o),
                (Err(e), _) | (_, Err(e)) => return Err(Failure::guest_failed(&e.into())),
            }
        };
        // The call and the reading of its response run together: a guest writing a body larger
        // than the host's buffer waits for it to be read.
        let answer = read_response(receiver, limits.max_memory_bytes);
        // The epoch interrupts guest code at the deadline; this cuts a wait in the host (an
        // outgoing request, a pollable) at the same time.
        let timer = tokio::time::sleep_until(deadline.into());
        let (mut answer, mut timer) = (pin!(answer), pin!(timer));
        let mut answered = None;
        let called = {
            let call = proxy
                .wasi_http_incoming_handler()
                .call_handle(&mut store, request, out);
            let mut call = pin!(call);
            let mut called = None;
            std::future::poll_fn(|cx| {
                if called.is_none()
                    && let Poll::Ready(r) = call.as_mut().poll(cx)
                {
                    called = Some(r);
                }
                if answered.is_none()
                    && let Poll::Ready(a) = answer.as_mut().poll(cx)
                {
                    answered = Some(a);
                }
                let done = match (&called, &answered) {
                    // The whole exchange: answered, and the guest's call over (work it does
                    // after its response is finished runs to its end, within the deadline).
                    (Some(_), Some(_)) => true,
                    // The call is over before its response was whole: the guest can add nothing
                    // to it any more (below).
                    (Some(_), None) => true,
                    // Its response cannot be sent (too large, aborted): no need to wait for it.
                    (None, Some(Err(_))) => true,
                    _ => false,
                };
                if done || timer.as_mut().poll(cx).is_ready() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
            called
        };
        // The guest can add nothing to its response once its call is over. A body it left
        // unfinished is a corrupted one (wasi:http's `outgoing-body.finish`), which Wasmtime says
        // when the guest drops it but not when its instance goes; say it. Dropping the store then
        // drops whatever else the guest held (an outparam it never set) and frees its instance:
        // such a response (as a JavaScript handler that throws leaves one) ends now, not at the
        // deadline.
        let aborted = called.is_some()
            && answered.is_none()
            && abort_unfinished_bodies(&mut store.data_mut().table);
        // A recycled instance may be kept only if its handler returned, nothing grew, the guest
        // holds no resource (each one it holds, an unfinished body among them, is an entry in the
        // table), and its reset then ran to its end; then the response, if not read yet, ends
        // without the store going. Any other store goes now, and ends whatever the guest held.
        let mut keep = self.kept.keeps() && matches!(called, Some(Ok(()))) && !aborted && {
            let ctx = store.data_mut();
            !ctx.limits.grew && (ctx.table.is_empty() || reset.is_some())
        };
        // A guest whose language drops handles only when it collects garbage (JavaScript's)
        // leaves some behind: the host's side of them goes with the request's table, but the
        // instance keeps their numbers, so it is kept only until it holds a bounded number.
        if keep && reset.is_some() {
            left += store.data_mut().table.iter_mut().count();
            keep = left <= MAX_LEFT_HANDLES;
        }
        if keep && let Some(reset) = &reset {
            #[cfg(test)]
            if self
                .interrupt_resets
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
            {
                // The deadline passed: the epoch check at the reset's entry interrupts it.
                store.data_mut().deadline = Instant::now();
                store.set_epoch_deadline(0);
            }
            keep = reset.call_async(&mut store, ()).await.is_ok() && !store.data().limits.grew;
        }
        let kept = if keep {
            Some(store)
        } else {
            self.retire(store);
            None
        };
        if answered.is_none()
            && matches!(called, Some(Ok(())))
            && response_set.load(Ordering::Acquire)
        {
            answered = std::future::poll_fn(|cx| match answer.as_mut().poll(cx) {
                Poll::Ready(a) => Poll::Ready(Some(a)),
                Poll::Pending if timer.as_mut().poll(cx).is_ready() => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            })
            .await;
        }
        if self.kept.keeps() {
            match kept {
                Some(store) if matches!(answered, Some(Ok(_))) => {
                    let again = Kept {
                        store,
                        proxy,
                        reset,
                        left,
                    };
                    self.kept.give_back(again, served);
                }
                kept => {
                    if let Some(store) = kept {
                        self.retire(store);
                    }
                    self.host.discarded_one();
                }
            }
        }
        match (called, answered) {
            // A whole response counts, even if the guest then trapped or ran out of time.
            (_, Some(Ok(reply))) => Ok(reply),
            (Some(Err(e)), _) => Err(guest_failure(&e.into(), limits)),
            (_, Some(Err(detail))) => Err(Failure::new(500, detail)),
            (Some(Ok(())), None) => Err(Failure::new(
                500,
                "guest failed: the component returned without setting a response",
            )),
            (None, None) => Err(guest_failure(&DeadlineExceeded.into(), limits)),
        }
    }
}

impl Load for ComponentExecutor {
    type Options = ComponentOptions;
    /// wasi:http's imports wait: always async.
    const DEFAULT_CALLS: Option<GuestCalls> = None;

    /// `caps` go unused: what a component reaches is in `options`.
    unsafe fn load(
        source: Source<'_>,
        options: ComponentOptions,
        _caps: Arc<Capabilities>,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        // SAFETY: passed on to the caller.
        unsafe { Self::from_source(source, options, limits) }
    }

    #[cfg(feature = "compiler")]
    fn precompile(
        wasm: &[u8],
        options: &ComponentOptions,
        limits: GuestLimits,
    ) -> anyhow::Result<Vec<u8>> {
        refuse_core_module(wasm)?;
        let engine = Engine::new(&Self::config(limits))?;
        Ok(engine.precompile_component(&for_executor(wasm, options)?)?)
    }

    fn ready(self) -> impl Future<Output = anyhow::Result<Self>> + Send {
        self.checked()
    }
}

impl Executor for ComponentExecutor {
    fn name(&self) -> &'static str {
        if self.kept.keeps() {
            "component-recycled"
        } else {
            "component-pooled"
        }
    }

    /// As the pooled executor: a fresh instance costs microseconds.
    fn defer_replies_when_busy(&self) -> bool {
        true
    }

    async fn execute(&self, req: ExecRequest) -> Result<Reply, Failure> {
        self.host.admission.admit(|| self.run(req)).await
    }
}

/// Aborts every outgoing body (a response's or a request's) still in the table: what is still
/// there was never finished (finishing one removes it). Its reader then sees an error rather than
/// an end, as it does when a guest drops a body unfinished. Whether there was one: a recycled
/// instance that left one is not kept.
fn abort_unfinished_bodies(table: &mut ResourceTable) -> bool {
    let mut aborted = false;
    for (_, entry) in table.iter_mut() {
        if let Some(body) = entry.downcast_mut::<HostOutgoingBody>() {
            // `abort` takes the body: leave an unused one in its place.
            let (spare, _) = HostOutgoingBody::new(StreamContext::Response, None, 1, 1);
            std::mem::replace(body, spare).abort();
            aborted = true;
        }
    }
    aborted
}

/// The request as `wasi:http` takes it in: with an authority (the `host` header's, or
/// `localhost` for a client that sent none) and its body whole.
pub(crate) fn incoming(req: ExecRequest) -> hyper::Request<Full<Bytes>> {
    let uri = if req.headers.contains_key(hyper::header::HOST) {
        req.target.parse::<Uri>()
    } else {
        format!("http://localhost{}", req.target).parse::<Uri>()
    };
    let mut request = hyper::Request::new(Full::new(req.body));
    *request.method_mut() = req.method;
    // The server hands over only targets hyper parsed; the fallback is unreachable in practice.
    *request.uri_mut() = uri.unwrap_or_else(|_| Uri::from_static("/"));
    *request.headers_mut() = req.headers;
    request
}

/// The guest's response, whole: its head from the outparam, then its body up to `max_bytes`.
async fn read_response(
    receiver: tokio::sync::oneshot::Receiver<
        Result<hyper::Response<wasmtime_wasi_http::p2::body::HyperOutgoingBody>, ErrorCode>,
    >,
    max_bytes: usize,
) -> Result<Reply, String> {
    let response = match receiver.await {
        Ok(Ok(response)) => response,
        Ok(Err(code)) => return Err(format!("guest failed: the component answered {code:?}")),
        Err(_) => return Err("guest failed: the component dropped its response".to_owned()),
    };
    let (parts, body) = response.into_parts();
    let body = match Limited::new(body, max_bytes).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Err(format!(
                "guest failed: its response body is larger than {max_bytes} bytes"
            ));
        }
        Err(e) => {
            return Err(format!(
                "guest failed: its response body did not end well ({e}): an abort, or fewer or more bytes than its content-length"
            ));
        }
    };
    Ok(Reply {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body,
    })
}

/// Each instance's host state.
pub(crate) struct ComponentCtx {
    pub(crate) table: ResourceTable,
    pub(crate) wasi: WasiCtx,
    pub(crate) http: WasiHttpCtx,
    outbound: OutboundHooks,
    pub(crate) limits: GrowthWatch,
    pub(crate) deadline: Instant,
}

impl ComponentCtx {
    /// A new instance's: `wasi`, an empty resource table and HTTP state, outgoing requests
    /// through `outbound`, the memory limit of `limits`, the request's `deadline`.
    pub(crate) fn new(
        wasi: WasiCtx,
        outbound: &Arc<Outbound>,
        limits: &GuestLimits,
        deadline: Instant,
    ) -> Self {
        Self {
            table: ResourceTable::new(),
            wasi,
            http: WasiHttpCtx::new(),
            outbound: OutboundHooks(outbound.clone()),
            limits: GrowthWatch {
                limits: limits.store_limits_for(CORE_INSTANCES_PER_COMPONENT as usize),
                instantiated: false,
                grew: false,
            },
            deadline,
        }
    }
}

/// The store's limits, noting growth after instantiation: a memory cannot be shrunk back, so a
/// recycled instance whose memory or table grew is discarded rather than reset.
pub(crate) struct GrowthWatch {
    limits: StoreLimits,
    pub(crate) instantiated: bool,
    grew: bool,
}

impl ResourceLimiter for GrowthWatch {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grew |= self.instantiated;
        self.limits.memory_growing(current, desired, maximum)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grew |= self.instantiated;
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

impl WasiView for ComponentCtx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for ComponentCtx {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.outbound,
        }
    }
}

/// Where outgoing requests may go, and the kept-alive connections they go over.
pub(crate) struct Outbound {
    /// The authority (`host:port`) of the one origin allowed.
    allowed: Option<hyper::http::uri::Authority>,
    client: Client<HttpConnector, WasiBody>,
}

impl Outbound {
    pub(crate) fn new(upstream: Option<&str>) -> anyhow::Result<Self> {
        let allowed = upstream
            .map(|u| -> anyhow::Result<_> {
                let uri: Uri = u
                    .parse()
                    .map_err(|e| anyhow::anyhow!("--upstream {u:?} is not a URL: {e}"))?;
                match (uri.scheme_str(), uri.authority()) {
                    (Some("http"), Some(a)) if a.port().is_some() => Ok(a.clone()),
                    _ => anyhow::bail!("--upstream {u:?} must be an http://host:port URL"),
                }
            })
            .transpose()?;
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Self { allowed, client })
    }

    /// The request's answer, if it goes where it may.
    async fn send(
        &self,
        request: hyper::Request<WasiBody>,
        options: Option<RequestOptions>,
    ) -> Result<hyper::Response<WasiBody>, wasmtime_wasi_http::Error> {
        use wasmtime_wasi_http::Error;
        let uri = request.uri();
        let allowed = uri.scheme_str() == Some("http")
            && self
                .allowed
                .as_ref()
                .is_some_and(|a| uri.authority().is_some_and(|b| same_origin(a, b)));
        if !allowed {
            return Err(Error::HttpRequestDenied);
        }
        let sent = self.client.request(request);
        let first_byte = options.and_then(|o| o.first_byte_timeout);
        let response = match first_byte {
            Some(t) => tokio::time::timeout(t, sent)
                .await
                .map_err(|_| Error::HttpResponseTimeout)?,
            None => sent.await,
        };
        let response = response.map_err(|e| {
            if e.is_connect() {
                Error::ConnectionRefused
            } else {
                Error::InternalError(Some(e.to_string()))
            }
        })?;
        Ok(response.map(|body| body.map_err(Error::Hyper).boxed_unsync()))
    }
}

/// Whether two authorities are the same host and port (port 80 where none is written).
fn same_origin(a: &hyper::http::uri::Authority, b: &hyper::http::uri::Authority) -> bool {
    a.host().eq_ignore_ascii_case(b.host())
        && a.port_u16().unwrap_or(80) == b.port_u16().unwrap_or(80)
}

/// What `wasi:http`'s host code calls back: only sending is ours.
struct OutboundHooks(Arc<Outbound>);

impl WasiHttpHooks for OutboundHooks {
    fn send_request(
        &mut self,
        request: hyper::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        hyper::Response<WasiBody>,
                        Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
                    ),
                    wasmtime_wasi_http::Error,
                >,
            > + Send,
    > {
        let outbound = self.0.clone();
        Box::new(async move {
            let response = outbound.send(request, options).await?;
            let done: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send> =
                Box::new(async { Ok(()) });
            Ok((response, done))
        })
    }
}

/// The component as the executor compiles it: rewritten to reset its instances when they are
/// recycled, else as given.
#[cfg(feature = "compiler")]
fn for_executor<'a>(
    wasm: &'a [u8],
    options: &ComponentOptions,
) -> anyhow::Result<std::borrow::Cow<'a, [u8]>> {
    Ok(if options.recycled {
        std::borrow::Cow::Owned(crate::component_reset::rewrite(wasm)?)
    } else {
        std::borrow::Cow::Borrowed(wasm)
    })
}

/// Refuses a core module given as a component, saying which executor runs one.
#[cfg(feature = "compiler")]
pub(crate) fn refuse_core_module(wasm: &[u8]) -> anyhow::Result<()> {
    anyhow::ensure!(
        !wasmparser::Parser::is_core_wasm(wasm),
        "not a wasi:http component: it is a core module (a core module implementing the handler ABI runs with --executor pooled)"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reset that fails at run time (here interrupted, as at the deadline) discards its
    /// instance; the request it followed is answered, and the next one gets a fresh instance.
    #[cfg(feature = "compiler")]
    #[test]
    fn a_reset_that_fails_discards_the_instance_and_the_request_is_answered() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let options = ComponentOptions {
                env: Vec::new(),
                upstream: None,
                inherit_stdio: false,
                recycled: true,
            };
            let limits = GuestLimits {
                max_instances: 1,
                ..GuestLimits::default()
            };
            let ex = ComponentExecutor::new(wasmlab_guest_artifacts::HTTP, options, limits)
                .unwrap()
                .checked()
                .await
                .unwrap();
            let get = |target: &str| {
                ex.execute(ExecRequest::new(
                    hyper::Method::GET,
                    target.to_owned(),
                    bytes::Bytes::new(),
                ))
            };
            for _ in 0..3 {
                assert_eq!(get("/").await.map(|r| r.status).ok(), Some(200));
            }
            let made = ex.instances();
            assert_eq!(made, (1, 0), "kept and reset");
            ex.interrupt_resets.store(1, Ordering::Relaxed);
            let answered = get("/").await;
            assert_eq!(answered.map(|r| r.status).ok(), Some(200));
            assert_eq!(ex.instances(), (made.0, made.1 + 1), "discarded");
            assert_eq!(get("/").await.map(|r| r.status).ok(), Some(200));
            assert_eq!(ex.instances(), (made.0 + 1, made.1 + 1), "a fresh one");
            assert_eq!(get("/").await.map(|r| r.status).ok(), Some(200));
            assert_eq!(ex.instances(), (made.0 + 1, made.1 + 1), "kept again");
        });
    }

    #[test]
    fn origins_compare_by_host_and_port() {
        let a = |s: &str| s.parse::<hyper::http::uri::Authority>().unwrap();
        assert!(same_origin(&a("127.0.0.1:9000"), &a("127.0.0.1:9000")));
        assert!(same_origin(&a("Up.Example:80"), &a("up.example")));
        assert!(!same_origin(&a("127.0.0.1:9000"), &a("127.0.0.1:9001")));
        assert!(!same_origin(&a("127.0.0.1:9000"), &a("127.0.0.2:9000")));
    }

    #[test]
    fn only_an_http_origin_with_a_port_is_an_upstream() {
        assert!(Outbound::new(Some("http://127.0.0.1:9000")).is_ok());
        for bad in [
            "127.0.0.1:9000",
            "https://127.0.0.1:9000",
            "http://x",
            "not a url",
        ] {
            assert!(Outbound::new(Some(bad)).is_err(), "{bad}");
        }
    }
}
