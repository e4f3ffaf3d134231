//! The component executor: wasmlab's wasi:http component answers every route as the native
//! handlers do; the hostile component's faults are answered as the pooled executor answers its
//! core-module twin's; outgoing requests go only to the upstream; a component that is not a
//! wasi:http proxy is refused at start with the reason.

use crate::common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{DEADLINE, get, hostile_limits, runtime, unframed, upstream};
use wasmlab_gateway::{Capabilities, ExecRequest, Executor, NativeExecutor};
use wasmlab_gateway_wasm::{ComponentExecutor, ComponentOptions, GuestLimits};

/// The executor for `wasm` (`component-recycled` with `recycled`), its upstream `up` (given to the
/// guest in WASMLAB_UPSTREAM too).
async fn executor(
    recycled: bool,
    wasm: &[u8],
    up: Option<&str>,
    limits: GuestLimits,
) -> ComponentExecutor {
    let options = ComponentOptions {
        env: up
            .map(|u| vec![("WASMLAB_UPSTREAM".to_owned(), u.to_owned())])
            .unwrap_or_default(),
        upstream: up.map(str::to_owned),
        inherit_stdio: false,
        recycled,
    };
    ComponentExecutor::new(wasm, options, limits)
        .unwrap()
        .checked()
        .await
        .unwrap()
}

/// Requests covering every route, parameters, errors and a binary body.
fn requests() -> Vec<(&'static str, &'static str, Bytes)> {
    let binary: Bytes = (0..=255u8).cycle().take(50_000).collect::<Vec<_>>().into();
    vec![
        ("GET", "/", Bytes::new()),
        // A GET's body means nothing; the component does not read it.
        ("GET", "/", Bytes::from_static(b"a body nobody reads")),
        ("GET", "/compute", Bytes::new()),
        ("GET", "/compute?iters=7", Bytes::new()),
        ("GET", "/compute?iters=bad", Bytes::new()),
        ("GET", "/state", Bytes::new()),
        ("GET", "/state", Bytes::new()),
        ("GET", "/proxy", Bytes::new()),
        ("GET", "/proxy?x=1", Bytes::new()),
        ("POST", "/echo", Bytes::from_static(b"hello, echo")),
        ("POST", "/echo", Bytes::new()),
        // Larger than one write of the guest and than the host's body buffer.
        ("POST", "/echo", binary),
        ("GET", "/missing", Bytes::new()),
        ("PUT", "/state", Bytes::new()),
        ("GET", "/echo", Bytes::new()),
    ]
}

#[test]
fn the_component_answers_every_route_as_native() {
    the_component_answers_every_route_as_native_with(false);
    the_component_answers_every_route_as_native_with(true);
}

fn the_component_answers_every_route_as_native_with(recycled: bool) {
    runtime().block_on(async {
        // Each upstream counts from 0, as each native executor's counter does.
        let native = NativeExecutor::new(std::sync::Arc::new(
            Capabilities::new(Some(&upstream().await)).unwrap(),
        ));
        let up = upstream().await;
        let component = executor(
            recycled,
            wasmlab_guest_artifacts::HTTP,
            Some(&up),
            GuestLimits {
                max_instances: 4,
                ..GuestLimits::default()
            },
        )
        .await;
        for (method, target, body) in requests() {
            let req = || ExecRequest::new(method.parse().unwrap(), target, body.clone());
            let want = native.execute(req()).await.unwrap();
            let got = component.execute(req()).await.expect("a reply");
            assert_eq!(unframed(got), want, "{method} {target}");
        }
        // Every one of them answered whole and left nothing behind, the GET whose body it did not
        // read and those that went to the upstream among them: the one recycled instance
        // discarded is the 50 KB echo's, whose memory grew.
        if recycled {
            assert_eq!(component.instances(), (2, 1));
        }
    });
}

#[test]
fn without_an_upstream_proxy_and_state_answer_502() {
    without_an_upstream_proxy_and_state_answer_502_with(false);
    without_an_upstream_proxy_and_state_answer_502_with(true);
}

fn without_an_upstream_proxy_and_state_answer_502_with(recycled: bool) {
    runtime().block_on(async {
        let ex = executor(
            recycled,
            wasmlab_guest_artifacts::HTTP,
            None,
            GuestLimits::default(),
        )
        .await;
        for target in ["/proxy", "/state"] {
            let r = ex
                .execute(ExecRequest::new(hyper::Method::GET, target, Bytes::new()))
                .await
                .unwrap();
            assert_eq!(r.status, 502, "{target}");
            let text = String::from_utf8_lossy(&r.body).into_owned();
            assert!(text.contains("no upstream configured"), "{target}: {text}");
        }
    });
}

