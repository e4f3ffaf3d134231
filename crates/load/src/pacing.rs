//! Waiting for an open-loop send's intended time without burning a CPU.
//!
//! tokio's timer ticks in whole milliseconds, too coarse for sends due every few hundred
//! microseconds, and spinning to the exact time (yielding until it comes) keeps the generator's
//! core busy even at low rates, so that `generator_busy` no longer says whether the generator kept
//! up. Instead each worker thread has one [`Alarm`]: a `timerfd` armed for the earliest waiting
//! send, watched by the worker's own event loop. The kernel wakes the worker when it fires (the
//! thread's timer slack is set to 1 µs), and the alarm wakes every connection whose time has come.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::poll_fn;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;

/// How long before a send's time its wait ends at most: about the time from the timer firing to
/// the waiting task running again on the 2-core VM (epoll, the event loop, the task switch), so
/// the last stretch is spun rather than slept and sends leave within a microsecond or two of their
/// time. The spin is kept to a tenth of the interval between a worker's sends (see
/// [`Alarm::new`]): at high rates sends are then a little late (the lateness is measured and
/// counted in the corrected latency) rather than the spin taking the CPU the responses need.
const MAX_LEAD: Duration = Duration::from_micros(50);

/// One worker thread's alarm clock. Create it inside the worker's runtime and run
/// [`Alarm::drive`] as a task beside the connections.
pub(crate) struct Alarm {
    timer: AsyncFd<OwnedFd>,
    /// Waiting sends by (due time, ticket): the earliest first.
    waiting: RefCell<BTreeMap<(Instant, u64), Waker>>,
    /// The time the timerfd is armed for, if it is.
    armed: Cell<Option<Instant>>,
    tickets: Cell<u64>,
    /// How long before a send's time the sleep ends and the spin starts.
    lead: Duration,
}

impl Alarm {
    /// An alarm for sends due every `interval` on this worker.
    pub(crate) fn new(interval: Duration) -> io::Result<Rc<Self>> {
        // SAFETY: plain syscalls; the fd is owned by the OwnedFd from here on.
        let fd = unsafe {
            let fd = libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            );
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            OwnedFd::from_raw_fd(fd)
        };
        // The kernel may otherwise delay a timer's wake-up by up to 50 µs to batch it with others.
        // SAFETY: sets this thread's own timer slack; no pointers involved.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
        // SAFETY: the OwnedFd is a valid open timerfd that the AsyncFd owns until it is dropped.
        let timer = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
            .map_err(io::Error::from)?;
        Ok(Rc::new(Self {
            timer,
            waiting: RefCell::new(BTreeMap::new()),
            armed: Cell::new(None),
            tickets: Cell::new(0),
            lead: MAX_LEAD.min(interval / 10),
        }))
    }

    /// Returns at `t` (or at once if `t` has passed): sleeps until shortly before it, then
    /// yields to the worker's other tasks until it comes.
    pub(crate) async fn wait_until(&self, t: Instant) {
        let wake = t.checked_sub(self.lead).unwrap_or(t);
        if Instant::now() < wake {
            let ticket = self.tickets.get();
            self.tickets.set(ticket + 1);
            let key = (wake, ticket);
            let _unregister = Unregister { alarm: self, key };
            poll_fn(|cx| {
                if Instant::now() >= wake {
                    return Poll::Ready(());
                }
                self.waiting.borrow_mut().insert(key, cx.waker().clone());
                if self.armed.get().is_none_or(|armed| wake < armed) {
                    self.arm(Some(wake));
                }
                Poll::Pending
            })
            .await;
        }
        while Instant::now() < t {
            tokio::task::yield_now().await;
        }
    }

    /// Runs for the worker's life: each time the timer fires, wakes the sends that are due and
    /// arms it for the next.
    pub(crate) async fn drive(&self) {
        loop {
            let Ok(mut ready) = self.timer.readable().await else {
                return;
            };
            let mut expirations = [0u8; 8];
            // One read drains the timer (the number of expirations is all it holds), so the next
            // firing is a new edge for the event loop whatever this read returns.
            // SAFETY: reads 8 bytes into a local buffer from the timerfd we own.
            unsafe {
                libc::read(
                    self.timer.get_ref().as_raw_fd(),
                    expirations.as_mut_ptr().cast(),
                    expirations.len(),
                )
            };
            ready.clear_ready();
            self.armed.set(None);
            let now = Instant::now();
            let mut waiting = self.waiting.borrow_mut();
            while let Some(entry) = waiting.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                entry.remove().wake();
            }
            let next = waiting.keys().next().map(|k| k.0);
            drop(waiting);
            if next.is_some() {
                self.arm(next);
            }
        }
    }

    /// Arms the timer for `t`, or disarms it.
    fn arm(&self, t: Option<Instant>) {
        self.armed.set(t);
        let after = t.map_or(Duration::ZERO, |t| {
            // A zero value would disarm the timer: at least 1 ns.
            t.saturating_duration_since(Instant::now())
                .max(Duration::from_nanos(1))
        });
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: arms the timerfd we own with a spec on the stack.
        unsafe {
            libc::timerfd_settime(
                self.timer.get_ref().as_raw_fd(),
                0,
                &spec,
                std::ptr::null_mut(),
            );
        }
    }
}

