//! What clients that do not read can hold: every response's bytes are counted from when the
//! executor produced them until they leave the gateway's own queue, against a budget per
//! connection and one for the whole gateway; an HTTP/1.1 connection whose writes make no progress
//! for the send timeout is closed ([`SendDeadline`]), and an HTTP/2 stream whose response makes
//! none is reset while its connection's other streams go on ([`StreamSpawner`]); either gives its
//! memory back.
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

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use slab::Slab;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::log::{self, Incident, RequestId};

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

/// The instant [`now_ms`] counts from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Milliseconds since the first call: a clock an atomic can hold.
fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64
}

/// One connection's share: what it holds and its open HTTP/2 streams.
#[derive(Debug)]
pub struct ConnectionSend {
    budget: Arc<SendBudget>,
    held: AtomicUsize,
    /// Woken when the open streams fall to or leave none.
    changed: Notify,
    /// The HTTP/2 streams with a request or response under way: how many (idleness), and each
    /// one's progress for the watcher to find those whose responses stall.
    open: Mutex<OpenStreams>,
}

#[derive(Debug, Default)]
struct OpenStreams {
    streams: Slab<Weak<StreamSend>>,
    /// The stream whose request hyper has just handed the service, until hyper hands its task
    /// to the [`StreamSpawner`] (hyper does one right after the other).
    just_opened: Option<Arc<StreamSend>>,
}

impl ConnectionSend {
    pub fn new(budget: Arc<SendBudget>) -> Arc<Self> {
        Arc::new(Self {
            budget,
            held: AtomicUsize::new(0),
            changed: Notify::new(),
            open: Mutex::default(),
        })
    }

    fn open(&self) -> MutexGuard<'_, OpenStreams> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// Notes an HTTP/2 stream's request `id`; the stream counts as open until the guard is
    /// dropped, and is watched by [`ConnectionSend::watch`] once the [`StreamSpawner`] runs it.
    pub fn stream_opened(self: &Arc<Self>, id: RequestId) -> StreamGuard {
        let mut open = self.open();
        if open.streams.is_empty() {
            self.changed.notify_one();
        }
        let entry = open.streams.vacant_entry();
        let stream = Arc::new(StreamSend {
            connection: self.clone(),
            id,
            key: entry.key(),
            held: AtomicUsize::new(0),
            progress_ms: AtomicU64::new(now_ms()),
            task: OnceLock::new(),
        });
        entry.insert(Arc::downgrade(&stream));
        open.just_opened = Some(stream.clone());
        StreamGuard(stream)
    }

    /// Resolves once no stream has been open for `idle` (HTTP/2's idle timeout); meanwhile
    /// ends the task of each stream whose response holds bytes none of which hyper could send
    /// for `send` (its send timeout), looking every quarter of it.
    pub async fn watch(&self, idle: Duration, send: Duration) {
        let every = (send / 4).max(Duration::from_millis(10));
        loop {
            // A stale wake-up (a stream opened and closed since) only goes round once more.
            let changed = self.changed.notified();
            if self.open().streams.is_empty() {
                tokio::select! {
                    _ = tokio::time::sleep(idle) => {
                        if self.open().streams.is_empty() {
                            return;
                        }
                    }
                    _ = changed => {}
                }
            } else {
                tokio::select! {
                    _ = tokio::time::sleep(every) => self.reset_stalled(send),
                    _ = changed => {}
                }
            }
        }
    }

    /// Ends the tasks of the streams whose responses have not moved for `timeout`: h2 then
    /// resets each (RST_STREAM, CANCEL) and frees what it had queued for it.
    fn reset_stalled(&self, timeout: Duration) {
        let now = now_ms();
        let stalled: Vec<Arc<StreamSend>> = self
            .open()
            .streams
            .iter()
            .filter_map(|(_, s)| s.upgrade())
            .filter(|s| s.stalled(now, timeout))
            .collect();
        for s in stalled {
            let Some(task) = s.task.get() else { continue };
            let held = s.held.swap(0, Ordering::Relaxed);
            task.abort();
            log::incident(
                Incident::SendTimeout,
                s.id,
                format_args!(
                    "HTTP/2: its response held {held} bytes and none were taken for {timeout:?}; stream reset, the connection goes on"
                ),
            );
        }
    }
}

/// One HTTP/2 stream's response: what it holds and when it last moved, kept by its body and
/// read by its connection's watcher.
#[derive(Debug)]
pub struct StreamSend {
    connection: Arc<ConnectionSend>,
    id: RequestId,
    /// Its place among the connection's open streams.
    key: usize,
    /// Bytes of its response not yet taken by hyper (the chunk hyper holds included).
    held: AtomicUsize,
    /// `now_ms()` when its response was admitted or last gave hyper a chunk.
    progress_ms: AtomicU64,
    /// The task hyper runs it in, once spawned.
    task: OnceLock<AbortHandle>,
}

impl StreamSend {
    /// Notes that the response holds `held` bytes now, having just moved.
    fn moved(&self, held: usize) {
        self.held.store(held, Ordering::Relaxed);
        self.progress_ms.store(now_ms(), Ordering::Relaxed);
    }

    /// Whether it holds bytes that have not moved for `timeout` at `now` (ms).
    fn stalled(&self, now: u64, timeout: Duration) -> bool {
        let since = now.saturating_sub(self.progress_ms.load(Ordering::Relaxed));
        self.held.load(Ordering::Relaxed) > 0 && since >= timeout.as_millis() as u64
    }
}

/// An HTTP/2 stream under way; dropped with its response (or its request, if that ends first).
#[derive(Debug)]
pub struct StreamGuard(Arc<StreamSend>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let connection = &self.0.connection;
        let mut open = connection.open();
        open.streams.try_remove(self.0.key);
        if open.streams.is_empty() {
            connection.changed.notify_one();
        }
    }
}

