//! The isolation spectrum, proved: a recycled instance answers every request sequence exactly as
//! a fresh instance per request does (differential, random sequences through a guest that keeps
//! state in memory, a global, a table and its memory size, and through the hostile guest's
//! secret); so does a recycled component (the hostile component's state, faults and failures to
//! answer, in random order); one that trapped or grew is discarded; and a shared instance really
//! does keep state.

use std::sync::Arc;

use proptest::prelude::*;
use wasmlab_gateway::Capabilities;
use wasmlab_gateway_wasm::differential::{
    SECRET_KEEPER, answers, hostile_component_targets, hostile_components, secret_keeper_targets,
};
use wasmlab_gateway_wasm::{ComponentExecutor, GuestLimits, KeptExecutor, PooledExecutor, Reuse};

fn limits() -> GuestLimits {
    GuestLimits {
        // One slot: every request reuses the same instance when it can.
        max_instances: 1,
        max_memory_bytes: 16 << 20,
        ..GuestLimits::default()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn caps() -> Arc<Capabilities> {
    Arc::new(Capabilities::new(None).unwrap())
}

fn pooled(wasm: &[u8]) -> PooledExecutor {
    PooledExecutor::new(wasm, caps(), limits()).unwrap()
}

fn kept(wasm: &[u8], reuse: Reuse) -> KeptExecutor {
    KeptExecutor::new(wasm, reuse, caps(), limits()).unwrap()
}

/// The hostile component fresh per request and recycled, compiled once for every case.
fn components() -> &'static (ComponentExecutor, ComponentExecutor) {
    static C: std::sync::OnceLock<(ComponentExecutor, ComponentExecutor)> =
        std::sync::OnceLock::new();
    C.get_or_init(|| {
        hostile_components(GuestLimits {
            deadline: std::time::Duration::from_millis(300),
            ..limits()
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_recycled_component_answers_every_sequence_as_fresh_instances_do(
        bytes in proptest::collection::vec(any::<u8>(), 1..24)
    ) {
        let targets = hostile_component_targets(&bytes);
        let (fresh, recycled) = components();
        let rt = runtime();
        let fresh = rt.block_on(answers(fresh, &targets));
        let recycled = rt.block_on(answers(recycled, &targets));
        prop_assert_eq!(fresh, recycled, "targets {:?}", targets);
    }

    #[test]
    fn recycled_answers_every_sequence_as_fresh_instances_do(
        bytes in proptest::collection::vec(any::<u8>(), 1..40)
    ) {
        let targets = secret_keeper_targets(&bytes);
        let rt = runtime();
        let fresh = rt.block_on(answers(&pooled(SECRET_KEEPER.as_bytes()), &targets));
        let recycled = rt.block_on(answers(&kept(SECRET_KEEPER.as_bytes(), Reuse::Recycled), &targets));
        prop_assert_eq!(fresh, recycled, "targets {:?}", targets);
    }

    #[test]
    fn recycled_equals_fresh_on_the_hostile_and_the_built_in_guest(
        picks in proptest::collection::vec(0usize..9, 1..16)
    ) {
        const HOSTILE: [&str; 6] = [
            "/secret/write?s=hunter2", "/secret/read", "/trap", "/stack", "/header?name=x-a&value=b", "/",
        ];
        const CORE: [&str; 3] = ["/", "/state", "/compute?iters=3"];
        let rt = runtime();
        let hostile = wasmlab_guest_artifacts::HOSTILE_CORE;
        let targets: Vec<String> = picks.iter().map(|p| HOSTILE[p % HOSTILE.len()].to_owned()).collect();
        let fresh = rt.block_on(answers(&pooled(hostile), &targets));
        let recycled = rt.block_on(answers(&kept(hostile, Reuse::Recycled), &targets));
        prop_assert_eq!(fresh, recycled, "hostile guest, targets {:?}", targets);
        let core = wasmlab_guest_artifacts::CORE;
        let targets: Vec<String> = picks.iter().map(|p| CORE[p % CORE.len()].to_owned()).collect();
        let fresh = rt.block_on(answers(&pooled(core), &targets));
        let recycled = rt.block_on(answers(&kept(core, Reuse::Recycled), &targets));
        prop_assert_eq!(fresh, recycled, "core guest, targets {:?}", targets);
    }
}

#[test]
fn the_secret_keeper_sees_a_fresh_instance_every_time() {
    let targets: Vec<String> = ["/g", "/m", "/t", "/r"].map(String::from).to_vec();
    let got = runtime().block_on(answers(
        &kept(SECRET_KEEPER.as_bytes(), Reuse::Recycled),
        &targets,
    ));
    let bodies: Vec<&[u8]> = got.iter().map(|(_, b)| &b[..]).collect();
    // Each request's own change shows; none survives into the next.
    assert_eq!(bodies, [&b"1011"[..], b"0111", b"0001", b"0011"]);
}

#[test]
fn an_instance_that_trapped_or_grew_is_discarded_not_reused() {
    let ex = kept(SECRET_KEEPER.as_bytes(), Reuse::Recycled);
    let rt = runtime();
    let run = |t: &[&str]| {
        rt.block_on(answers(
            &ex,
            &t.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        ))
    };
    run(&["/r", "/r", "/r"]);
    assert_eq!(ex.instances(), (1, 0), "one instance served three requests");
    let got = run(&["/x", "/r"]);
    assert_eq!(got[0].0, 500);
    assert_eq!(&got[1].1[..], b"0011");
    assert_eq!(ex.instances(), (2, 1), "the trapped instance was replaced");
    let got = run(&["/w", "/r"]);
    assert_eq!(
        &got[0].1[..],
        b"0012",
        "the request that grew sees its growth"
    );
    assert_eq!(&got[1].1[..], b"0011", "the next sees the initial size");
    assert_eq!(ex.instances(), (3, 2), "the grown instance was replaced");
}

#[test]
fn a_shared_instance_keeps_state_between_requests() {
    let ex = kept(SECRET_KEEPER.as_bytes(), Reuse::Shared);
    let targets: Vec<String> = ["/g", "/g", "/m", "/t", "/w", "/r"]
        .map(String::from)
        .to_vec();
    let got = runtime().block_on(answers(&ex, &targets));
    let bodies: Vec<&[u8]> = got.iter().map(|(_, b)| &b[..]).collect();
    assert_eq!(
        bodies,
        [&b"1011"[..], b"2011", b"2111", b"2101", b"2102", b"2102"]
    );
    assert_eq!(ex.instances(), (1, 0));
    // The hostile guest's secret, left by one request, is read by the next: no isolation.
    let ex = kept(wasmlab_guest_artifacts::HOSTILE_CORE, Reuse::Shared);
    let targets: Vec<String> = ["/secret/write?s=hunter2", "/secret/read"]
        .map(String::from)
        .to_vec();
    let got = runtime().block_on(answers(&ex, &targets));
    assert_eq!(&got[1].1[..], b"hunter2");
}

#[test]
fn a_guest_that_drops_a_segment_cannot_be_recycled() {
    let wat = r#"(module (memory (export "memory") 1) (data "x")
        (func (export "wasmlab_handle") (result i32) data.drop 0 i32.const 0))"#;
    let e = KeptExecutor::new(wat.as_bytes(), Reuse::Recycled, caps(), limits())
        .err()
        .unwrap();
    assert!(e.to_string().contains("data.drop"), "{e}");
    // Shared and fresh instances need no reset: both accept it.
    assert!(KeptExecutor::new(wat.as_bytes(), Reuse::Shared, caps(), limits()).is_ok());
}
