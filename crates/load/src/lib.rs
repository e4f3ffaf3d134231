//! The wasmlab load generator: closed-loop HTTP/1.1 keep-alive load.
//!
//! C connections are spread over T worker threads, each a single-threaded tokio runtime. Every
//! connection sends a request, waits for the whole response, records the latency in its worker's
//! HDR histogram and sends the next. Histograms are merged once at the end, so memory does not grow
//! with the run's length. A request sent before the deadline is waited for and counted, so the
//! reported count equals what the server answered.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request, Uri};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;

/// Highest latency the histograms hold (longer ones are clamped to it).
const MAX_TRACKED_NS: u64 = 120_000_000_000;

/// What to send, where, and for how long.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub url: Uri,
    pub method: Method,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    pub connections: usize,
    pub threads: usize,
    /// Stop sending after this long (requests in flight are still awaited).
    pub duration: Option<Duration>,
    /// Stop after this many requests in all.
    pub requests: Option<u64>,
    /// A request not answered within this counts as a timeout and its connection is replaced.
    pub timeout: Duration,
    /// Set to stop early (Ctrl-C); what finished until then is reported.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl LoadConfig {
    pub fn new(url: &str) -> anyhow::Result<Self> {
        let url: Uri = url
            .parse()
            .map_err(|e| anyhow::anyhow!("{url:?} is not a URL: {e}"))?;
        anyhow::ensure!(
            url.scheme_str() == Some("http"),
            "only http:// URLs are supported (got {url})"
        );
        anyhow::ensure!(url.host().is_some(), "URL {url} has no host");
        Ok(Self {
            url,
            method: Method::GET,
            headers: Vec::new(),
            body: Bytes::new(),
            connections: 50,
            threads: 1,
            duration: Some(Duration::from_secs(10)),
            requests: None,
            timeout: Duration::from_secs(10),
            cancel: None,
        })
    }

    fn authority(&self) -> String {
        let host = self.url.host().unwrap_or("localhost");
        let port = self.url.port_u16().unwrap_or(80);
        if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        }
    }
}

/// Errors by class, as a user of wrk or k6 would split them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// TCP connect or HTTP handshake failed.
    pub connect: u64,
    /// The connection failed while sending or receiving (reset, closed early, malformed response).
    pub read_write: u64,
    /// No complete response within the timeout.
    pub timeout: u64,
    /// A complete response whose status was not 2xx.
    pub non_2xx: u64,
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        self.connect + self.read_write + self.timeout + self.non_2xx
    }

    fn add(&mut self, o: &ErrorCounts) {
        self.connect += o.connect;
        self.read_write += o.read_write;
        self.timeout += o.timeout;
        self.non_2xx += o.non_2xx;
    }
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyMs {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub max: f64,
}

impl LatencyMs {
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        Self {
            mean: h.mean() / 1e6,
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            p99_9: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
        }
    }
}

/// The outcome of one load run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadReport {
    pub url: String,
    pub method: String,
    pub connections: usize,
    pub threads: usize,
    /// Complete responses received, whatever their status.
    pub responses: u64,
    /// Responses with a 2xx status.
    pub ok: u64,
    pub errors: ErrorCounts,
    /// From the first send to the last response.
    pub elapsed_secs: f64,
    /// Complete responses per second.
    pub rps: f64,
    /// Latency of complete responses (send of the request to the last byte of the body).
    pub latency_ms: LatencyMs,
    pub body_bytes: u64,
    /// Complete responses by status code.
    pub status_counts: std::collections::BTreeMap<u16, u64>,
    /// The first error message seen, to say what went wrong.
    pub first_error: Option<String>,
    /// The merged latency histogram, nanoseconds.
    #[serde(skip)]
    pub histogram: Option<Histogram<u64>>,
}

#[derive(Debug)]
struct WorkerStats {
    responses: u64,
    ok: u64,
    errors: ErrorCounts,
    body_bytes: u64,
    /// Indexed by status code (100..=999), so counting costs no lookup.
    by_status: Vec<u64>,
    first_error: Option<String>,
}

impl Default for WorkerStats {
    fn default() -> Self {
        Self {
            responses: 0,
            ok: 0,
            errors: ErrorCounts::default(),
            body_bytes: 0,
            by_status: vec![0; 1000],
            first_error: None,
        }
    }
}

struct Shared {
    config: LoadConfig,
    authority: HeaderValue,
    deadline: Option<Instant>,
    /// Requests still allowed to start, when `requests` bounds the run.
    budget: Option<AtomicU64>,
}

