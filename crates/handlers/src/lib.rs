//! The workloads as plain functions: a request in, a response out, no I/O of their own.
//!
//! This crate is compiled natively (into the native gateway) and into every Wasm guest, so the
//! work measured is the same code in every variant. Anything that needs the outside world (the
//! shared counter of `/state`, the upstream call of `/proxy`) goes through the [`Host`] trait: the
//! native gateway implements it directly, the guests implement it with host imports.

#![forbid(unsafe_code)]

mod compute;

pub use compute::{DEFAULT_ITERS, MAX_ITERS, SEED, chained_sha256_hex};

/// A request as the handlers see it. `target` is the request-target (path and query).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    pub method: &'a str,
    pub target: &'a str,
    pub body: &'a [u8],
}

impl<'a> Request<'a> {
    pub fn new(method: &'a str, target: &'a str, body: &'a [u8]) -> Self {
        Self {
            method,
            target,
            body,
        }
    }

    /// The path, without the query.
    pub fn path(&self) -> &'a str {
        self.target.split_once('?').map_or(self.target, |(p, _)| p)
    }

    /// The query string (after `?`), empty when there is none.
    pub fn query(&self) -> &'a str {
        self.target.split_once('?').map_or("", |(_, q)| q)
    }

    /// The first value of a query parameter, undecoded (the workloads only take plain numbers).
    pub fn query_param(&self, name: &str) -> Option<&'a str> {
        self.query().split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k == name).then_some(v)
        })
    }
}

/// A response: status, headers (besides content-length, which the server sets) and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// The content types the handlers answer with.
pub const TEXT_PLAIN: &str = "text/plain; charset=utf-8";
pub const OCTET_STREAM: &str = "application/octet-stream";

impl Response {
    pub fn text(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type", TEXT_PLAIN.to_owned())],
            body: body.into(),
        }
    }

    pub fn bytes(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type", OCTET_STREAM.to_owned())],
            body: body.into(),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the handlers need from outside: the host's capabilities.
///
/// Both are async: the native gateway awaits its HTTP client, and a WASI 0.3 component awaits its
/// outgoing requests; in the other guests the import is synchronous from the guest's point of
/// view and the future is ready at its first poll.
pub trait Host {
    /// Increments the shared counter and returns its new value. It fails only where the counter
    /// is not the host's own: a wasi:http component's lives on the lab's upstream, reached over
    /// HTTP (`wasmlab-guest-http`).
    fn state_increment(&self) -> impl Future<Output = Result<u64, String>>;
    /// Sends `GET target` to the upstream and returns its response body.
    fn proxy_get(&self, target: &str) -> impl Future<Output = Result<Vec<u8>, String>>;
}

/// One row of the route table: the workload's name, its path and its method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub workload: &'static str,
    pub method: &'static str,
    pub path: &'static str,
}

/// Every route the handlers serve. The tests walk this table; the lab's definitions of these
/// workloads (`suites/workloads.toml`) are checked against it.
pub const ROUTES: &[Route] = &[
    Route {
        workload: "hello",
        method: "GET",
        path: "/",
    },
    Route {
        workload: "compute",
        method: "GET",
        path: "/compute",
    },
    Route {
        workload: "state",
        method: "GET",
        path: "/state",
    },
    Route {
        workload: "proxy",
        method: "GET",
        path: "/proxy",
    },
    Route {
        workload: "echo",
        method: "POST",
        path: "/echo",
    },
];

pub const HELLO_BODY: &str = "hello";
pub const NOT_FOUND_BODY: &str = "not found";
pub const METHOD_NOT_ALLOWED_BODY: &str = "method not allowed";

/// Routes a request to its workload.
pub async fn handle<H: Host>(req: Request<'_>, host: &H) -> Response {
    let path = req.path();
    let Some(route) = ROUTES.iter().find(|r| r.path == path) else {
        return Response::text(404, NOT_FOUND_BODY);
    };
    // HEAD is not served: every workload has a side effect or a cost that a HEAD should not trigger.
    if req.method != route.method {
        let mut resp = Response::text(405, METHOD_NOT_ALLOWED_BODY);
        resp.headers.push(("allow", route.method.to_owned()));
        return resp;
    }
    match route.workload {
        "hello" => Response::text(200, HELLO_BODY),
        "compute" => compute(&req),
        "state" => match host.state_increment().await {
            Ok(n) => Response::text(200, n.to_string()),
            Err(e) => Response::text(502, format!("counter error: {e}")),
        },
        "proxy" => match host.proxy_get(req.target).await {
            Ok(body) => Response::bytes(200, body),
            Err(e) => Response::text(502, format!("upstream error: {e}")),
        },
        "echo" => Response::bytes(200, req.body.to_vec()),
        _ => unreachable!("every route in ROUTES has a workload"),
    }
}

