//! WASI 0.3 `wasi:http/service` components, one instance serving many requests one after
//! another (`component-reused`): what `wasmtime serve` does with such a component (128 requests
//! an instance by default, `--max-instance-reuse-count`), under the rules of the other component
//! executors (a deadline, 504; a memory limit; bounded instances and queue, 503; a trap, 500; the
//! host frames every response; outgoing requests only to `--upstream`).
//!
//! Its isolation, plainly: the requests an instance serves share its memory, globals and tables,
//! so a value one request leaves in the guest is there for the next, and a task the guest leaves
//! running after its response runs on during the instance's next requests (within their
//! deadlines). Requests never share an instance at the same moment here (`wasmtime serve` runs up
//! to 16 at once in one); an instance that traps, runs out of time or fails to answer is
//! discarded, and one that has served [`REQUESTS_PER_INSTANCE`] is replaced by a fresh one.

use std::sync::Arc;
use std::time::Instant;

use http_body_util::{BodyExt, Limited};
use wasmlab_gateway::{Capabilities, ExecRequest, Executor, Failure, Reply};
use wasmtime::component::Linker;
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p3::Request as ServiceRequest;
use wasmtime_wasi_http::p3::bindings::{Service, ServicePre};

use crate::component::{
    ComponentCtx, ComponentExecutor, ComponentHost, ComponentOptions, incoming, load_component,
};
use crate::instance_pool::{InstancePool, Keep};
use crate::limits::{DeadlineExceeded, GuestCalls, GuestLimits, guest_failure};
use crate::load::{Load, Source};

/// How many requests one instance serves before it is replaced: `wasmtime serve`'s default for a
/// WASI 0.3 component (`--max-instance-reuse-count`).
pub const REQUESTS_PER_INSTANCE: u32 = 128;

pub struct ReusedComponentExecutor {
    host: ComponentHost,
    pre: ServicePre<ComponentCtx>,
    idle: InstancePool<Reused>,
}

/// An instance between its requests, with its store.
struct Reused {
    store: Store<ComponentCtx>,
    service: Service,
}

/// How one exchange with the guest ended, inside its store's event loop.
enum Exchange {
    /// Its response, whole.
    Answered(Reply),
    /// An answer that is not a response (an error code, a body that broke off or is too large).
    Refused(String),
}

impl ReusedComponentExecutor {
    /// Compiles `wasm` (a `wasi:http/service` component) and links it once.
    #[cfg(feature = "compiler")]
    pub fn new(
        wasm: &[u8],
        options: ComponentOptions,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        // SAFETY: Wasm, not a precompiled file.
        unsafe { Self::from_source(Source::Wasm(wasm), options, limits) }
    }

    /// The component executors' settings, with the component model's async ABI (WASI 0.3).
    pub fn config(limits: GuestLimits) -> Config {
        let mut config = ComponentExecutor::config(limits);
        config
            .concurrency_support(true)
            .wasm_component_model_async(true);
        config
    }

