//! The gateway study's embedded-Wasmtime method, per request: a new `Linker` with WASI, an
//! in-memory stdin/stdout, a `Store`, instantiation and `_start` of the WASI command guest. The
//! module is compiled once at start, as the study did.

use std::sync::Arc;

use wasmlab_gateway::{Capabilities, ExecRequest, Executor, Failure, Reply};
use wasmlab_guest_abi as abi;
use wasmtime::{Engine, Linker, Module, Store};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};
use wasmtime_wasi::{I32Exit, WasiCtxBuilder};

use crate::calls::arm_async;
use crate::imports::{self, HostCtx};
use crate::limits::{EpochTicker, GuestCalls, GuestLimits, guest_failure};
use crate::load::{Load, Source};

/// Most bytes a guest may write to stdout.
const MAX_OUTPUT: usize = 64 << 20;

pub struct NaiveExecutor {
    engine: Engine,
    module: Module,
    caps: Arc<Capabilities>,
    limits: GuestLimits,
    _ticker: EpochTicker,
}

struct NaiveState {
    wasi: WasiP1Ctx,
    host: HostCtx,
}

impl NaiveExecutor {
    pub fn new(wasm: &[u8], caps: Arc<Capabilities>, limits: GuestLimits) -> anyhow::Result<Self> {
        // The study's default engine, plus the deadline every executor here enforces.
        let mut config = wasmtime::Config::new();
        // No concurrency bookkeeping in its stores, as with Wasmtime's default build (see
        // `PooledExecutor::config`).
        config.epoch_interruption(true).concurrency_support(false);
        let engine = Engine::new(&config)?;
        let module = Module::new(&engine, wasm)?;
        anyhow::ensure!(
            module.get_export_index("_start").is_some(),
            "the command guest does not export `_start`"
        );
        Ok(Self {
            _ticker: EpochTicker::start(&engine, limits.tick())?,
            engine,
            module,
            caps,
            limits,
        })
    }

    async fn run(&self, req: &ExecRequest) -> anyhow::Result<Reply> {
        let mut linker: Linker<NaiveState> = Linker::new(&self.engine);
        wasmtime_wasi::p1::add_to_linker_async(&mut linker, |s| &mut s.wasi)?;
        imports::add_to_linker(&mut linker, |s| &mut s.host, &self.caps, GuestCalls::Async)?;
        let input = abi::encode_command_request(req.method.as_str(), &req.target, &req.body);
        let stdout = MemoryOutputPipe::new(MAX_OUTPUT);
        let wasi = WasiCtxBuilder::new()
            .stdin(MemoryInputPipe::new(input))
            .stdout(stdout.clone())
            .build_p1();
        let mut store = Store::new(
            &self.engine,
            NaiveState {
                wasi,
                host: HostCtx::new(&self.limits),
            },
        );
        store.limiter(|s| &mut s.host.limits);
        arm_async(&mut store, |s: &mut NaiveState| s.host.deadline());
        let instance = linker.instantiate_async(&mut store, &self.module).await?;
        let start = instance.get_typed_func::<(), ()>(&mut store, "_start")?;
        match start.call_async(&mut store, ()).await {
            Ok(()) => {}
            Err(e) if e.downcast_ref::<I32Exit>().is_some_and(|x| x.0 == 0) => {}
            Err(e) => return Err(e.into()),
        }
        drop(store);
        let resp = abi::decode_command_response(&stdout.contents())?;
        let headers = resp.headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        Reply::from_parts(resp.status, headers, resp.body).map_err(anyhow::Error::msg)
    }
}

/// What the naive executor says to a precompiled guest.
const COMPILES_AT_START: &str = "the naive executor compiles from Wasm at every start, as the gateway study did: give it a .wasm, and nothing to precompile";

impl Load for NaiveExecutor {
    type Options = ();
    /// WASI's imports wait: always async.
    const DEFAULT_CALLS: Option<GuestCalls> = None;
    const COMPILES_AT_START: Option<&'static str> = Some(COMPILES_AT_START);

    unsafe fn load(
        source: Source<'_>,
        (): (),
        caps: Arc<Capabilities>,
        limits: GuestLimits,
    ) -> anyhow::Result<Self> {
        match source {
            Source::Wasm(wasm) => Self::new(wasm, caps, limits),
            Source::Precompiled(_) => anyhow::bail!(COMPILES_AT_START),
        }
    }

    fn precompile(_: &[u8], (): &(), _: GuestLimits) -> anyhow::Result<Vec<u8>> {
        anyhow::bail!(COMPILES_AT_START)
    }
}

impl Executor for NaiveExecutor {
    fn name(&self) -> &'static str {
        "wasmtime-naive"
    }

    async fn execute(&self, req: ExecRequest) -> Result<Reply, Failure> {
        self.run(&req)
            .await
            .map_err(|e| guest_failure(&e, &self.limits))
    }
}
