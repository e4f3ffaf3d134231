//! An HTTP/1.1 keep-alive connection of a worker: its exchanges (the request written once, the
//! response framed by the worker's own parser), each timed by phase and counted.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::exchange::{Answer, Counted, Exchange, Failure, Schedule, Timing, count, turn};
use crate::http1;
use crate::report::Tally;
use crate::request::SerializedRequest;
use crate::shared::Shared;
use crate::transport::{self, Stream};

/// One keep-alive connection: the socket, the buffer its reads land in, and the response parser.
pub(crate) struct Connection {
    stream: Stream,
    buf: Box<[u8]>,
    parser: http1::ResponseParser,
}

/// Bytes one read takes at most; a hello response is ~100 bytes, larger bodies take several.
const READ_BUFFER_BYTES: usize = 16 * 1024;

impl Connection {
    fn new(stream: Stream) -> Self {
        Self {
            stream,
            buf: vec![0; READ_BUFFER_BYTES].into_boxed_slice(),
            parser: http1::ResponseParser::new(false),
        }
    }

    /// Sends the request and reads the whole response. One write of the ready bytes, then reads
    /// until the parser has framed the reply; a read that does not fill the buffer has drained
    /// the socket, so tokio waits for the next response without another read syscall.
    async fn exchange(
        &mut self,
        request: &SerializedRequest,
        begin: Instant,
    ) -> Result<Exchange, Failure> {
        let io = |e: std::io::Error| Failure::ReadWrite(e.to_string());
        self.parser.reset(request.head);
        self.stream.write_all(&request.bytes).await.map_err(io)?;
        let written = Instant::now();
        let mut first_byte = None;
        loop {
            let n = self.stream.read(&mut self.buf).await.map_err(io)?;
            let now = Instant::now();
            let first_byte = *first_byte.get_or_insert(now);
            let done = if n == 0 {
                Some(self.parser.eof().map_err(Failure::ReadWrite)?)
            } else {
                match self
                    .parser
                    .feed(&self.buf[..n])
                    .map_err(Failure::ReadWrite)?
                {
                    http1::Progress::Complete(r) => Some(r),
                    http1::Progress::More => None,
                }
            };
            if let Some(response) = done {
                return Ok(Exchange {
                    answer: Answer {
                        status: response.status,
                        body_bytes: response.body_bytes,
                        keep_alive: response.keep_alive,
                    },
                    begin,
                    written,
                    first_byte,
                    end: now,
                });
            }
        }
    }
}

/// Runs connection number `id` until the run ends: each request sent (in the open loop, at its
/// due time), its response awaited under the timeout, the outcome counted. With several
/// requests, it sends them in turn from the `id`-th on. Returns the connection still open, for
/// the caller to close when it chooses.
pub(crate) async fn connection(
    id: usize,
    shared: Arc<Shared>,
    tally: Rc<Tally>,
    schedule: Option<Schedule>,
) -> Option<Connection> {
    let mut conn: Option<Connection> = None;
    let requests = &shared.requests;
    let mut next = id % requests.len();
    let timeout = shared.config.timeout;
    // One timer per connection for the whole run, re-armed only when it fires: most exchanges
    // end long before it, and re-arming it for each one would cost more than the exchange's own
    // bookkeeping. When it fires before the current exchange's own deadline (it was armed for an
    // earlier one), it is moved to that deadline.
    let timer = tokio::time::sleep(timeout);
    tokio::pin!(timer);
    // The end of the previous exchange: the time the next one starts in the closed loop, so the
    // clock is read once per phase boundary.
    let mut now = Instant::now();
    loop {
        let Some(intended) = turn(&shared, schedule.as_ref(), &tally, &mut now).await else {
            break;
        };
        let started = now;
        let outcome = async {
            let (c, begin) = match conn.as_mut() {
                Some(c) => (c, started),
                None => {
                    let (stream, connected) =
                        transport::connect(&shared, tally.at(started), started).await?;
                    (conn.insert(Connection::new(stream)), connected)
                }
            };
            let deadline = started + timeout;
            let exchange = c.exchange(&requests[next], begin);
            tokio::pin!(exchange);
            loop {
                tokio::select! {
                    biased;
                    done = &mut exchange => break done,
                    () = &mut timer => {
                        if Instant::now() >= deadline {
                            break Err(Failure::Timeout);
                        }
                        timer.as_mut().reset(deadline.into());
                    }
                }
            }
        }
        .await;
        let expect_status = requests[next].expect_status;
        next = (next + 1) % requests.len();
        let ended = outcome.as_ref().map_or_else(|_| Instant::now(), |x| x.end);
        let counted = count(
            &mut tally.of(intended, ended).borrow_mut(),
            outcome,
            Timing {
                started,
                intended,
                timeout,
            },
            expect_status,
            &mut now,
        );
        match counted {
            Counted::Kept => {}
            Counted::Closing => conn = None,
            Counted::Failed => {
                conn = None;
                // A refused connect returns at once; do not spin on it.
                tokio::time::sleep(Duration::from_millis(1)).await;
                now = Instant::now();
            }
        }
    }
    conn
}
