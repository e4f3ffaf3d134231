//! The generator's own HTTP/1.1 path against servers that end responses in the ways HTTP allows
//! (a body until close, chunked, `Connection: close`) and against one that stalls past the
//! timeout.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use wasmlab_load::{LoadConfig, run};

use crate::common;

/// A raw loopback server: for each request head read, writes `response`; closes the connection
/// after each response when `close` is set. Runs until the test process ends.
fn raw_server(response: &'static [u8], close: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                loop {
                    let Ok(n) = stream.read(&mut chunk) else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        if stream.write_all(response).is_err() {
                            return;
                        }
                        if close {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

fn requests(addr: SocketAddr, n: u64) -> LoadConfig {
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.connections = 3;
    c.duration = None;
    c.requests = Some(n);
    c
}

#[test]
fn a_body_that_runs_until_close_is_read_to_the_close_and_the_connection_replaced() {
    let addr = raw_server(b"HTTP/1.1 200 OK\r\n\r\nhello", true);
    let r = run(requests(addr, 60)).unwrap();
    assert_eq!(r.responses, 60, "{:?}", r.first_error);
    assert_eq!(r.errors.total(), 0);
    assert_eq!(r.body_bytes, 5 * 60);
    assert_eq!(r.phases.connections_opened, 60);
}

#[test]
fn connection_close_and_chunked_bodies_are_framed() {
    let close = raw_server(
        b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok",
        true,
    );
    let r = run(requests(close, 30)).unwrap();
    assert_eq!(
        (r.responses, r.errors.total()),
        (30, 0),
        "{:?}",
        r.first_error
    );
    assert_eq!(r.phases.connections_opened, 30);

    let chunked = raw_server(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        false,
    );
    let r = run(requests(chunked, 300)).unwrap();
    assert_eq!((r.responses, r.ok), (300, 300), "{:?}", r.first_error);
    assert_eq!(r.body_bytes, 5 * 300);
    assert_eq!(r.status_counts.get(&201), Some(&300));
    assert!(r.phases.connections_opened <= 3);
}

#[test]
fn a_malformed_response_is_a_read_write_error_not_a_response() {
    let addr = raw_server(
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokSURPLUS",
        false,
    );
    let r = run(requests(addr, 10)).unwrap();
    assert_eq!(r.responses, 0);
    assert_eq!(r.errors.read_write, 10);
    assert!(r.first_error.unwrap().contains("after the end"));
}

#[test]
fn requests_past_the_timeout_are_counted_and_the_run_goes_on() {
    // Requests arriving between 0.3 s and 0.9 s are held until 0.9 s; the timeout is 0.15 s.
    let (addr, _) = common::server(common::Behaviour {
        fail_every: 0,
        stall: Some((Duration::from_millis(300), Duration::from_millis(900))),
        ..Default::default()
    });
    let mut c = LoadConfig::new(&format!("http://{addr}/")).unwrap();
    c.connections = 4;
    c.timeout = Duration::from_millis(150);
    c.duration = Some(Duration::from_millis(1300));
    let r = run(c).unwrap();
    // Each connection times out about every 0.15 s (plus a 1 ms pause) during the stall.
    assert!(
        (8..=4 * 6).contains(&r.errors.timeout),
        "timeouts {}",
        r.errors.timeout
    );
    assert!(r.first_error.unwrap().contains("no response within"));
    // Before and after the stall, requests are answered, fast.
    assert!(r.responses > 100, "responses {}", r.responses);
    assert!(
        r.latency_ms.max < 150.0,
        "a response slower than the timeout was counted"
    );
    assert_eq!(r.errors.total(), r.errors.timeout);
}
