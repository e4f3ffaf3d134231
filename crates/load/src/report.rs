//! What a load run reports: responses, errors by class, latency percentiles from HDR
//! histograms (merged from the workers' once, at the end), the open loop's counts, and the
//! generator's own CPU.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::timing::Phases;
use crate::worker::WorkerStats;
use crate::{LoadConfig, MAX_TRACKED_NS, SATURATED_SHARE};

fn one() -> usize {
    1
}
fn is_one(n: &usize) -> bool {
    *n == 1
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

    /// Adds another count of each class to this one.
    pub fn add(&mut self, o: &ErrorCounts) {
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
    /// Sent more than [`crate::LATE_AFTER`] after their intended time.
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
    /// HTTP/2, with `streams` concurrent streams per connection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub http2: bool,
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub streams: usize,
    /// Complete responses received, whatever their status.
    pub responses: u64,
    /// Responses with the expected status (any 2xx unless the configuration names one).
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

/// The report of a run of `c` from its workers' merged stats, `elapsed` seconds over `threads`
/// threads.
pub(crate) fn assemble(
    c: &LoadConfig,
    stats: WorkerStats,
    elapsed: f64,
    threads: usize,
) -> LoadReport {
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
    LoadReport {
        url: c.url.to_string(),
        method: c.method.to_string(),
        connections: c.connections,
        threads,
        http2: c.http2,
        streams: c.streams,
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
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
