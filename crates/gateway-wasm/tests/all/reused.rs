//! The reused component executor (WASI 0.3): wasmlab's service component answers every route as
//! the native handlers do; the WASI 0.3 hostile component's faults are answered as the other
//! executors answer theirs, each discarding the instance; what one request leaves in an instance
//! is there for the next (the isolation it gives, said plainly) and gone once the instance is
//! replaced; outgoing requests go only to the upstream; a component it cannot serve is refused at
//! start with the reason.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{DEADLINE, get, hostile_limits, runtime, unframed, upstream};
use wasmlab_gateway::{Capabilities, ExecRequest, Executor, NativeExecutor};
use wasmlab_gateway_wasm::{
    ComponentOptions, GuestLimits, REQUESTS_PER_INSTANCE, ReusedComponentExecutor,
};

/// The executor for `wasm`, its upstream `up` (given to the guest in WASMLAB_UPSTREAM too).
async fn executor(wasm: &[u8], up: Option<&str>, limits: GuestLimits) -> ReusedComponentExecutor {
    let options = ComponentOptions {
        env: up
            .map(|u| vec![("WASMLAB_UPSTREAM".to_owned(), u.to_owned())])
            .unwrap_or_default(),
        upstream: up.map(str::to_owned),
        ..ComponentOptions::default()
    };
    ReusedComponentExecutor::new(wasm, options, limits)
        .unwrap()
        .checked()
        .await
        .unwrap()
}

#[test]
fn the_service_component_answers_every_route_as_native() {
    runtime().block_on(async {
        let native = NativeExecutor::new(Arc::new(
            Capabilities::new(Some(&upstream().await)).unwrap(),
        ));
        let up = upstream().await;
        let reused = executor(
            wasmlab_guest_artifacts::HTTP_P3,
            Some(&up),
            GuestLimits::default(),
        )
        .await;
        let binary: Bytes = (0..=255u8).cycle().take(50_000).collect::<Vec<_>>().into();
        for (method, target, body) in [
            ("GET", "/", Bytes::new()),
            ("GET", "/", Bytes::from_static(b"a body nobody reads")),
            ("GET", "/compute?iters=7", Bytes::new()),
            ("GET", "/compute?iters=bad", Bytes::new()),
            ("GET", "/state", Bytes::new()),
            ("GET", "/state", Bytes::new()),
            ("GET", "/proxy?x=1", Bytes::new()),
            ("POST", "/echo", Bytes::from_static(b"hello, echo")),
            ("POST", "/echo", Bytes::new()),
            ("POST", "/echo", binary),
            ("GET", "/missing", Bytes::new()),
            ("PUT", "/state", Bytes::new()),
        ] {
            let req = || ExecRequest::new(method.parse().unwrap(), target, body.clone());
            let want = native.execute(req()).await.unwrap();
            let got = reused.execute(req()).await.expect("a reply");
            assert_eq!(unframed(got), want, "{method} {target}");
        }
        // All of them in the one instance made at start.
        assert_eq!(reused.instances(), (1, 0));
    });
}

#[test]
fn an_instance_serves_its_count_of_requests_then_a_fresh_one_takes_over() {
    runtime().block_on(async {
        let ex = executor(
            wasmlab_guest_artifacts::HOSTILE_HTTP_P3,
            None,
            hostile_limits(),
        )
        .await;
        // The guest's call counter (in its memory) counts on from request to request.
        let calls = |text: &str| -> u32 {
            let field = text.split_whitespace().next().unwrap();
            field.strip_prefix("calls=").unwrap().parse().unwrap()
        };
        for n in 1..=REQUESTS_PER_INSTANCE {
            let r = get(&ex, "/fingerprint").await;
            assert_eq!(calls(&r.text), n, "{}", r.text);
        }
        let r = get(&ex, "/fingerprint").await;
        assert_eq!(calls(&r.text), 1, "a fresh instance: {}", r.text);
        assert_eq!(ex.instances(), (2, 0));
    });
}

#[test]
fn what_a_request_leaves_is_there_for_the_next_until_the_instance_goes() {
    runtime().block_on(async {
        let ex = executor(
            wasmlab_guest_artifacts::HOSTILE_HTTP_P3,
            None,
            hostile_limits(),
        )
        .await;
        let r = get(&ex, "/secret/write?s=hunter2").await;
        assert_eq!((r.status, r.text.as_str()), (200, "stored"));
        // Reuse shares the instance's memory: the next request sees it (what `about` says).
        let r = get(&ex, "/secret/read").await;
        assert_eq!((r.status, r.text.as_str()), (200, "hunter2"));
        // A trap discards the instance; the next is fresh.
        assert_eq!(get(&ex, "/trap").await.status, 500);
        let r = get(&ex, "/secret/read").await;
        assert_eq!((r.status, r.text.as_str()), (200, ""));
        assert_eq!(ex.instances(), (2, 1));
    });
}

