//! Verification before measurement: each workload the suite names, measured or only verified,
//! must be answered as its definition's check says (wasmlab's suites also check that unknown
//! routes answer 404 and wrong methods 405, as workloads of that kind). A variant that fails is
//! reported with what came back, and not measured.

use bytes::Bytes;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use wasmlab_model::run::Check;
use wasmlab_model::suite::ServerSuite;
use wasmlab_model::variant::Protocol;
use wasmlab_model::workload::{self, Answer};

use crate::launch::Running;
use crate::requests::{SentRequest, Workloads};

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

    /// Sends `r` on a fresh connection to the server (TLS over it for an https remote target),
    /// naming its authority as `Host` (unless `r` names its own), and reads the whole answer.
    pub fn fetch(&self, to: &Running, r: &SentRequest) -> anyhow::Result<Answer> {
        let (addr, authority) = (to.addr, to.authority.as_str());
        let mut req = Request::builder().method(r.method.as_str()).uri(&r.target);
        if !r
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("host"))
        {
            req = req.header(hyper::header::HOST, authority);
        }
        for (k, v) in &r.headers {
            req = req.header(k, v);
        }
        let req = req.body(Full::new(r.body.clone()))?;
        self.rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), async {
                let stream = tokio::net::TcpStream::connect(addr).await?;
                let http2 = to.protocol == Protocol::Http2;
                let resp = match &to.tls {
                    None => send(stream, req, http2, "http").await?,
                    Some(t) => {
                        let mut config = t.config.clone();
                        if http2 {
                            // The probe's configuration offers no ALPN; HTTP/2 must be chosen.
                            let mut own = (*config).clone();
                            own.alpn_protocols = vec![b"h2".to_vec()];
                            config = std::sync::Arc::new(own);
                        }
                        let connector = tokio_rustls::TlsConnector::from(config);
                        let tls = connector.connect(t.server_name.clone(), stream).await?;
                        if http2 && tls.get_ref().1.alpn_protocol() != Some(b"h2") {
                            anyhow::bail!(
                                "the server does not speak HTTP/2 over TLS (ALPN chose no h2)"
                            );
                        }
                        send(tls, req, http2, "https").await?
                    }
                };
                let status = resp.status().as_u16();
                let headers = resp
                    .headers()
                    .iter()
                    .map(|(k, v)| {
                        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
                        (k.as_str().to_owned(), v)
                    })
                    .collect();
                let body = resp.into_body().collect().await?.to_bytes().to_vec();
                Ok(Answer {
                    status,
                    headers,
                    body,
                })
            })
            .await
            .map_err(|_| anyhow::anyhow!("no answer within 10 s"))?
        })
    }
}

/// One request on a fresh connection over `io`, HTTP/1.1 or HTTP/2.
async fn send<IO>(
    io: IO,
    mut req: Request<Full<Bytes>>,
    http2: bool,
    scheme: &str,
) -> anyhow::Result<hyper::Response<hyper::body::Incoming>>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    if !http2 {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
        tokio::spawn(conn);
        return Ok(sender.send_request(req).await?);
    }
    // HTTP/2 names the authority in `:authority`, from the URI, not in a Host header.
    if let Some(host) = req.headers_mut().remove(hyper::header::HOST) {
        let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
        *req.uri_mut() = format!("{scheme}://{}{target}", host.to_str()?).parse()?;
    }
    let exchange = async {
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io)).await?;
        tokio::spawn(conn);
        sender.send_request(req).await
    };
    exchange.await.map_err(|e| {
        anyhow::anyhow!(
            "HTTP/2: {e} (no HTTP/2 answer: does the server speak it{}?)",
            match scheme {
                "http" => " by prior knowledge, h2c",
                _ => "",
            }
        )
    })
}

/// Checks every workload the suite names (measured in any way, or only verified), each request
/// of each, as its definition says. Returns every check; the variant passes when all are ok.
pub fn verify(
    client: &Client,
    to: &Running,
    suite: &ServerSuite,
    workloads: &Workloads,
) -> Vec<Check> {
    let mut checks = Vec::new();
    for name in suite.named_workloads() {
        let requests = match workloads.requests(&name) {
            Ok(r) => r,
            Err(e) => {
                checks.push(failed(name, format!("{e:#}")));
                continue;
            }
        };
        let several = requests.len() > 1;
        for r in requests {
            let what = match several {
                true => format!("{name} ({})", r.describe()),
                false => name.clone(),
            };
            checks.push(match check(client, to, r) {
                Ok(answer) => Check {
                    what,
                    ok: true,
                    detail: format!("{}, {} bytes", answer.status, answer.body.len()),
                },
                Err(why) => failed(what, why),
            });
        }
    }
    checks
}

fn failed(what: String, detail: String) -> Check {
    Check {
        what,
        ok: false,
        detail,
    }
}

/// Sends `r` and judges the answer (for a counter, two in a row). The error says which check
/// failed and what came back.
fn check(client: &Client, to: &Running, r: &SentRequest) -> Result<Answer, String> {
    let send = || {
        client
            .fetch(to, r)
            .map_err(|e| format!("{}: request failed: {e:#}", r.describe()))
    };
    let answer = send()?;
    r.expect.judge(&answer, &r.body, None)?;
    if !r.expect.increments {
        return Ok(answer);
    }
    let first = workload::counter(&answer.body);
    let second = send()?;
    r.expect.judge(&second, &r.body, first)?;
    Ok(second)
}