#[test]
fn the_component_executor_survives_the_hostile_component() {
    the_component_executor_survives_the_hostile_component_with(false);
    the_component_executor_survives_the_hostile_component_with(true);
}

fn the_component_executor_survives_the_hostile_component_with(recycled: bool) {
    runtime().block_on(async {
        let up = upstream().await;
        let ex = executor(
            recycled,
            wasmlab_guest_artifacts::HOSTILE_HTTP,
            Some(&up),
            hostile_limits(),
        )
        .await;
        assert_eq!(get(&ex, "/").await.status, 200);
        // As tests/hostile.rs checks each core executor: each fault answered, the next request
        // served.
        for (target, status, diagnosis) in [
            ("/trap", 500, "wasm trap"),
            ("/grow", 500, "guest failed"),
            ("/stack", 500, "guest failed"),
            ("/loop", 504, "deadline"),
            // A wait in the host (a clock an hour away), which no epoch interrupts: cut at the
            // deadline all the same.
            ("/block", 504, "deadline"),
        ] {
            let t = Instant::now();
            let r = get(&ex, target).await;
            let took = t.elapsed();
            assert_eq!(r.status, status, "{target}: {}", r.text);
            assert!(r.failed, "{target}: a failure, not a reply");
            assert!(r.text.contains(diagnosis), "{target}: {}", r.text);
            assert!(took < DEADLINE * 3, "{target}: answered after {took:?}");
            if status == 504 {
                assert!(took >= DEADLINE, "{target}: answered after {took:?}");
            }
            let next = get(&ex, "/").await;
            assert_eq!(
                (next.status, next.text.as_str()),
                (200, "ok"),
                "after {target}"
            );
        }
        // A fresh instance per request: nothing a request leaves in memory reaches the next.
        let r = get(&ex, "/secret/write?s=hunter2").await;
        assert_eq!((r.status, r.text.as_str()), (200, "stored"));
        let r = get(&ex, "/secret/read").await;
        assert_eq!((r.status, r.text.as_str()), (200, ""), "secret leaked");
    });
}

#[test]
fn outgoing_requests_go_only_to_the_upstream() {
    outgoing_requests_go_only_to_the_upstream_with(false);
    outgoing_requests_go_only_to_the_upstream_with(true);
}

fn outgoing_requests_go_only_to_the_upstream_with(recycled: bool) {
    runtime().block_on(async {
        let up = upstream().await;
        let other = upstream().await;
        let ex = executor(
            recycled,
            wasmlab_guest_artifacts::HOSTILE_HTTP,
            Some(&up),
            hostile_limits(),
        )
        .await;
        let authority = |u: &str| u.trim_start_matches("http://").to_owned();
        let r = get(&ex, &format!("/fetch?authority={}", authority(&up))).await;
        assert_eq!((r.status, r.text.as_str()), (200, "GET /"));
        for denied in [authority(&other), "example.com".to_owned()] {
            let r = get(&ex, &format!("/fetch?authority={denied}")).await;
            assert_eq!(r.status, 502, "{denied}: {}", r.text);
            assert!(r.text.contains("HttpRequestDenied"), "{denied}: {}", r.text);
        }
    });
}

#[test]
fn a_full_pool_queues_then_answers_503() {
    a_full_pool_queues_then_answers_503_with(false);
    a_full_pool_queues_then_answers_503_with(true);
}

fn a_full_pool_queues_then_answers_503_with(recycled: bool) {
    // One slot, busy until its deadline; one request may wait, briefly, the next finds the
    // queue full.
    let limits = GuestLimits {
        max_queue: 1,
        queue_timeout: Duration::from_millis(50),
        ..hostile_limits()
    };
    runtime().block_on(async {
        let ex = std::sync::Arc::new(
            executor(
                recycled,
                wasmlab_guest_artifacts::HOSTILE_HTTP,
                None,
                limits,
            )
            .await,
        );
        common::a_full_pool_queues_then_answers_503(ex).await;
    });
}