#[test]
fn the_reused_executor_survives_the_hostile_component() {
    runtime().block_on(async {
        let up = upstream().await;
        let ex = executor(
            wasmlab_guest_artifacts::HOSTILE_HTTP_P3,
            Some(&up),
            hostile_limits(),
        )
        .await;
        assert_eq!(get(&ex, "/").await.status, 200);
        let faults = [
            ("/trap", 500, "wasm trap"),
            ("/grow", 500, "guest failed"),
            ("/stack", 500, "guest failed"),
            ("/loop", 504, "deadline"),
            // Waits in the host (a clock an hour away): no guest code runs for the epoch to
            // interrupt, and the deadline cuts it all the same.
            ("/block", 504, "deadline"),
            // A response that is not one: an error code, a body 973 bytes short of its
            // content-length, a trap in the task writing the body after the head was given.
            ("/error", 500, "answered ErrorCode::InternalError"),
            ("/unfinished", 500, "did not end well"),
            ("/trap-in-body", 500, "wasm trap"),
        ];
        for (target, status, diagnosis) in faults {
            let t = Instant::now();
            let r = get(&ex, target).await;
            let took = t.elapsed();
            assert_eq!(r.status, status, "{target}: {}", r.text);
            assert!(r.failed, "{target}: a failure, not a reply");
            assert!(r.text.contains(diagnosis), "{target}: {}", r.text);
            assert!(took < DEADLINE * 3, "{target}: answered after {took:?}");
            if status == 504 {
                assert!(took >= DEADLINE, "{target}: answered after {took:?}");
            } else {
                assert!(took < DEADLINE, "{target}: answered after {took:?}");
            }
            let next = get(&ex, "/").await;
            assert_eq!(
                (next.status, next.text.as_str()),
                (200, "ok"),
                "after {target}"
            );
        }
        // Each fault discarded its instance; the request after it made the next one.
        let n = faults.len() as u64;
        assert_eq!(ex.instances(), (n + 1, n));
    });
}

#[test]
fn outgoing_requests_go_only_to_the_upstream() {
    runtime().block_on(async {
        let up = upstream().await;
        let other = upstream().await;
        let ex = executor(
            wasmlab_guest_artifacts::HOSTILE_HTTP_P3,
            Some(&up),
            hostile_limits(),
        )
        .await;
        let authority = |u: &str| u.trim_start_matches("http://").to_owned();
        let r = get(&ex, &format!("/fetch?authority={}", authority(&up))).await;
        assert_eq!((r.status, r.text.as_str()), (200, "GET /"));
        for denied in [authority(&other), "example.com".to_owned()] {
            let t = Instant::now();
            let r = get(&ex, &format!("/fetch?authority={denied}")).await;
            assert_eq!(r.status, 502, "{denied}: {}", r.text);
            assert!(r.text.contains("HttpRequestDenied"), "{denied}: {}", r.text);
            assert!(t.elapsed() < DEADLINE, "{denied}: {:?}", t.elapsed());
        }
    });
}

#[test]
fn a_full_pool_queues_then_answers_503() {
    let limits = GuestLimits {
        max_queue: 1,
        queue_timeout: Duration::from_millis(50),
        ..hostile_limits()
    };
    runtime().block_on(async {
        let ex = Arc::new(executor(wasmlab_guest_artifacts::HOSTILE_HTTP_P3, None, limits).await);
        common::a_full_pool_queues_then_answers_503(ex).await;
    });
}

#[test]
fn what_it_cannot_serve_is_refused_with_the_reason() {
    let refused = |wasm: &[u8]| match ReusedComponentExecutor::new(
        wasm,
        ComponentOptions::default(),
        GuestLimits::default(),
    ) {
        Ok(_) => panic!("accepted"),
        Err(e) => format!("{e:#}"),
    };
    let e = refused(wasmlab_guest_artifacts::CORE);
    assert!(e.contains("not a wasi:http component"), "{e}");
    // A WASI 0.2 component: its imports are not WASI 0.3's.
    let e = refused(wasmlab_guest_artifacts::HTTP);
    assert!(e.contains("--executor component"), "{e}");
    let e = refused(b"(component)");
    assert!(e.contains("wasi:http/handler@0.3"), "{e}");
    let e = refused(b"not wasm at all");
    assert!(e.contains("cannot be compiled as a component"), "{e}");
}

#[test]
fn a_component_larger_than_the_memory_limit_is_refused_at_start() {
    let limits = GuestLimits {
        max_memory_bytes: 32 << 10,
        ..GuestLimits::default()
    };
    let started = runtime().block_on(async {
        ReusedComponentExecutor::new(
            wasmlab_guest_artifacts::HTTP_P3,
            ComponentOptions::default(),
            limits,
        )?
        .checked()
        .await
    });
    let e = format!("{:#}", started.err().expect("refused"));
    assert!(e.contains("exceeds the limit"), "{e}");
}

#[test]
fn every_request_of_a_long_task_gets_its_response() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ex = executor(
            wasmlab_guest_artifacts::HTTP_P3,
            None,
            GuestLimits {
                max_instances: 2,
                ..GuestLimits::default()
            },
        )
        .await;
        for i in 0..3_000 {
            let r = ex
                .execute(ExecRequest::new(hyper::Method::GET, "/", Bytes::new()))
                .await
                .unwrap_or_else(|f| panic!("request {i}: {f:?}"));
            assert_eq!(r.status, 200, "request {i}");
        }
        // 3,000 requests, 128 an instance.
        let made = 3_000u64.div_ceil(REQUESTS_PER_INSTANCE as u64);
        assert_eq!(ex.instances(), (made, 0));
    });
}
