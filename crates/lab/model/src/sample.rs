//! The lines of `samples.jsonl`: a server suite's measured cells and launches ([`Sample`]), a
//! program suite's program runs ([`ProgramSample`]). The writer (`wasmlab run`) and the readers
//! (`wasmlab report`, `wasmlab compare`) share these types, so the raw data alone rebuilds every
//! table and plot.

use serde::{Deserialize, Serialize};
use wasmlab_load_data::LoadReport;

/// Version of the samples.jsonl line format and of run.json.
pub const SAMPLES_SCHEMA: u32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// One launch: exec to the first complete 200.
    ColdStart,
    /// Closed loop: C connections for D seconds.
    Throughput,
    /// One connection, sequential requests.
    Warm,
    /// Constant arrival rate at a fraction of the variant's closed-loop maximum.
    OpenLoop,
    /// Constant arrival rate the same for every variant (`rate`): what each costs at equal load.
    EqualLoad,
}

/// A load cell as the terminal names it: `c=50`, `warm`, `open loop 90%`, `at 2400 req/s`.
pub fn cell_label(
    kind: Kind,
    connections: usize,
    load_fraction: Option<f64>,
    rate: Option<f64>,
) -> String {
    match (kind, load_fraction, rate) {
        (Kind::OpenLoop, Some(f), _) => format!("open loop {:.0}%", f * 100.0),
        (Kind::EqualLoad, _, Some(r)) => format!("at {} req/s", rate_label(r)),
        (Kind::Warm, _, _) => "warm".into(),
        _ => format!("c={connections}"),
    }
}

/// An offered rate as a label: `2400`, `75`, `0.5`.
pub fn rate_label(rate: f64) -> String {
    if rate < 10.0 {
        format!("{rate}")
    } else {
        format!("{rate:.0}")
    }
}

/// The share of its CPUs a server must keep busy in a closed-loop cell for the CPU it spent per
/// response to count as its capacity. A server's CPU per request falls as it gets busier (its
/// wake-ups are shared by more requests), so a ratio between a saturated server and one that
/// idled would measure the idling; docs/method.md has the measurement behind 0.9.
pub const SATURATED_UTILIZATION: f64 = 0.9;

/// The share of the cell the lab's upstream must have been on a CPU for a server that was not
/// saturated to count as waiting on it.
pub const UPSTREAM_BUSY: f64 = 0.02;

/// An open-loop run fell short of its rate when more than this share of its sends were dropped
/// ([`Sample::over_capacity`]).
pub const DROPPED_OVER_CAPACITY: f64 = 0.01;
/// ... or when it answered fewer requests a second than this share of the rate.
pub const KEPT_UP: f64 = 0.95;

/// What set the pace of a closed-loop cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pace {
    /// The server: it kept its CPUs (or its busiest thread) at least [`SATURATED_UTILIZATION`]
    /// busy, so its CPU per response is its capacity.
    Server,
    /// The load generator, busy at least `wasmlab_load_data::SATURATED_SHARE` of the run: the server
    /// idled while it waited for requests.
    Generator,
    /// The lab's upstream (the `proxy` workload, a component's `state`), which shares the
    /// servers' CPUs: the server idled while it waited for its answers.
    Upstream,
    /// Neither: the requests' own latency did (too few connections for it, a server that sleeps
    /// or waits on a child process).
    Latency,
}

impl Pace {
    /// `generator-limited`, as tables say why a cell has no capacity.
    pub fn as_str(self) -> &'static str {
        match self {
            Pace::Server => "saturated",
            Pace::Generator => "generator-limited",
            Pace::Upstream => "upstream-limited",
            Pace::Latency => "latency-bound",
        }
    }
}

impl std::fmt::Display for Pace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Start-up timings of one launch, each from the spawn of the process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StartTimes {
    /// The server printed `listening on ...` (its socket is bound).
    pub listening_ms: f64,
    /// The first TCP connect to it succeeded.
    #[serde(default)]
    pub connected_ms: f64,
    /// The first byte of the first 200 response arrived.
    #[serde(default)]
    pub first_byte_ms: f64,
    /// The first complete 200 on `GET /` (the cold-start figure).
    pub first_200_ms: f64,
    /// RSS of the variant's process trees right after that 200, KiB: what a fresh start holds
    /// before any load (0 in results older than this figure).
    #[serde(default)]
    pub rss_kib: u64,
}

