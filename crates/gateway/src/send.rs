//! What clients that do not read can hold: every response's bytes are counted from when the
//! executor produced them until they leave the gateway's own queue, against a budget per
//! connection and one for the whole gateway; and a connection whose writes or responses make no
//! progress for the send timeout is closed (see `server.rs`), which gives its memory back.
//!
//! A response is handed to hyper in chunks of [`CHUNK`] bytes, so what hyper and h2 hold beyond
//! the count is at most a chunk or two per stream: the budgets bound the rest. Each connection
//! may hold [`ALLOWANCE`] bytes without drawing on the shared budget (small answers such as
//! `hello` or a 503 are never refused; that much is part of a connection's own cost, bounded
//! with it by `--max-connections`); past it a response draws on the total. A response that
//! would take its connection past its budget or the gateway past its total is not sent: the
//! client gets 503 in its place (see `server.rs`). A connection holding nothing may always start
//! one response, and the gateway holding nothing may always send one, so a response larger than
//! a budget is slow to get a turn under attack but is never refused for good.

use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::Notify;

/// The most of a response handed to hyper at once (HTTP/2's default frame size).
pub const CHUNK: usize = 16 << 10;

/// What each connection may hold without drawing on the shared budget.
pub const ALLOWANCE: usize = 16 << 10;

/// The gateway's budget for response bytes not yet taken by their clients.
#[derive(Debug)]
pub struct SendBudget {
    /// The most all connections together may hold beyond their allowances.
    total: usize,
    /// The most one connection may hold.
    per_connection: usize,
    drawn: AtomicUsize,
    /// Bytes of the responses refused so far (their memory freed, if not yet given back).
    refused: AtomicU64,
}

