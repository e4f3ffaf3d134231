//! Per-request phases (k6's http_req_connecting / sending / waiting / receiving), timed by a thin
//! wrapper around the socket that notes when the request's last byte was written and when the
//! response's first byte was read.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::{LatencyMs, new_histogram, record};

/// When the current request's bytes last went out and the response's first byte came in.
#[derive(Default)]
pub(crate) struct Marks {
    last_write: Cell<Option<Instant>>,
    first_read: Cell<Option<Instant>>,
}

impl Marks {
    /// Forget the previous request's marks (call before sending the next one).
    pub(crate) fn reset(&self) {
        self.last_write.set(None);
        self.first_read.set(None);
    }

    /// (send, wait, receive) of the request started at `begin` and completed at `end`, when the
    /// socket saw both a write and a read in between.
    pub(crate) fn split(&self, begin: Instant, end: Instant) -> Option<[Duration; 3]> {
        let w = self.last_write.get()?;
        let r = self.first_read.get()?;
        (begin <= w && w <= r && r <= end).then(|| [w - begin, r - w, end - r])
    }
}

/// A socket that stamps [`Marks`]. Vectored writes are forwarded, so hyper writes as it would
/// without the wrapper.
pub(crate) struct Timed<S> {
    pub(crate) inner: S,
    pub(crate) marks: Rc<Marks>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Timed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let out = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before && self.marks.first_read.get().is_none() {
            self.marks.first_read.set(Some(Instant::now()));
        }
        out
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Timed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let out = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(out, Poll::Ready(Ok(n)) if n > 0) {
            self.marks.last_write.set(Some(Instant::now()));
        }
        out
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let out = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(out, Poll::Ready(Ok(n)) if n > 0) {
            self.marks.last_write.set(Some(Instant::now()));
        }
        out
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// One histogram per phase, per worker; merged at the end.
pub(crate) struct PhaseHistograms {
    pub(crate) connect: Histogram<u64>,
    pub(crate) send: Histogram<u64>,
    pub(crate) wait: Histogram<u64>,
    pub(crate) receive: Histogram<u64>,
}

impl PhaseHistograms {
    pub(crate) fn new() -> Self {
        Self {
            connect: new_histogram(),
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
            (&mut self.send, &o.send),
            (&mut self.wait, &o.wait),
            (&mut self.receive, &o.receive),
        ] {
            a.add(b).expect("same bounds");
        }
    }

    pub(crate) fn summary(&self) -> Phases {
        Phases {
            connections_opened: self.connect.len(),
            connect: LatencyMs::from_histogram(&self.connect),
            send: LatencyMs::from_histogram(&self.send),
            wait: LatencyMs::from_histogram(&self.wait),
            receive: LatencyMs::from_histogram(&self.receive),
        }
    }
}

/// Where each request's time went, like k6's `http_req_*` metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// TCP connections opened (each one's connect + handshake is one `connect` sample; a reused
    /// keep-alive connection adds none, as k6's http_req_connecting is 0 on reuse).
    pub connections_opened: u64,
    /// TCP connect and HTTP/1 handshake of a new connection.
    pub connect: LatencyMs,
    /// From the start of the exchange to the request's last byte written to the socket.
    pub send: LatencyMs,
    /// From the last byte written to the first byte of the response read (time to first byte).
    pub wait: LatencyMs,
    /// From the first byte read to the end of the response body.
    pub receive: LatencyMs,
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