impl Shared {
    /// Whether a connection may start another request.
    fn may_send(&self) -> bool {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        if self
            .config
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return false;
        }
        match &self.budget {
            None => true,
            Some(b) => b
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
        }
    }
}

/// Runs the load and returns its report. Blocks the calling thread for the run's duration.
pub fn run(config: LoadConfig) -> anyhow::Result<LoadReport> {
    anyhow::ensure!(config.connections > 0, "connections must be at least 1");
    anyhow::ensure!(
        config.duration.is_some() || config.requests.is_some(),
        "give a duration or a request count"
    );
    let threads = config.threads.clamp(1, config.connections);
    let authority = HeaderValue::from_str(&config.authority())?;
    let start = Instant::now();
    let shared = Arc::new(Shared {
        deadline: config.duration.map(|d| start + d),
        budget: config.requests.map(AtomicU64::new),
        authority,
        config,
    });

    let mut handles = Vec::with_capacity(threads);
    for t in 0..threads {
        // Connections spread evenly: worker t gets every threads-th one.
        let conns = (t..shared.config.connections).step_by(threads).count();
        let shared = shared.clone();
        handles.push(
            std::thread::Builder::new()
                .name(format!("load-{t}"))
                .spawn(move || worker(shared, conns))?,
        );
    }
    let mut hist = new_histogram();
    let mut stats = WorkerStats::default();
    for h in handles {
        let (wh, ws) = h
            .join()
            .map_err(|_| anyhow::anyhow!("load worker panicked"))??;
        hist.add(&wh).expect("same bounds");
        stats.responses += ws.responses;
        stats.ok += ws.ok;
        stats.errors.add(&ws.errors);
        stats.body_bytes += ws.body_bytes;
        for (a, b) in stats.by_status.iter_mut().zip(&ws.by_status) {
            *a += b;
        }
        stats.first_error = stats.first_error.or(ws.first_error);
    }
    let elapsed = start.elapsed().as_secs_f64();
    let c = &shared.config;
    Ok(LoadReport {
        url: c.url.to_string(),
        method: c.method.to_string(),
        connections: c.connections,
        threads,
        responses: stats.responses,
        ok: stats.ok,
        errors: stats.errors,
        elapsed_secs: elapsed,
        rps: if elapsed > 0.0 {
            stats.responses as f64 / elapsed
        } else {
            0.0
        },
        latency_ms: LatencyMs::from_histogram(&hist),
        body_bytes: stats.body_bytes,
        status_counts: stats
            .by_status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (code as u16, *n))
            .collect(),
        first_error: stats.first_error,
        histogram: Some(hist),
    })
}

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKED_NS, 3).expect("valid histogram bounds")
}

type WorkerResult = anyhow::Result<(Histogram<u64>, WorkerStats)>;

