//! The wasmlab load generator: HTTP/1.1 keep-alive load, closed or open loop.
//!
//! C connections are spread over T worker threads, each a single-threaded tokio runtime. Each
//! connection sends the same request, serialised once, and frames each response with its own
//! HTTP/1.1 parser (module `http1`): no general client on the hot path, so the generator's CPU per
//! request is about wrk's (docs/method.md has the comparison). In the
//! closed loop every connection sends a request, waits for the whole response, records the latency
//! in its worker's HDR histogram and sends the next. In the open loop (`rate`) requests are due at
//! a constant arrival rate (wrk2's semantics): a free connection takes the next due send time,
//! waits for it and sends; latency is counted from the *intended* send time (corrected for
//! coordinated omission) and, separately, from the actual send. Histograms are merged once at the
//! end, so memory does not grow with the run's length. A request sent before the deadline is
//! waited for and counted, so the reported count equals what the server answered.

mod http1;
mod pacing;
mod timing;

pub use timing::Phases;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Uri};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Highest latency the histograms hold (longer ones are clamped to it).
const MAX_TRACKED_NS: u64 = 120_000_000_000;

/// In the open loop, a request sent more than this after its intended time counts as late.
pub const LATE_AFTER: Duration = Duration::from_millis(1);

/// In the closed loop, the generator counts as saturated when its threads were on a CPU for at
/// least this share of the run: the server may then have been faster than what was measured.
pub const SATURATED_SHARE: f64 = 0.9;

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
    /// Stop after this many requests in all (closed loop only).
    pub requests: Option<u64>,
    /// Open loop: send at this constant arrival rate (requests per second, all threads together)
    /// instead of as fast as responses come back.
    pub rate: Option<f64>,
    /// A request not answered within this counts as a timeout and its connection is replaced.
    pub timeout: Duration,
    /// Set to stop early (Ctrl-C); what finished until then is reported.
    pub cancel: Option<Arc<AtomicBool>>,
    /// While waiting (for responses, and in the open loop for send times too), each worker polls
    /// its sockets and timers without sleeping instead of blocking in `epoll_wait`, so its CPU
    /// never idles. On a machine where waking an idle CPU is expensive (a VM), a server answering
    /// a sleeping generator pays that wake-up on every batch of replies, a cost no remote client
    /// would put on it; spinning takes it away. Only for a generator with CPUs of its own:
    /// spinning threads take their CPUs whole.
    pub spin: bool,
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
            rate: None,
            timeout: Duration::from_secs(10),
            cancel: None,
            spin: false,
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

/// What the open loop intended and what it managed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenLoop {
    /// The configured arrival rate, requests per second.
    pub target_rate: f64,
    /// Sends due before the end of the run.
    pub intended: u64,
    /// Sends made (whatever their outcome).
    pub sent: u64,
    /// Due before the end of the run but never sent, because no connection was free in time
    /// (k6's `dropped_iterations`).
    pub dropped: u64,
    /// Sent more than [`LATE_AFTER`] after their intended time.
    pub late: u64,
    /// `sent` over the sending period.
    pub achieved_rate: f64,
    /// How long after its intended time each request was actually sent.
    pub send_lag_ms: LatencyMs,
    /// Latency from the actual send (what a closed-loop tool reports; hides queueing).
    pub uncorrected_ms: LatencyMs,
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
    /// Latency of complete responses, to the last byte of the body: from the send in the closed
    /// loop; from the *intended* send time in the open loop (corrected for coordinated omission).
    pub latency_ms: LatencyMs,
    /// Where the time of each exchange went.
    #[serde(default)]
    pub phases: Phases,
    /// Set in the open loop.
    #[serde(default)]
    pub open_loop: Option<OpenLoop>,
    /// CPU seconds the generator's worker threads used.
    #[serde(default)]
    pub generator_cpu_secs: f64,
    /// The workers spun while waiting instead of sleeping ([`LoadConfig::spin`]).
    #[serde(default)]
    pub generator_spin: bool,
    /// Spinning only: seconds the workers spent polling sockets in vain (time a sleeping
    /// generator would have spent asleep), summed over the workers.
    #[serde(default)]
    pub generator_idle_spin_secs: f64,
    /// The share of the run the generator's workers were busy: `generator_cpu_secs` over
    /// (elapsed x threads), or when spinning, 1 less `generator_idle_spin_secs` over the same.
    /// 1.0 is a generator that never waited.
    #[serde(default)]
    pub generator_busy: f64,
    /// Closed loop only: the generator was busy at least [`SATURATED_SHARE`] of the run.
    #[serde(default)]
    pub generator_saturated: bool,
    pub body_bytes: u64,
    /// Complete responses by status code.
    pub status_counts: std::collections::BTreeMap<u16, u64>,
    /// The first error message seen, to say what went wrong.
    pub first_error: Option<String>,
    /// The merged latency histogram (as `latency_ms`), nanoseconds.
    #[serde(skip)]
    pub histogram: Option<Histogram<u64>>,
    /// Open loop: the merged histogram of latency from the actual send, nanoseconds.
    #[serde(skip)]
    pub uncorrected_histogram: Option<Histogram<u64>>,
}

