//! `cargo bench -p wasmlab-gateway-wasm`: the per-request cost of each executor without HTTP,
//! side by side in one run (median of several rounds, microseconds per request): the pooled,
//! recycled and shared executors each with synchronous guest calls (`…:sync`, no fiber) and async
//! ones (`…:async`, a fiber per call), the wasi:http component fresh per request
//! (`component-pooled`) and recycled (`component-recycled`), and Wasmtime's floor under the pooled
//! and component executors: what a fresh instance costs before any guest code runs.
//!
//! The floors: `floor:instance` a fresh instance of an empty core module, `floor:inst+call` with
//! one async call (a fiber made and switched into and out of), `floor:sync-inst` and
//! `floor:sync+call` the same instantiated and called synchronously (no fiber: the floor of a
//! run-to-completion executor); `floor:component`, `floor:comp+call` and `floor:comp+wasi` the same for an
//! empty component (the last with a WASI context built and a resource table made per request, as
//! the component executor made them until it kept contexts between stores); `floor:http-instance` wasmlab's wasi:http component
//! instantiated in the component executor's kind of store, with no call.
//!
//! Times on a shared machine are noisy; instruction counts are not. `WASMLAB_BENCH_ITERS=N` sets
//! the requests per round, small enough to run the bench under callgrind:
//! `WASMLAB_BENCH_ITERS=2000 valgrind --tool=callgrind --toggle-collect='executors::measured_round*' target/release/deps/executors-* --bench wasmtime-pooled`
//! counts only the measured loops (7 rounds × 2 routes × N requests).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use wasmlab_gateway::{Capabilities, ExecRequest, Executor, NativeExecutor};
#[cfg(feature = "components-p3")]
use wasmlab_gateway_wasm::ReusedComponentExecutor;
#[cfg(feature = "components")]
use wasmlab_gateway_wasm::{ComponentExecutor, ComponentOptions};
use wasmlab_gateway_wasm::{
    GuestCalls, GuestLimits, KeptExecutor, NaiveExecutor, PooledExecutor, Reuse,
};

fn per_request_us<E: Executor>(rt: &tokio::runtime::Runtime, ex: &E, target: &str, n: u32) -> f64 {
    median_us(rt, n, async || {
        let r = ex
            .execute(ExecRequest::new(
                hyper::Method::GET,
                target.to_owned(),
                Bytes::new(),
            ))
            .await
            .expect("the bench's requests succeed");
        assert_eq!(r.status, 200);
    })
}

