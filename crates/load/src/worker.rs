//! A worker thread of the load generator: a single-threaded tokio runtime running its share of
//! the connections, its stats merged into the report at the end; spinning instead of sleeping
//! when asked (see [`crate::LoadConfig::spin`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;

use crate::connection::connection;
use crate::pacing::{self, Pacer};
use crate::report::{ErrorCounts, new_histogram};
use crate::{LoadConfig, timing};

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
    pub(crate) phases: timing::PhaseHistograms,
    pub(crate) sent: u64,
    pub(crate) late: u64,
    pub(crate) intended: u64,
    pub(crate) cpu: Duration,
    /// Spinning: time in polls that completed no exchange.
    pub(crate) idle_spin: Duration,
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
    }

    /// Exchanges finished, whatever their outcome: what a spinning worker watches for progress.
    fn finished(&self) -> u64 {
        self.responses + self.errors.total()
    }
}

/// A request as it goes on the wire, serialised once.
pub(crate) struct SerializedRequest {
    pub(crate) bytes: Bytes,
    /// A HEAD: its answer has no body whatever its headers say.
    pub(crate) head: bool,
    /// The status of a successful answer (None: any 2xx).
    pub(crate) expect_status: Option<u16>,
}

/// What every worker shares: the run's configuration, its requests and its limits.
pub(crate) struct Shared {
    pub(crate) config: LoadConfig,
    /// The requests the exchanges send: the first, then any rotated through.
    pub(crate) requests: Vec<SerializedRequest>,
    /// HTTP/2: the requests, as its exchanges build them.
    pub(crate) h2_requests: Vec<crate::http2::H2Request>,
    /// HTTPS: the run's TLS client.
    pub(crate) tls: Option<crate::tls::Tls>,
    pub(crate) deadline: Option<Instant>,
    /// Requests still allowed to start, when `requests` bounds the run.
    pub(crate) budget: Option<AtomicU64>,
}

impl Shared {
    /// Past the deadline, or cancelled.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped_at(Instant::now())
    }

    /// As [`Shared::stopped`], with the time already read.
    fn stopped_at(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d) || self.cancelled()
    }

    pub(crate) fn cancelled(&self) -> bool {
        self.config
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// Whether a connection may start another request at `now` (closed loop).
    pub(crate) fn may_send(&self, now: Instant) -> bool {
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

/// Runs the connections numbered `conns` on this thread until the run ends; returns what they
/// counted.
pub(crate) fn worker(
    shared: Arc<Shared>,
    conns: Vec<usize>,
    pacer: Option<Pacer>,
) -> anyhow::Result<WorkerStats> {
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
        let mut tasks = Vec::with_capacity(conns.len());
        for id in conns {
            let (shared, stats, schedule) = (shared.clone(), stats.clone(), schedule.clone());
            tasks.push(match shared.config.http2 {
                true => {
                    tokio::task::spawn_local(crate::http2::connection(id, shared, stats, schedule))
                }
                false => tokio::task::spawn_local(connection(id, shared, stats, schedule)),
            });
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