fn compute(req: &Request<'_>) -> Response {
    let iters = match req.query_param("iters") {
        None => DEFAULT_ITERS,
        Some(v) => match v.parse::<u32>() {
            Ok(n) if n <= MAX_ITERS => n,
            _ => {
                return Response::text(400, format!("iters must be an integer in 0..={MAX_ITERS}"));
            }
        },
    };
    Response::text(200, chained_sha256_hex(iters))
}

/// Runs a handler future whose host calls are all synchronous (the guests' case): it completes at
/// its first poll, so no executor is needed.
pub fn run_ready<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!("a handler awaited a host call that was not ready"),
    }
}

/// The expected response body for a route in a fresh server (the lab's workload definitions are
/// checked against it).
/// `state` has no fixed body (the counter moves); `proxy` depends on the upstream (see `wasmlab-upstream`).
pub fn expected_body(workload: &str) -> Option<Vec<u8>> {
    match workload {
        "hello" => Some(HELLO_BODY.as_bytes().to_vec()),
        "compute" => Some(chained_sha256_hex(DEFAULT_ITERS).into_bytes()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    struct TestHost {
        counter: Cell<u64>,
        upstream: Result<Vec<u8>, String>,
    }

    impl TestHost {
        fn new() -> Self {
            Self {
                counter: Cell::new(0),
                upstream: Ok(b"GET /proxy".to_vec()),
            }
        }
    }

    impl Host for TestHost {
        async fn state_increment(&self) -> Result<u64, String> {
            self.counter.set(self.counter.get() + 1);
            Ok(self.counter.get())
        }
        async fn proxy_get(&self, target: &str) -> Result<Vec<u8>, String> {
            assert_eq!(target, "/proxy");
            self.upstream.clone()
        }
    }

    fn call(host: &TestHost, method: &str, target: &str, body: &[u8]) -> Response {
        run_ready(handle(Request::new(method, target, body), host))
    }

    #[test]
    fn hello() {
        let r = call(&TestHost::new(), "GET", "/", b"");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
        assert_eq!(r.header("Content-Type"), Some("text/plain; charset=utf-8"));
    }

    #[test]
    fn compute_default_and_param() {
        let h = TestHost::new();
        let r = call(&h, "GET", "/compute", b"");
        assert_eq!(r.status, 200);
        assert_eq!(r.body, chained_sha256_hex(DEFAULT_ITERS).into_bytes());
        let r = call(&h, "GET", "/compute?iters=2", b"");
        assert_eq!(r.body, chained_sha256_hex(2).into_bytes());
        let r = call(&h, "GET", "/compute?x=1&iters=0", b"");
        assert_eq!(r.body, chained_sha256_hex(0).into_bytes());
    }

    #[test]
    fn compute_rejects_bad_iters() {
        let h = TestHost::new();
        for q in ["iters=abc", "iters=-1", "iters=", "iters=99999999999"] {
            let r = call(&h, "GET", &format!("/compute?{q}"), b"");
            assert_eq!(r.status, 400, "{q}");
        }
    }

    #[test]
    fn state_counts() {
        let h = TestHost::new();
        let bodies: Vec<_> = (0..3)
            .map(|_| call(&h, "GET", "/state", b"").body)
            .collect();
        assert_eq!(bodies, vec![b"1".to_vec(), b"2".to_vec(), b"3".to_vec()]);
    }

    #[test]
    fn proxy_returns_upstream_body_or_502() {
        let mut h = TestHost::new();
        let r = call(&h, "GET", "/proxy", b"");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"GET /proxy"[..]));
        h.upstream = Err("connection refused".into());
        let r = call(&h, "GET", "/proxy", b"");
        assert_eq!(r.status, 502);
    }

    #[test]
    fn echo_returns_body() {
        let r = call(&TestHost::new(), "POST", "/echo", b"\x00abc\xff");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"\x00abc\xff"[..]));
    }

    #[test]
    fn not_found_and_method_not_allowed() {
        let h = TestHost::new();
        let r = call(&h, "GET", "/nope", b"");
        assert_eq!(
            (r.status, r.body.as_slice()),
            (404, NOT_FOUND_BODY.as_bytes())
        );
        let r = call(&h, "POST", "/", b"");
        assert_eq!(r.status, 405);
        assert_eq!(r.header("allow"), Some("GET"));
        let r = call(&h, "GET", "/echo", b"");
        assert_eq!((r.status, r.header("allow")), (405, Some("POST")));
        // The counter is not touched by a rejected request.
        call(&h, "PUT", "/state", b"");
        assert_eq!(h.counter.get(), 0);
    }

    #[test]
    fn query_parsing() {
        let r = Request::new("GET", "/a?b=1&c&d=", b"");
        assert_eq!(r.path(), "/a");
        assert_eq!(r.query_param("b"), Some("1"));
        assert_eq!(r.query_param("c"), Some(""));
        assert_eq!(r.query_param("d"), Some(""));
        assert_eq!(r.query_param("e"), None);
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;
    use std::cell::Cell;

    struct CountingHost(Cell<u64>);

    impl Host for CountingHost {
        async fn state_increment(&self) -> Result<u64, String> {
            self.0.set(self.0.get() + 1);
            Ok(self.0.get())
        }
        async fn proxy_get(&self, target: &str) -> Result<Vec<u8>, String> {
            Ok(format!("GET {target}").into_bytes())
        }
    }

    fn call(host: &CountingHost, method: &str, target: &str, body: &[u8]) -> Response {
        run_ready(handle(Request::new(method, target, body), host))
    }

    proptest! {
        #[test]
        fn echo_returns_any_body(body in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let r = call(&CountingHost(Cell::new(0)), "POST", "/echo", &body);
            prop_assert_eq!(r.status, 200);
            prop_assert_eq!(r.body, body);
        }

        #[test]
        fn any_request_gets_a_valid_answer(
            method in "[A-Z]{1,8}",
            target in "/[ -~]{0,64}",
            body in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let host = CountingHost(Cell::new(0));
            let r = call(&host, &method, &target, &body);
            prop_assert!([200, 400, 404, 405, 502].contains(&r.status), "{} {}", r.status, target);
            let route = ROUTES.iter().find(|rt| rt.path == Request::new(&method, &target, &body).path());
            match route {
                None => prop_assert_eq!(r.status, 404),
                Some(rt) if rt.method != method => {
                    prop_assert_eq!(r.status, 405);
                    prop_assert_eq!(r.header("allow"), Some(rt.method));
                }
                Some(_) => prop_assert!(r.status == 200 || r.status == 400),
            }
            // Only a served /state touches the counter.
            let touched = route.is_some_and(|rt| rt.workload == "state" && rt.method == method);
            prop_assert_eq!(host.0.get(), u64::from(touched));
        }

        #[test]
        fn compute_accepts_exactly_the_valid_iters(
            // Cheap valid counts, or counts past the limit (valid ones up to it would be slow).
            iters in prop_oneof![0u64..2_000, (u64::from(MAX_ITERS) + 1)..],
            small in 0u32..50,
        ) {
            let host = CountingHost(Cell::new(0));
            let r = call(&host, "GET", &format!("/compute?iters={iters}"), b"");
            let want = if iters <= u64::from(MAX_ITERS) { 200 } else { 400 };
            prop_assert_eq!(r.status, want);
            // The chain is a chain: n + 1 iterations hash the hex-decoded result of n.
            let r = call(&host, "GET", &format!("/compute?iters={}", small + 1), b"");
            let prev = chained_sha256_hex(small);
            let prev_bytes: Vec<u8> = if small == 0 {
                SEED.to_vec()
            } else {
                (0..prev.len()).step_by(2).map(|i| u8::from_str_radix(&prev[i..i + 2], 16).unwrap()).collect()
            };
            use sha2::Digest;
            let want: String = sha2::Sha256::digest(&prev_bytes).iter().map(|b| format!("{b:02x}")).collect();
            prop_assert_eq!(String::from_utf8(r.body).unwrap(), want);
        }

        #[test]
        fn state_counts_up_by_one(n in 1usize..50) {
            let host = CountingHost(Cell::new(0));
            for i in 1..=n {
                let r = call(&host, "GET", "/state", b"");
                prop_assert_eq!(r.body, i.to_string().into_bytes());
            }
        }
    }
}
