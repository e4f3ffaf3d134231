//! Hostile clients against the gateway binary: oversized heads, a client that sends its head or
//! its body a byte at a time, thousands of idle connections, more connections than the limit.
//! (Malformed requests and oversized bodies are in http.rs.)

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use wasmlab_test_support::{KeepAlive, ServerProcess, request, send_raw};

const BIN: &str = env!("CARGO_BIN_EXE_wasmlab-gateway-native");

#[test]
fn oversized_head_is_431() {
    let server = ServerProcess::start(BIN, &["--max-header-bytes", "16384"]);
    let big = "x".repeat(40_000);
    let r = send_raw(
        server.addr,
        format!("GET / HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n").as_bytes(),
    );
    assert_eq!(r.status, 431);
    // A head within the limit is fine.
    let ok = "y".repeat(8_000);
    let r = send_raw(
        server.addr,
        format!("GET / HTTP/1.1\r\nHost: x\r\nX-Ok: {ok}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert_eq!(r.status, 200);
}

#[test]
fn one_header_larger_than_the_default_limit_is_431() {
    // The default limit is 64 KiB of request line and headers, however they are split: one
    // 100 KB line as much as many small ones.
    let server = ServerProcess::start(BIN, &[]);
    let line = |n: usize| {
        format!(
            "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: {}\r\n\r\n",
            "x".repeat(n)
        )
    };
    assert_eq!(send_raw(server.addr, line(100_000).as_bytes()).status, 431);
    assert_eq!(send_raw(server.addr, line(66_000).as_bytes()).status, 431);
    assert_eq!(send_raw(server.addr, line(60_000).as_bytes()).status, 200);
    let many: String = (0..90)
        .map(|i| format!("X-{i}: {}\r\n", "y".repeat(800)))
        .collect();
    let r = send_raw(
        server.addr,
        format!("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{many}\r\n").as_bytes(),
    );
    assert_eq!(r.status, 431, "90 headers of 800 bytes");
    // A lower limit holds for one line too.
    let server = ServerProcess::start(BIN, &["--max-header-bytes", "4096"]);
    assert_eq!(send_raw(server.addr, line(5_000).as_bytes()).status, 431);
    assert_eq!(send_raw(server.addr, line(3_000).as_bytes()).status, 200);
}

#[test]
fn a_body_that_trickles_is_cut_at_the_body_timeout() {
    let server = ServerProcess::start_logged(BIN, &["--body-timeout-secs", "0.4"]);
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let t = Instant::now();
    slow.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
        .unwrap();
    // A byte every 100 ms: well within any per-read timeout, never done within 0.4 s.
    let mut answer = Vec::new();
    let mut closed = false;
    while t.elapsed() < Duration::from_secs(5) && !closed {
        let _ = slow.write_all(b"x");
        let mut buf = [0u8; 1024];
        match slow.read(&mut buf) {
            Ok(0) => closed = true,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => closed = true,
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = t.elapsed();
    let answer = String::from_utf8_lossy(&answer);
    assert!(closed, "still open after {took:?}: {answer:?}");
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer:?}");
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(
        server.log().contains("body not received within 400ms"),
        "{}",
        server.log()
    );
    // A body that arrives in time, and other clients, are served.
    assert_eq!(
        request(server.addr, "POST", "/echo", b"hello").text(),
        "hello"
    );
}

#[test]
fn past_the_connection_limit_clients_wait_for_a_free_slot() {
    let server = ServerProcess::start(BIN, &["--max-connections", "20"]);
    // 20 connections that have started a request and not finished it hold every slot.
    let holders: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut s = TcpStream::connect(server.addr).unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // The next client is connected by the kernel but not served...
    let mut next = TcpStream::connect(server.addr).unwrap();
    next.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    next.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 256];
    assert!(
        next.read(&mut buf).is_err(),
        "answered with every slot taken"
    );
    // ... until a slot frees up.
    drop(holders);
    next.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = next.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200 "));
    let mut conn = KeepAlive::connect(server.addr);
    assert_eq!(conn.get("/").status, 200);
}

#[test]
fn a_byte_at_a_time_client_is_cut_off() {
    let server = ServerProcess::start(BIN, &["--header-timeout-secs", "0.3"]);
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let t = Instant::now();
    let mut cut = false;
    let mut buf = [0u8; 512];
    for b in head {
        if s.write_all(&[*b]).is_err() {
            cut = true;
            break;
        }
        match s.read(&mut buf) {
            Ok(0) => {
                cut = true;
                break;
            }
            // hyper may say 408 before closing; anything but a 200 is a cut.
            Ok(n) => {
                assert!(!String::from_utf8_lossy(&buf[..n]).contains(" 200 "));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => {
                cut = true;
                break;
            }
        }
    }
    let took = t.elapsed();
    assert!(
        cut,
        "the slow client got its whole head through in {took:?}"
    );
    assert!(took < Duration::from_secs(3), "cut only after {took:?}");
    // Others are still served.
    assert_eq!(request(server.addr, "GET", "/", b"").status, 200);
}

#[test]
fn ten_thousand_idle_connections_do_not_stop_service_and_their_memory_is_returned() {
    let limit = wasmlab_gateway::cli::raise_fd_limit();
    let n = 10_000.min(limit as usize / 2);
    assert!(n >= 1_000, "open-files limit {limit} too low for this test");
    let max = (n + 100).to_string();
    let server = ServerProcess::start(BIN, &["--max-connections", &max]);
    assert_eq!(request(server.addr, "GET", "/", b"").status, 200);
    let rss_before = server.rss_kib();
    let idle: Vec<TcpStream> = (0..n)
        .map(|_| TcpStream::connect(server.addr).unwrap())
        .collect();
    let t = Instant::now();
    let r = request(server.addr, "GET", "/", b"");
    let took = t.elapsed();
    assert_eq!(r.status, 200);
    assert!(
        took < Duration::from_secs(2),
        "a request took {took:?} beside {n} idle connections"
    );
    let rss_with_idle = server.rss_kib();
    // A connection that has sent nothing holds no HTTP buffers (measured: about 1.6 KiB each).
    let per_connection = (rss_with_idle.saturating_sub(rss_before)) as f64 / n as f64;
    assert!(
        per_connection < 6.0,
        "{per_connection:.1} KiB per idle connection"
    );
    drop(idle);
    // After the storm the gateway gives the memory back (it looks once a second).
    let t = Instant::now();
    let returned_to = rss_before + (rss_with_idle - rss_before) / 4;
    let mut rss_after = server.rss_kib();
    while rss_after > returned_to && t.elapsed() < Duration::from_secs(6) {
        std::thread::sleep(Duration::from_millis(200));
        rss_after = server.rss_kib();
    }
    eprintln!(
        "{n} idle connections: request served in {took:?}; gateway RSS {rss_before} KiB before, {rss_with_idle} KiB with them open ({per_connection:.1} KiB each), {rss_after} KiB after they closed"
    );
    assert!(
        rss_after <= returned_to,
        "RSS {rss_after} KiB {:?} after the connections closed (before {rss_before}, with them {rss_with_idle})",
        t.elapsed()
    );
    assert_eq!(request(server.addr, "GET", "/", b"").status, 200);
}

#[test]
fn memory_held_by_served_connections_is_returned_after_they_close() {
    // Connections that have been served keep hyper's buffers (about 16 KiB) while open.
    let limit = wasmlab_gateway::cli::raise_fd_limit();
    // A quarter of the open-files limit at most: the idle-connections test runs beside this one.
    let n = 2_000.min(limit as usize / 4);
    let server = ServerProcess::start(BIN, &[]);
    assert_eq!(request(server.addr, "GET", "/", b"").status, 200);
    let rss_before = server.rss_kib();
    let conns: Vec<KeepAlive> = (0..n)
        .map(|_| {
            let mut c = KeepAlive::connect(server.addr);
            assert_eq!(c.get("/").status, 200);
            c
        })
        .collect();
    let rss_with = server.rss_kib();
    drop(conns);
    let returned_to = rss_before + (rss_with - rss_before) / 4;
    let t = Instant::now();
    let mut rss_after = server.rss_kib();
    while rss_after > returned_to && t.elapsed() < Duration::from_secs(6) {
        std::thread::sleep(Duration::from_millis(200));
        rss_after = server.rss_kib();
    }
    eprintln!(
        "{n} served keep-alive connections: RSS {rss_before} KiB before, {rss_with} KiB with them ({:.1} KiB each), {rss_after} KiB after",
        (rss_with - rss_before) as f64 / n as f64
    );
    assert!(rss_after <= returned_to, "RSS stayed at {rss_after} KiB");
}
