//! A worker thread of the load generator: a single-threaded tokio runtime running its share of
//! the connections, its stats merged into the report at the end; spinning instead of sleeping
//! when asked (see [`crate::LoadConfig::spin`]).

use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use crate::pacing::{self, Pacer};
use crate::report::{Tally, WorkerStats};
use crate::shared::Shared;
use crate::{http1_client, http2_client, timing};

/// Runs the connections numbered `conns` on this thread until the run ends; returns what they
/// counted in the measured part. With a window, waits (its connections open) for the caller to
/// have been told the measured part closed before closing them.
pub(crate) fn worker(
    shared: Arc<Shared>,
    conns: Vec<usize>,
    pacer: Option<Pacer>,
) -> anyhow::Result<WorkerStats> {
    // Arrives at the gate when dropped: after `run` returned (its connections still open), or
    // while a panic unwinds, so that the run's other threads are never left waiting for it.
    let arrival = shared.closing.as_ref().map(Arrival);
    let ran = run(&shared, conns, pacer);
    drop(arrival);
    // The runtime, its tasks and the connections they returned close here.
    ran.map(|(stats, open)| {
        drop(open);
        stats
    })
}

/// A worker's arrival at the closing gate, made when it is dropped.
struct Arrival<'a>(&'a crate::shared::Gate);

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        self.0.arrive();
    }
}

/// What keeps a worker's connections open: its runtime with the tasks still in it (HTTP/2's
/// connection drivers), and the HTTP/1.1 connections its tasks returned.
type Open = (
    tokio::runtime::Runtime,
    tokio::task::LocalSet,
    Vec<http1_client::Connection>,
);

fn run(
    shared: &Arc<Shared>,
    conns: Vec<usize>,
    pacer: Option<Pacer>,
) -> anyhow::Result<(WorkerStats, Open)> {
    let cpu_before = timing::thread_cpu();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    let tally = Rc::new(Tally::new(shared.measure_from));
    let pacer = pacer.map(Rc::new);
    // The thread's CPU when the measured part began, read then by a task of its own.
    let cpu_at_open = Rc::new(std::cell::Cell::new(cpu_before));
    let kept = local.block_on(&rt, async {
        if shared.measure_from > shared.start {
            let (at, from) = (cpu_at_open.clone(), shared.measure_from);
            tokio::task::spawn_local(async move {
                tokio::time::sleep_until(from.into()).await;
                at.set(timing::thread_cpu());
            });
        }
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
            tokio::task::spawn_local(spin(tally.clone()));
        }
        let mut http1 = Vec::new();
        let mut http2 = Vec::new();
        for id in conns {
            let (shared, tally, schedule) = (shared.clone(), tally.clone(), schedule.clone());
            match shared.config.http2 {
                true => http2.push(tokio::task::spawn_local(http2_client::connection(
                    id, shared, tally, schedule,
                ))),
                false => http1.push(tokio::task::spawn_local(http1_client::connection(
                    id, shared, tally, schedule,
                ))),
            }
        }
        for t in http2 {
            let _ = t.await;
        }
        let mut kept = Vec::new();
        for t in http1 {
            kept.extend(t.await.ok().flatten());
        }
        anyhow::Ok(kept)
    })?;
    let cpu_now = timing::thread_cpu();
    // Taken out, not unwrapped: the spinner, still in the LocalSet, holds the tally too.
    let mut stats = std::mem::take(&mut *tally.measured.borrow_mut());
    if let (Some(p), Some(deadline)) = (&pacer, shared.deadline) {
        // Sending ended at the deadline, or earlier when cancelled; the warm-up's were not
        // measured.
        let end = deadline.min(Instant::now());
        stats.intended = p
            .due_before(end)
            .saturating_sub(p.due_before(shared.measure_from.min(end)));
    }
    stats.cpu = cpu_now.saturating_sub(cpu_at_open.get());
    Ok((stats, (rt, local, kept)))
}

/// Keeps a worker polling: each turn yields to the runtime, which then polls the sockets without
/// blocking (tokio runs a yielded task again only after its I/O driver has been polled) and runs
/// the connections that are ready. A turn in which no exchange finished counts as idle spinning.
async fn spin(tally: Rc<Tally>) {
    let mut last = Instant::now();
    let mut seen = tally.finished();
    loop {
        tokio::task::yield_now().await;
        let now = Instant::now();
        let finished = tally.finished();
        if finished == seen {
            tally.at(now).borrow_mut().idle_spin += now - last;
        }
        seen = finished;
        last = now;
    }
}
