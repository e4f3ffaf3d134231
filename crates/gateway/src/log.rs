//! What the gateway tells its operator on stderr: one line per incident (a guest failure, a
//! framing header a guest set, a request body that did not arrive in time), each naming the
//! request, and a count of each kind when the gateway stops.
//!
//! A guest that fails on every request must not turn the log into the bottleneck or fill a disk:
//! at most [`LINES_PER_SECOND`] incident lines are written a second; the rest are counted, and the
//! first line of the next second says how many were left out.

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Incident lines written in one second at most.
pub const LINES_PER_SECOND: u32 = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incident {
    /// An executor could not answer with the handler's reply (trap, deadline, broken ABI).
    GuestFailure,
    /// A reply carried a header the host owns (framing, hop-by-hop); it was dropped.
    FramingHeader,
    /// A request body did not arrive within the body timeout; answered 408 and closed.
    BodyTimeout,
    /// A response not sent because clients that do not read held the send budget; answered 503.
    SendBudget,
    /// A response cut because its client took no bytes for the send timeout: an HTTP/1.1
    /// connection closed, or an HTTP/2 stream reset.
    SendTimeout,
}

impl Incident {
    const ALL: [Incident; 5] = [
        Incident::GuestFailure,
        Incident::FramingHeader,
        Incident::BodyTimeout,
        Incident::SendBudget,
        Incident::SendTimeout,
    ];

    fn label(self) -> &'static str {
        match self {
            Incident::GuestFailure => "guest failures",
            Incident::FramingHeader => "framing headers dropped",
            Incident::BodyTimeout => "body timeouts",
            Incident::SendBudget => "responses refused over the send budget",
            Incident::SendTimeout => "responses cut at the send timeout",
        }
    }
}

static COUNTS: [AtomicU64; Incident::ALL.len()] =
    [const { AtomicU64::new(0) }; Incident::ALL.len()];

struct Window {
    started: Instant,
    written: u32,
    left_out: u64,
}

static WINDOW: Mutex<Option<Window>> = Mutex::new(None);

/// Which request an incident concerns: the connection's number (in order of acceptance) and the
/// request's number on that connection, both from 1. Shown as `CONN.SEQ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestId {
    pub connection: u64,
    pub sequence: u64,
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.connection, self.sequence)
    }
}

/// Counts an incident and writes its line, unless this second's lines are used up.
pub fn incident(kind: Incident, request: RequestId, what: fmt::Arguments<'_>) {
    write(kind, format_args!("request {request}: {what}"));
}

/// [`incident`] for one that concerns a whole connection (numbered as in request ids).
pub fn connection_incident(kind: Incident, connection: u64, what: fmt::Arguments<'_>) {
    write(kind, format_args!("connection {connection}: {what}"));
}

fn write(kind: Incident, what: fmt::Arguments<'_>) {
    COUNTS[kind as usize].fetch_add(1, Ordering::Relaxed);
    let mut window = WINDOW.lock().unwrap_or_else(|p| p.into_inner());
    let now = Instant::now();
    let w = window.get_or_insert(Window {
        started: now,
        written: 0,
        left_out: 0,
    });
    if now.duration_since(w.started) >= Duration::from_secs(1) {
        if w.left_out > 0 {
            eprintln!(
                "wasmlab-gateway: {} more incidents in the previous second were not logged (at most {LINES_PER_SECOND} lines a second)",
                w.left_out
            );
        }
        *w = Window {
            started: now,
            written: 0,
            left_out: 0,
        };
    }
    if w.written < LINES_PER_SECOND {
        w.written += 1;
        eprintln!("wasmlab-gateway: {what}");
    } else {
        w.left_out += 1;
    }
}

/// How many incidents of each kind there have been, for the line printed at shutdown.
pub fn totals() -> String {
    Incident::ALL
        .iter()
        .map(|k| {
            format!(
                "{} {}",
                k.label(),
                COUNTS[*k as usize].load(Ordering::Relaxed)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The number of incidents of one kind so far.
pub fn count(kind: Incident) -> u64 {
    COUNTS[kind as usize].load(Ordering::Relaxed)
}
