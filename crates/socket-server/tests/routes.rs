//! The socket server natively (this workspace's build), started on an ephemeral loopback port:
//! every route as the gateways answer it, its limits, and keep-alive with each response framed
//! right. Its wasm32-wasip2 build is verified by the lab's tests (crates/lab/cli/tests/all/peers.rs)
//! when the Wasmtime CLI is set up.

use wasmlab_test_support::{
    KeepAlive, ServerProcess, check_every_route, echo_of, request, spawn_upstream,
};

const BIN: &str = env!("CARGO_BIN_EXE_wasmlab-socket-server");

#[test]
fn answers_every_route_as_the_gateways_do() {
    let (_rt, upstream) = spawn_upstream();
    let server = ServerProcess::start(BIN, &["--upstream", &upstream]);
    check_every_route(server.addr, &echo_of("GET", "/proxy"));
}

#[test]
fn keeps_the_connection_alive_and_frames_every_response() {
    let server = ServerProcess::start(BIN, &[]);
    let mut conn = KeepAlive::connect(server.addr);
    for n in 1..=3u64 {
        let r = conn.get("/state");
        assert_eq!((r.status, r.text()), (200, n.to_string()));
    }
    assert_eq!(conn.get("/").text(), "hello");
    assert!(conn.leftover().is_empty());
}

#[test]
fn refuses_a_body_over_its_limit_and_proxies_nowhere_without_an_upstream() {
    let server = ServerProcess::start(BIN, &["--max-body-bytes", "16"]);
    let r = request(server.addr, "POST", "/echo", &[b'x'; 17]);
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(
        request(server.addr, "POST", "/echo", &[b'x'; 16]).status,
        200
    );
    let r = request(server.addr, "GET", "/proxy", b"");
    assert_eq!(r.status, 502);
    assert!(r.text().contains("no upstream"), "{}", r.text());
}

#[test]
fn bad_arguments_are_refused() {
    let out = std::process::Command::new(BIN)
        .args(["--host", "localhost:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not an IP address"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = std::process::Command::new(BIN)
        .args(["--upstream", "ftp://x"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be an http://host:port URL"));
}

#[test]
fn its_limits_close_idle_and_slow_clients_and_cap_its_connections() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::{Duration, Instant};
    let server = ServerProcess::start_logged(
        BIN,
        &[
            "--header-timeout-secs",
            "0.5",
            "--body-timeout-secs",
            "0.5",
            "--max-connections",
            "2",
            "--max-header-bytes",
            "8192",
        ],
    );
    let closed_within = |mut s: TcpStream, what: &str| {
        let started = Instant::now();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "{what}: open {took:?}");
        String::from_utf8_lossy(&got).into_owned()
    };
    // An idle keep-alive connection and a head that never ends: closed at the header timeout.
    let mut idle = TcpStream::connect(server.addr).unwrap();
    idle.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let answered = closed_within(idle, "idle keep-alive");
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
    closed_within(slow, "unfinished head");
    // A body that never comes: 408 at the body timeout.
    let mut body = TcpStream::connect(server.addr).unwrap();
    body.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
        .unwrap();
    let answered = closed_within(body, "unfinished body");
    assert!(answered.starts_with("HTTP/1.1 408"), "{answered}");
    // A head over its limit: 431.
    let big = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "x".repeat(9000)
    );
    assert_eq!(
        wasmlab_test_support::send_raw(server.addr, big.as_bytes()).status,
        431
    );
    // Two connections held open: a third waits in the accept queue until one closes.
    let held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = TcpStream::connect(server.addr).unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut buf = [0u8; 256];
            let _ = s.read(&mut buf).unwrap();
            s
        })
        .collect();
    let mut third = TcpStream::connect(server.addr).unwrap();
    third
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    third
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 256];
    assert!(
        third.read(&mut buf).is_err(),
        "served past --max-connections 2"
    );
    drop(held);
    third
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let n = third.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    assert!(
        server.log().contains("max_connections=2"),
        "{}",
        server.log()
    );
}