/// The executor hyper hands each HTTP/2 stream's task to: it spawns the task and keeps the
/// means to end it, so that a stream whose client opened no window for its response is reset
/// at the send timeout ([`ConnectionSend::watch`]) while the connection's other streams go on.
/// Costs nothing per poll: the watcher looks at the open streams a few times per timeout.
#[derive(Debug, Clone)]
pub struct StreamSpawner(Arc<ConnectionSend>);

impl StreamSpawner {
    pub fn new(connection: Arc<ConnectionSend>) -> Self {
        Self(connection)
    }
}

impl<F> hyper::rt::Executor<F> for StreamSpawner
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, task: F) {
        // hyper calls the service with a stream's request and then hands over the stream's task,
        // so the stream just opened is this task's.
        let opened = self.0.open().just_opened.take();
        let spawned = tokio::spawn(task);
        if let Some(stream) = opened {
            let _ = stream.task.set(spawned.abort_handle());
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
    stream: Option<StreamGuard>,
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
        if let Some(s) = &stream {
            s.0.moved(body.len());
        }
        Self {
            counted: body.len(),
            rest: body,
            connection: Some(connection.clone()),
            stream,
        }
    }

    /// A body counted nowhere (outside a server: tests, the fuzz target).
    pub fn uncounted(body: Bytes) -> Self {
        Self {
            counted: 0,
            rest: body,
            connection: None,
            stream: None,
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
        }
        if let Some(s) = &this.stream {
            s.0.moved(this.counted);
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
        if let Some(s) = &self.stream {
            s.0.held.store(0, Ordering::Relaxed);
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
        let c = ConnectionSend::new(budget.clone());
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
            .map(|_| ConnectionSend::new(budget.clone()))
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
                let c = ConnectionSend::new(budget.clone());
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

    fn id(sequence: u64) -> RequestId {
        RequestId {
            connection: 1,
            sequence,
        }
    }

    #[tokio::test]
    async fn a_connection_is_idle_once_no_stream_has_been_open_for_the_timeout() {
        let (_, c) = connection(1 << 20, 1 << 20);
        let idle = Duration::from_millis(300);
        let started = Instant::now();
        let send = Duration::from_secs(10);
        c.watch(idle, send).await;
        assert!(started.elapsed() >= idle);

        // A stream open (its request at the executor, or its response under way) is not idle.
        let stream = c.stream_opened(id(1));
        let waited = tokio::time::timeout(3 * idle, c.watch(idle, send)).await;
        assert!(waited.is_err(), "a stream under way is not idle");
        // Once it ends, the timeout counts from then.
        let ended = Instant::now();
        drop(stream);
        c.watch(idle, send).await;
        assert!(ended.elapsed() >= idle);
    }

    /// A stream's task as hyper would hand it over, its connection watched meanwhile: it
    /// answers at once and then waits for its client, which takes the first `taken` chunks only,
    /// one every 150 ms. How long the task lasted.
    async fn stream_task(c: &Arc<ConnectionSend>, taken: usize) -> Duration {
        use hyper::rt::Executor as _;
        let guard = c.stream_opened(id(1));
        let body = Bytes::from(vec![1u8; 4 * CHUNK]);
        let mut body = ResponseBody::admitted(body, c, Some(guard)).unwrap();
        let started = Instant::now();
        let (ended_tx, ended_rx) = tokio::sync::oneshot::channel::<()>();
        StreamSpawner::new(c.clone()).execute(async move {
            let _ended = ended_tx;
            for _ in 0..taken {
                body.frame().await;
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            std::future::pending::<()>().await;
        });
        // Dropping the task drops the sender: the only way it ends.
        tokio::select! {
            ended = ended_rx => assert!(ended.is_err()),
            () = c.watch(Duration::from_secs(60), Duration::from_millis(200)) => unreachable!(),
        }
        started.elapsed()
    }

    #[tokio::test]
    async fn a_stream_whose_response_stalls_is_ended_at_the_send_timeout_and_its_bytes_freed() {
        let (budget, c) = connection(1 << 20, 1 << 20);
        // Its first chunk taken at once, then nothing: ended a timeout (200 ms) later, within the
        // watcher's look every 50 ms.
        let lasted = stream_task(&c, 1).await;
        assert!(lasted >= Duration::from_millis(190), "{lasted:?}");
        assert!(lasted < Duration::from_millis(1500), "{lasted:?}");
        assert_eq!((c.held(), budget.drawn()), (0, 0));
        assert!(c.open().streams.is_empty());
        // A chunk taken every 150 ms is not cut while it moves: only a timeout after the last
        // (the fourth, at 450 ms).
        let lasted = stream_task(&c, 4).await;
        assert!(lasted >= Duration::from_millis(640), "{lasted:?}");
        assert_eq!((c.held(), budget.drawn()), (0, 0));
    }

    #[tokio::test]
    async fn a_stream_waiting_for_its_answer_is_not_cut() {
        use hyper::rt::Executor as _;
        let (_, c) = connection(1 << 20, 1 << 20);
        let guard = c.stream_opened(id(1));
        let (tx, rx) = tokio::sync::oneshot::channel();
        // An executor that takes five timeouts to answer: nothing is held meanwhile.
        StreamSpawner::new(c.clone()).execute(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            drop(guard);
            let _ = tx.send(());
        });
        tokio::select! {
            answered = rx => assert!(answered.is_ok(), "the task was ended before it answered"),
            () = c.watch(Duration::from_secs(60), Duration::from_millis(100)) => unreachable!(),
        }
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
