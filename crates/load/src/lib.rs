//! The wasmlab load generator: HTTP/1.1 keep-alive load, closed or open loop.
//!
//! C connections are spread over T worker threads, each a single-threaded tokio runtime. Each
//! connection sends the same request, serialised once, and frames each response with its own
//! HTTP/1.1 parser (module `http1`): no general client on the hot path, so the generator's CPU per
//! request is about wrk's (docs/load.md, "The load generator against wrk", has the comparison). In the
//! closed loop every connection sends a request, waits for the whole response, records the latency
//! in its worker's HDR histogram and sends the next. In the open loop (`rate`) requests are due at
//! a constant arrival rate (wrk2's semantics): a free connection takes the next due send time,
//! waits for it and sends; latency is counted from the *intended* send time (corrected for
//! coordinated omission) and, separately, from the actual send. Histograms are merged once at the
//! end, so memory does not grow with the run's length. A request sent before the deadline is
//! waited for and counted, so the reported count equals what the server answered.

// Layers, each pointing only down: the statistics (histogram, timing, report, threshold) and
// the run's configuration (config, request, tls, shared, pacing) at the bottom; then what an
// exchange is and how it is counted (exchange); the transport (plain or TLS); the protocols side
// by side (http1 is the wire format, http1_client and http2_client the connections); the worker
// threads; and this root, which starts them.
mod config;
mod exchange;
mod http1;
mod http1_client;
mod http2_client;
mod merge;
mod pacing;
mod part;
mod report;
mod request;
mod shared;
mod spec;
mod timing;
pub mod tls;
mod transport;
mod worker;

// What a run reports, and its thresholds: types of their own crate, which the lab's data model
// uses without this generator's runtime.
pub use config::{Edge, LoadConfig, RequestParts, Window, parse_duration};
pub use merge::{Interval, LATE_START_MS, MIN_OVERLAP, Merged, PartSummary, merge};
pub use part::{FORMAT, Part, PartFile, VERSION, parse_time, rfc3339};
pub use spec::{LoadSpec, RequestSpec};
pub use wasmlab_load_data::{
    Crossed, ErrorCounts, LATE_AFTER, LatencyMs, LoadReport, OpenLoop, Phases, SATURATED_SHARE,
    Threshold, histogram_buckets, histogram_from_buckets, new_histogram,
};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use pacing::Pacer;
use report::{Shape, WorkerStats};
use shared::Shared;
use worker::worker;

/// A run as its workers left it, before it is summed up as a report or kept as a part.
pub(crate) struct Finished {
    pub(crate) shape: Shape,
    pub(crate) stats: WorkerStats,
    pub(crate) elapsed: f64,
    pub(crate) threads: usize,
    /// The wall-clock time the run started, and the time it was told to start at.
    pub(crate) started: SystemTime,
    pub(crate) start_at: Option<SystemTime>,
}

