//! One request's handler, which may wait for the host between two callbacks.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use wasmlab_handlers::{Host, Request, Response, handle};

/// What the handlers need of a proxy-wasm host, as calls that return at once.
pub trait Calls {
    /// Increments the shared counter; its new value.
    fn increment(&self) -> Result<u64, String>;
    /// Sends `GET target` to the upstream. Its answer comes later, to [`Exchange::reply`].
    fn dispatch_get(&self, target: &str) -> Result<(), String>;
}

type Reply = Rc<RefCell<Option<Result<Vec<u8>, String>>>>;

/// A request being handled: the handler's future, polled when the request is complete and again
/// when the upstream's reply arrives (proxy-wasm calls the filter back; nothing wakes a task, so
/// no executor is needed).
pub struct Exchange {
    handler: Pin<Box<dyn Future<Output = Response>>>,
    reply: Reply,
}

struct FilterHost<C> {
    calls: C,
    reply: Reply,
}

impl<C: Calls> Host for FilterHost<C> {
    async fn state_increment(&self) -> Result<u64, String> {
        self.calls.increment()
    }

    async fn proxy_get(&self, target: &str) -> Result<Vec<u8>, String> {
        self.calls.dispatch_get(target)?;
        std::future::poll_fn(|_| match self.reply.borrow_mut().take() {
            Some(r) => Poll::Ready(r),
            None => Poll::Pending,
        })
        .await
    }
}

impl Exchange {
    /// Starts handling a complete request; [`Exchange::poll`] runs it.
    pub fn start<C: Calls + 'static>(
        calls: C,
        method: String,
        target: String,
        body: Vec<u8>,
    ) -> Self {
        let reply = Reply::default();
        let host = FilterHost {
            calls,
            reply: reply.clone(),
        };
        let handler = Box::pin(async move {
            let req = Request::new(&method, &target, &body);
            handle(req, &host).await
        });
        Self { handler, reply }
    }

    /// Runs the handler as far as it goes: its response, or `None` while it waits for the upstream.
    pub fn poll(&mut self) -> Option<Response> {
        match self
            .handler
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(r) => Some(r),
            Poll::Pending => None,
        }
    }

    /// The upstream's answer (its body, or why there is none): the handler goes on.
    pub fn reply(&mut self, answer: Result<Vec<u8>, String>) -> Option<Response> {
        *self.reply.borrow_mut() = Some(answer);
        self.poll()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[derive(Clone, Default)]
    struct Recorded {
        counter: Rc<Cell<u64>>,
        sent: Rc<RefCell<Vec<String>>>,
        refuse: bool,
    }

    impl Calls for Recorded {
        fn increment(&self) -> Result<u64, String> {
            self.counter.set(self.counter.get() + 1);
            Ok(self.counter.get())
        }
        fn dispatch_get(&self, target: &str) -> Result<(), String> {
            if self.refuse {
                return Err("no such cluster".into());
            }
            self.sent.borrow_mut().push(target.to_owned());
            Ok(())
        }
    }

    fn start(calls: &Recorded, method: &str, target: &str, body: &[u8]) -> Exchange {
        Exchange::start(calls.clone(), method.into(), target.into(), body.to_vec())
    }

    #[test]
    fn a_request_without_host_calls_is_answered_at_once() {
        let calls = Recorded::default();
        let r = start(&calls, "GET", "/", b"").poll().unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
        let r = start(&calls, "POST", "/echo", b"\0body").poll().unwrap();
        assert_eq!(r.body, b"\0body");
        let r = start(&calls, "GET", "/state", b"").poll().unwrap();
        assert_eq!(r.body, b"1");
        let r = start(&calls, "GET", "/nope", b"").poll().unwrap();
        assert_eq!(r.status, 404);
    }

    #[test]
    fn proxy_waits_for_the_upstream_and_sends_once() {
        let calls = Recorded::default();
        let mut ex = start(&calls, "GET", "/proxy?x=1", b"");
        assert!(ex.poll().is_none());
        // Polled again before the reply (another callback): still waiting, nothing sent again.
        assert!(ex.poll().is_none());
        assert_eq!(*calls.sent.borrow(), ["/proxy?x=1"]);
        let r = ex.reply(Ok(b"GET /proxy?x=1".to_vec())).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"GET /proxy?x=1"[..]));
    }

    #[test]
    fn an_upstream_that_fails_or_cannot_be_called_answers_502() {
        let calls = Recorded::default();
        let mut ex = start(&calls, "GET", "/proxy", b"");
        assert!(ex.poll().is_none());
        let r = ex.reply(Err("upstream answered 503".into())).unwrap();
        assert_eq!(r.status, 502);
        assert!(String::from_utf8_lossy(&r.body).contains("upstream answered 503"));
        let refusing = Recorded {
            refuse: true,
            ..Recorded::default()
        };
        let r = start(&refusing, "GET", "/proxy", b"").poll().unwrap();
        assert_eq!(r.status, 502);
        assert!(String::from_utf8_lossy(&r.body).contains("no such cluster"));
    }
}