fn worker(shared: Arc<Shared>, conns: usize) -> WorkerResult {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    let hist = Rc::new(RefCell::new(new_histogram()));
    let stats = Rc::new(RefCell::new(WorkerStats::default()));
    local.block_on(&rt, async {
        let mut tasks = Vec::with_capacity(conns);
        for _ in 0..conns {
            tasks.push(tokio::task::spawn_local(connection(
                shared.clone(),
                hist.clone(),
                stats.clone(),
            )));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    let hist = Rc::try_unwrap(hist).expect("tasks done").into_inner();
    let stats = Rc::try_unwrap(stats).expect("tasks done").into_inner();
    Ok((hist, stats))
}

enum Failure {
    Connect(String),
    ReadWrite(String),
    Timeout,
}

async fn connect(shared: &Shared) -> Result<http1::SendRequest<Full<Bytes>>, Failure> {
    let addr = shared.config.authority();
    let stream = tokio::time::timeout(shared.config.timeout, TcpStream::connect(&addr))
        .await
        .map_err(|_| Failure::Connect(format!("connect to {addr} timed out")))?
        .map_err(|e| Failure::Connect(format!("connect to {addr}: {e}")))?;
    let _ = stream.set_nodelay(true);
    let (sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| Failure::Connect(format!("handshake: {e}")))?;
    tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

fn build_request(shared: &Shared) -> Request<Full<Bytes>> {
    let c = &shared.config;
    let mut req = Request::new(Full::new(c.body.clone()));
    *req.method_mut() = c.method.clone();
    *req.uri_mut() = c
        .url
        .path_and_query()
        .map_or_else(|| Uri::from_static("/"), |pq| Uri::from(pq.clone()));
    let h = req.headers_mut();
    h.insert(hyper::header::HOST, shared.authority.clone());
    for (k, v) in &c.headers {
        h.insert(k.clone(), v.clone());
    }
    req
}

async fn connection(
    shared: Arc<Shared>,
    hist: Rc<RefCell<Histogram<u64>>>,
    stats: Rc<RefCell<WorkerStats>>,
) {
    let mut sender: Option<http1::SendRequest<Full<Bytes>>> = None;
    while shared.may_send() {
        let started = Instant::now();
        let outcome = async {
            let s = match sender.as_mut() {
                Some(s) if !s.is_closed() => s,
                _ => sender.insert(connect(&shared).await?),
            };
            let exchange = async {
                s.ready()
                    .await
                    .map_err(|e| Failure::ReadWrite(e.to_string()))?;
                let resp = s
                    .send_request(build_request(&shared))
                    .await
                    .map_err(|e| Failure::ReadWrite(e.to_string()))?;
                let status = resp.status();
                let mut body = resp.into_body();
                let mut bytes = 0u64;
                while let Some(frame) = body.frame().await {
                    let frame = frame.map_err(|e| Failure::ReadWrite(e.to_string()))?;
                    if let Some(d) = frame.data_ref() {
                        bytes += d.len() as u64;
                    }
                }
                Ok((status, bytes))
            };
            tokio::time::timeout(shared.config.timeout, exchange)
                .await
                .map_err(|_| Failure::Timeout)?
        }
        .await;
        let failed = {
            let mut st = stats.borrow_mut();
            match outcome {
                Ok((status, bytes)) => {
                    let ns = (started.elapsed().as_nanos() as u64).clamp(1, MAX_TRACKED_NS);
                    hist.borrow_mut().record(ns).expect("clamped to bounds");
                    st.responses += 1;
                    st.body_bytes += bytes;
                    st.by_status[usize::from(status.as_u16()).min(999)] += 1;
                    if status.is_success() {
                        st.ok += 1;
                    } else {
                        st.errors.non_2xx += 1;
                        st.first_error
                            .get_or_insert_with(|| format!("status {status}"));
                    }
                    false
                }
                Err(f) => {
                    // The connection is in an unknown state: replace it.
                    sender = None;
                    let msg = match f {
                        Failure::Connect(m) => {
                            st.errors.connect += 1;
                            m
                        }
                        Failure::ReadWrite(m) => {
                            st.errors.read_write += 1;
                            m
                        }
                        Failure::Timeout => {
                            st.errors.timeout += 1;
                            format!("no response within {:?}", shared.config.timeout)
                        }
                    };
                    st.first_error.get_or_insert(msg);
                    true
                }
            }
        };
        if failed {
            // A refused connect returns at once; do not spin on it.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// Parses durations like `10s`, `500ms`, `2m`, `1.5s` (a bare number is seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 10s, 500ms, 2m)"))?;
    let secs = match unit {
        "ms" => v / 1e3,
        "s" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {s:?} (use ms, s, m or h)"
            ));
        }
    };
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(format!("{s:?} is not a positive duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn histogram_merge_keeps_every_sample() {
        // Two workers' histograms merged equal one histogram fed every sample.
        let (mut a, mut b, mut all) = (new_histogram(), new_histogram(), new_histogram());
        for v in 1..=10_000u64 {
            let ns = v * 1_000;
            if v % 3 == 0 { &mut a } else { &mut b }.record(ns).unwrap();
            all.record(ns).unwrap();
        }
        a.add(&b).unwrap();
        assert_eq!(a.len(), 10_000);
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(a.value_at_quantile(q), all.value_at_quantile(q), "q={q}");
        }
        let l = LatencyMs::from_histogram(&a);
        // Uniform 1..10 ms: the median is 5 ms within the histogram's 3 significant digits.
        assert!((l.p50 - 5.0).abs() < 0.01, "p50 {}", l.p50);
        assert!((l.max - 10.0).abs() < 0.01, "max {}", l.max);
    }

    #[test]
    fn rejects_bad_urls() {
        assert!(LoadConfig::new("ftp://x/").is_err());
        assert!(LoadConfig::new("not a url").is_err());
        assert!(LoadConfig::new("http://127.0.0.1:1/").is_ok());
    }

    #[test]
    fn counts_connect_errors_against_a_closed_port() {
        // Bind then drop a listener so the port is (very likely) closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut c = LoadConfig::new(&format!("http://127.0.0.1:{port}/")).unwrap();
        c.connections = 2;
        c.duration = None;
        c.requests = Some(10);
        let r = run(c).unwrap();
        assert_eq!(r.responses, 0);
        assert_eq!(r.errors.connect, 10);
        assert!(r.first_error.unwrap().contains("connect"));
    }
}