struct WorkerStats {
    responses: u64,
    ok: u64,
    errors: ErrorCounts,
    body_bytes: u64,
    /// Indexed by status code (100..=999), so counting costs no lookup.
    by_status: Vec<u64>,
    first_error: Option<String>,
    latency: Histogram<u64>,
    uncorrected: Histogram<u64>,
    send_lag: Histogram<u64>,
    phases: timing::PhaseHistograms,
    sent: u64,
    late: u64,
    intended: u64,
    cpu: Duration,
    /// Spinning: time in polls that completed no exchange.
    idle_spin: Duration,
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
            latency: new_histogram(),
            uncorrected: new_histogram(),
            send_lag: new_histogram(),
            phases: timing::PhaseHistograms::new(),
            sent: 0,
            late: 0,
            intended: 0,
            cpu: Duration::ZERO,
            idle_spin: Duration::ZERO,
        }
    }
}

impl WorkerStats {
    fn add(&mut self, o: &WorkerStats) {
        self.responses += o.responses;
        self.ok += o.ok;
        self.errors.add(&o.errors);
        self.body_bytes += o.body_bytes;
        for (a, b) in self.by_status.iter_mut().zip(&o.by_status) {
            *a += b;
        }
        if self.first_error.is_none() {
            self.first_error.clone_from(&o.first_error);
        }
        for (a, b) in [
            (&mut self.latency, &o.latency),
            (&mut self.uncorrected, &o.uncorrected),
            (&mut self.send_lag, &o.send_lag),
        ] {
            a.add(b).expect("same bounds");
        }
        self.phases.add(&o.phases);
        self.sent += o.sent;
        self.late += o.late;
        self.intended += o.intended;
        self.cpu += o.cpu;
        self.idle_spin += o.idle_spin;
    }

    /// Exchanges finished, whatever their outcome: what a spinning worker watches for progress.
    fn finished(&self) -> u64 {
        self.responses + self.errors.total()
    }
}

struct Shared {
    config: LoadConfig,
    /// The request every exchange sends, serialised once.
    request: Bytes,
    deadline: Option<Instant>,
    /// Requests still allowed to start, when `requests` bounds the run.
    budget: Option<AtomicU64>,
}

impl Shared {
    /// Past the deadline, or cancelled.
    fn stopped(&self) -> bool {
        self.stopped_at(Instant::now())
    }