#[test]
fn what_is_not_a_wasi_http_proxy_is_refused_with_the_reason() {
    let refused = |wasm: &[u8]| match ComponentExecutor::new(
        wasm,
        ComponentOptions::default(),
        GuestLimits::default(),
    ) {
        Ok(_) => panic!("accepted"),
        Err(e) => format!("{e:#}"),
    };
    let e = refused(wasmlab_guest_artifacts::CORE);
    assert!(e.contains("not a wasi:http component"), "{e}");
    assert!(e.contains("--executor pooled"), "{e}");
    let e = refused(b"(component)");
    assert!(e.contains("not a wasi:http proxy"), "{e}");
    assert!(e.contains("wasi:http/incoming-handler"), "{e}");
    let e = refused(br#"(component (import "example:kv/store" (instance (export "get" (func)))))"#);
    assert!(e.contains("does not give"), "{e}");
    assert!(e.contains("example:kv/store"), "{e}");
    let e = refused(b"not wasm at all");
    assert!(e.contains("cannot be compiled as a component"), "{e}");
}

#[test]
fn a_component_larger_than_the_memory_limit_is_refused_at_start() {
    // The built-in component's memory starts at one 64 KiB page; a limit below it cannot hold one.
    let limits = GuestLimits {
        max_memory_bytes: 32 << 10,
        ..GuestLimits::default()
    };
    let started = runtime().block_on(async {
        let ex = ComponentExecutor::new(
            wasmlab_guest_artifacts::HTTP,
            ComponentOptions::default(),
            limits,
        )?;
        ex.checked().await
    });
    let e = format!("{:#}", started.err().expect("refused"));
    assert!(e.contains("exceeds the limit"), "{e}");
}

#[test]
fn every_request_of_a_long_task_gets_its_response() {
    every_request_of_a_long_task_gets_its_response_with(false);
    every_request_of_a_long_task_gets_its_response_with(true);
}

fn every_request_of_a_long_task_gets_its_response_with(recycled: bool) {
    // Thousands of requests in one task, as a busy connection (or the bench) makes them: tokio's
    // cooperative budget runs out along the way and makes a ready response receiver wait a turn,
    // which must not be taken for a component that gave no response.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ex = executor(
            recycled,
            wasmlab_guest_artifacts::HTTP,
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
    });
}

/// A deadline long enough that an answer at a tenth of it cannot be the deadline's.
const LONG_DEADLINE: Duration = Duration::from_secs(5);

/// `target` answered 500 within a tenth of the deadline, a failure (the server logs its detail
/// and sends none of it), and the executor's one instance slot free for the next request.
async fn answered_at_once(ex: &ComponentExecutor, target: &str, diagnosis: &str) {
    let t = Instant::now();
    let r = get(ex, target).await;
    let took = t.elapsed();
    assert_eq!(r.status, 500, "{target}: {}", r.text);
    assert!(
        r.failed,
        "{target}: a failure, not the guest's reply: {}",
        r.text
    );
    assert!(r.text.contains(diagnosis), "{target}: {}", r.text);
    assert!(
        took < LONG_DEADLINE / 10,
        "{target}: answered after {took:?}"
    );
    let t = Instant::now();
    let next = get(ex, "/").await;
    assert_eq!(
        (next.status, next.text.as_str()),
        (200, "ok"),
        "after {target}"
    );
    assert!(
        t.elapsed() < LONG_DEADLINE / 10,
        "after {target}: the slot was held"
    );
}

#[test]
fn a_component_that_fails_without_answering_is_answered_at_once() {
    a_component_that_fails_without_answering_is_answered_at_once_with(false);
    a_component_that_fails_without_answering_is_answered_at_once_with(true);
}

fn a_component_that_fails_without_answering_is_answered_at_once_with(recycled: bool) {
    runtime().block_on(async {
        let up = upstream().await;
        let limits = GuestLimits {
            deadline: LONG_DEADLINE,
            ..hostile_limits()
        };
        let ex = executor(
            recycled,
            wasmlab_guest_artifacts::HOSTILE_HTTP,
            Some(&up),
            limits,
        )
        .await;
        // Returns with its outparam unset (kept, or dropped), or sets a response and never
        // finishes its body: the call is over, so nothing more will come.
        answered_at_once(&ex, "/no-response", "returned without setting a response").await;
        answered_at_once(&ex, "/drop-response", "dropped its response").await;
        answered_at_once(&ex, "/unfinished", "did not end well").await;
        // An outgoing request refused: the guest answers (502) at once too.
        let t = Instant::now();
        let r = get(&ex, "/fetch?authority=example.com").await;
        assert_eq!(r.status, 502, "{}", r.text);
        assert!(t.elapsed() < LONG_DEADLINE / 10, "{:?}", t.elapsed());
    });
}

