//! Helpers for tests that start a gateway binary and talk raw HTTP/1.1 to it (so they can also send
//! what a well-behaved client would not), and an HTTPS server for the clients' tests. A
//! dev-dependency of the gateways', the load generator's and the lab's tests: no production code
//! links it.

mod tls;

use std::io::{BufRead, BufReader, Read, Write};

use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
pub use tls::{HttpsServer, LocalhostCertificate, https_server};
pub use wasmlab_upstream::echo_of;

/// Runs `serve` on a thread of its own (a current-thread tokio runtime) with a listener bound to
/// an ephemeral loopback port; returns that address once it is bound.
pub fn serve_on_loopback<F, Fut>(serve: F) -> SocketAddr
where
    F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            serve(listener).await;
        });
    });
    rx.recv().unwrap()
}

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
    /// Where its stderr goes, when the test reads it (removed when dropped).
    log: Option<std::path::PathBuf>,
}

impl ServerProcess {
    /// Starts `binary --port 0 ARGS…` and waits for its `listening on` line. Its stderr is the
    /// test's.
    pub fn start(binary: &str, args: &[&str]) -> Self {
        Self::spawn(binary, args, None)
    }

    /// As [`ServerProcess::start`], with its stderr kept for [`ServerProcess::log`].
    pub fn start_logged(binary: &str, args: &[&str]) -> Self {
        static LOGS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = LOGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "wasmlab-test-server-{}-{n}.log",
            std::process::id()
        ));
        Self::spawn(binary, args, Some(path))
    }

    /// What the server has written to stderr so far (started with [`ServerProcess::start_logged`]).
    pub fn log(&self) -> String {
        let log = self.log.as_ref().expect("started with start_logged");
        std::fs::read_to_string(log).unwrap()
    }

    fn spawn(binary: &str, args: &[&str], log: Option<std::path::PathBuf>) -> Self {
        let stderr = match &log {
            Some(path) => Stdio::from(std::fs::File::create(path).unwrap()),
            None => Stdio::inherit(),
        };
        let mut child = Command::new(binary)
            .args(["--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("start {binary}: {e}"));
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let addr = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("{binary} exited before listening"))
                .unwrap();
            let printed = line.strip_prefix("listening on http://");
            if let Some(a) = printed.or_else(|| line.strip_prefix("listening on https://")) {
                break a.trim().parse().unwrap();
            }
        };
        Self { child, addr, log }
    }
}

impl ServerProcess {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

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
        if let Some(log) = &self.log {
            let _ = std::fs::remove_file(log);
        }
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

/// One keep-alive connection that reads each response exactly as its head frames it, so a
/// response with a wrong length, or a second response smuggled behind the first, shows.
pub struct KeepAlive {
    stream: TcpStream,
    /// Bytes read past the last response.
    pending: Vec<u8>,
}

impl KeepAlive {
    pub fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        Self {
            stream,
            pending: Vec::new(),
        }
    }

    /// `GET target` on this connection; its response.
    pub fn get(&mut self, target: &str) -> RawResponse {
        let raw = format!("GET {target} HTTP/1.1\r\nHost: test\r\n\r\n");
        self.stream.write_all(raw.as_bytes()).unwrap();
        self.read_response()
    }

    /// Reads one response: its head, then exactly `content-length` bytes of body. Panics when the
    /// response has no `content-length`, or when the connection ends or stalls first.
    pub fn read_response(&mut self) -> RawResponse {
        let head_end = loop {
            if let Some(i) = self.pending.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            self.fill("a response head");
        };
        let head = parse_response(&self.pending[..head_end]);
        let len: usize = head
            .header("content-length")
            .unwrap_or_else(|| panic!("no content-length in {head:?}"))
            .parse()
            .unwrap();
        while self.pending.len() < head_end + len {
            self.fill("the body content-length announced");
        }
        let body = self.pending[head_end..head_end + len].to_vec();
        self.pending.drain(..head_end + len);
        RawResponse { body, ..head }
    }

    /// Bytes received after the last whole response (a smuggled response would be here).
    pub fn leftover(&mut self) -> Vec<u8> {
        self.stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut buf = [0u8; 4096];
        if let Ok(n) = self.stream.read(&mut buf) {
            self.pending.extend_from_slice(&buf[..n]);
        }
        self.stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        std::mem::take(&mut self.pending)
    }

    fn fill(&mut self, waiting_for: &str) {
        let mut buf = [0u8; 16 << 10];
        match self.stream.read(&mut buf) {
            Ok(0) => panic!(
                "the connection closed while waiting for {waiting_for}; had {:?}",
                String::from_utf8_lossy(&self.pending)
            ),
            Ok(n) => self.pending.extend_from_slice(&buf[..n]),
            Err(e) => panic!(
                "{e} while waiting for {waiting_for}; had {:?}",
                String::from_utf8_lossy(&self.pending)
            ),
        }
    }
}