    /// As [`Shared::stopped`], with the time already read.
    fn stopped_at(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d) || self.cancelled()
    }

    fn cancelled(&self) -> bool {
        self.config
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// Whether a connection may start another request at `now` (closed loop).
    fn may_send(&self, now: Instant) -> bool {
        if self.stopped_at(now) {
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

/// One worker's share of an open-loop schedule: with T workers at total rate R, worker w's k-th
/// send is due at `start + (k*T + w) / R`, so the workers' sends interleave evenly.
struct Pacer {
    start: Instant,
    interval_ns: f64,
    offset_ns: f64,
    next: std::cell::Cell<u64>,
}

impl Pacer {
    fn new(start: Instant, rate: f64, threads: usize, worker: usize) -> Self {
        Self {
            start,
            interval_ns: threads as f64 * 1e9 / rate,
            offset_ns: worker as f64 * 1e9 / rate,
            next: std::cell::Cell::new(0),
        }
    }

    fn due(&self, k: u64) -> Instant {
        self.start + Duration::from_nanos((self.offset_ns + k as f64 * self.interval_ns) as u64)
    }

    /// The time between two of this worker's sends.
    fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns as u64)
    }

    /// Takes the next send time from the schedule.
    fn take(&self) -> Instant {
        let k = self.next.get();
        self.next.set(k + 1);
        self.due(k)
    }

    /// How many sends were due strictly before `end`.
    fn due_before(&self, end: Instant) -> u64 {
        let span = end.saturating_duration_since(self.start).as_nanos() as f64 - self.offset_ns;
        if span <= 0.0 {
            return 0;
        }
        let n = (span / self.interval_ns).ceil() as u64;
        // Float rounding at the boundary: make `due(n - 1) < end <= due(n)` hold exactly.
        match n {
            n if n > 0 && self.due(n - 1) >= end => n - 1,
            n if self.due(n) < end => n + 1,
            n => n,
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
    if let Some(rate) = config.rate {
        anyhow::ensure!(
            rate.is_finite() && rate > 0.0,
            "the rate must be a positive number of requests per second"
        );
        anyhow::ensure!(
            config.duration.is_some() && config.requests.is_none(),
            "an open-loop run (--rate) needs a duration and no request count"
        );
    }
    let threads = config.threads.clamp(1, config.connections);
    let path = config.url.path_and_query().map_or("/", |pq| pq.as_str());
    let request = http1::serialize_request(
        &config.method,
        path,
        &config.authority(),
        &config.headers,
        &config.body,
    )?;
    let start = Instant::now();
    let shared = Arc::new(Shared {
        deadline: config.duration.map(|d| start + d),
        budget: config.requests.map(AtomicU64::new),
        request,
        config,
    });

    let mut handles = Vec::with_capacity(threads);
    for t in 0..threads {
        // Connections spread evenly: worker t gets every threads-th one.
        let conns = (t..shared.config.connections).step_by(threads).count();
        let shared = shared.clone();
        let pacer = shared
            .config
            .rate
            .map(|rate| Pacer::new(start, rate, threads, t));
        handles.push(
            std::thread::Builder::new()
                .name(format!("load-{t}"))
                .spawn(move || worker(shared, conns, pacer))?,
        );
    }
    let mut stats = WorkerStats::default();
    for h in handles {
        let ws = h
            .join()
            .map_err(|_| anyhow::anyhow!("load worker panicked"))??;
        stats.add(&ws);
    }
    let elapsed = start.elapsed().as_secs_f64();
    let c = &shared.config;
    let cpu = stats.cpu.as_secs_f64();
    let idle_spin = stats.idle_spin.as_secs_f64();
    let span = elapsed * threads as f64;
    // A spinning worker is on its CPU all the time, so its CPU time says nothing: it was busy
    // whenever it was not polling in vain (time it lost to other threads counts as busy: it
    // wanted to run).
    let busy = match (span > 0.0, c.spin) {
        (false, _) => 0.0,
        (true, true) => (1.0 - idle_spin / span).clamp(0.0, 1.0),
        (true, false) => cpu / span,
    };
    let open_loop = c.rate.map(|rate| {
        let sending = c.duration.map_or(elapsed, |d| d.as_secs_f64().min(elapsed));
        OpenLoop {
            target_rate: rate,
            intended: stats.intended,
            sent: stats.sent,
            dropped: stats.intended.saturating_sub(stats.sent),
            late: stats.late,
            achieved_rate: if sending > 0.0 {
                stats.sent as f64 / sending
            } else {
                0.0
            },
            send_lag_ms: LatencyMs::from_histogram(&stats.send_lag),
            uncorrected_ms: LatencyMs::from_histogram(&stats.uncorrected),
        }
    });
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
        latency_ms: LatencyMs::from_histogram(&stats.latency),
        phases: stats.phases.summary(),
        generator_cpu_secs: cpu,
        generator_spin: c.spin,
        generator_idle_spin_secs: idle_spin,
        generator_busy: busy,
        generator_saturated: open_loop.is_none() && busy >= SATURATED_SHARE,
        open_loop,
        body_bytes: stats.body_bytes,
        status_counts: stats
            .by_status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (code as u16, *n))
            .collect(),
        first_error: stats.first_error,
        uncorrected_histogram: c.rate.map(|_| stats.uncorrected),
        histogram: Some(stats.latency),
    })
}

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKED_NS, 3).expect("valid histogram bounds")
}

