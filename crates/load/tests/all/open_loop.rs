//! The open loop (`rate`) against in-test loopback servers: rate accuracy, and coordinated-omission
//! correction against a server that stalls.

use std::sync::atomic::Ordering;
use std::time::Duration;

use wasmlab_load::{LoadConfig, run};

use crate::common;

#[test]
fn sends_at_the_configured_rate() {
    let (addr, served) = common::server(common::Behaviour::default());
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.connections = 16;
    c.threads = 2;
    c.rate = Some(2000.0);
    c.duration = Some(Duration::from_secs(1));
    let r = run(c).unwrap();
    let o = r.open_loop.expect("open-loop figures");
    // 2,000 sends were due in 1 s; a fast server leaves (next to) none undone. A send is dropped
    // only when all 16 connections are busy at its time, which a loaded test machine can cause.
    assert!(
        (1999..=2001).contains(&o.intended),
        "intended {}",
        o.intended
    );
    assert!(o.dropped <= 2, "{o:?}");
    assert_eq!(o.sent + o.dropped, o.intended);
    assert_eq!(r.responses, o.sent);
    assert_eq!(served.load(Ordering::SeqCst), r.responses);
    assert!(
        (o.achieved_rate / 2000.0 - 1.0).abs() < 0.02,
        "achieved {} req/s",
        o.achieved_rate
    );
    // Sends leave on time: the median lag is far below a timer tick.
    assert!(o.send_lag_ms.p50 < 0.5, "send lag {:?}", o.send_lag_ms);
    assert!(r.phases.connections_opened >= 1 && r.phases.connections_opened <= 16);
    assert!(r.phases.wait.p50 > 0.0 && r.phases.send.p50 >= 0.0);
}

#[test]
fn stalls_show_in_corrected_latency_only() {
    // The server holds every request arriving between 0.3 s and 0.8 s until 0.8 s. A closed-loop
    // client sees ten slow requests (one per connection); an open-loop schedule keeps arriving
    // during the stall, and all ~500 sends that came due behind it waited.
    let (addr, _) = common::server(common::Behaviour {
        fail_every: 0,
        stall: Some((Duration::from_millis(300), Duration::from_millis(800))),
        ..Default::default()
    });
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.connections = 10;
    c.rate = Some(1000.0);
    c.duration = Some(Duration::from_secs(2));
    let r = run(c).unwrap();
    let o = r.open_loop.unwrap();
    let corrected = r.latency_ms.p99;
    let uncorrected = o.uncorrected_ms.p99;
    assert!(
        corrected > 200.0,
        "corrected p99 {corrected} ms should carry the stall"
    );
    assert!(
        corrected > 10.0 * uncorrected,
        "corrected p99 {corrected} ms vs uncorrected {uncorrected} ms"
    );
    assert!(o.late > 100, "late sends {}", o.late);
    assert_eq!(r.errors.total(), 0);
}

#[test]
fn open_loop_needs_a_duration() {
    let mut c = LoadConfig::new("http://127.0.0.1:9/").unwrap();
    c.rate = Some(10.0);
    c.duration = None;
    c.requests = Some(5);
    assert!(run(c.clone()).unwrap_err().to_string().contains("duration"));
    c.rate = Some(0.0);
    assert!(run(c).unwrap_err().to_string().contains("rate"));
}

#[test]
fn keeping_time_at_a_modest_rate_takes_a_small_share_of_a_core() {
    // 1,000 req/s on 20 connections: the generator's own CPU must stay a small share, so that
    // `generator_busy` still says whether it kept up (spinning to keep time took ~40% here; a
    // timer takes ~7%).
    let (addr, _) = common::server(common::Behaviour::default());
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.connections = 20;
    c.threads = 1;
    c.rate = Some(1000.0);
    c.duration = Some(Duration::from_millis(1500));
    let r = run(c).unwrap();
    let o = r.open_loop.unwrap();
    assert!(o.sent >= 1400, "{o:?}");
    assert!(
        r.generator_busy < 0.25,
        "the generator was busy {:.0}% of the run at 1,000 req/s",
        r.generator_busy * 100.0
    );
}
