//! Per-request phases (k6's http_req_connecting / sending / waiting / receiving): the connection
//! notes when the request's last byte was written and when the response's first byte was read.

use std::time::Duration;

use hdrhistogram::Histogram;

use wasmlab_load_data::{LatencyMs, Phases, new_histogram, record};

/// One histogram per phase, per worker; merged at the end.
pub(crate) struct PhaseHistograms {
    pub(crate) connect: Histogram<u64>,
    /// HTTPS: each new connection's TLS handshake.
    pub(crate) tls: Histogram<u64>,
    /// Handshakes that resumed a session.
    pub(crate) tls_resumed: u64,
    pub(crate) send: Histogram<u64>,
    pub(crate) wait: Histogram<u64>,
    pub(crate) receive: Histogram<u64>,
}

impl PhaseHistograms {
    pub(crate) fn new() -> Self {
        Self {
            connect: new_histogram(),
            tls: new_histogram(),
            tls_resumed: 0,
            send: new_histogram(),
            wait: new_histogram(),
            receive: new_histogram(),
        }
    }

    pub(crate) fn record_exchange(&mut self, [send, wait, receive]: [Duration; 3]) {
        record(&mut self.send, send);
        record(&mut self.wait, wait);
        record(&mut self.receive, receive);
    }

    pub(crate) fn add(&mut self, o: &PhaseHistograms) {
        for (a, b) in [
            (&mut self.connect, &o.connect),
            (&mut self.tls, &o.tls),
            (&mut self.send, &o.send),
            (&mut self.wait, &o.wait),
            (&mut self.receive, &o.receive),
        ] {
            a.add(b).expect("same bounds");
        }
        self.tls_resumed += o.tls_resumed;
    }

    pub(crate) fn summary(&self) -> Phases {
        Phases {
            connections_opened: self.connect.len(),
            connect: LatencyMs::from_histogram(&self.connect),
            tls_handshakes: self.tls.len(),
            tls_resumed: self.tls_resumed,
            tls: LatencyMs::from_histogram(&self.tls),
            send: LatencyMs::from_histogram(&self.send),
            wait: LatencyMs::from_histogram(&self.wait),
            receive: LatencyMs::from_histogram(&self.receive),
        }
    }
}

/// CPU time (user + system) the calling thread has used so far.
pub(crate) fn thread_cpu() -> Duration {
    // SAFETY: getrusage fills the struct we pass; RUSAGE_THREAD is Linux's per-thread usage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