/// Records a duration in nanoseconds, clamped to the histogram's bounds.
pub(crate) fn record(h: &mut Histogram<u64>, d: Duration) {
    let ns = (d.as_nanos() as u64).clamp(1, MAX_TRACKED_NS);
    h.record(ns).expect("clamped to bounds");
}

/// A histogram as a flat list `[v0, n0, d1, n1, d2, n2, ...]` over its non-empty buckets: the
/// first bucket's value and count, then each next bucket's distance from the previous value and
/// its count. Lossless at the histogram's precision, and compact plain JSON for results files.
pub fn histogram_buckets(h: &Histogram<u64>) -> Vec<u64> {
    let mut out = Vec::new();
    let mut prev = 0;
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        out.push(value - prev);
        out.push(v.count_at_value());
        prev = value;
    }
    out
}

/// The inverse of [`histogram_buckets`]. A trailing odd element is ignored.
pub fn histogram_from_buckets(buckets: &[u64]) -> Histogram<u64> {
    let mut h = new_histogram();
    let mut value = 0u64;
    for pair in buckets.chunks_exact(2) {
        value = value.saturating_add(pair[0]);
        h.record_n(value.clamp(1, MAX_TRACKED_NS), pair[1])
            .expect("clamped to bounds");
    }
    h
}

fn worker(shared: Arc<Shared>, conns: usize, pacer: Option<Pacer>) -> anyhow::Result<WorkerStats> {
    let cpu_before = timing::thread_cpu();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    let stats = Rc::new(RefCell::new(WorkerStats::default()));
    let pacer = pacer.map(Rc::new);
    local.block_on(&rt, async {
        let schedule = match &pacer {
            Some(p) => {
                let alarm = pacing::Alarm::new(p.interval())?;
                tokio::task::spawn_local({
                    let alarm = alarm.clone();
                    async move { alarm.drive().await }
                });
                Some((p.clone(), alarm))
            }
            None => None,
        };
        if shared.config.spin {
            // Not awaited: it ends with the worker, when every connection is done.
            tokio::task::spawn_local(spin(stats.clone()));
        }
        let mut tasks = Vec::with_capacity(conns);
        for _ in 0..conns {
            tasks.push(tokio::task::spawn_local(connection(
                shared.clone(),
                stats.clone(),
                schedule.clone(),
            )));
        }
        for t in tasks {
            let _ = t.await;
        }
        anyhow::Ok(())
    })?;
    // Drops what still runs (the spinner), and with it its hold on the stats.
    drop(local);
    let mut stats = Rc::try_unwrap(stats)
        .unwrap_or_else(|_| unreachable!("every task has finished"))
        .into_inner();
    if let (Some(p), Some(deadline)) = (&pacer, shared.deadline) {
        // Sending ended at the deadline, or earlier when cancelled.
        stats.intended = p.due_before(deadline.min(Instant::now()));
    }
    stats.cpu = timing::thread_cpu().saturating_sub(cpu_before);
    Ok(stats)
}

/// Keeps a worker polling: each turn yields to the runtime, which then polls the sockets without
/// blocking (tokio runs a yielded task again only after its I/O driver has been polled) and runs
/// the connections that are ready. A turn in which no exchange finished counts as idle spinning.
async fn spin(stats: Rc<RefCell<WorkerStats>>) {
    let mut last = Instant::now();
    let mut seen = stats.borrow().finished();
    loop {
        tokio::task::yield_now().await;
        let now = Instant::now();
        let mut st = stats.borrow_mut();
        let finished = st.finished();
        if finished == seen {
            st.idle_spin += now - last;
        }
        seen = finished;
        last = now;
    }
}