/// The variant's whole process tree while a cell was measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// Highest sum of RSS over the tree, KiB.
    pub rss_peak_kib: u64,
    /// Mean of the sampled sums, KiB.
    pub rss_mean_kib: f64,
    /// User + system CPU seconds of the tree over the cell, children that exited included.
    pub cpu_secs: f64,
    /// Most processes seen in the tree at once.
    pub processes_peak: usize,
    /// RSS samples taken.
    pub samples: u32,
    /// Seconds between the two CPU readings (0 in results older than this figure: the load's
    /// elapsed time stands in for it).
    #[serde(default)]
    pub wall_secs: f64,
    /// The CPUs the variant may use (0 in older results: the run's CPU plan says).
    #[serde(default)]
    pub cpus: usize,
    /// `cpu_secs` over (`wall_secs` × `cpus`): the share of its CPUs the variant kept busy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization: Option<f64>,
    /// The share of the cell its busiest thread was on a CPU (a single-threaded server's
    /// utilization, whatever the CPUs it may use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busiest_thread: Option<f64>,
    /// CPU seconds of the lab's upstream server over the same cell (it shares the servers'
    /// CPUs): what `proxy` and a component's `state` made it do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_cpu_secs: Option<f64>,
}

/// One line of samples.jsonl: one measured cell of one repetition (or one launch).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sample {
    pub schema: u32,
    pub kind: Kind,
    pub variant: String,
    /// The repetition (0-based); for cold starts, the launch's index.
    pub repetition: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<usize>,
    /// Open loop: the offered rate as a fraction of the variant's closed-loop maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_fraction: Option<f64>,
    /// Equal load: the offered rate, req/s, the same for every variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<StartTimes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadReport>,
    /// The latency histogram of `load`, nanoseconds, as `wasmlab_load_data::histogram_buckets`
    /// encodes it: `[first value, its count, distance to the next value, its count, ...]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histogram: Vec<u64>,
    /// Open loop: the histogram of latency from the actual send (same encoding).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncorrected_histogram: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
}

impl Sample {
    pub fn new(kind: Kind, variant: &str, repetition: u32) -> Self {
        Self {
            schema: SAMPLES_SCHEMA,
            kind,
            variant: variant.to_owned(),
            repetition,
            workload: None,
            connections: None,
            load_fraction: None,
            rate: None,
            start: None,
            load: None,
            histogram: Vec::new(),
            uncorrected_histogram: Vec::new(),
            resources: None,
        }
    }

    /// Responses per CPU-second of the variant's processes, where the cell measured both. A
    /// capacity only where the server set the pace ([`Sample::saturated_capacity`]).
    pub fn capacity(&self) -> Option<f64> {
        let (l, r) = (self.load.as_ref()?, self.resources.as_ref()?);
        (r.cpu_secs > 0.0).then(|| l.responses as f64 / r.cpu_secs)
    }

    /// [`Sample::capacity`] where the server was saturated: what its CPUs sustain.
    pub fn saturated_capacity(&self, server_cpus: usize) -> Option<f64> {
        (self.pace(server_cpus)? == Pace::Server)
            .then(|| self.capacity())
            .flatten()
    }

    /// Whether an open-loop run fell short of its offered rate: more than
    /// [`DROPPED_OVER_CAPACITY`] of its sends dropped (no connection free in time), or fewer
    /// answers a second than [`KEPT_UP`] of the rate (from the first send to the last answer,
    /// less one median response time). Its figures are then not at that load.
    pub fn over_capacity(&self) -> bool {
        let Some(l) = &self.load else {
            return false;
        };
        let Some(o) = &l.open_loop else {
            return false;
        };
        // A server that keeps up answers its last request one response time after sending
        // stopped: that tail is not held against it (at 0.3 s and 20 ms a response, it alone
        // read 94% of the rate), while a queue that grew over the run still shows.
        let tail = o.uncorrected_ms.p50 / 1e3;
        let answering = (l.elapsed_secs - tail).max(l.elapsed_secs / 2.0);
        let answered_rate = match answering > 0.0 {
            true => l.responses as f64 / answering,
            false => l.rps,
        };
        o.dropped as f64 > DROPPED_OVER_CAPACITY * o.intended.max(1) as f64
            || answered_rate < KEPT_UP * o.target_rate
    }

    /// The variant's CPU per response, µs.
    pub fn cpu_us_per_response(&self) -> Option<f64> {
        let (l, r) = (self.load.as_ref()?, self.resources.as_ref()?);
        (l.responses > 0).then(|| r.cpu_secs * 1e6 / l.responses as f64)
    }

    /// The CPUs the variant could use: as the cell recorded, else `run` (the run's CPU plan's,
    /// for results older than that figure).
    pub fn cpus_or(&self, run: usize) -> usize {
        self.resources
            .as_ref()
            .map(|r| r.cpus)
            .filter(|c| *c > 0)
            .unwrap_or(run)
    }

