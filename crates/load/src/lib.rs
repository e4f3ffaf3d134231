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

mod config;
mod connection;
mod http1;
mod http2;
mod pacing;
mod report;
mod threshold;
mod timing;
pub mod tls;
mod worker;

pub use config::{LoadConfig, RequestParts, parse_duration};
pub use report::{
    ErrorCounts, LatencyMs, LoadReport, OpenLoop, histogram_buckets, histogram_from_buckets,
    new_histogram,
};
pub use threshold::{Crossed, Threshold};
pub use timing::Phases;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use pacing::Pacer;
use worker::{SerializedRequest, Shared, WorkerStats, worker};

/// Highest latency the histograms hold (longer ones are clamped to it).
const MAX_TRACKED_NS: u64 = 120_000_000_000;

/// In the open loop, a request sent more than this after its intended time counts as late.
pub const LATE_AFTER: Duration = Duration::from_millis(1);

/// In the closed loop, the generator counts as saturated when its threads were on a CPU for at
/// least this share of the run: the server may then have been faster than what was measured.
pub const SATURATED_SHARE: f64 = 0.9;

/// The run's requests as HTTP/2 exchanges build them: the first, then any rotated through.
fn h2_requests(config: &LoadConfig) -> anyhow::Result<Vec<http2::H2Request>> {
    let base = format!(
        "{}://{}",
        config.url.scheme_str().unwrap_or("http"),
        config.authority()
    );
    let path = config.url.path_and_query().map_or("/", |pq| pq.as_str());
    let first = RequestParts {
        method: config.method.clone(),
        target: path.to_owned(),
        headers: config.headers.clone(),
        body: config.body.clone(),
        expect_status: config.expect_status,
    };
    std::iter::once(&first)
        .chain(&config.rotation)
        .map(|r| {
            let mut headers = hyper::HeaderMap::new();
            for (k, v) in &r.headers {
                // HTTP/2 names the host in `:authority`, from the URL.
                if k != hyper::header::HOST {
                    headers.append(k.clone(), v.clone());
                }
            }
            Ok(http2::H2Request {
                method: r.method.clone(),
                uri: format!("{base}{}", r.target).parse()?,
                headers,
                body: r.body.clone(),
                expect_status: r.expect_status.or(config.expect_status),
            })
        })
        .collect()
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
    let authority = config.authority();
    let mut requests = vec![SerializedRequest {
        bytes: http1::serialize_request(
            &config.method,
            path,
            &authority,
            &config.headers,
            &config.body,
        )?,
        head: config.method == hyper::Method::HEAD,
        expect_status: config.expect_status,
    }];
    for r in &config.rotation {
        anyhow::ensure!(
            r.target.starts_with('/'),
            "a rotated request's target {:?} does not start with '/'",
            r.target
        );
        requests.push(SerializedRequest {
            bytes: http1::serialize_request(&r.method, &r.target, &authority, &r.headers, &r.body)?,
            head: r.method == hyper::Method::HEAD,
            expect_status: r.expect_status.or(config.expect_status),
        });
    }
    anyhow::ensure!(config.streams >= 1, "streams must be at least 1");
    anyhow::ensure!(
        config.http2 || config.streams == 1,
        "several streams per connection (--streams) need HTTP/2 (--h2)"
    );
    let h2_requests = match config.http2 {
        true => h2_requests(&config)?,
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
