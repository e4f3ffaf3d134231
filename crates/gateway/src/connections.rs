//! The gateway's open connections: a slot each under the `--max-connections` limit, counted,
//! with the most open at once since memory was last given back (see `memory.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Open connections against the limit, and the most open since memory was last given back.
pub(crate) struct ConnectionGauge {
    slots: Arc<Semaphore>,
    open: AtomicUsize,
    peak: AtomicUsize,
}

impl ConnectionGauge {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(max.max(1))),
            open: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// Connections open now, and the most open at once since the last [`ConnectionGauge::reset_peak`].
    pub(crate) fn open_and_peak(&self) -> (usize, usize) {
        (
            self.open.load(Ordering::Relaxed),
            self.peak.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn reset_peak(&self) {
        self.peak
            .store(self.open.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

/// One open connection's place in the gauge; given back when dropped.
pub(crate) struct ConnectionSlot {
    gauge: Arc<ConnectionGauge>,
    _permit: OwnedSemaphorePermit,
}

impl ConnectionSlot {
    pub(crate) async fn acquire(gauge: &Arc<ConnectionGauge>) -> Self {
        let permit = gauge
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("the connection semaphore is never closed");
        let open = gauge.open.fetch_add(1, Ordering::Relaxed) + 1;
        gauge.peak.fetch_max(open, Ordering::Relaxed);
        Self {
            gauge: gauge.clone(),
            _permit: permit,
        }
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.gauge.open.fetch_sub(1, Ordering::Relaxed);
    }
}
