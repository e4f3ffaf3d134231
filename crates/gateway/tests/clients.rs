//! Hostile clients against the gateway binary: oversized heads, a client that sends its head a
//! byte at a time, and thousands of idle connections. (Malformed requests and oversized bodies are
//! in http.rs.)

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use wasmlab_gateway::test_support::{ServerProcess, request, send_raw};

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
fn ten_thousand_idle_connections_do_not_stop_service() {
    let limit = wasmlab_gateway::cli::raise_fd_limit();
    let n = 10_000.min(limit.saturating_sub(200) as usize);
    assert!(n >= 1_000, "open-files limit {limit} too low for this test");
    let server = ServerProcess::start(BIN, &[]);
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
    drop(idle);
    eprintln!(
        "{n} idle connections: request served in {took:?}; gateway RSS {rss_before} KiB before, {rss_with_idle} KiB with them open"
    );
    assert_eq!(request(server.addr, "GET", "/", b"").status, 200);
}