    /// # Safety
    /// As [`Load::load`].
    unsafe fn from_source(
        source: Source<'_>,
        options: ComponentOptions,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        let engine = Engine::new(&Self::config(limits))?;
        // SAFETY: passed on to the caller.
        let component = unsafe {
            load_component(
                &engine,
                source,
                &options,
                "precompile it with --executor component-reused; a core module needs --executor pooled",
            )
        }?;
        let mut linker = Linker::<ComponentCtx>::new(&engine);
        // All of WASI 0.3, as `wasmtime serve -S p3 -S cli` gives: no preopened directory, no
        // network, an empty stdin.
        wasmtime_wasi::p3::add_to_linker(&mut linker)?;
        wasmtime_wasi_http::p3::add_to_linker(&mut linker)?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            anyhow::anyhow!(
                "the component imports what this executor does not give: {e:#} (it gives WASI 0.3: wasi:http, wasi:cli, wasi:clocks, wasi:random, wasi:filesystem and wasi:sockets; a WASI 0.2 component runs with --executor component or component-recycled)"
            )
        })?;
        let pre = ServicePre::new(pre).map_err(|e| {
            anyhow::anyhow!(
                "the component is not a WASI 0.3 wasi:http service: it must export wasi:http/handler@0.3 ({e:#}; a WASI 0.2 component runs with --executor component or component-recycled)"
            )
        })?;
        Ok(Self {
            host: ComponentHost::new(engine, &options, limits)?,
            pre,
            idle: InstancePool::new(Keep::UpTo(REQUESTS_PER_INSTANCE)),
        })
    }

    /// Makes the first instance (kept for the first request), so that a component the pool
    /// cannot hold is refused at start. Instantiating runs none of the guest's code.
    pub async fn checked(self) -> anyhow::Result<Self> {
        let first = self
            .instantiate(Instant::now() + self.host.limits.deadline)
            .await;
        match first {
            Ok(first) => {
                self.idle.hold(first);
                Ok(self)
            }
            Err(e) => Err(self.host.cannot_make_one(&e)),
        }
    }

    /// Instances made so far, and how many were discarded before serving their
    /// [`REQUESTS_PER_INSTANCE`] (a trap, a timeout, an answer that is not a response).
    pub fn instances(&self) -> (u64, u64) {
        self.host.instances()
    }

    async fn instantiate(&self, deadline: Instant) -> wasmtime::Result<Reused> {
        let mut store = self.host.store(self.host.wasi(), deadline);
        let service = self.pre.instantiate_async(&mut store).await?;
        store.data_mut().limits.instantiated = true;
        self.host.made_one();
        Ok(Reused { store, service })
    }

    /// An idle instance given this request's deadline, or a new one; with it, how many requests
    /// it has served.
    async fn instance(&self, deadline: Instant) -> wasmtime::Result<(Reused, u32)> {
        match self.idle.take() {
            Some((mut reused, served)) => {
                reused.store.data_mut().deadline = deadline;
                reused.store.set_epoch_deadline(1);
                Ok((reused, served))
            }
            None => Ok((self.instantiate(deadline).await?, 0)),
        }
    }

    async fn run(&self, req: ExecRequest) -> Result<Reply, Failure> {
        let limits = &self.host.limits;
        let deadline = Instant::now() + limits.deadline;
        let (Reused { mut store, service }, served) = self
            .instance(deadline)
            .await
            .map_err(|e| guest_failure(&e.into(), limits))?;
        let (request, request_io) =
            ServiceRequest::from_http(store.data_mut().http().hooks, incoming(req));
        let max_bytes = limits.max_memory_bytes;
        // The store's event loop runs until the response is read whole: the guest writes its
        // body (a task of its own, after `handle` returned) only while the loop runs.
        let exchange = store.run_concurrent(async |accessor| -> wasmtime::Result<Exchange> {
            let response = match service.handle(accessor, request).await? {
                Ok(response) => response,
                Err(code) => {
                    return Ok(Exchange::Refused(format!(
                        "guest failed: the component answered {code:?}"
                    )));
                }
            };
            let response = accessor.with(|mut store| response.into_http(&mut store, request_io))?;
            let (parts, body) = response.into_parts();
            Ok(match Limited::new(body, max_bytes).collect().await {
                Ok(collected) => Exchange::Answered(Reply {
                    status: parts.status.as_u16(),
                    headers: parts.headers,
                    body: collected.to_bytes(),
                }),
                Err(e) if e.is::<http_body_util::LengthLimitError>() => Exchange::Refused(format!(
                    "guest failed: its response body is larger than {max_bytes} bytes"
                )),
                Err(e) => Exchange::Refused(format!(
                    "guest failed: its response body did not end well ({e}): an error, or fewer or more bytes than its content-length"
                )),
            })
        });
        // The epoch interrupts guest code at the deadline; this cuts a wait in the host (an
        // outgoing request, a clock) at the same time.
        let outcome = tokio::time::timeout_at(deadline.into(), exchange).await;
        let answer = match outcome {
            Ok(Ok(Ok(Exchange::Answered(reply)))) => {
                self.idle.give_back(Reused { store, service }, served);
                return Ok(reply);
            }
            Ok(Ok(Ok(Exchange::Refused(detail)))) => Failure::new(500, detail),
            Ok(Ok(Err(e)) | Err(e)) => guest_failure(&e.into(), limits),
            Err(_) => guest_failure(&DeadlineExceeded.into(), limits),
        };
        // Whatever went wrong may have left the instance mid-way: it goes, with all it held.
        drop(store);
        self.host.discarded_one();
        Err(answer)
    }
}

impl Load for ReusedComponentExecutor {
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
        _options: &ComponentOptions,
        limits: GuestLimits,
    ) -> anyhow::Result<Vec<u8>> {
        crate::component::refuse_core_module(wasm)?;
        let engine = Engine::new(&Self::config(limits))?;
        Ok(engine.precompile_component(wasm)?)
    }

    fn ready(self) -> impl Future<Output = anyhow::Result<Self>> + Send {
        self.checked()
    }
}

impl Executor for ReusedComponentExecutor {
    fn name(&self) -> &'static str {
        "component-reused"
    }

    /// As the other component executors.
    fn defer_replies_when_busy(&self) -> bool {
        true
    }

    async fn execute(&self, req: ExecRequest) -> Result<Reply, Failure> {
        self.host.admission.admit(|| self.run(req)).await
    }
}
