//! Hostile guests against every Wasm executor: a trap, an endless loop, a memory bomb, a stack
//! overflow and a guest that tries to leave a secret for the next request. Each must be answered
//! (500 or 504) and the next request served.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Answer, DEADLINE, get, hostile_limits};
use wasmlab_gateway::{Capabilities, Executor};
use wasmlab_gateway_wasm::{
    GuestCalls, GuestLimits, KeptExecutor, NaiveExecutor, PooledExecutor, Reuse,
};

/// Every fault answered and the next request served; with `isolated`, no secret crosses requests.
async fn check<E: Executor>(name: &str, ex: &E, isolated: bool) {
    let body = |r: &Answer| r.text.clone();
    assert_eq!(get(ex, "/").await.status, 200, "{name}");

    let r = get(ex, "/trap").await;
    assert_eq!(r.status, 500, "{name}: {}", body(&r));
    assert!(r.failed, "{name}: a trap is a failure, not a reply");
    assert!(body(&r).contains("guest failed"), "{name}: {}", body(&r));
    assert_eq!(
        get(ex, "/").await.status,
        200,
        "{name}: served after a trap"
    );

    let t = Instant::now();
    let r = get(ex, "/loop").await;
    let took = t.elapsed();
    assert_eq!(r.status, 504, "{name}: {}", body(&r));
    assert!(took >= DEADLINE, "{name}: stopped after {took:?}");
    assert!(took < DEADLINE * 3, "{name}: stopped only after {took:?}");
    assert_eq!(
        get(ex, "/").await.status,
        200,
        "{name}: served after a loop"
    );

    let r = get(ex, "/grow").await;
    assert_eq!(r.status, 500, "{name}: {}", body(&r));
    assert_eq!(
        get(ex, "/").await.status,
        200,
        "{name}: served after a memory bomb"
    );

    let r = get(ex, "/stack").await;
    assert_eq!(r.status, 500, "{name}: {}", body(&r));
    assert_eq!(
        get(ex, "/").await.status,
        200,
        "{name}: served after a stack overflow"
    );

    let r = get(ex, "/secret/write?s=hunter2").await;
    assert_eq!((r.status, body(&r).as_str()), (200, "stored"), "{name}");
    if isolated {
        let r = get(ex, "/secret/read").await;
        assert_eq!(
            (r.status, body(&r).as_str()),
            (200, ""),
            "{name}: secret leaked"
        );
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Both ways of calling a core-module guest, each on the runtime the gateway gives it with one
/// thread: synchronous calls on the multi-thread runtime (one worker), async on the current-thread
/// one. The executor is made inside it, as the gateway makes it.
fn each_way_of_calling(mut test: impl FnMut(GuestCalls, &tokio::runtime::Runtime)) {
    for calls in [GuestCalls::Sync, GuestCalls::Async] {
        let rt = match calls {
            GuestCalls::Sync => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap(),
            _ => runtime(),
        };
        test(calls, &rt);
    }
}

#[test]
fn pooled_executor_survives_hostile_guests() {
    each_way_of_calling(|calls, rt| {
        let caps = Arc::new(Capabilities::new(None).unwrap());
        let limits = GuestLimits {
            calls,
            ..hostile_limits()
        };
        let _in_runtime = rt.enter();
        let ex = PooledExecutor::new(wasmlab_guest_artifacts::HOSTILE_CORE, caps, limits).unwrap();
        rt.block_on(check(&format!("pooled {calls}"), &ex, true));
    });
}

#[test]
fn naive_executor_survives_hostile_guests() {
    let caps = Arc::new(Capabilities::new(None).unwrap());
    let ex = NaiveExecutor::new(
        wasmlab_guest_artifacts::HOSTILE_COMMAND,
        caps,
        hostile_limits(),
    )
    .unwrap();
    runtime().block_on(check("naive", &ex, true));
}

#[test]
fn kept_instances_survive_hostile_guests() {
    each_way_of_calling(|calls, rt| {
        for (reuse, isolated) in [(Reuse::Recycled, true), (Reuse::Shared, false)] {
            let caps = Arc::new(Capabilities::new(None).unwrap());
            let limits = GuestLimits {
                calls,
                ..hostile_limits()
            };
            let _in_runtime = rt.enter();
            let ex = KeptExecutor::new(wasmlab_guest_artifacts::HOSTILE_CORE, reuse, caps, limits)
                .unwrap();
            rt.block_on(check(&format!("{reuse:?} {calls}"), &ex, isolated));
        }
    });
}

#[test]
fn a_full_pool_queues_then_answers_503() {
    // One slot, busy with an endless loop until its deadline; one request may wait, briefly.
    let caps = Arc::new(Capabilities::new(None).unwrap());
    let limits = GuestLimits {
        max_queue: 1,
        queue_timeout: Duration::from_millis(50),
        ..hostile_limits()
    };
    let ex =
        Arc::new(PooledExecutor::new(wasmlab_guest_artifacts::HOSTILE_CORE, caps, limits).unwrap());
    common::runtime().block_on(common::a_full_pool_queues_then_answers_503(ex));
}

#[test]
fn wasm_stack_overflow_answers_500() {
    // Recursion in wasm frames themselves (the Rust guests overflow their shadow stack in linear
    // memory first, which the tests above cover): Wasmtime's stack limit trips.
    let wat = r#"(module
        (memory (export "memory") 1)
        (func $down (param i32) (result i32)
            (call $down (i32.add (local.get 0) (i32.const 1))))
        (func (export "wasmlab_handle") (result i32) (call $down (i32.const 0))))"#;
    let caps = Arc::new(Capabilities::new(None).unwrap());
    let ex = PooledExecutor::new(wat.as_bytes(), caps, hostile_limits()).unwrap();
    let r = runtime().block_on(get(&ex, "/"));
    assert_eq!(r.status, 500);
    assert!(r.text.contains("call stack exhausted"), "{:?}", r.text);
}

/// `GET /proxy` through `ex`, and how long it took.
async fn timed_get<E: Executor>(ex: &E) -> (Answer, Duration) {
    let t = Instant::now();
    (get(ex, "/proxy").await, t.elapsed())
}

#[test]
fn a_silent_upstream_is_cut_at_the_deadline() {
    // An upstream that accepts and never answers: /proxy waits in a host call, not in guest code,
    // and is still answered 504 at the deadline.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let up = format!("http://{}", silent.local_addr().unwrap());
    let caps = || Arc::new(Capabilities::new(Some(&up)).unwrap());
    let mut answers = Vec::new();
    each_way_of_calling(|calls, rt| {
        let _in_runtime = rt.enter();
        let limits = GuestLimits {
            calls,
            ..hostile_limits()
        };
        let pooled = PooledExecutor::new(wasmlab_guest_artifacts::CORE, caps(), limits).unwrap();
        let recycled = KeptExecutor::new(
            wasmlab_guest_artifacts::CORE,
            Reuse::Recycled,
            caps(),
            limits,
        )
        .unwrap();
        answers.push((format!("pooled {calls}"), rt.block_on(timed_get(&pooled))));
        answers.push((
            format!("recycled {calls}"),
            rt.block_on(timed_get(&recycled)),
        ));
    });
    let naive =
        NaiveExecutor::new(wasmlab_guest_artifacts::COMMAND, caps(), hostile_limits()).unwrap();
    answers.push(("naive".into(), runtime().block_on(timed_get(&naive))));
    for (name, (reply, took)) in answers {
        assert_eq!(reply.status, 504, "{name}: {:?}", reply.text);
        assert!(took >= DEADLINE && took < DEADLINE * 3, "{name}: {took:?}");
    }
    drop(silent);
}
