//! Latencies as HDR histograms: how a duration is recorded, how a histogram is read as
//! percentiles, and how one is written to results files and read back losslessly.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency the histograms hold (longer ones are clamped to it).
pub const MAX_TRACKED_NS: u64 = 120_000_000_000;

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

/// An empty histogram with the generator's bounds (1 ns to [`MAX_TRACKED_NS`], 3 digits).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKED_NS, 3).expect("valid histogram bounds")
}

/// Records a duration in nanoseconds, clamped to the histogram's bounds.
pub fn record(h: &mut Histogram<u64>, d: Duration) {
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