enum Failure {
    Connect(String),
    ReadWrite(String),
    Timeout,
}

/// One keep-alive connection: the socket, the buffer its reads land in, and the response parser.
struct Connection {
    stream: TcpStream,
    buf: Box<[u8]>,
    parser: http1::ResponseParser,
}

/// Bytes one read takes at most; a hello response is ~100 bytes, larger bodies take several.
const READ_BUFFER_BYTES: usize = 16 * 1024;

async fn connect(shared: &Shared) -> Result<Connection, Failure> {
    let addr = shared.config.authority();
    let stream = tokio::time::timeout(shared.config.timeout, TcpStream::connect(&addr))
        .await
        .map_err(|_| Failure::Connect(format!("connect to {addr} timed out")))?
        .map_err(|e| Failure::Connect(format!("connect to {addr}: {e}")))?;
    let _ = stream.set_nodelay(true);
    Ok(Connection {
        stream,
        buf: vec![0; READ_BUFFER_BYTES].into_boxed_slice(),
        parser: http1::ResponseParser::new(shared.config.method == Method::HEAD),
    })
}

/// A completed exchange: the response, and when the request started, its last byte was written,
/// the response's first byte was read, and its last.
struct Exchange {
    response: http1::Response,
    begin: Instant,
    written: Instant,
    first_byte: Instant,
    end: Instant,
}

impl Connection {
    /// Sends the request and reads the whole response. One write of the ready bytes, then reads
    /// until the parser has framed the reply; a read that does not fill the buffer has drained
    /// the socket, so tokio waits for the next response without another read syscall.
    async fn exchange(&mut self, request: &[u8], begin: Instant) -> Result<Exchange, Failure> {
        let io = |e: std::io::Error| Failure::ReadWrite(e.to_string());
        self.parser.reset();
        self.stream.write_all(request).await.map_err(io)?;
        let written = Instant::now();
        let mut first_byte = None;
        loop {
            let n = self.stream.read(&mut self.buf).await.map_err(io)?;
            let now = Instant::now();
            let first_byte = *first_byte.get_or_insert(now);
            let done = if n == 0 {
                Some(self.parser.eof().map_err(Failure::ReadWrite)?)
            } else {
                match self
                    .parser
                    .feed(&self.buf[..n])
                    .map_err(Failure::ReadWrite)?
                {
                    http1::Progress::Complete(r) => Some(r),
                    http1::Progress::More => None,
                }
            };
            if let Some(response) = done {
                return Ok(Exchange {
                    response,
                    begin,
                    written,
                    first_byte,
                    end: now,
                });
            }
        }
    }
}

