//! What a load run reports: responses, errors by class, latency percentiles from HDR
//! histograms, the open loop's counts, and the generator's own CPU.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::histogram::LatencyMs;
use crate::phases::Phases;

/// In the open loop, a request sent more than this after its intended time counts as late.
pub const LATE_AFTER: Duration = Duration::from_millis(1);

/// In the closed loop, the generator counts as saturated when its threads were on a CPU for at
/// least this share of the run: the server may then have been faster than what was measured.
pub const SATURATED_SHARE: f64 = 0.9;

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
    /// How many generators' runs this report merges (`wasmlab merge`); 1 for one run.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub generators: usize,
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
    /// Sent first, on the same connections at the same pace, and counted in no figure here
    /// (the generator's `warm_up`); in a merged report, the shortest of its parts'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_up_secs: Option<f64>,
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
    /// The workers spun while waiting instead of sleeping (the generator's `spin`).
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
