//! The load generator's count against what an in-test server actually served.

use std::sync::atomic::Ordering;
use std::time::Duration;

use wasmlab_load::{LoadConfig, run};

mod common;

fn counting_server(
    fail_every: u64,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    common::server(common::Behaviour {
        fail_every,
        stall: None,
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
fn a_spinning_generator_counts_the_same_and_tells_waiting_from_work() {
    // Every request of the first half second is held until then: a spinning generator polls
    // through that wait, and must count it as idle, not as the generator being the limit.
    let (addr, served) = common::server(common::Behaviour {
        fail_every: 0,
        stall: Some((Duration::ZERO, Duration::from_millis(500))),
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
