//! What a guest may use per request, and how the executors enforce it: a deadline through epoch
//! interruption (one ticker thread per engine, not a thread or timer per request), linear memory
//! through store limits, concurrency through a bounded wait for an instance slot.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmlab_gateway::Failure;
use wasmlab_gateway::admission::Admission;

use wasmtime::{Enabled, Engine, PoolingAllocationConfig, StoreLimits, StoreLimitsBuilder, Trap};

#[derive(Debug, Clone, Copy)]
pub struct GuestLimits {
    /// Instances alive at once (pooled); requests beyond this wait for a slot. The pool is made
    /// whole at start, one fiber stack with its guard page per instance: each 1,000 instances
    /// cost about 1.4 ms of CPU at start on the team's VM (docs/pooled-cost.md).
    pub max_instances: u32,
    /// Largest linear memory one instance may grow to (bytes); growing past it traps (500).
    pub max_memory_bytes: usize,
    /// Longest a request may run in the guest, host calls included; past it the answer is 504.
    pub deadline: Duration,
    /// Requests allowed to wait for an instance slot; more are answered 503 at once (pooled).
    pub max_queue: usize,
    /// Longest wait for an instance slot before 503 (pooled).
    pub queue_timeout: Duration,
    /// How much of a linear memory the pooling allocator resets in place when an instance ends
    /// (bytes): by memset, or only the pages it dirtied with `pagemap_scan`. Beyond it, memory
    /// goes back to the kernel (madvise) and the next instance faults it in again, page by page.
    pub keep_resident_bytes: usize,
    /// Reset only the pages an instance dirtied (Linux's PAGEMAP_SCAN), rather than memset all of
    /// the resident part: worth its system call for a guest whose memory image is megabytes (a
    /// JavaScript engine's), not for a one-page guest.
    pub pagemap_scan: bool,
    /// How the core-module executors (pooled, recycled, shared) call into the guest. The
    /// component and naive executors always call async (WASI's imports wait).
    pub calls: GuestCalls,
}

/// How a request runs in a core-module guest (the gateway's `--guest-calls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GuestCalls {
    /// The executor's own choice, the one the A/B in docs/pooled-cost.md measured cheaper.
    Auto,
    /// To completion on the calling thread, with no fiber: the deadline is still enforced (epoch
    /// interruption), without yielding. A guest still running one epoch tick after it started is
    /// moved off its worker thread, so it cannot starve the worker's other connections (see
    /// `calls`). Needs tokio's multi-thread runtime for that and for `proxy_get`.
    Sync,
    /// On a fiber, yielding to the runtime at every epoch tick (time-slicing).
    Async,
}

impl GuestCalls {
    /// `self`, or `default` for [`GuestCalls::Auto`].
    pub fn or(self, default: GuestCalls) -> GuestCalls {
        match self {
            GuestCalls::Auto => default,
            chosen => chosen,
        }
    }

    pub fn is_sync(self) -> bool {
        self == GuestCalls::Sync
    }
}

impl std::fmt::Display for GuestCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use clap::ValueEnum;
        let value = self.to_possible_value().expect("no variant is skipped");
        f.write_str(value.get_name())
    }
}

impl Default for GuestLimits {
    fn default() -> Self {
        Self {
            // Enough to keep one core's worth of guests busy while others wait on their
            // upstream; a start-up cost in proportion to the pool (see above).
            max_instances: 128,
            max_memory_bytes: 64 << 20,
            deadline: Duration::from_secs(5),
            max_queue: 10_000,
            queue_timeout: Duration::from_secs(10),
            // Memset, no syscall: the guests here are a page or two (docs/pooled-cost.md).
            keep_resident_bytes: 128 << 10,
            pagemap_scan: false,
            calls: GuestCalls::Auto,
        }
    }
}

impl std::fmt::Display for GuestLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "max_instances={} max_memory={} MiB deadline={} ms max_queue={} queue_timeout={} ms keep_resident={} KiB pagemap_scan={} calls={}",
            self.max_instances,
            self.max_memory_bytes >> 20,
            self.deadline.as_millis(),
            self.max_queue,
            self.queue_timeout.as_millis(),
            self.keep_resident_bytes >> 10,
            if self.pagemap_scan { "yes" } else { "no" },
            self.calls
        )
    }
}

impl GuestLimits {
    pub(crate) fn store_limits(&self) -> StoreLimits {
        self.store_limits_for(1)
    }

    /// The store limits for a guest made of `instances` core instances (a component's modules).
    pub(crate) fn store_limits_for(&self, instances: usize) -> StoreLimits {
        StoreLimitsBuilder::new()
            .memory_size(self.max_memory_bytes)
            .instances(instances)
            .trap_on_grow_failure(true)
            .build()
    }

    /// Sets how the pool resets a memory or table slot for its next instance.
    pub(crate) fn reset_slots(&self, pool: &mut PoolingAllocationConfig) {
        pool.linear_memory_keep_resident(self.keep_resident_bytes)
            .table_keep_resident(64 << 10)
            .pagemap_scan(if self.pagemap_scan {
                Enabled::Yes
            } else {
                Enabled::No
            });
    }

    /// Admission to the live instances allowed, with the bounded queue in front of them.
    pub(crate) fn admission(&self) -> Admission {
        Admission::new(
            self.max_instances.max(1) as usize,
            self.max_queue,
            self.queue_timeout,
        )
    }

    /// The epoch period: fine enough for the deadline's precision, coarse enough to cost nothing.
    pub(crate) fn tick(&self) -> Duration {
        (self.deadline / 20).clamp(Duration::from_millis(1), Duration::from_millis(10))
    }
}

/// Increments an engine's epoch every `tick` until dropped.
pub(crate) struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    pub(crate) fn start(engine: &Engine, tick: Duration) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let (engine, flag) = (engine.weak(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("epoch-ticker".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    match engine.upgrade() {
                        Some(e) => e.increment_epoch(),
                        None => break,
                    }
                }
            })?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A host call (the upstream of `proxy_get`) outlasted the request's deadline.
#[derive(Debug)]
pub(crate) struct DeadlineExceeded;

impl std::fmt::Display for DeadlineExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a host call outlasted the request's deadline")
    }
}

impl std::error::Error for DeadlineExceeded {}

/// What a failed guest run is: 504 when it ran out of time (epoch interruption in guest code, or
/// a host call cut at the deadline), 500 for any other fault (trap, memory limit, stack overflow,
/// broken ABI).
pub(crate) fn guest_failure(e: &anyhow::Error, limits: &GuestLimits) -> Failure {
    let timed_out = e.downcast_ref::<Trap>() == Some(&Trap::Interrupt)
        || e.chain().any(|c| c.is::<DeadlineExceeded>());
    if timed_out {
        Failure::new(
            504,
            format!(
                "guest exceeded its deadline of {} ms",
                limits.deadline.as_millis()
            ),
        )
    } else {
        Failure::guest_failed(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_a_fraction_of_the_deadline_within_bounds() {
        for (ms, tick) in [(1u64, 1u64), (100, 5), (1000, 10), (60_000, 10)] {
            let l = GuestLimits {
                deadline: Duration::from_millis(ms),
                ..GuestLimits::default()
            };
            assert_eq!(l.tick(), Duration::from_millis(tick), "{ms} ms");
        }
    }
}