    /// The share of its CPUs the variant kept busy: as recorded, or for results older than
    /// that figure its CPU over (the load's elapsed time × `server_cpus`, the run's CPU plan's).
    pub fn utilization(&self, server_cpus: usize) -> Option<f64> {
        let r = self.resources.as_ref()?;
        if let Some(u) = r.utilization {
            return Some(u);
        }
        let elapsed = self.load.as_ref()?.elapsed_secs;
        (elapsed > 0.0 && server_cpus > 0).then(|| r.cpu_secs / (elapsed * server_cpus as f64))
    }

    /// What set the pace of a closed-loop cell (see [`Pace`]); None where the variant's
    /// processes were not observed (a remote target).
    pub fn pace(&self, server_cpus: usize) -> Option<Pace> {
        let load = self.load.as_ref()?;
        let r = self.resources.as_ref()?;
        let busy = self.utilization(server_cpus)?;
        if busy >= SATURATED_UTILIZATION
            || r.busiest_thread.is_some_and(|t| t >= SATURATED_UTILIZATION)
        {
            return Some(Pace::Server);
        }
        if load.generator_saturated {
            return Some(Pace::Generator);
        }
        let wall = if r.wall_secs > 0.0 {
            r.wall_secs
        } else {
            load.elapsed_secs
        };
        if wall > 0.0 && r.upstream_cpu_secs.unwrap_or(0.0) / wall >= UPSTREAM_BUSY {
            return Some(Pace::Upstream);
        }
        Some(Pace::Latency)
    }

    /// Attaches a load report, its histograms kept as buckets. The report's own (whole HDR count
    /// arrays, about 300 KB each, never written) are dropped: kept with every sample, they made
    /// the lab grow by 1 MB a second of a run (16 MB to 130 MB in 140 s of a quick run).
    pub fn with_load(mut self, mut r: LoadReport) -> Self {
        if let Some(h) = r.histogram.take() {
            self.histogram = wasmlab_load_data::histogram_buckets(&h);
        }
        if let Some(h) = r.uncorrected_histogram.take() {
            self.uncorrected_histogram = wasmlab_load_data::histogram_buckets(&h);
        }
        self.connections = Some(r.connections);
        self.load = Some(r);
        self
    }
}

/// One timed run of one program in one engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProgramSample {
    /// The line format's version (absent in lines written before it was recorded: those are
    /// this version's too).
    #[serde(default = "schema_now")]
    pub schema: u32,
    pub engine: String,
    pub program: String,
    pub repetition: u32,
    /// Exec to exit, as the 2023 study timed; NaN (null in the file) when it did not run.
    #[serde(deserialize_with = "number_or_nan")]
    pub wall_ms: f64,
    /// From the engine's runner (docs/engines.md); none for a native program.
    #[serde(default)]
    pub phases: Option<Phases>,
    /// The time the program itself measured around its test body, per iteration (libsodium's
    /// benchmark mode prints it), in microseconds: the code's speed without start-up.
    #[serde(default)]
    pub body_us: Option<f64>,
    /// Empty when the run succeeded; else what went wrong (its time does not count).
    #[serde(default)]
    pub error: String,
}

fn schema_now() -> u32 {
    SAMPLES_SCHEMA
}

/// A number, or NaN for the `null` serde_json writes for one.
fn number_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// A runner's phase times (docs/engines.md), in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    pub compile_ms: f64,
    pub instantiate_ms: f64,
    pub execute_ms: f64,
}

/// A line of samples.jsonl, whichever kind: what the one reader checks.
pub trait SampleLine: serde::de::DeserializeOwned {
    /// The line's format version.
    fn schema(&self) -> u32;
}

impl SampleLine for Sample {
    fn schema(&self) -> u32 {
        self.schema
    }
}