/// Median over rounds of `n` runs of `step`, in microseconds per run.
fn median_us(rt: &tokio::runtime::Runtime, n: u32, mut step: impl AsyncFnMut()) -> f64 {
    let mut rounds: Vec<f64> = (0..7)
        .map(|_| {
            measured_round(rt, async {
                let t = Instant::now();
                for _ in 0..n {
                    step().await;
                }
                t.elapsed().as_secs_f64() * 1e6 / f64::from(n)
            })
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[rounds.len() / 2]
}

/// One timed round. Never inlined, so callgrind's `--toggle-collect='executors::measured_round*'`
/// counts the rounds and nothing else.
#[inline(never)]
fn measured_round(rt: &tokio::runtime::Runtime, round: impl Future<Output = f64>) -> f64 {
    rt.block_on(round)
}

/// A fresh `Store` and instance of a module that does nothing (one 64 KiB page, like the core
/// guest), with the pooled executor's settings: the part of a pooled request that no guest or
/// host code can remove. `call` adds one call of an empty export: async (on a fiber), or
/// synchronous with `sync` (instantiated synchronously too: no fiber at all).
fn instance_floor_us(
    rt: &tokio::runtime::Runtime,
    limits: GuestLimits,
    n: u32,
    (call, sync): (bool, bool),
) -> f64 {
    use wasmtime::{Engine, Linker, Module, Store};
    let engine = Engine::new(&PooledExecutor::config(limits)).unwrap();
    let module = Module::new(
        &engine,
        r#"(module (memory (export "memory") 1) (func (export "f") (result i32) i32.const 0))"#,
    )
    .unwrap();
    let pre = Linker::<()>::new(&engine).instantiate_pre(&module).unwrap();
    median_us(rt, n, async || {
        let mut store = Store::new(&engine, ());
        // No ticker runs here, so the epoch stays 0 and this deadline is never reached.
        store.set_epoch_deadline(1);
        let instance = match sync {
            true => pre.instantiate(&mut store).unwrap(),
            false => pre.instantiate_async(&mut store).await.unwrap(),
        };
        if call {
            let f = instance.get_typed_func::<(), i32>(&mut store, "f").unwrap();
            let r = match sync {
                true => f.call(&mut store, ()).unwrap(),
                false => f.call_async(&mut store, ()).await.unwrap(),
            };
            std::hint::black_box(r);
        }
    })
}

/// The same floor for a component: a fresh `Store` (with a new WASI context and resource table
/// when `wasi`) and instance of a component that does nothing but export one
/// function; `call` adds one async call of it.
#[cfg(feature = "components")]
fn component_floor_us(
    rt: &tokio::runtime::Runtime,
    limits: GuestLimits,
    n: u32,
    wasi: bool,
    call: bool,
) -> f64 {
    use wasmtime::Store;
    use wasmtime::component::{Component, Linker, ResourceTable};
    let engine = wasmtime::Engine::new(&ComponentExecutor::config(limits)).unwrap();
    let component = Component::new(
        &engine,
        r#"(component
            (core module $m
                (memory (export "memory") 1)
                (func (export "f") (result i32) i32.const 0))
            (core instance $i (instantiate $m))
            (func (export "f") (result u32) (canon lift (core func $i "f"))))"#,
    )
    .unwrap();
    let pre = Linker::<Option<(wasmtime_wasi::WasiCtx, ResourceTable)>>::new(&engine)
        .instantiate_pre(&component)
        .unwrap();
    median_us(rt, n, async || {
        let ctx = wasi.then(|| {
            (
                wasmtime_wasi::WasiCtx::builder().build(),
                ResourceTable::new(),
            )
        });
        let mut store = Store::new(&engine, ctx);
        store.set_epoch_deadline(1);
        let instance = pre.instantiate_async(&mut store).await.unwrap();
        if call {
            let f = instance
                .get_typed_func::<(), (u32,)>(&mut store, "f")
                .unwrap();
            std::hint::black_box(f.call_async(&mut store, ()).await.unwrap());
        }
    })
}

/// wasmlab's wasi:http component instantiated in a store like the component executor's (a WASI
/// context, a resource table, a wasi:http context) and dropped, without a call: what the
/// component's three modules and their imports cost to make, apart from the request.
#[cfg(feature = "components")]
fn http_component_instance_us(rt: &tokio::runtime::Runtime, limits: GuestLimits, n: u32) -> f64 {
    use wasmtime::Store;
    use wasmtime::component::{Component, Linker, ResourceTable};
    use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
    use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

    struct NoSend;
    impl WasiHttpHooks for NoSend {
        fn send_request(
            &mut self,
            _: hyper::Request<wasmtime_wasi_http::WasiBody>,
            _: Option<wasmtime_wasi_http::RequestOptions>,
            _: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
        ) -> Box<
            dyn Future<
                    Output = Result<
                        (
                            hyper::Response<wasmtime_wasi_http::WasiBody>,
                            Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
                        ),
                        wasmtime_wasi_http::Error,
                    >,
                > + Send,
        > {
            Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) })
        }
    }
    struct Ctx(WasiCtx, ResourceTable, WasiHttpCtx, NoSend);
    impl WasiView for Ctx {
        fn ctx(&mut self) -> WasiCtxView<'_> {
            WasiCtxView {
                ctx: &mut self.0,
                table: &mut self.1,
            }
        }
    }
    impl WasiHttpView for Ctx {
        fn http(&mut self) -> WasiHttpCtxView<'_> {
            WasiHttpCtxView {
                ctx: &mut self.2,
                table: &mut self.1,
                hooks: &mut self.3,
            }
        }
    }
    let engine = wasmtime::Engine::new(&ComponentExecutor::config(limits)).unwrap();
    let component = Component::new(&engine, wasmlab_guest_artifacts::HTTP).unwrap();
    let mut linker = Linker::<Ctx>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).unwrap();
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).unwrap();
    let pre = linker.instantiate_pre(&component).unwrap();
    median_us(rt, n, async || {
        let ctx = Ctx(
            WasiCtx::builder().build(),
            ResourceTable::new(),
            WasiHttpCtx::new(),
            NoSend,
        );
        let mut store = Store::new(&engine, ctx);
        store.set_epoch_deadline(1);
        std::hint::black_box(pre.instantiate_async(&mut store).await.unwrap());
    })
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let caps = || Arc::new(Capabilities::new(None).unwrap());
    let native = NativeExecutor::new(caps());
    // One request runs at a time here: a small pool suffices, and its address space reservation
    // fits under valgrind (a pool of 1,024 slots reserves terabytes).
    let limits = GuestLimits {
        max_instances: 4,
        ..GuestLimits::default()
    };
    let naive = NaiveExecutor::new(
        wasmlab_guest_artifacts::COMMAND,
        caps(),
        GuestLimits::default(),
    )
    .unwrap();
    // `cargo bench -p wasmlab-gateway-wasm -- pooled` measures only executors whose name contains "pooled".
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    println!("{:<24} {:>12} {:>12}", "executor", "hello µs", "state µs");
    let row = |name: &str, f: &dyn Fn(&str) -> f64| {
        if wanted(name) {
            println!("{name:<24} {:>12.3} {:>12.3}", f("/"), f("/state"));
        }
    };
    let iters = |default: u32| {
        std::env::var("WASMLAB_BENCH_ITERS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    row("native", &|t| {
        per_request_us(&rt, &native, t, iters(200_000))
    });
    // The executors are made only when their row is wanted (a pool reserves address space).
    for calls in [GuestCalls::Sync, GuestCalls::Async] {
        let limits = GuestLimits { calls, ..limits };
        let name = |executor: &str| format!("{executor}:{calls}");
        if wanted(&name("wasmtime-pooled")) {
            let pooled =
                PooledExecutor::new(wasmlab_guest_artifacts::CORE, caps(), limits).unwrap();
            row(&name("wasmtime-pooled"), &|t| {
                per_request_us(&rt, &pooled, t, iters(50_000))
            });
        }
        for (executor, reuse) in [
            ("wasmtime-recycled", Reuse::Recycled),
            ("wasmtime-shared", Reuse::Shared),
        ] {
            if wanted(&name(executor)) {
                let kept = KeptExecutor::new(wasmlab_guest_artifacts::CORE, reuse, caps(), limits)
                    .unwrap();
                row(&name(executor), &|t| {
                    per_request_us(&rt, &kept, t, iters(50_000))
                });
            }
        }
    }
    row("wasmtime-naive", &|t| {
        per_request_us(&rt, &naive, t, iters(2_000))
    });
    // The wasi:http component: hello only, as its /state is an outgoing request to an upstream
    // (this bench runs none).
    #[cfg(feature = "components")]
    for (name, recycled) in [("component-pooled", false), ("component-recycled", true)] {
        if !wanted(name) {
            continue;
        }
        let options = ComponentOptions {
            recycled,
            ..ComponentOptions::default()
        };
        let component = rt
            .block_on(
                ComponentExecutor::new(wasmlab_guest_artifacts::HTTP, options, limits)
                    .unwrap()
                    .checked(),
            )
            .unwrap();
        let hello = per_request_us(&rt, &component, "/", iters(50_000));
        println!("{name:<24} {hello:>12.3} {:>12}", "(upstream)");
    }
    // The same handlers as a WASI 0.3 component, one instance for 128 requests.
    #[cfg(feature = "components-p3")]
    if wanted("component-reused") {
        let reused = rt
            .block_on(
                ReusedComponentExecutor::new(
                    wasmlab_guest_artifacts::HTTP_P3,
                    ComponentOptions::default(),
                    limits,
                )
                .unwrap()
                .checked(),
            )
            .unwrap();
        let hello = per_request_us(&rt, &reused, "/", iters(50_000));
        println!(
            "{:<24} {hello:>12.3} {:>12}",
            "component-reused", "(upstream)"
        );
    }
    // Not per workload: the same figure is printed in both columns' place once.
    for (name, call, sync) in [
        ("floor:instance", false, false),
        ("floor:inst+call", true, false),
        ("floor:sync-inst", false, true),
        ("floor:sync+call", true, true),
    ] {
        if wanted(name) {
            println!(
                "{name:<24} {:>12.3}",
                instance_floor_us(&rt, limits, iters(50_000), (call, sync))
            );
        }
    }
    #[cfg(feature = "components")]
    if wanted("floor:http-instance") {
        println!(
            "{:<24} {:>12.3}",
            "floor:http-instance",
            http_component_instance_us(&rt, limits, iters(50_000))
        );
    }
    #[cfg(feature = "components")]
    for (name, wasi, call) in [
        ("floor:component", false, false),
        ("floor:comp+call", false, true),
        ("floor:comp+wasi", true, true),
    ] {
        if wanted(name) {
            println!(
                "{name:<24} {:>12.3}",
                component_floor_us(&rt, limits, iters(50_000), wasi, call)
            );
        }
    }
}
