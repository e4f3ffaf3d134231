//! The load generator's count against what an in-test server actually served.

use std::sync::atomic::Ordering;
use std::time::Duration;

use wasmlab_load::{LoadConfig, RequestParts, run};

use crate::common;

fn counting_server(
    fail_every: u64,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    common::server(common::Behaviour {
        fail_every,
        ..Default::default()
    })
}

#[test]
fn duration_run_counts_what_the_server_served() {
    let (addr, served) = counting_server(0);
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.connections = 8;
    c.threads = 2;
    c.duration = Some(Duration::from_millis(800));
    let r = run(c).unwrap();
    assert!(r.responses > 100, "too few responses: {}", r.responses);
    assert_eq!(r.responses, served.load(Ordering::SeqCst));
    assert_eq!(r.ok, r.responses);
    assert_eq!(r.errors.total(), 0);
    assert_eq!(r.body_bytes, 2 * r.responses);
    assert!(r.latency_ms.p50 > 0.0 && r.latency_ms.p50 <= r.latency_ms.p99);
    assert!(r.latency_ms.p99 <= r.latency_ms.max);
    assert_eq!(r.histogram.unwrap().len(), r.responses);
}

#[test]
fn request_bounded_run_and_non_2xx_are_counted() {
    let (addr, served) = counting_server(10);
    let mut c = LoadConfig::new(&format!("http://{addr}/x?y=1")).unwrap();
    c.connections = 5;
    c.duration = None;
    c.requests = Some(1000);
    let r = run(c).unwrap();
    assert_eq!(r.responses, 1000);
    assert_eq!(served.load(Ordering::SeqCst), 1000);
    assert_eq!(r.errors.non_2xx, 100);
    assert_eq!(r.ok, 900);
    assert_eq!(
        r.status_counts.into_iter().collect::<Vec<_>>(),
        vec![(200, 900), (500, 100)]
    );
}

#[test]
fn requests_rotate_per_connection_and_the_expected_status_counts_as_success() {
    let (addr, served) = common::server(common::Behaviour {
        only_root: true,
        ..Default::default()
    });
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    // One connection, so the mix is exact: GET /, HEAD /, GET /missing, and again.
    c.connections = 1;
    c.duration = None;
    c.requests = Some(600);
    c.timeout = Duration::from_secs(2);
    let part = |method: hyper::Method, target: &str| RequestParts {
        method,
        target: target.into(),
        headers: Vec::new(),
        body: bytes::Bytes::new(),
        expect_status: None,
    };
    // A HEAD's answer has no body whatever its content-length says: were the rotation's HEAD
    // parsed as a GET, its exchange would wait for two bytes until the timeout.
    c.rotation = vec![
        part(hyper::Method::HEAD, "/"),
        part(hyper::Method::GET, "/missing"),
    ];
    let r = run(c.clone()).unwrap();
    assert_eq!(r.responses, 600);
    assert_eq!(served.load(Ordering::SeqCst), 600);
    assert_eq!(r.errors.timeout, 0);
    assert_eq!(
        r.status_counts.clone().into_iter().collect::<Vec<_>>(),
        vec![(200, 400), (404, 200)]
    );
    assert_eq!(r.errors.non_2xx, 200);
    assert_eq!(r.body_bytes, 2 * 400);
    // Only the 404 route, and 404 expected: every answer is a success.
    c.url = format!("http://{addr}/missing").parse().unwrap();
    c.rotation.clear();
    c.expect_status = Some(404);
    let r = run(c.clone()).unwrap();
    assert_eq!((r.ok, r.errors.total()), (600, 0));
    c.url = format!("http://{addr}/").parse().unwrap();
    let r = run(c).unwrap();
    assert_eq!((r.ok, r.errors.non_2xx), (0, 600));
}

#[test]
fn a_spinning_generator_counts_the_same_and_tells_waiting_from_work() {
    // Every request of the first half second is held until then: a spinning generator polls
    // through that wait, and must count it as idle, not as the generator being the limit.
    let (addr, served) = common::server(common::Behaviour {
        fail_every: 0,
        stall: Some((Duration::ZERO, Duration::from_millis(500))),
        ..Default::default()
    });
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.connections = 4;
    c.duration = Some(Duration::from_millis(800));
    c.spin = true;
    let r = run(c).unwrap();
    assert!(r.generator_spin);
    assert!(r.responses > 4, "too few responses: {}", r.responses);
    assert_eq!(r.responses, served.load(Ordering::SeqCst));
    assert_eq!(r.errors.total(), 0);
    let said = format!(
        "idle {} s of {} s, busy {}",
        r.generator_idle_spin_secs, r.elapsed_secs, r.generator_busy
    );
    assert!(
        r.generator_idle_spin_secs > 0.1 && r.generator_idle_spin_secs < r.elapsed_secs,
        "{said}"
    );
    assert!(!r.generator_saturated && r.generator_busy < 0.9, "{said}");
}

#[test]
fn a_spinning_open_loop_sends_on_schedule_and_counts_what_the_server_served() {
    let (addr, served) = counting_server(0);
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.connections = 4;
    c.duration = Some(Duration::from_millis(600));
    c.rate = Some(500.0);
    c.spin = true;
    let r = run(c).unwrap();
    let o = r.open_loop.expect("an open loop");
    assert!(r.generator_spin);
    assert_eq!(r.responses, served.load(Ordering::SeqCst));
    assert_eq!(o.sent + o.dropped, o.intended, "{o:?}");
    // 500 req/s for 0.6 s: 300 sends due.
    assert!((299..=301).contains(&o.intended), "{o:?}");
    assert_eq!(r.responses, o.sent, "{o:?}");
}