/// The environment variable that makes a skip a failure: set by `.ci/run` after it installed every
/// tool the tests use, so that a test which would skip (a tool missing, at the wrong version, or
/// whose setup failed) fails with the same reason instead of passing unseen.
pub const NO_SKIP_VAR: &str = "WASMLAB_NO_SKIP";

/// Says that the running test skipped itself, and why, where `cargo test` shows it: libtest
/// captures `print!`/`eprint!` of a passing test, not writes to the stderr handle itself. Under
/// [`NO_SKIP_VAR`] it panics with the reason instead: the machine was meant to have everything.
pub fn skipped(why: &str) {
    let test = current_test();
    if std::env::var_os(NO_SKIP_VAR).is_some_and(|v| v != "0" && !v.is_empty()) {
        panic!("{test} would skip, and {NO_SKIP_VAR} is set: {why}");
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// As [`skipped`] for what no setup can bring, whatever [`NO_SKIP_VAR`] says: hardware absent
/// here (a cpuidle driver, a second CPU), or a tool no package registry has (WasmEdge).
pub fn skipped_not_installable(why: &str) {
    let test = current_test();
    let _ = writeln!(std::io::stderr(), "SKIPPED {test} (not installable): {why}");
}

fn current_test() -> String {
    std::thread::current().name().unwrap_or("a test").to_owned()
}

/// A language wasmlab builds wasi:http components from, with the tool `wasmlab setup` installs
/// for it.
#[derive(Debug, Clone, Copy)]
pub enum ComponentLanguage {
    /// componentize-js (`wasmlab setup js-component`), run by peers/js-component/build.mjs.
    JavaScript,
    /// componentize-py (`wasmlab setup py-component`), run by peers/py-component/build.py.
    Python,
}

/// Builds a handler in `language` into a wasi:http component at `out` with its peers/ build
/// script and the tool `wasmlab setup` installs into `tools` (`build_args`: `--source FILE`,
/// `--wit FILE --world NAME`; kept while its inputs are older); why not when that tool is not
/// there. Only a missing tool is a reason to skip: a build that fails with it panics.
pub fn build_component(
    language: ComponentLanguage,
    tools: &std::path::Path,
    build_args: &[&std::ffi::OsStr],
    out: &std::path::Path,
) -> Result<(), String> {
    let (tool, installed, runner, script) = match language {
        ComponentLanguage::JavaScript => (
            "componentize-js",
            tools.join("npm/node_modules/@bytecodealliance/componentize-js"),
            "node",
            "peers/js-component/build.mjs",
        ),
        ComponentLanguage::Python => (
            "componentize-py",
            tools.join("bin/componentize-py"),
            "python3",
            "peers/py-component/build.py",
        ),
    };
    if !installed.exists() {
        let variant = script.split('/').nth(1).unwrap_or(script);
        return Err(format!(
            "{tool} is not set up (`wasmlab setup {variant}` installs it)"
        ));
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let built = Command::new(runner)
        .arg(root.join(script))
        .arg("--tools")
        .arg(tools)
        .args(build_args)
        .arg("--out")
        .arg(out)
        .output()
        .map_err(|e| format!("{runner} cannot be run: {e}"))?;
    assert!(
        built.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    Ok(())
}

/// examples/components' service in `language` (a component as its users write one: nothing of
/// wasmlab's ABI, its own world.wit), built with the tool `wasmlab setup` installs into `tools`
/// into target/user-components/DIR/hello_SHORT.wasm (kept while its inputs are older); its path,
/// or why not when that tool is not there.
pub fn example_component(
    language: ComponentLanguage,
    tools: &std::path::Path,
) -> Result<std::path::PathBuf, String> {
    let (dir, file, wasm) = match language {
        ComponentLanguage::JavaScript => ("js", "hello.js", "hello_js.wasm"),
        ComponentLanguage::Python => ("python", "hello.py", "hello_py.wasm"),
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let example = root.join("examples/components").join(dir);
    let (source, wit) = (example.join(file), example.join("world.wit"));
    let out = root.join("target/user-components").join(dir).join(wasm);
    build_component(
        language,
        tools,
        &[
            "--source".as_ref(),
            source.as_os_str(),
            "--wit".as_ref(),
            wit.as_os_str(),
            "--world".as_ref(),
            "hello".as_ref(),
        ],
        &out,
    )?;
    Ok(out)
}

/// The tools directory the tests use: `WASMLAB_TOOLS` (set by `.ci/run` to its tool cache), else
/// the project's `tools/`.
pub fn tools_dir() -> std::path::PathBuf {
    std::env::var_os("WASMLAB_TOOLS").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools"),
        std::path::PathBuf::from,
    )
}
