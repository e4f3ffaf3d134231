//! Bounded concurrency with a bounded, timed queue: what keeps an executor with a costly unit of
//! work (an instance from a pool, a process) within its limit, and answers 503 rather than let
//! requests pile up without end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

use crate::executor::{Failure, Reply};

pub struct Admission {
    slots: Semaphore,
    /// Requests waiting for a slot now.
    waiting: AtomicUsize,
    max_queue: usize,
    queue_timeout: Duration,
}

impl Admission {
    /// `running` at once; `max_queue` more may wait up to `queue_timeout` each.
    pub fn new(running: usize, max_queue: usize, queue_timeout: Duration) -> Self {
        Self {
            slots: Semaphore::new(running.max(1)),
            waiting: AtomicUsize::new(0),
            max_queue,
            queue_timeout,
        }
    }

    /// A slot: at once if one is free, else after a bounded wait in a bounded queue. `Err` is the
    /// 503 to answer.
    pub async fn enter(&self) -> Result<SemaphorePermit<'_>, Reply> {
        if let Ok(permit) = self.slots.try_acquire() {
            return Ok(permit);
        }
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.max_queue {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return Err(Reply::text(
                503,
                "busy: every slot is in use and the queue is full",
            ));
        }
        let waited = tokio::time::timeout(self.queue_timeout, self.slots.acquire()).await;
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        match waited {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(Reply::text(503, "shutting down")),
            Err(_) => Err(Reply::text(
                503,
                format!(
                    "busy: no slot free within {} ms",
                    self.queue_timeout.as_millis()
                ),
            )),
        }
    }

    /// Runs `work` in a slot; a request refused one gets the 503 as its reply. The slot is held
    /// until `work` is done (or dropped, when its client went away).
    pub async fn admit<F>(&self, work: impl FnOnce() -> F) -> Result<Reply, Failure>
    where
        F: Future<Output = Result<Reply, Failure>>,
    {
        match self.enter().await {
            Ok(_slot) => work().await,
            Err(busy) => Ok(busy),
        }
    }
}
