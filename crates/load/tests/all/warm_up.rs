//! A warm-up on the run's own connections, not counted, and the window a caller reads a server's
//! resources over: opened when the warm-up ends, closed when the last counted exchange has, with
//! the connections still open.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmlab_load::{Edge, LoadConfig, Window, run};

use crate::common;

/// What the server had answered and closed when each edge was told, and when.
type Seen = Arc<Mutex<Vec<(Edge, u64, u64, Instant)>>>;

fn window(served: &Arc<AtomicU64>, closed: &Arc<AtomicU64>) -> (Window, Seen) {
    let seen: Seen = Arc::default();
    let (log, served, closed) = (seen.clone(), served.clone(), closed.clone());
    let w = Window(Arc::new(move |edge| {
        log.lock().unwrap().push((
            edge,
            served.load(Ordering::SeqCst),
            closed.load(Ordering::SeqCst),
            Instant::now(),
        ));
    }));
    (w, seen)
}

#[test]
fn a_closed_loop_warm_up_is_sent_on_the_same_connections_and_not_counted() {
    let (addr, served, closed) = common::server_with_connections(Default::default());
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.connections = 4;
    c.warm_up = Some(Duration::from_millis(300));
    c.duration = Some(Duration::from_millis(300));
    let (w, seen) = window(&served, &closed);
    c.window = Some(w);
    let t0 = Instant::now();
    let r = run(c).unwrap();
    let all = served.load(Ordering::SeqCst);
    let seen = seen.lock().unwrap().clone();
    let [
        (Edge::Opens, at_open, _, opened),
        (Edge::Closes, at_close, closed_then, _),
    ] = seen[..]
    else {
        panic!("the edges were {seen:?}");
    };
    assert!(opened - t0 >= Duration::from_millis(300), "opened early");
    assert!(at_open > 0, "nothing was sent in the warm-up");
    // Everything counted was answered by the close, and nothing after it.
    assert_eq!(at_close, all);
    assert!(r.responses > 100 && r.responses < all, "{r:?}");
    // What the window saw answered is what was counted, but for the exchanges in flight at its
    // opening (at most one per connection) and those answered while the thread that tells the
    // opening waited for a core (on a busy machine it wakes late).
    let late = (opened - t0).saturating_sub(Duration::from_millis(300));
    let answered_while_late = (r.responses as f64 * late.as_secs_f64() / 0.3).ceil() as u64;
    assert!(
        (at_close - at_open).abs_diff(r.responses) <= 4 + r.responses / 50 + answered_while_late,
        "{} answered in the window, {} counted, the opening told {late:?} late",
        at_close - at_open,
        r.responses
    );
    assert_eq!(closed_then, 0, "a connection closed before the window did");
    assert_eq!(
        r.phases.connections_opened, 0,
        "connections opened while measured"
    );
    assert!(
        r.elapsed_secs < 0.45,
        "the warm-up was counted in {}",
        r.elapsed_secs
    );
    assert_eq!(r.errors.total(), 0);
    // The report says it had one, in its JSON too.
    assert_eq!(r.warm_up_secs, Some(0.3));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["warm_up_secs"], 0.3);
}

#[test]
fn an_open_loop_warm_up_keeps_the_pace_and_only_the_measured_sends_are_due() {
    let (addr, served, closed) = common::server_with_connections(Default::default());
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.connections = 8;
    c.rate = Some(2000.0);
    c.warm_up = Some(Duration::from_millis(200));
    c.duration = Some(Duration::from_millis(300));
    let (w, seen) = window(&served, &closed);
    c.window = Some(w);
    let r = run(c).unwrap();
    let ol = r.open_loop.expect("an open-loop report");
    assert_eq!(ol.intended, 600, "{ol:?}");
    assert_eq!(ol.sent + ol.dropped, ol.intended, "{ol:?}");
    assert_eq!(r.responses, ol.sent);
    // The warm-up's 400 were sent and answered too, uncounted.
    assert!(
        served.load(Ordering::SeqCst) >= 990,
        "{}",
        served.load(Ordering::SeqCst)
    );
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[test]
fn without_a_warm_up_the_window_opens_at_once_and_a_request_budget_refuses_one() {
    let (addr, served, closed) = common::server_with_connections(Default::default());
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.connections = 2;
    c.duration = Some(Duration::from_millis(100));
    let (w, seen) = window(&served, &closed);
    c.window = Some(w);
    let r = run(c.clone()).unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(
        matches!(seen[..], [(Edge::Opens, 0, _, _), (Edge::Closes, n, 0, _)] if n == r.responses),
        "the edges were {seen:?}, {} responses counted",
        r.responses
    );
    assert_eq!(r.phases.connections_opened, 2);
    assert_eq!(r.warm_up_secs, None);
    assert!(
        serde_json::to_value(&r)
            .unwrap()
            .get("warm_up_secs")
            .is_none()
    );

    c.window = None;
    c.duration = None;
    c.requests = Some(10);
    c.warm_up = Some(Duration::from_millis(100));
    let e = run(c).unwrap_err().to_string();
    assert!(e.contains("warm-up"), "{e}");
}