/// Takes a send off the waiting list when its wait ends or is dropped.
struct Unregister<'a> {
    alarm: &'a Alarm,
    key: (Instant, u64),
}

impl Drop for Unregister<'_> {
    fn drop(&mut self) {
        self.alarm.waiting.borrow_mut().remove(&self.key);
    }
}

/// One worker's share of an open-loop schedule: with T workers at total rate R, worker w's k-th
/// send is due at `start + (k*T + w) / R`, so the workers' sends interleave evenly.
pub(crate) struct Pacer {
    start: Instant,
    interval_ns: f64,
    offset_ns: f64,
    next: std::cell::Cell<u64>,
}

impl Pacer {
    pub(crate) fn new(start: Instant, rate: f64, threads: usize, worker: usize) -> Self {
        Self {
            start,
            interval_ns: threads as f64 * 1e9 / rate,
            offset_ns: worker as f64 * 1e9 / rate,
            next: std::cell::Cell::new(0),
        }
    }

    fn due(&self, k: u64) -> Instant {
        self.start + Duration::from_nanos((self.offset_ns + k as f64 * self.interval_ns) as u64)
    }

    /// The time between two of this worker's sends.
    pub(crate) fn interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns as u64)
    }

    /// Takes the next send time from the schedule.
    pub(crate) fn take(&self) -> Instant {
        let k = self.next.get();
        self.next.set(k + 1);
        self.due(k)
    }

    /// How many sends were due strictly before `end`.
    pub(crate) fn due_before(&self, end: Instant) -> u64 {
        let span = end.saturating_duration_since(self.start).as_nanos() as f64 - self.offset_ns;
        if span <= 0.0 {
            return 0;
        }
        let n = (span / self.interval_ns).ceil() as u64;
        // Float rounding at the boundary: make `due(n - 1) < end <= due(n)` hold exactly.
        match n {
            n if n > 0 && self.due(n - 1) >= end => n - 1,
            n if self.due(n) < end => n + 1,
            n => n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a single-threaded runtime with a local task set, as a load worker does.
    fn on_worker<F: Future<Output = ()>>(f: impl FnOnce() -> F) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        tokio::task::LocalSet::new().block_on(&rt, f());
    }

    #[test]
    fn wakes_each_waiter_at_its_time_in_order() {
        on_worker(|| async {
            let alarm = Alarm::new(Duration::from_millis(1)).unwrap();
            let driver = tokio::task::spawn_local({
                let alarm = alarm.clone();
                async move { alarm.drive().await }
            });
            let t0 = Instant::now();
            let woke = Rc::new(RefCell::new(Vec::new()));
            // Registered out of order, and one in the past.
            let offsets_us = [3000u64, 500, 1500, 0, 2500];
            let tasks: Vec<_> = offsets_us
                .iter()
                .map(|&us| {
                    let (alarm, woke) = (alarm.clone(), woke.clone());
                    tokio::task::spawn_local(async move {
                        let due = t0 + Duration::from_micros(us);
                        alarm.wait_until(due).await;
                        let now = Instant::now();
                        assert!(now >= due, "woke {:?} early", due - now);
                        woke.borrow_mut().push(us);
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
            assert_eq!(*woke.borrow(), [0, 500, 1500, 2500, 3000]);
            assert!(alarm.waiting.borrow().is_empty());
            driver.abort();
        });
    }

    #[test]
    fn a_dropped_wait_leaves_nothing_behind() {
        on_worker(|| async {
            let alarm = Alarm::new(Duration::from_millis(1)).unwrap();
            let far = Instant::now() + Duration::from_secs(60);
            let waited =
                tokio::time::timeout(Duration::from_millis(5), alarm.wait_until(far)).await;
            assert!(waited.is_err());
            assert!(alarm.waiting.borrow().is_empty());
        });
    }

    #[test]
    fn pacer_schedule_and_due_count() {
        let t0 = Instant::now();
        // 1,000 req/s over 2 workers: worker 1's sends are due at 1 ms, 3 ms, 5 ms, ...
        let p = Pacer::new(t0, 1000.0, 2, 1);
        assert_eq!(p.take(), t0 + Duration::from_millis(1));
        assert_eq!(p.take(), t0 + Duration::from_millis(3));
        assert_eq!(p.due_before(t0), 0);
        assert_eq!(p.due_before(t0 + Duration::from_millis(1)), 0);
        assert_eq!(p.due_before(t0 + Duration::from_micros(1001)), 1);
        assert_eq!(p.due_before(t0 + Duration::from_secs(1)), 500);
        let p0 = Pacer::new(t0, 1000.0, 2, 0);
        assert_eq!(p0.due_before(t0 + Duration::from_secs(1)), 500);
        // An awkward rate: 3 req/s for 1 s is due at 0, 1/3 and 2/3 s.
        let p = Pacer::new(t0, 3.0, 1, 0);
        assert_eq!(p.due_before(t0 + Duration::from_secs(1)), 3);
    }
}