impl SendBudget {
    pub fn new(total: usize, per_connection: usize) -> Self {
        Self {
            total,
            per_connection,
            drawn: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Bytes of all the responses refused so far.
    pub fn refused_bytes(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Bytes drawn on the shared budget now.
    pub fn drawn(&self) -> usize {
        self.drawn.load(Ordering::Relaxed)
    }

    /// Draws `n` bytes unless that would pass the total (drawing on nothing drawn always works).
    fn try_draw(&self, n: usize) -> bool {
        self.drawn
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |d| {
                (d == 0 || d + n <= self.total).then_some(d + n)
            })
            .is_ok()
    }

    fn give_back(&self, n: usize) {
        self.drawn.fetch_sub(n, Ordering::AcqRel);
    }
}

/// Bytes past the allowance when a connection holds `held`.
fn over(held: usize) -> usize {
    held.saturating_sub(ALLOWANCE)
}

/// Milliseconds since the first call: a clock an atomic can hold.
fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// One connection's share: what it holds, its open HTTP/2 streams, and when its responses last
/// moved.
#[derive(Debug)]
pub struct ConnectionSend {
    budget: Arc<SendBudget>,
    held: AtomicUsize,
    /// HTTP/2 streams with a request or response under way.
    streams: AtomicUsize,
    /// `now_ms()` when a response last gave hyper a chunk or finished (HTTP/2 only).
    progress_ms: AtomicU64,
    /// Woken when `streams` falls to or leaves zero.
    changed: Notify,
    /// Whether to keep `progress_ms` (HTTP/1.1 connections are watched at the socket instead).
    http2: bool,
}

impl ConnectionSend {
    pub fn new(budget: Arc<SendBudget>, http2: bool) -> Arc<Self> {
        Arc::new(Self {
            budget,
            held: AtomicUsize::new(0),
            streams: AtomicUsize::new(0),
            progress_ms: AtomicU64::new(now_ms()),
            changed: Notify::new(),
            http2,
        })
    }

    /// Bytes the whole gateway holds now past the connections' allowances.
    pub fn budget_drawn(&self) -> usize {
        self.budget.drawn()
    }

    /// Bytes this connection holds now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// Counts `n` more bytes held, unless the connection's budget or the total forbids it.
    fn admit(&self, n: usize) -> bool {
        let mut old = self.held.load(Ordering::Acquire);
        loop {
            let new = old + n;
            if old > 0 && new > self.budget.per_connection {
                return false;
            }
            let draw = over(new) - over(old);
            if draw > 0 && !self.budget.try_draw(draw) {
                return false;
            }
            match self
                .held
                .compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => {
                    if draw > 0 {
                        self.budget.give_back(draw);
                    }
                    old = now;
                }
            }
        }
    }

    /// Counts `n` more bytes held whatever the budgets say (answers that say no are small).
    fn admit_anyway(&self, n: usize) {
        let old = self.held.fetch_add(n, Ordering::AcqRel);
        let draw = over(old + n) - over(old);
        if draw > 0 {
            self.budget.drawn.fetch_add(draw, Ordering::AcqRel);
        }
    }

    fn release(&self, n: usize) {
        if n == 0 {
            return;
        }
        let old = self.held.fetch_sub(n, Ordering::AcqRel);
        let back = over(old) - over(old - n);
        if back > 0 {
            self.budget.give_back(back);
        }
    }

    fn progressed(&self) {
        if self.http2 {
            self.progress_ms.store(now_ms(), Ordering::Relaxed);
        }
    }

    /// Notes an HTTP/2 stream's request; the stream counts as open until the guard is dropped.
    pub fn stream_opened(self: &Arc<Self>) -> StreamGuard {
        if self.streams.fetch_add(1, Ordering::AcqRel) == 0 {
            self.changed.notify_one();
        }
        self.progressed();
        StreamGuard(self.clone())
    }

    /// Resolves when the connection should end: no stream open for `idle` (HTTP/2's idle
    /// timeout), or responses held and none of them moving for `send` (its send timeout).
    pub async fn watch(&self, idle: Duration, send: Duration) -> Watched {
        loop {
            if self.streams.load(Ordering::Acquire) == 0 {
                // Idle: wait out the timeout unless a stream opens (a stale wake-up from the last
                // one closing only goes round once more).
                let opened = self.changed.notified();
                tokio::select! {
                    _ = tokio::time::sleep(idle) => {
                        if self.streams.load(Ordering::Acquire) == 0 {
                            return Watched::Idle;
                        }
                    }
                    _ = opened => {}
                }
                continue;
            }
            let since = now_ms().saturating_sub(self.progress_ms.load(Ordering::Relaxed));
            let send_ms = send.as_millis() as u64;
            if self.held() > 0 && since >= send_ms {
                return Watched::Stalled;
            }
            // Look again when the last progress would have timed out, or when the last stream
            // closes. With nothing held (requests still at the executor) there is nothing to time
            // out yet: a response admitted later counts as progress, so a whole timeout is early
            // enough (rather than looking every few milliseconds through a long request).
            let left = match self.held() {
                0 => send_ms,
                _ => send_ms.saturating_sub(since),
            };
            let wait = Duration::from_millis(left.max(10));
            let closed = self.changed.notified();
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = closed => {}
            }
        }
    }
}

/// Why [`ConnectionSend::watch`] ended a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watched {
    /// No stream was open for the idle timeout.
    Idle,
    /// Responses were held and none moved for the send timeout.
    Stalled,
}

/// An HTTP/2 stream under way; dropped with its response (or its request, if that ends first).
#[derive(Debug)]
pub struct StreamGuard(Arc<ConnectionSend>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.progressed();
        if self.0.streams.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.changed.notify_one();
        }
    }
}

/// A response's body as the gateway sends it: handed over in chunks, its bytes counted against
/// the connection's budget until they are.
#[derive(Debug)]
pub struct ResponseBody {
    rest: Bytes,
    /// Bytes counted: `rest` and the chunk handed over last (which hyper may still hold).
    counted: usize,
    connection: Option<Arc<ConnectionSend>>,
    _stream: Option<StreamGuard>,
}

impl ResponseBody {
    /// `body`, counted on `connection` if its budget allows; else `Err(body)`.
    pub fn admitted(
        body: Bytes,
        connection: &Arc<ConnectionSend>,
        stream: Option<StreamGuard>,
    ) -> Result<Self, (Bytes, Option<StreamGuard>)> {
        if !connection.admit(body.len()) {
            let refused = &connection.budget.refused;
            refused.fetch_add(body.len() as u64, Ordering::Relaxed);
            return Err((body, stream));
        }
        Ok(Self::counted(body, connection, stream))
    }

