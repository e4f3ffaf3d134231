//! Giving memory back after a storm of connections. Each connection's buffers are small heap
//! blocks; once thousands have been freed, glibc's allocator keeps the pages (free, but resident)
//! unless asked to return them, so the gateway's RSS would stay at the storm's peak for good.

use std::sync::Arc;
use std::time::Duration;

use crate::connections::ConnectionGauge;
use crate::send::SendBudget;

/// Connections that must have closed since the last peak before memory is given back: below
/// this, what could be returned is too little to be worth a pass over the heap.
const STORM: usize = 512;

/// Bytes of responses refused over the send budget since the last pass that are worth one: each
/// was made whole before it was refused, and its pages stay with the allocator once freed.
const REFUSED: u64 = 8 << 20;

/// How often the gauge is looked at.
const PERIOD: Duration = Duration::from_secs(1);

/// Runs for the server's life: when at least [`STORM`] connections have closed since the most
/// that were open at once, or [`REFUSED`] bytes of responses were refused over the send budget,
/// returns the allocator's free pages to the system.
pub(crate) async fn return_memory_after_storms(
    gauge: Arc<ConnectionGauge>,
    budget: Arc<SendBudget>,
) {
    let mut tick = tokio::time::interval(PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut refused_at_last_pass = 0;
    loop {
        tick.tick().await;
        let (open, peak) = gauge.open_and_peak();
        let refused = budget.refused_bytes();
        if peak >= open + STORM || refused >= refused_at_last_pass + REFUSED {
            gauge.reset_peak();
            refused_at_last_pass = refused;
            // A pass over a large heap takes milliseconds: not on a worker serving requests.
            let _ = tokio::task::spawn_blocking(release_free_memory).await;
        }
    }
}

/// Returns the allocator's free pages to the system.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}