/// The JavaScript component of peers/js-component/hostile.js, built with the componentize-js
/// that `wasmlab setup js-component` installs into the tools directory (`WASMLAB_TOOLS`, else
/// tools/; kept in target/ while its inputs are older), or why it cannot be. Only a tool that is
/// not there is a reason to skip: a build that fails with it fails the test.
fn hostile_js() -> Result<Vec<u8>, String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tools = std::env::var_os("WASMLAB_TOOLS")
        .map_or_else(|| root.join("tools"), std::path::PathBuf::from);
    let out = root.join("target/js-hostile/hostile.wasm");
    let source = root.join("peers/js-component/hostile.js");
    wasmlab_test_support::build_component(
        wasmlab_test_support::ComponentLanguage::JavaScript,
        &tools,
        &["--source".as_ref(), source.as_os_str()],
        &out,
    )?;
    Ok(std::fs::read(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display())))
}

#[test]
fn a_javascript_handler_that_throws_is_answered_at_once() {
    let wasm = match hostile_js() {
        Ok(w) => w,
        Err(why) => {
            wasmlab_test_support::skipped(&why);
            return;
        }
    };
    runtime().block_on(async {
        let up = upstream().await;
        let limits = GuestLimits {
            deadline: LONG_DEADLINE,
            max_memory_bytes: 64 << 20,
            ..hostile_limits()
        };
        let ex = executor(false, &wasm, Some(&up), limits).await;
        assert_eq!(get(&ex, "/").await.text, "ok");
        // The handler throws; its fetch is refused and the rejection escapes it.
        for target in ["/throw", "/fetch?authority=example.com"] {
            let t = Instant::now();
            let r = get(&ex, target).await;
            assert_eq!(r.status, 500, "{target}: {}", r.text);
            assert!(
                !r.text.contains("Error"),
                "{target}: no internals: {}",
                r.text
            );
            assert!(
                t.elapsed() < LONG_DEADLINE / 10,
                "{target}: answered after {:?}",
                t.elapsed()
            );
            let next = get(&ex, "/").await;
            assert_eq!(
                (next.status, next.text.as_str()),
                (200, "ok"),
                "after {target}"
            );
        }
    });
}

/// examples/components' service in JavaScript or Python, built with the tool `wasmlab setup`
/// installs (kept in target/user-components while its inputs are older), or why it cannot be.
fn example(language: wasmlab_test_support::ComponentLanguage) -> Result<Vec<u8>, String> {
    let out =
        wasmlab_test_support::example_component(language, &wasmlab_test_support::tools_dir())?;
    Ok(std::fs::read(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display())))
}

/// A JavaScript and a Python component (their runtime's state spread over several core modules:
/// StarlingMonkey and its WASI adapter, CPython's shared libraries) served recycled: one instance
/// serves every request, and each request finds a fresh instance's state: what one request keeps
/// in a global, the next never recalls; what a request allocates is gone for the next.
#[test]
fn javascript_and_python_components_are_recycled_to_fresh_instances() {
    use wasmlab_test_support::ComponentLanguage::*;
    for language in [JavaScript, Python] {
        let wasm = match example(language) {
            Ok(w) => w,
            Err(why) => {
                wasmlab_test_support::skipped(&why);
                continue;
            }
        };
        runtime().block_on(async {
            let limits = GuestLimits {
                max_instances: 1,
                deadline: LONG_DEADLINE,
                ..GuestLimits::default()
            };
            let ex = executor(true, &wasm, None, limits).await;
            for round in 0..3 {
                for (target, answer) in [
                    ("/recall".to_owned(), "nothing remembered\n".to_owned()),
                    (
                        format!("/remember?secret=s{round}"),
                        "remembered\n".to_owned(),
                    ),
                    ("/recall".to_owned(), "nothing remembered\n".to_owned()),
                    (
                        "/allocate?kib=256".to_owned(),
                        "allocated 262144 bytes\n".to_owned(),
                    ),
                    (
                        format!("/greet?name=n{round}"),
                        format!("hello, n{round}\n"),
                    ),
                ] {
                    let r = get(&ex, &target).await;
                    assert_eq!(
                        (r.status, r.text.as_str()),
                        (200, answer.as_str()),
                        "{language:?} {target}"
                    );
                }
            }
            // One instance served all 15: reused, not remade.
            let (made, discarded) = ex.instances();
            assert_eq!((made, discarded), (1, 0), "{language:?}");
        });
    }
}