async fn connection(
    shared: Arc<Shared>,
    stats: Rc<RefCell<WorkerStats>>,
    schedule: Option<(Rc<Pacer>, Rc<pacing::Alarm>)>,
) {
    let mut conn: Option<Connection> = None;
    let request = shared.request.clone();
    let timeout = shared.config.timeout;
    // One timer per connection for the whole run, re-armed only when it fires: most exchanges
    // end long before it, and re-arming it for each one would cost more than the exchange's own
    // bookkeeping. When it fires before the current exchange's own deadline (it was armed for an
    // earlier one), it is moved to that deadline.
    let timer = tokio::time::sleep(timeout);
    tokio::pin!(timer);
    // The end of the previous exchange: the time the next one starts in the closed loop, so the
    // clock is read once per phase boundary.
    let mut now = Instant::now();
    loop {
        let intended = match &schedule {
            Some((p, alarm)) => {
                // A send is taken by a connection free before the deadline and then made, even
                // if the wait for it ends a hair past the deadline: only sends no connection
                // took in time count as dropped.
                let due = p.take();
                if shared.deadline.is_some_and(|d| due >= d) || shared.stopped() {
                    break;
                }
                alarm.wait_until(due).await;
                if shared.cancelled() {
                    break;
                }
                now = Instant::now();
                Some(due)
            }
            None if shared.may_send(now) => None,
            None => break,
        };
        let started = now;
        if let Some(due) = intended {
            let mut st = stats.borrow_mut();
            let lag = started.saturating_duration_since(due);
            record(&mut st.send_lag, lag);
            st.sent += 1;
            st.late += u64::from(lag > LATE_AFTER);
        }
        let outcome = async {
            let (c, begin) = match conn.as_mut() {
                Some(c) => (c, started),
                None => {
                    let c = connect(&shared).await?;
                    let connected = Instant::now();
                    record(&mut stats.borrow_mut().phases.connect, connected - started);
                    (conn.insert(c), connected)
                }
            };
            let deadline = started + timeout;
            let exchange = c.exchange(&request, begin);
            tokio::pin!(exchange);
            loop {
                tokio::select! {
                    biased;
                    done = &mut exchange => break done,
                    () = &mut timer => {
                        if Instant::now() >= deadline {
                            break Err(Failure::Timeout);
                        }
                        timer.as_mut().reset(deadline.into());
                    }
                }
            }
        }
        .await;
        let failed = {
            let mut st = stats.borrow_mut();
            match outcome {
                Ok(x) => {
                    now = x.end;
                    let status = x.response.status;
                    record(&mut st.latency, x.end - intended.unwrap_or(started));
                    if intended.is_some() {
                        record(&mut st.uncorrected, x.end - started);
                    }
                    st.phases.record_exchange([
                        x.written - x.begin,
                        x.first_byte - x.written,
                        x.end - x.first_byte,
                    ]);
                    st.responses += 1;
                    st.body_bytes += x.response.body_bytes;
                    st.by_status[usize::from(status).min(999)] += 1;
                    if (200..300).contains(&status) {
                        st.ok += 1;
                    } else {
                        st.errors.non_2xx += 1;
                        st.first_error
                            .get_or_insert_with(|| format!("status {status}"));
                    }
                    if !x.response.keep_alive {
                        conn = None;
                    }
                    false
                }
                Err(f) => {
                    // The connection is in an unknown state: replace it.
                    conn = None;
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
                            format!("no response within {timeout:?}")
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
            now = Instant::now();
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
    fn pacer_schedule_and_due_count() {
        let t0 = Instant::now();
        // 1,000 req/s over 2 workers: worker 1's sends are due at 1 ms, 3 ms, 5 ms, ...
        let p = Pacer::new(t0, 1000.0, 2, 1);
        assert_eq!(p.take(), t0 + Duration::from_millis(1));
        assert_eq!(p.take(), t0 + Duration::from_millis(3));
        assert_eq!(p.due_before(t0), 0);
        assert_eq!(p.due_before(t0 + Duration::from_millis(1)), 0);
        assert_eq!(p.due_before(t0 + Duration::from_micros(1001)), 1);
        assert_eq!(p.due_before(t0 + Duration::from_secs(1)), 500);
        let p0 = Pacer::new(t0, 1000.0, 2, 0);
        assert_eq!(p0.due_before(t0 + Duration::from_secs(1)), 500);
        // An awkward rate: 3 req/s for 1 s is due at 0, 1/3 and 2/3 s.
        let p = Pacer::new(t0, 3.0, 1, 0);
        assert_eq!(p.due_before(t0 + Duration::from_secs(1)), 3);
    }

    #[test]
    fn histogram_buckets_round_trip() {
        let mut h = new_histogram();
        for v in [1u64, 7, 7, 1_000, 123_456, 9_999_999, 5_000_000_000] {
            h.record(v).unwrap();
        }
        let back = histogram_from_buckets(&histogram_buckets(&h));
        assert_eq!(back.len(), h.len());
        for q in [0.0, 0.3, 0.5, 0.9, 0.99, 1.0] {
            assert!(back.equivalent(back.value_at_quantile(q), h.value_at_quantile(q)));
        }
        assert_eq!(back.max(), h.max());
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