    /// `body`, counted whatever the budgets say: for the short answers that refuse work.
    pub fn admitted_anyway(
        body: Bytes,
        connection: &Arc<ConnectionSend>,
        stream: Option<StreamGuard>,
    ) -> Self {
        connection.admit_anyway(body.len());
        Self::counted(body, connection, stream)
    }

    fn counted(body: Bytes, connection: &Arc<ConnectionSend>, stream: Option<StreamGuard>) -> Self {
        // A response ready to go is progress: the send timeout counts from here, not from the
        // request (an executor may take long to answer).
        connection.progressed();
        Self {
            counted: body.len(),
            rest: body,
            connection: Some(connection.clone()),
            _stream: stream,
        }
    }

    /// A body counted nowhere (outside a server: tests, the fuzz target).
    pub fn uncounted(body: Bytes) -> Self {
        Self {
            counted: 0,
            rest: body,
            connection: None,
            _stream: None,
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if this.rest.is_empty() {
            return Poll::Ready(None);
        }
        let chunk = this.rest.split_to(this.rest.len().min(CHUNK));
        if let Some(c) = &this.connection {
            // The chunk before this one has left hyper's hands (it asks for the next only then).
            let handed = this.counted - this.rest.len() - chunk.len();
            c.release(handed);
            this.counted -= handed;
            c.progressed();
        }
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.rest.len() as u64)
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        if let Some(c) = &self.connection {
            c.release(self.counted);
        }
    }
}

/// A connection's socket whose writes fail with `TimedOut` once one has waited for the client
/// to take bytes for longer than the send timeout: hyper then closes the connection (an HTTP/1.1
/// client that stopped reading, or an HTTP/2 one that stopped reading the socket altogether).
/// Costs nothing while writes complete: the timer is armed only when one must wait.
#[derive(Debug)]
pub struct SendDeadline<S> {
    inner: S,
    timeout: Duration,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    armed: bool,
}