fn execute(config: LoadConfig) -> anyhow::Result<Finished> {
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
    anyhow::ensure!(
        config.warm_up.is_none() || (config.duration.is_some() && config.requests.is_none()),
        "a warm-up needs a duration and no request count (what it sends is not counted)"
    );
    let threads = config.threads.clamp(1, config.connections);
    let requests = request::for_http1(&config)?;
    anyhow::ensure!(config.streams >= 1, "streams must be at least 1");
    anyhow::ensure!(
        config.http2 || config.streams == 1,
        "several streams per connection (--streams) need HTTP/2 (--h2)"
    );
    let h2_requests = match config.http2 {
        true => request::for_http2(&config)?,
        false => Vec::new(),
    };
    let tls = tls::client(&config)?;
    let start_at = config.start_at;
    if let Some(at) = start_at {
        wait_until(at, config.cancel.as_deref());
    }
    let warm_up = config.warm_up.unwrap_or(Duration::ZERO);
    let window = config.window.clone();
    let started = SystemTime::now() + warm_up;
    let start = Instant::now();
    let measure_from = start + warm_up;
    let shared = Arc::new(Shared {
        tls,
        h2_requests,
        start,
        measure_from,
        deadline: config.duration.map(|d| measure_from + d),
        budget: config.requests.map(AtomicU64::new),
        closing: window.is_some().then(Default::default),
        requests,
        config,
    });
    // The measured part opens when the warm-up ends: told from a thread of its own, so that no
    // worker's pace waits for the caller. Without a warm-up it opens here, before any worker
    // starts, so that no request is answered before it.
    let opens = window.clone().and_then(|w| {
        if warm_up.is_zero() {
            (w.0)(Edge::Opens);
            return None;
        }
        let cancel = shared.config.cancel.clone();
        Some(std::thread::spawn(move || {
            while let Some(left) = measure_from.checked_duration_since(Instant::now()) {
                if left.is_zero() || cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
                    break;
                }
                std::thread::sleep(left.min(Duration::from_millis(50)));
            }
            (w.0)(Edge::Opens);
        }))
    });

    let mut handles = Vec::with_capacity(threads);
    for t in 0..threads {
        // Connections spread evenly: worker t gets every threads-th one.
        let conns: Vec<usize> = (t..shared.config.connections).step_by(threads).collect();
        let pacer = shared
            .config
            .rate
            .map(|rate| Pacer::new(start, rate, threads, t));
        let for_worker = shared.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("load-{t}"))
            .spawn(move || worker(for_worker, conns, pacer));
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                // The workers already running must not wait for a release that never comes.
                if let Some(gate) = &shared.closing {
                    gate.release();
                }
                return Err(e.into());
            }
        }
    }
    let mut ended = None;
    if let (Some(gate), Some(w)) = (&shared.closing, &window) {
        gate.wait_for(handles.len());
        ended = Some(Instant::now());
        if let Some(t) = opens {
            let _ = t.join();
        }
        (w.0)(Edge::Closes);
        gate.release();
    }
    let mut stats = WorkerStats::default();
    for h in handles {
        let ws = h
            .join()
            .map_err(|_| anyhow::anyhow!("load worker panicked"))??;
        stats.add(&ws);
    }
    let ended = ended.unwrap_or_else(Instant::now);
    let elapsed = ended.saturating_duration_since(measure_from).as_secs_f64();
    let shared = Arc::into_inner(shared).expect("every worker has ended");
    Ok(Finished {
        shape: Shape::of(&shared.config),
        stats,
        elapsed,
        threads,
        started,
        start_at,
    })
}

/// Runs the load and returns its report. Blocks the calling thread for the run's duration (and
/// until the configuration's `start_at`).
pub fn run(config: LoadConfig) -> anyhow::Result<LoadReport> {
    let f = execute(config)?;
    Ok(report::assemble(&f.shape, f.stats, f.elapsed, f.threads))
}

/// As [`run`], and keeps what a lossless merge with other generators' runs needs.
pub fn run_part(config: LoadConfig) -> anyhow::Result<Part> {
    Ok(Part::from_run(execute(config)?))
}

/// Sleeps until `at` on the wall clock (at once when it has passed), in short steps so a
/// cancellation is seen.
fn wait_until(at: SystemTime, cancel: Option<&AtomicBool>) {
    const STEP: Duration = Duration::from_millis(50);
    while let Ok(left) = at.duration_since(SystemTime::now()) {
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) || left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(STEP));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let r = run(c.clone()).unwrap();
        assert_eq!(r.responses, 0);
        assert_eq!(r.errors.connect, 10);
        assert!(r.first_error.unwrap().contains("connect"));
        // HTTP/2 alike: each connection that could not be made is one request of the ten (it
        // once retried for ever).
        c.http2 = true;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(run(c).unwrap());
        });
        let r = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("an HTTP/2 run against a closed port did not end");
        assert_eq!((r.responses, r.errors.connect), (0, 10));
    }
}
