//! Assembling what a load run reports (`wasmlab_load_data::LoadReport`): each worker's counts
//! and HDR histograms, merged once at the end, and the generator's own CPU.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::config::LoadConfig;
use crate::timing::PhaseHistograms;
use wasmlab_load_data::{
    ErrorCounts, LatencyMs, LoadReport, OpenLoop, SATURATED_SHARE, new_histogram,
};

/// What one worker counted, merged with the others' at the end.
pub(crate) struct WorkerStats {
    pub(crate) responses: u64,
    pub(crate) ok: u64,
    pub(crate) errors: ErrorCounts,
    pub(crate) body_bytes: u64,
    /// Indexed by status code (100..=999), so counting costs no lookup.
    pub(crate) by_status: Vec<u64>,
    pub(crate) first_error: Option<String>,
    pub(crate) latency: Histogram<u64>,
    pub(crate) uncorrected: Histogram<u64>,
    pub(crate) send_lag: Histogram<u64>,
    pub(crate) phases: PhaseHistograms,
    pub(crate) sent: u64,
    pub(crate) late: u64,
    pub(crate) intended: u64,
    pub(crate) cpu: Duration,
    /// Spinning: time in polls that completed no exchange.
    pub(crate) idle_spin: Duration,
    /// Complete responses per [`TICK`] of the run, from its start: what a merge of several
    /// generators' parts counts over the interval all of them were running.
    pub(crate) timeline: Vec<u64>,
    /// When the run started, the timeline's origin.
    pub(crate) origin: Instant,
}

/// The width of a timeline's slot.
pub(crate) const TICK: Duration = Duration::from_millis(100);

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
            phases: PhaseHistograms::new(),
            sent: 0,
            late: 0,
            intended: 0,
            cpu: Duration::ZERO,
            idle_spin: Duration::ZERO,
            timeline: Vec::new(),
            origin: Instant::now(),
        }
    }
}

impl WorkerStats {
    pub(crate) fn add(&mut self, o: &WorkerStats) {
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
        if self.timeline.len() < o.timeline.len() {
            self.timeline.resize(o.timeline.len(), 0);
        }
        for (a, b) in self.timeline.iter_mut().zip(&o.timeline) {
            *a += b;
        }
    }

    /// Counts a response completed at `end` in the timeline.
    pub(crate) fn completed_at(&mut self, end: Instant) {
        let since_start = end.saturating_duration_since(self.origin);
        // Seconds and tenths ([`TICK`]) without a 128-bit division: this runs once per response.
        let slot = since_start.as_secs() as usize * 10 + since_start.subsec_millis() as usize / 100;
        if slot >= self.timeline.len() {
            self.timeline.resize(slot + 1, 0);
        }
        self.timeline[slot] += 1;
    }

    /// Exchanges finished, whatever their outcome: what a spinning worker watches for progress.
    pub(crate) fn finished(&self) -> u64 {
        self.responses + self.errors.total()
    }
}

/// A worker's counts: the measured part's, and the warm-up's, which no report shows. In the open
/// loop an exchange belongs to the part its due time fell in; in the closed loop to the part it
/// ended in, as a steady closed loop has exchanges in flight at any moment: the warm-up's last
/// ones cross into the measured part on their connections (counting them by their send would
/// leave a server slower than the warm-up, its connections all still waiting, nothing to
/// answer in the measured part).
pub(crate) struct Tally {
    pub(crate) measured: RefCell<WorkerStats>,
    warm_up: RefCell<WorkerStats>,
    /// When the measured part begins.
    from: Instant,
}

impl Tally {
    pub(crate) fn new(from: Instant) -> Self {
        Self {
            measured: RefCell::new(WorkerStats {
                origin: from,
                ..WorkerStats::default()
            }),
            warm_up: RefCell::new(WorkerStats::default()),
            from,
        }
    }

    /// The counts what was sent (or due) at `t` goes into.
    pub(crate) fn at(&self, t: Instant) -> &RefCell<WorkerStats> {
        if t < self.from {
            &self.warm_up
        } else {
            &self.measured
        }
    }

    /// The counts of an exchange due at `intended` (open loop) that ended at `ended`.
    pub(crate) fn of(&self, intended: Option<Instant>, ended: Instant) -> &RefCell<WorkerStats> {
        self.at(intended.unwrap_or(ended))
    }

    /// Exchanges finished in both parts.
    pub(crate) fn finished(&self) -> u64 {
        self.measured.borrow().finished() + self.warm_up.borrow().finished()
    }
}

/// The share of `span` (thread-seconds) the generator's workers were busy, from their CPU
/// seconds, or when spinning from the seconds they polled in vain.
pub(crate) fn busy_share(span: f64, spin: bool, cpu: f64, idle_spin: f64) -> f64 {
    // A spinning worker is on its CPU all the time, so its CPU time says nothing: it was busy
    // whenever it was not polling in vain (time it lost to other threads counts as busy: it
    // wanted to run).
    match (span > 0.0, spin) {
        (false, _) => 0.0,
        (true, true) => (1.0 - idle_spin / span).clamp(0.0, 1.0),
        (true, false) => cpu / span,
    }
}

/// What a report says of the run's configuration: where it sent, how, and at what pace.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    pub(crate) url: String,
    pub(crate) method: String,
    pub(crate) connections: usize,
    pub(crate) http2: bool,
    pub(crate) streams: usize,
    /// Open loop: the arrival rate.
    pub(crate) rate: Option<f64>,
    /// How long sending lasted at most (the open loop's rate is counted over it).
    pub(crate) duration: Option<Duration>,
    pub(crate) warm_up: Option<Duration>,
    pub(crate) spin: bool,
}

impl Shape {
    pub(crate) fn of(c: &LoadConfig) -> Self {
        Self {
            url: c.url.to_string(),
            method: c.method.to_string(),
            connections: c.connections,
            http2: c.http2,
            streams: c.streams,
            rate: c.rate,
            duration: c.duration,
            warm_up: c.warm_up,
            spin: c.spin,
        }
    }
}

/// The report of a run shaped `c` from its workers' merged stats, `elapsed` seconds over
/// `threads` threads.
pub(crate) fn assemble(c: &Shape, stats: WorkerStats, elapsed: f64, threads: usize) -> LoadReport {
    let cpu = stats.cpu.as_secs_f64();
    let idle_spin = stats.idle_spin.as_secs_f64();
    let busy = busy_share(elapsed * threads as f64, c.spin, cpu, idle_spin);
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
        url: c.url.clone(),
        method: c.method.clone(),
        generators: 1,
        connections: c.connections,
        threads,
        http2: c.http2,
        streams: c.streams,
        responses: stats.responses,
        ok: stats.ok,
        errors: stats.errors,
        elapsed_secs: elapsed,
        warm_up_secs: c.warm_up.map(|w| w.as_secs_f64()),
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