impl<S> SendDeadline<S> {
    pub fn new(inner: S, timeout: Duration) -> Self {
        Self {
            inner,
            timeout,
            timer: None,
            armed: false,
        }
    }

    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// A write's outcome, or past the deadline `TimedOut` in place of waiting longer.
    fn watched<T>(
        &mut self,
        cx: &mut Context<'_>,
        res: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if res.is_ready() {
            self.armed = false;
            return res;
        }
        let deadline = tokio::time::Instant::now() + self.timeout;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if !self.armed {
            timer.as_mut().reset(deadline);
            self.armed = true;
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client took no bytes for the send timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for SendDeadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for SendDeadline<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watched(cx, res)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watched(cx, res)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let res = Pin::new(&mut self.inner).poll_flush(cx);
        self.watched(cx, res)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let res = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watched(cx, res)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn connection(total: usize, per: usize) -> (Arc<SendBudget>, Arc<ConnectionSend>) {
        let budget = Arc::new(SendBudget::new(total, per));
        let c = ConnectionSend::new(budget.clone(), true);
        (budget, c)
    }

    #[tokio::test]
    async fn a_body_is_counted_until_hyper_has_taken_it_in_chunks() {
        let (budget, c) = connection(1 << 20, 1 << 20);
        let body = ResponseBody::admitted(Bytes::from(vec![7u8; 3 * CHUNK + 5]), &c, None).unwrap();
        assert_eq!(c.held(), 3 * CHUNK + 5);
        assert_eq!(budget.drawn(), 3 * CHUNK + 5 - ALLOWANCE);
        let mut body = Box::pin(body);
        let mut sizes = Vec::new();
        while let Some(frame) = body.frame().await {
            let data = frame.unwrap().into_data().unwrap();
            sizes.push(data.len());
            // The chunk just handed over is still counted; the ones before it are not.
            assert_eq!(c.held(), body.rest.len() + data.len());
        }
        assert_eq!(sizes, [CHUNK, CHUNK, CHUNK, 5]);
        drop(body);
        assert_eq!((c.held(), budget.drawn()), (0, 0));
    }

    #[test]
    fn past_a_budget_a_response_is_refused_but_one_alone_always_goes() {
        let (budget, c) = connection(100_000, 50_000);
        let big = |n: usize| Bytes::from(vec![0u8; n]);
        // Alone on its connection, larger than the connection's budget: goes.
        let first = ResponseBody::admitted(big(60_000), &c, None).unwrap();
        // A second one would pass the connection's budget.
        assert!(ResponseBody::admitted(big(1_000), &c, None).is_err());
        // A refusal's short answer is counted anyway.
        let no = ResponseBody::admitted_anyway(big(100), &c, None);
        assert_eq!(c.held(), 60_100);
        drop((first, no));
        assert_eq!((c.held(), budget.drawn()), (0, 0));

        // The total: other connections' draws count.
        let others: Vec<_> = (0..3)
            .map(|_| ConnectionSend::new(budget.clone(), false))
            .collect();
        let held: Vec<_> = others
            .iter()
            .take(2)
            .map(|o| ResponseBody::admitted(big(40_000 + ALLOWANCE), o, None).unwrap())
            .collect();
        assert_eq!(budget.drawn(), 80_000);
        assert!(ResponseBody::admitted(big(30_000 + ALLOWANCE), &others[2], None).is_err());
        // Within its allowance a connection draws nothing, so small answers always go.
        let small = ResponseBody::admitted(big(ALLOWANCE), &others[2], None).unwrap();
        drop((held, small));
        assert_eq!(budget.drawn(), 0);
        // The gateway holding nothing sends one response larger than the total.
        let huge = ResponseBody::admitted(big(200_000), &others[0], None).unwrap();
        assert!(ResponseBody::admitted(big(20_000 + ALLOWANCE), &others[1], None).is_err());
        drop(huge);
        assert_eq!(budget.drawn(), 0);
    }

    #[test]
    fn counts_hold_under_concurrent_admissions_and_releases() {
        let budget = Arc::new(SendBudget::new(10 << 20, 1 << 20));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let c = ConnectionSend::new(budget.clone(), true);
                std::thread::spawn(move || {
                    let mut kept = Vec::new();
                    for i in 0..2_000usize {
                        let n = (i * 7919 + t * 104_729) % (3 * ALLOWANCE);
                        if let Ok(b) = ResponseBody::admitted(Bytes::from(vec![0; n]), &c, None) {
                            kept.push(b);
                        }
                        if kept.len() > 8 {
                            kept.remove(i % kept.len());
                        }
                    }
                    drop(kept);
                    c.held()
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), 0);
        }
        assert_eq!(budget.drawn(), 0);
    }

    #[tokio::test]
    async fn an_idle_connection_ends_at_its_timeout_and_a_stalled_one_at_the_send_timeout() {
        let (_, c) = connection(1 << 20, 1 << 20);
        let (idle, send) = (Duration::from_millis(300), Duration::from_millis(200));
        let started = Instant::now();
        assert_eq!(c.watch(idle, send).await, Watched::Idle);
        assert!(started.elapsed() >= idle);

        // A stream open without a response held (the executor at work) is neither.
        let stream = c.stream_opened();
        let watched = tokio::time::timeout(3 * idle, c.watch(idle, send)).await;
        assert!(watched.is_err(), "a stream under way is not idle");
        // Its response held and never taken: stalled, a send timeout after it last moved.
        let body = ResponseBody::admitted(Bytes::from_static(b"hello"), &c, Some(stream)).unwrap();
        let held = Instant::now();
        assert_eq!(c.watch(idle, send).await, Watched::Stalled);
        assert!(held.elapsed() >= send - Duration::from_millis(5));
        drop(body);
        assert_eq!(c.held(), 0);
    }

    #[tokio::test]
    async fn a_write_that_waits_past_the_send_timeout_fails_and_one_that_moves_does_not() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let timeout = Duration::from_millis(200);
        // A client that reads nothing: the pipe's 1 KiB fills and the write times out.
        let (server, _client) = tokio::io::duplex(1024);
        let mut writer = SendDeadline::new(server, timeout);
        let started = Instant::now();
        let err = writer.write_all(&[1u8; 4096]).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= timeout);

        // A slow client that takes bytes within each timeout: the write completes.
        let (server, mut client) = tokio::io::duplex(1024);
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 512];
            let mut got = 0;
            while got < 8192 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                got += client.read(&mut buf).await.unwrap();
            }
            got
        });
        let mut writer = SendDeadline::new(server, timeout);
        writer.write_all(&[2u8; 8192]).await.unwrap();
        assert_eq!(reader.await.unwrap(), 8192);
    }
}
