//! What every worker of a run shares, and the run's limits: its deadline, its request budget,
//! cancellation.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use crate::config::LoadConfig;
use crate::request::{H2Request, SerializedRequest};
use crate::tls::Tls;

/// What every worker shares: the run's configuration, its requests and its limits.
pub(crate) struct Shared {
    pub(crate) config: LoadConfig,
    /// The requests the exchanges send: the first, then any rotated through.
    pub(crate) requests: Vec<SerializedRequest>,
    /// HTTP/2: the requests, as its exchanges build them.
    pub(crate) h2_requests: Vec<H2Request>,
    /// HTTPS: the run's TLS client.
    pub(crate) tls: Option<Tls>,
    /// When the run started (its warm-up, if any, and its pace count from here).
    pub(crate) start: Instant,
    /// When the measured part begins (`start` plus the warm-up): its timelines count from here.
    pub(crate) measure_from: Instant,
    pub(crate) deadline: Option<Instant>,
    /// With a [`crate::Window`]: where the workers wait, connections still open, until it has
    /// been told the measured part closed.
    pub(crate) closing: Option<Gate>,
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

/// Where threads that have ended their part wait until another releases them.
#[derive(Default)]
pub(crate) struct Gate {
    /// (threads arrived, released)
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl Gate {
    /// Counts this thread in, then waits for the release.
    pub(crate) fn arrive(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0 += 1;
        self.changed.notify_all();
        while !s.1 {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits until `n` threads have arrived.
    pub(crate) fn wait_for(&self, n: usize) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while s.0 < n {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Lets every thread that arrived, and any that will, go on.
    pub(crate) fn release(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        self.changed.notify_all();
    }
}
