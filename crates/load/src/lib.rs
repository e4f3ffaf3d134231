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

// Layers, each pointing only down: the statistics (histogram, timing, report, threshold) and
// the run's configuration (config, request, tls, shared, pacing) at the bottom; then what an
// exchange is and how it is counted (exchange); the transport (plain or TLS); the protocols side
// by side (http1 is the wire format, http1_client and http2_client the connections); the worker
// threads; and this root, which starts them.
mod config;
mod exchange;
mod histogram;
mod http1;
mod http1_client;
mod http2_client;
mod pacing;
mod report;
mod request;
mod shared;
mod threshold;
mod timing;
pub mod tls;
mod transport;
mod worker;

pub use config::{LoadConfig, RequestParts, parse_duration};
pub use exchange::LATE_AFTER;
pub use histogram::{LatencyMs, histogram_buckets, histogram_from_buckets, new_histogram};
pub use report::{ErrorCounts, LoadReport, OpenLoop, SATURATED_SHARE};
pub use threshold::{Crossed, Threshold};
pub use timing::Phases;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use pacing::Pacer;
use report::WorkerStats;
use shared::Shared;
use worker::worker;

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
    let start = Instant::now();
    let shared = Arc::new(Shared {
        tls,
        h2_requests,
        deadline: config.duration.map(|d| start + d),
        budget: config.requests.map(AtomicU64::new),
        requests,
        config,
    });

    let mut handles = Vec::with_capacity(threads);
    for t in 0..threads {
        // Connections spread evenly: worker t gets every threads-th one.
        let conns: Vec<usize> = (t..shared.config.connections).step_by(threads).collect();
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
    Ok(report::assemble(
        &shared.config,
        stats,
        start.elapsed().as_secs_f64(),
        threads,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
