//! HTTP/2 (`--h2`): each connection, by prior knowledge over cleartext or ALPN over TLS, carries
//! `streams` senders, each a closed-loop (or paced) sender of its own like an HTTP/1.1
//! connection. hyper's client frames the streams; the senders share its connection and, when it
//! breaks, a new one is opened for them.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::TokioIo;

use crate::exchange::{Answer, Counted, Exchange, Failure, Schedule, Timing, count, turn};
use crate::report::{Tally, WorkerStats};
use crate::request::H2Request;
use crate::shared::Shared;
use crate::transport;

/// Runs hyper's connection tasks on the worker's own thread.
#[derive(Clone, Copy)]
struct LocalExec;

impl<F: Future + 'static> hyper::rt::Executor<F> for LocalExec {
    fn execute(&self, fut: F) {
        tokio::task::spawn_local(fut);
    }
}

/// Runs connection number `id` and its streams until the run ends, opening a new connection
/// when one breaks.
pub(crate) async fn connection(
    id: usize,
    shared: Arc<Shared>,
    tally: Rc<Tally>,
    schedule: Option<Schedule>,
) {
    let streams = shared.config.streams.max(1);
    while !shared.stopped() {
        let started = Instant::now();
        let sender = match handshake(&shared, tally.at(started), started).await {
            Ok(s) => s,
            Err(f) => {
                // A connection that could not be made counts as a failed request in a sender's
                // turn, as over HTTP/1.1: a run bounded by requests ends, an open loop keeps its
                // pace, when the server is not there.
                let mut now = started;
                let Some(intended) = turn(&shared, schedule.as_ref(), &tally, &mut now).await
                else {
                    break;
                };
                let timing = Timing {
                    started,
                    intended,
                    timeout: shared.config.timeout,
                };
                let counts = tally.of(intended, Instant::now());
                count(&mut counts.borrow_mut(), Err(f), timing, None, &mut now);
                // A refused connect returns at once; do not spin on it.
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            }
        };
        let senders: Vec<_> = (0..streams)
            .map(|k| {
                tokio::task::spawn_local(stream(
                    id * streams + k,
                    shared.clone(),
                    tally.clone(),
                    schedule.clone(),
                    sender.clone(),
                ))
            })
            .collect();
        let mut broken = false;
        for s in senders {
            broken |= s.await.unwrap_or(true);
        }
        if !broken {
            break;
        }
    }
}

/// A new connection with its HTTP/2 handshake; its connect and TLS phases recorded.
async fn handshake(
    shared: &Shared,
    stats: &RefCell<WorkerStats>,
    started: Instant,
) -> Result<SendRequest<Full<Bytes>>, Failure> {
    let (stream, _) = transport::connect(shared, stats, started).await?;
    let addr = shared.config.authority();
    let handshake = hyper::client::conn::http2::handshake(LocalExec, TokioIo::new(stream));
    let (sender, conn) = tokio::time::timeout(shared.config.timeout, handshake)
        .await
        .map_err(|_| Failure::Connect(format!("HTTP/2 handshake with {addr} timed out")))?
        .map_err(|e| Failure::Connect(format!("HTTP/2 handshake with {addr}: {e}")))?;
    tokio::task::spawn_local(conn);
    Ok(sender)
}

/// One stream slot: sends its next request whenever its turn comes, until the run ends (false)
/// or the connection breaks (true).
async fn stream(
    k: usize,
    shared: Arc<Shared>,
    tally: Rc<Tally>,
    schedule: Option<Schedule>,
    mut sender: SendRequest<Full<Bytes>>,
) -> bool {
    let requests = &shared.h2_requests;
    let mut next = k % requests.len();
    let timeout = shared.config.timeout;
    let mut now = Instant::now();
    // Until a first answer, a broken connection may be a server that does not speak HTTP/2.
    let mut answered = false;
    loop {
        let Some(intended) = turn(&shared, schedule.as_ref(), &tally, &mut now).await else {
            return false;
        };
        let started = now;
        let r = &requests[next];
        next = (next + 1) % requests.len();
        let outcome = match tokio::time::timeout(timeout, exchange(&mut sender, r, started)).await {
            Ok(Err(Failure::ReadWrite(why))) => {
                let hint = match (answered, shared.tls.is_some()) {
                    (false, false) => {
                        " (no HTTP/2 answer yet: does the server speak h2c, HTTP/2 by prior knowledge?)"
                    }
                    _ => "",
                };
                let addr = shared.config.authority();
                Err(Failure::ReadWrite(format!(
                    "HTTP/2 with {addr}: {why}{hint}"
                )))
            }
            Ok(done) => done,
            Err(_) => Err(Failure::Timeout),
        };
        answered |= outcome.is_ok();
        let timing = Timing {
            started,
            intended,
            timeout,
        };
        let ended = outcome.as_ref().map_or_else(|_| Instant::now(), |x| x.end);
        let counted = count(
            &mut tally.of(intended, ended).borrow_mut(),
            outcome,
            timing,
            r.expect_status,
            &mut now,
        );
        if counted == Counted::Failed {
            if sender.is_closed() {
                return true;
            }
            now = Instant::now();
        }
    }
}

/// One request on its own stream, its answer read to the end of the body.
async fn exchange(
    sender: &mut SendRequest<Full<Bytes>>,
    r: &H2Request,
    begin: Instant,
) -> Result<Exchange, Failure> {
    // hyper's own line, then its causes (the h2 protocol error that broke the connection).
    let failed = |e: hyper::Error| Failure::ReadWrite(format!("{:#}", anyhow::Error::new(e)));
    sender.ready().await.map_err(failed)?;
    let response = sender.send_request(r.build()).await.map_err(failed)?;
    let first_byte = Instant::now();
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut body_bytes = 0u64;
    while let Some(frame) = body.frame().await {
        if let Some(data) = frame.map_err(failed)?.data_ref() {
            body_bytes += data.len() as u64;
        }
    }
    Ok(Exchange {
        answer: Answer {
            status,
            body_bytes,
            keep_alive: true,
        },
        begin,
        // hyper writes the request on its connection task: the send is not seen apart from the
        // wait, which then counts from the start.
        written: begin,
        first_byte,
        end: Instant::now(),
    })
}
