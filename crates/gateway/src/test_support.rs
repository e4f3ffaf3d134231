//! Helpers for tests that start a gateway binary and talk raw HTTP/1.1 to it (so they can also send
//! what a well-behaved client would not). Used by this crate's and `wasmlab-gateway-wasm`'s tests.

use std::io::{BufRead, BufReader, Read, Write};

use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
pub use wasmlab_upstream::echo_of;

/// Starts the upstream echo server on an ephemeral loopback port; returns its runtime (keep it
/// alive) and its base URL.
pub fn spawn_upstream() -> (tokio::runtime::Runtime, String) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let addr = rt
        .block_on(wasmlab_upstream::spawn("127.0.0.1:0".parse().unwrap()))
        .unwrap();
    (rt, format!("http://{addr}"))
}

/// A gateway process on an ephemeral loopback port; killed when dropped.
pub struct ServerProcess {
    child: Child,
    pub addr: SocketAddr,
}

impl ServerProcess {
    /// Starts `binary --port 0 ARGS…` and waits for its `listening on` line.
    pub fn start(binary: &str, args: &[&str]) -> Self {
        let mut child = Command::new(binary)
            .args(["--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start {binary}: {e}"));
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let addr = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("{binary} exited before listening"))
                .unwrap();
            if let Some(a) = line.strip_prefix("listening on http://") {
                break a.trim().parse().unwrap();
            }
        };
        Self { child, addr }
    }
}

impl ServerProcess {
    /// Resident memory of the server process, in KiB (from /proc).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A parsed HTTP/1.1 response.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends `raw` as is and reads until the server closes the connection.
pub fn send_raw(addr: SocketAddr, raw: &[u8]) -> RawResponse {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(raw).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    parse_response(&buf)
}

/// `METHOD target` with `Connection: close` and an optional body.
pub fn request(addr: SocketAddr, method: &str, target: &str, body: &[u8]) -> RawResponse {
    let mut raw = format!(
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    send_raw(addr, &raw)
}

fn parse_response(buf: &[u8]) -> RawResponse {
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| {
            panic!(
                "no complete response head in {:?}",
                String::from_utf8_lossy(buf)
            )
        });
    let head = std::str::from_utf8(&buf[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_ascii_lowercase(), v.trim().to_owned())
        })
        .collect();
    RawResponse {
        status,
        headers,
        body: buf[end + 4..].to_vec(),
    }
}

/// Checks every route of the handlers against a running gateway; `upstream_echo` is what /proxy
/// must return.
pub fn check_every_route(addr: SocketAddr, upstream_echo: &str) {
    let r = request(addr, "GET", "/", b"");
    assert_eq!((r.status, r.text().as_str()), (200, "hello"));
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    let r = request(addr, "GET", "/compute?iters=2", b"");
    assert_eq!(
        (r.status, r.text()),
        (200, wasmlab_handlers::chained_sha256_hex(2))
    );
    let r = request(addr, "GET", "/compute", b"");
    assert_eq!(
        r.text(),
        wasmlab_handlers::chained_sha256_hex(wasmlab_handlers::DEFAULT_ITERS)
    );
    assert_eq!(request(addr, "GET", "/compute?iters=x", b"").status, 400);
    let a: u64 = request(addr, "GET", "/state", b"").text().parse().unwrap();
    let b: u64 = request(addr, "GET", "/state", b"").text().parse().unwrap();
    assert_eq!(b, a + 1);
    let r = request(addr, "GET", "/proxy", b"");
    assert_eq!((r.status, r.text().as_str()), (200, upstream_echo));
    let body: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let r = request(addr, "POST", "/echo", &body);
    assert_eq!(r.status, 200);
    assert!(r.body == body, "echo body differs");
    let r = request(addr, "GET", "/nope", b"");
    assert_eq!((r.status, r.text().as_str()), (404, "not found"));
    let r = request(addr, "DELETE", "/", b"");
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET"));
    let r = request(addr, "GET", "/echo", b"");
    assert_eq!((r.status, r.header("allow")), (405, Some("POST")));
    // Malformed request line: hyper answers 400 itself.
    let r = send_raw(addr, b"THIS IS NOT HTTP\r\n\r\n");
    assert_eq!(r.status, 400);
    let r = send_raw(
        addr,
        b"GET / HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n",
    );
    assert_eq!(r.status, 400);
}
