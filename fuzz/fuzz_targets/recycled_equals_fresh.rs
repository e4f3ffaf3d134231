//! Isolation of the recycled executor: any request sequence through the secret keeper (a guest
//! with state in a global, a table, memory and the memory's size) gets exactly the answers a
//! fresh instance per request gives.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use wasmlab_gateway::Capabilities;
use wasmlab_gateway_wasm::differential::{SECRET_KEEPER, answers, secret_keeper_targets};
use wasmlab_gateway_wasm::{GuestLimits, KeptExecutor, PooledExecutor, Reuse};

struct Executors {
    rt: tokio::runtime::Runtime,
    fresh: PooledExecutor,
    recycled: KeptExecutor,
}

fn executors() -> &'static Executors {
    static E: OnceLock<Executors> = OnceLock::new();
    E.get_or_init(|| {
        let limits = GuestLimits {
            max_instances: 1,
            max_memory_bytes: 16 << 20,
            ..GuestLimits::default()
        };
        let caps = || Arc::new(Capabilities::new(None).unwrap());
        let wasm = SECRET_KEEPER.as_bytes();
        Executors {
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            fresh: PooledExecutor::new(wasm, caps(), limits).unwrap(),
            recycled: KeptExecutor::new(wasm, Reuse::Recycled, caps(), limits).unwrap(),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let e = executors();
    let targets = secret_keeper_targets(&data[..data.len().min(64)]);
    let fresh = e.rt.block_on(answers(&e.fresh, &targets));
    let recycled = e.rt.block_on(answers(&e.recycled, &targets));
    assert_eq!(fresh, recycled, "{targets:?}");
});
