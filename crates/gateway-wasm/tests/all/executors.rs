//! Every executor gives the same answer to the same request: the native handlers, the core-module
//! guest in the pooled executor and the command guest in the naive one.

use crate::common;

use std::sync::Arc;

use common::runtime;

use bytes::Bytes;
use wasmlab_gateway::{Capabilities, ExecRequest, Executor, NativeExecutor, Reply};
use wasmlab_gateway_wasm::{GuestLimits, KeptExecutor, NaiveExecutor, PooledExecutor, Reuse};

/// Requests covering every route, parameters, errors and a binary body.
fn requests() -> Vec<(&'static str, String, Bytes)> {
    let binary: Bytes = (0..=255u8).cycle().take(5000).collect::<Vec<_>>().into();
    vec![
        ("GET", "/".into(), Bytes::new()),
        ("GET", "/compute".into(), Bytes::new()),
        ("GET", "/compute?iters=7".into(), Bytes::new()),
        ("GET", "/compute?iters=bad".into(), Bytes::new()),
        ("GET", "/state".into(), Bytes::new()),
        ("GET", "/state".into(), Bytes::new()),
        ("GET", "/proxy".into(), Bytes::new()),
        ("GET", "/proxy?x=1".into(), Bytes::new()),
        ("POST", "/echo".into(), Bytes::from_static(b"hello, echo")),
        ("POST", "/echo".into(), Bytes::new()),
        ("POST", "/echo".into(), binary),
        ("GET", "/missing".into(), Bytes::new()),
        ("PUT", "/state".into(), Bytes::new()),
        ("GET", "/echo".into(), Bytes::new()),
    ]
}

/// The replies to [`requests`]: every one is a reply (errors such as 404 included), not a failure.
async fn replies<E: Executor>(ex: &E) -> Vec<Reply> {
    let mut out = Vec::new();
    for (method, target, body) in requests() {
        out.push(
            ex.execute(ExecRequest::new(method.parse().unwrap(), target, body))
                .await
                .expect("a reply, not a failure"),
        );
    }
    out
}

#[test]
fn every_executor_answers_alike() {
    runtime().block_on(async {
        let up = wasmlab_upstream::spawn("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let up = format!("http://{up}");
        // Each executor gets its own counter, so /state counts from 1 in each.
        let caps = || Arc::new(Capabilities::new(Some(&up)).unwrap());
        let native = replies(&NativeExecutor::new(caps())).await;
        let limits = GuestLimits {
            max_instances: 4,
            ..GuestLimits::default()
        };
        let pooled = PooledExecutor::new(wasmlab_guest_artifacts::CORE, caps(), limits).unwrap();
        let naive = NaiveExecutor::new(
            wasmlab_guest_artifacts::COMMAND,
            caps(),
            GuestLimits::default(),
        )
        .unwrap();
        let kept = |reuse| {
            KeptExecutor::new(wasmlab_guest_artifacts::CORE, reuse, caps(), limits).unwrap()
        };
        let (recycled, shared) = (kept(Reuse::Recycled), kept(Reuse::Shared));
        let others = [
            ("pooled", replies(&pooled).await),
            ("naive", replies(&naive).await),
            ("recycled", replies(&recycled).await),
            ("shared", replies(&shared).await),
        ];
        for (i, (method, target, _)) in requests().iter().enumerate() {
            for (name, got) in &others {
                assert_eq!(got[i], native[i], "{name} vs native on {method} {target}");
            }
        }
        // And the answers are the right ones, not just equal.
        assert_eq!(native[0].body, "hello");
        assert_eq!(native[4].body, "1");
        assert_eq!(native[5].body, "2");
        assert_eq!(native[6].body, "GET /proxy");
        assert_eq!(native[7].body, "GET /proxy?x=1");
        assert_eq!(native[3].status, 400);
        assert_eq!(native[11].status, 404);
        assert_eq!(native[12].status, 405);
    });
}

#[test]
fn pooled_executor_serves_more_requests_than_instances() {
    // A pool of 2 instances under 64 concurrent requests: the semaphore queues them, none fails.
    runtime().block_on(async {
        let caps = Arc::new(Capabilities::new(None).unwrap());
        let limits = GuestLimits {
            max_instances: 2,
            ..GuestLimits::default()
        };
        let ex =
            Arc::new(PooledExecutor::new(wasmlab_guest_artifacts::CORE, caps, limits).unwrap());
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let ex = ex.clone();
            tasks.push(tokio::spawn(async move {
                ex.execute(ExecRequest::new(hyper::Method::GET, "/state", Bytes::new()))
                    .await
            }));
        }
        let mut seen = Vec::new();
        for t in tasks {
            let r = t.await.unwrap().unwrap();
            assert_eq!(r.status, 200);
            seen.push(
                String::from_utf8(r.body.to_vec())
                    .unwrap()
                    .parse::<u64>()
                    .unwrap(),
            );
        }
        seen.sort();
        assert_eq!(seen, (1..=64).collect::<Vec<_>>());
    });
}

#[test]
fn core_guest_memory_is_small() {
    // A small initial memory keeps per-request resets cheap; see guest-core's arena.
    let engine = wasmtime::Engine::default();
    let module = wasmtime::Module::new(&engine, wasmlab_guest_artifacts::CORE).unwrap();
    let memory = module
        .exports()
        .find_map(|e| e.ty().memory().cloned())
        .expect("the core guest exports its memory");
    assert!(
        memory.minimum() <= 2,
        "core guest starts with {} pages of 64 KiB",
        memory.minimum()
    );
}

#[test]
fn pooled_executor_refuses_a_module_without_the_abi() {
    let caps = || Arc::new(Capabilities::new(None).unwrap());
    let err = |wat: &str| match PooledExecutor::new(wat.as_bytes(), caps(), GuestLimits::default())
    {
        Ok(_) => panic!("accepted {wat}"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err("(module)").contains("does not export `memory`"));
    let e = err(r#"(module (memory (export "memory") 1))"#);
    assert!(e.contains("does not export `wasmlab_handle`"), "{e}");
    let e = err(
        r#"(module (memory (export "memory") 1) (func (export "wasmlab_handle") (param i32)))"#,
    );
    assert!(e.contains("() -> i32"), "{e}");
    let e = err(
        r#"(module (import "wasmlab" "nope" (func)) (memory (export "memory") 1)
             (func (export "wasmlab_handle") (result i32) i32.const 0))"#,
    );
    assert!(e.contains("nope"), "{e}");
    assert!(PooledExecutor::new(b"not wasm", caps(), GuestLimits::default()).is_err());
}

#[test]
fn the_documented_minimal_guest_runs() {
    let wat = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/examples/minimal-guest.wat"
    ))
    .unwrap();
    let caps = Arc::new(Capabilities::new(None).unwrap());
    let ex = PooledExecutor::new(&wat, caps, GuestLimits::default()).unwrap();
    let r = runtime()
        .block_on(ex.execute(ExecRequest::new(
            hyper::Method::GET,
            "/anything",
            Bytes::new(),
        )))
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, "hello from wat");
    assert_eq!(r.headers[hyper::header::CONTENT_TYPE], "text/plain");
}
