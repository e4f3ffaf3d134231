//! What both protocols' connections share per exchange: waiting for a sender's turn (closed or
//! open loop), what a finished exchange is, and counting its outcome in the worker's stats.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::pacing::{Alarm, Pacer};
use crate::report::{Tally, WorkerStats};
use crate::shared::Shared;
use wasmlab_load_data::{LATE_AFTER, record};

/// Why an exchange did not complete.
pub(crate) enum Failure {
    Connect(String),
    ReadWrite(String),
    Timeout,
}

/// A complete answer, as the stats count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body_bytes: u64,
    /// Whether the connection may carry another request (HTTP/1.1 without `Connection: close`).
    pub(crate) keep_alive: bool,
}

/// A completed exchange: the answer, and when the request started, its last byte was written,
/// the answer's first byte was read, and its last.
pub(crate) struct Exchange {
    pub(crate) answer: Answer,
    pub(crate) begin: Instant,
    pub(crate) written: Instant,
    pub(crate) first_byte: Instant,
    pub(crate) end: Instant,
}

/// Waits for this sender's next turn: in the open loop its due time (None when the run is over,
/// else Some(due), its lag counted), in the closed loop at once while the run goes on (Some(None)).
/// `now` becomes the time the send starts.
pub(crate) async fn turn(
    shared: &Shared,
    schedule: Option<&Schedule>,
    tally: &Tally,
    now: &mut Instant,
) -> Option<Option<Instant>> {
    let Some((p, alarm)) = schedule else {
        return shared.may_send(*now).then_some(None);
    };
    // A send is taken by a sender free before the deadline and then made, even if the wait for
    // it ends a hair past the deadline: only sends no sender took in time count as dropped.
    let due = p.take();
    if shared.deadline.is_some_and(|d| due >= d) || shared.stopped() {
        return None;
    }
    alarm.wait_until(due).await;
    if shared.cancelled() {
        return None;
    }
    *now = Instant::now();
    let mut st = tally.at(due).borrow_mut();
    let lag = now.saturating_duration_since(due);
    record(&mut st.send_lag, lag);
    st.sent += 1;
    st.late += u64::from(lag > LATE_AFTER);
    Some(Some(due))
}

/// An open loop's pacing, as each of a worker's senders holds it.
pub(crate) type Schedule = (Rc<Pacer>, Rc<Alarm>);

/// When an exchange started, when it was due (open loop), and how long it could take.
pub(crate) struct Timing {
    pub(crate) started: Instant,
    pub(crate) intended: Option<Instant>,
    pub(crate) timeout: Duration,
}

/// What an exchange's outcome means for its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counted {
    /// Answered, and the connection may carry the next request.
    Kept,
    /// Answered, and the server closes the connection (`Connection: close`).
    Closing,
    /// Failed: the connection is in an unknown state (or was never made).
    Failed,
}

/// Counts an exchange's outcome in the worker's stats and says what it means for the
/// connection. `now` becomes the end of a completed exchange.
pub(crate) fn count(
    st: &mut WorkerStats,
    outcome: Result<Exchange, Failure>,
    Timing {
        started,
        intended,
        timeout,
    }: Timing,
    expect_status: Option<u16>,
    now: &mut Instant,
) -> Counted {
    match outcome {
        Ok(x) => {
            *now = x.end;
            let status = x.answer.status;
            record(&mut st.latency, x.end - intended.unwrap_or(started));
            if intended.is_some() {
                record(&mut st.uncorrected, x.end - started);
            }
            st.phases.record_exchange([
                x.written - x.begin,
                x.first_byte - x.written,
                x.end - x.first_byte,
            ]);
            st.responses += 1;
            st.completed_at(x.end);
            st.body_bytes += x.answer.body_bytes;
            st.by_status[usize::from(status).min(999)] += 1;
            let ok = match expect_status {
                Some(want) => status == want,
                None => (200..300).contains(&status),
            };
            if ok {
                st.ok += 1;
            } else {
                st.errors.non_2xx += 1;
                st.first_error
                    .get_or_insert_with(|| format!("status {status}"));
            }
            if x.answer.keep_alive {
                Counted::Kept
            } else {
                Counted::Closing
            }
        }
        Err(f) => {
            let msg = match f {
                Failure::Connect(m) => {
                    st.errors.connect += 1;
                    m
                }
                Failure::ReadWrite(m) => {
                    st.errors.read_write += 1;
                    m
                }
                Failure::Timeout => {
                    st.errors.timeout += 1;
                    format!("no response within {timeout:?}")
                }
            };
            st.first_error.get_or_insert(msg);
            Counted::Failed
        }
    }
}
