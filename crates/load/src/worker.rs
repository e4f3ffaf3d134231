//! A worker thread of the load generator: a single-threaded tokio runtime running its share of
//! the connections, its stats merged into the report at the end; spinning instead of sleeping
//! when asked (see [`crate::LoadConfig::spin`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use crate::pacing::{self, Pacer};
use crate::report::WorkerStats;
use crate::shared::Shared;
use crate::{http1_client, http2_client, timing};

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
    let stats = Rc::new(RefCell::new(WorkerStats {
        origin: shared.start,
        ..WorkerStats::default()
    }));
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
                    tokio::task::spawn_local(http2_client::connection(id, shared, stats, schedule))
                }
                false => {
                    tokio::task::spawn_local(http1_client::connection(id, shared, stats, schedule))
                }
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