#[test]
fn a_recycled_instance_is_reused_and_reset_to_a_fresh_ones_state() {
    runtime().block_on(async {
        let ex = executor(
            true,
            wasmlab_guest_artifacts::HOSTILE_HTTP,
            None,
            hostile_limits(),
        )
        .await;
        // Its counter, a changed .data value, its stack and heap as a fresh instance has them,
        // every time, from the one instance the single slot allows.
        let first = get(&ex, "/fingerprint").await;
        assert!(
            first.text.starts_with("calls=1 seed=0x5eed "),
            "{}",
            first.text
        );
        for _ in 0..20 {
            assert_eq!(get(&ex, "/fingerprint").await.text, first.text);
        }
        let r = get(&ex, "/secret/write?s=hunter2").await;
        assert_eq!((r.status, r.text.as_str()), (200, "stored"));
        let r = get(&ex, "/secret/read").await;
        assert_eq!((r.status, r.text.as_str()), (200, ""), "secret leaked");
        assert_eq!(ex.instances(), (1, 0), "one instance, reused");
        // An instance that trapped, grew, ran out of time, or returned without a whole response
        // is discarded, never reset.
        for (n, target) in [
            "/trap",
            "/grow",
            "/stack",
            "/loop",
            "/no-response",
            "/drop-response",
            "/unfinished",
        ]
        .into_iter()
        .enumerate()
        {
            assert!(get(&ex, target).await.failed, "{target}");
            assert_eq!(ex.instances().1, n as u64 + 1, "{target} discarded");
            assert_eq!(
                get(&ex, "/fingerprint").await.text,
                first.text,
                "after {target}"
            );
        }
        assert_eq!(ex.instances(), (8, 7));
    });
}

/// Each request's WASI context is a fresh instance's where a guest can tell: its random
/// generators are new, even where the executor keeps the rest of the context (or the instance)
/// from an earlier request.
#[test]
fn every_request_gets_new_random_generators() {
    every_request_gets_new_random_generators_with(false);
    every_request_gets_new_random_generators_with(true);
}

fn every_request_gets_new_random_generators_with(recycled: bool) {
    runtime().block_on(async {
        let ex = executor(
            recycled,
            wasmlab_guest_artifacts::HOSTILE_HTTP,
            None,
            hostile_limits(),
        )
        .await;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..20 {
            let r = get(&ex, "/random").await;
            assert_eq!(r.status, 200, "{}", r.text);
            let (seed, bytes) = r.text.split_once(' ').expect("seed=… bytes=…");
            assert!(seen.insert(seed.to_owned()), "a seed came again: {seed}");
            assert!(
                seen.insert(bytes.to_owned()),
                "random bytes came again: {bytes}"
            );
        }
        let (made, _) = ex.instances();
        if recycled {
            assert_eq!(made, 1, "one instance, kept");
        }
    });
}

#[test]
fn a_recycled_executor_refuses_a_component_not_rewritten_for_it() {
    use wasmlab_gateway_wasm::Load;
    let dir = tempfile::tempdir().unwrap();
    let limits = GuestLimits::default();
    let recycled = ComponentOptions {
        recycled: true,
        ..ComponentOptions::default()
    };
    let plain = dir.path().join("plain.cwasm");
    std::fs::write(
        &plain,
        ComponentExecutor::precompile(wasmlab_guest_artifacts::HTTP, limits).unwrap(),
    )
    .unwrap();
    // SAFETY: written just above by this build.
    let e = unsafe { ComponentExecutor::from_precompiled_file(&plain, recycled.clone(), limits) }
        .err()
        .expect("refused");
    assert!(format!("{e:#}").contains("not rewritten"), "{e:#}");
    let rewritten = dir.path().join("rewritten.cwasm");
    let bytes =
        <ComponentExecutor as Load>::precompile(wasmlab_guest_artifacts::HTTP, &recycled, limits)
            .unwrap();
    std::fs::write(&rewritten, bytes).unwrap();
    // SAFETY: as above.
    let ex = unsafe { ComponentExecutor::from_precompiled_file(&rewritten, recycled, limits) };
    assert_eq!(ex.unwrap().name(), "component-recycled");
}
