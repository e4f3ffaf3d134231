//! `cargo bench -p wasmlab-gateway-wasm`: the per-request cost of each executor without HTTP,
//! side by side in one run (median of several rounds, microseconds per request).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use wasmlab_gateway::{Capabilities, ExecRequest, Executor, NativeExecutor};
use wasmlab_gateway_wasm::{GuestLimits, NaiveExecutor, PooledExecutor};

fn per_request_us<E: Executor>(rt: &tokio::runtime::Runtime, ex: &E, target: &str, n: u32) -> f64 {
    let mut rounds: Vec<f64> = (0..7)
        .map(|_| {
            rt.block_on(async {
                let t = Instant::now();
                for _ in 0..n {
                    let r = ex
                        .execute(ExecRequest {
                            method: hyper::Method::GET,
                            target: target.to_owned(),
                            body: Bytes::new(),
                        })
                        .await;
                    assert_eq!(r.status, 200);
                }
                t.elapsed().as_secs_f64() * 1e6 / f64::from(n)
            })
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[rounds.len() / 2]
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let caps = || Arc::new(Capabilities::new(None).unwrap());
    let native = NativeExecutor::new(caps());
    let pooled = PooledExecutor::new(
        wasmlab_guest_artifacts::CORE,
        caps(),
        GuestLimits::default(),
    )
    .unwrap();
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
    println!("{:<16} {:>12} {:>12}", "executor", "hello µs", "state µs");
    let row = |name: &str, f: &dyn Fn(&str) -> f64| {
        if wanted(name) {
            println!("{name:<16} {:>12.3} {:>12.3}", f("/"), f("/state"));
        }
    };
    row("native", &|t| per_request_us(&rt, &native, t, 200_000));
    row("wasmtime-pooled", &|t| {
        per_request_us(&rt, &pooled, t, 50_000)
    });
    row("wasmtime-naive", &|t| per_request_us(&rt, &naive, t, 2_000));
}
