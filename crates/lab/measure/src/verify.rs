//! Verification before measurement: every workload of a variant must answer the expected status and
//! body, and unknown routes and wrong methods must answer 404 and 405. A variant that fails is
//! reported and not measured.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use wasmlab_model::run::Check;

/// A small blocking HTTP client for readiness and verification (one connection per request).
pub struct Client {
    rt: tokio::runtime::Runtime,
}

impl Client {
    pub fn new() -> anyhow::Result<Self> {
        Ok(Self {
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
        })
    }

    pub fn fetch(
        &self,
        addr: SocketAddr,
        method: &str,
        target: &str,
        body: &[u8],
    ) -> anyhow::Result<(u16, Bytes)> {
        let req = Request::builder()
            .method(method)
            .uri(target)
            .header(hyper::header::HOST, addr.to_string())
            .body(Full::new(Bytes::copy_from_slice(body)))?;
        self.rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), async {
                let stream = tokio::net::TcpStream::connect(addr).await?;
                let (mut sender, conn) =
                    hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
                tokio::spawn(conn);
                let resp = sender.send_request(req).await?;
                let status = resp.status().as_u16();
                let body = resp.into_body().collect().await?.to_bytes();
                Ok((status, body))
            })
            .await
            .map_err(|_| anyhow::anyhow!("no answer within 10 s"))?
        })
    }
}

/// The request the lab sends for a workload.
pub struct WorkloadRequest {
    pub method: &'static str,
    pub target: &'static str,
    pub body: Bytes,
}

pub fn workload_request(workload: &str, echo_body_bytes: usize) -> anyhow::Result<WorkloadRequest> {
    let route = wasmlab_handlers::ROUTES
        .iter()
        .find(|r| r.workload == workload)
        .ok_or_else(|| anyhow::anyhow!("unknown workload {workload:?}"))?;
    let body = if workload == "echo" {
        // Printable and position-dependent, so a truncated or shuffled echo is caught.
        Bytes::from(
            (0..echo_body_bytes)
                .map(|i| b"abcdefghijklmnopqrstuvwxyz0123456789"[i % 36])
                .collect::<Vec<u8>>(),
        )
    } else {
        Bytes::new()
    };
    Ok(WorkloadRequest {
        method: route.method,
        target: route.path,
        body,
    })
}

/// Checks each workload and the 404/405 routes. Returns every check; the variant passes when all
/// are ok.
pub fn verify(
    client: &Client,
    addr: SocketAddr,
    workloads: &[String],
    echo_body_bytes: usize,
) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut check = |what: String, method: &str, target: &str, body: &[u8], want: Expect| {
        let (ok, detail) = match client.fetch(addr, method, target, body) {
            Err(e) => (false, format!("request failed: {e:#}")),
            Ok((status, got)) => match want.judge(status, &got) {
                Ok(()) => (true, format!("{status}, {} bytes", got.len())),
                Err(why) => (false, why),
            },
        };
        checks.push(Check { what, ok, detail });
    };
    for w in workloads {
        let req = match workload_request(w, echo_body_bytes) {
            Ok(r) => r,
            Err(e) => {
                check(w.clone(), "GET", "/", b"", Expect::Fail(e.to_string()));
                continue;
            }
        };
        let expect = match w.as_str() {
            "state" => {
                // Two requests in a row: the second must be the first plus one.
                let first = client
                    .fetch(addr, req.method, req.target, &req.body)
                    .ok()
                    .and_then(|(s, b)| (s == 200).then_some(b))
                    .and_then(|b| std::str::from_utf8(&b).ok()?.parse::<u64>().ok());
                match first {
                    Some(n) => Expect::Body(200, (n + 1).to_string().into_bytes()),
                    None => Expect::Fail("first /state did not answer 200 with a number".into()),
                }
            }
            "proxy" => Expect::Body(
                200,
                wasmlab_upstream::echo_of(req.method, req.target).into_bytes(),
            ),
            "echo" => Expect::Body(200, req.body.to_vec()),
            other => match wasmlab_handlers::expected_body(other) {
                Some(body) => Expect::Body(200, body),
                None => Expect::Status(200),
            },
        };
        check(w.clone(), req.method, req.target, &req.body, expect);
    }
    check(
        "404".into(),
        "GET",
        "/wasmlab/no-such-route",
        b"",
        Expect::Body(404, wasmlab_handlers::NOT_FOUND_BODY.as_bytes().to_vec()),
    );
    check(
        "405".into(),
        "POST",
        "/",
        b"",
        Expect::Body(
            405,
            wasmlab_handlers::METHOD_NOT_ALLOWED_BODY
                .as_bytes()
                .to_vec(),
        ),
    );
    checks
}

enum Expect {
    Status(u16),
    Body(u16, Vec<u8>),
    Fail(String),
}

impl Expect {
    fn judge(&self, status: u16, got: &[u8]) -> Result<(), String> {
        let (want_status, want_body) = match self {
            Expect::Fail(why) => return Err(why.clone()),
            Expect::Status(s) => (*s, None),
            Expect::Body(s, b) => (*s, Some(b)),
        };
        if status != want_status {
            return Err(format!(
                "status {status}, expected {want_status} (body {:?})",
                preview(got)
            ));
        }
        match want_body {
            Some(b) if b != got => Err(format!(
                "body {:?}, expected {:?}",
                preview(got),
                preview(b)
            )),
            _ => Ok(()),
        }
    }
}

fn preview(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    if s.len() > 80 {
        format!("{}… ({} bytes)", &s[..s.floor_char_boundary(80)], b.len())
    } else {
        s.into_owned()
    }
}
