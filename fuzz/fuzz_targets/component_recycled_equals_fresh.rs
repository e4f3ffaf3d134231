//! Isolation of `component-recycled`: any request sequence through the hostile component (its
//! state, faults that discard an instance, responses it never finishes) gets exactly the answers
//! a fresh instance per request gives.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use wasmlab_gateway_wasm::differential::{answers, hostile_component_targets, hostile_components};
use wasmlab_gateway_wasm::{ComponentExecutor, GuestLimits};

struct Executors {
    rt: tokio::runtime::Runtime,
    fresh: ComponentExecutor,
    recycled: ComponentExecutor,
}

fn executors() -> &'static Executors {
    static E: OnceLock<Executors> = OnceLock::new();
    E.get_or_init(|| {
        let (fresh, recycled) = hostile_components(GuestLimits {
            max_instances: 1,
            max_memory_bytes: 16 << 20,
            deadline: Duration::from_millis(300),
            ..GuestLimits::default()
        });
        Executors {
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            fresh,
            recycled,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let e = executors();
    let targets = hostile_component_targets(&data[..data.len().min(32)]);
    let fresh = e.rt.block_on(answers(&e.fresh, &targets));
    let recycled = e.rt.block_on(answers(&e.recycled, &targets));
    assert_eq!(fresh, recycled, "{targets:?}");
});