impl SampleLine for ProgramSample {
    fn schema(&self) -> u32 {
        self.schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmlab_load_data::{LatencyMs, OpenLoop};

    /// A closed-loop cell of `responses` in a second, its generator `generator` busy, the server
    /// `cpu_secs` on `cpus` CPUs and the upstream `upstream` seconds.
    fn cell(cpu_secs: f64, generator: f64, upstream: f64, utilization_recorded: bool) -> Sample {
        let load: LoadReport = serde_json::from_value(serde_json::json!({
            "url": "http://127.0.0.1/", "method": "GET", "connections": 50, "threads": 1,
            "responses": 100000, "ok": 100000,
            "errors": {"connect": 0, "read_write": 0, "timeout": 0, "non_2xx": 0},
            "elapsed_secs": 1.0, "rps": 100000.0,
            "latency_ms": {"mean": 0.1, "p50": 0.1, "p90": 0.1, "p99": 0.1, "p99_9": 0.1, "max": 0.1},
            "generator_busy": generator, "generator_saturated": generator >= 0.9,
            "body_bytes": 0, "status_counts": {}, "first_error": null
        }))
        .unwrap();
        let mut s = Sample::new(Kind::Throughput, "v", 0).with_load(load);
        s.resources = Some(Resources {
            cpu_secs,
            wall_secs: if utilization_recorded { 1.0 } else { 0.0 },
            cpus: if utilization_recorded { 1 } else { 0 },
            utilization: utilization_recorded.then_some(cpu_secs),
            upstream_cpu_secs: Some(upstream),
            ..Resources::default()
        });
        s
    }

    #[test]
    fn a_sample_keeps_a_reports_histograms_as_buckets_only() {
        let mut h = wasmlab_load_data::new_histogram();
        h.record_n(120_000, 7).unwrap();
        let mut load = cell(0.5, 0.5, 0.0, true).load.unwrap();
        load.histogram = Some(h.clone());
        load.uncorrected_histogram = Some(h);
        let s = Sample::new(Kind::OpenLoop, "v", 0).with_load(load);
        let kept = s.load.as_ref().unwrap();
        assert!(kept.histogram.is_none() && kept.uncorrected_histogram.is_none());
        for buckets in [&s.histogram, &s.uncorrected_histogram] {
            let back = wasmlab_load_data::histogram_from_buckets(buckets);
            assert_eq!(back.len(), 7);
            assert!(back.equivalent(back.value_at_quantile(0.5), 120_000));
        }
    }

    #[test]
    fn what_set_a_cells_pace() {
        // Busy: the server; a capacity (responses per CPU-second) then.
        let busy = cell(0.95, 0.95, 0.0, true);
        assert_eq!(busy.pace(1), Some(Pace::Server));
        assert!((busy.saturated_capacity(1).unwrap() - 100_000.0 / 0.95).abs() < 1e-6);
        assert!((busy.cpu_us_per_response().unwrap() - 9.5).abs() < 1e-9);
        // Idle while the generator was busy, or the upstream, or neither: no capacity.
        for (s, pace) in [
            (cell(0.6, 0.95, 0.0, true), Pace::Generator),
            (cell(0.6, 0.5, 0.3, true), Pace::Upstream),
            (cell(0.6, 0.5, 0.0, true), Pace::Latency),
        ] {
            assert_eq!(s.pace(1), Some(pace));
            assert!(s.capacity().is_some() && s.saturated_capacity(1).is_none());
        }
        // A single-threaded server on two CPUs: its one busy thread is its limit.
        let mut one_thread = cell(0.95, 0.5, 0.0, false);
        one_thread.resources.as_mut().unwrap().busiest_thread = Some(0.93);
        assert_eq!(one_thread.utilization(2), Some(0.475));
        assert_eq!(one_thread.pace(2), Some(Pace::Server));
        // Results older than the utilization: from the load's elapsed time and the run's CPUs;
        // older than the CPU plan, not known.
        let old = cell(0.8, 0.5, 0.0, false);
        assert_eq!(old.utilization(1), Some(0.8));
        assert_eq!(old.utilization(0), None);
        assert_eq!(old.pace(0), None);
        // A remote target's cell: nothing read.
        let mut remote = busy.clone();
        remote.resources = None;
        assert_eq!(remote.pace(1), None);
    }

    #[test]
    fn an_open_loop_run_that_fell_behind_is_over_capacity() {
        let mut s = cell(0.5, 0.5, 0.0, true);
        assert!(!s.over_capacity(), "a closed loop is never over capacity");
        // (rate, sends due, responses, seconds from first send to last answer, median response
        // ms, dropped sends, over capacity?)
        for (rate, intended, responses, elapsed, p50, dropped, over) in [
            (100_000.0, 100_000, 100_000, 1.0, 0.1, 0, false),
            (100_000.0, 100_000, 96_000, 1.0, 0.1, 900, false),
            (100_000.0, 100_000, 94_000, 1.0, 0.1, 0, true),
            (100_000.0, 100_000, 98_900, 1.0, 0.1, 1_100, true),
            // A slow server that keeps up: its last answer comes one response time late.
            (100.0, 30, 30, 0.317, 22.0, 0, false),
            // One whose queue grew: the last answers came far later than a response takes.
            (100.0, 30, 30, 0.45, 40.0, 0, true),
        ] {
            let l = s.load.as_mut().unwrap();
            l.responses = responses;
            l.elapsed_secs = elapsed;
            l.rps = responses as f64 / elapsed;
            l.open_loop = Some(OpenLoop {
                target_rate: rate,
                intended,
                sent: intended - dropped,
                dropped,
                late: 0,
                achieved_rate: rate,
                send_lag_ms: Default::default(),
                uncorrected_ms: LatencyMs {
                    p50,
                    ..Default::default()
                },
            });
            assert_eq!(
                s.over_capacity(),
                over,
                "{rate} {responses} {elapsed} {dropped}"
            );
        }
    }
}
