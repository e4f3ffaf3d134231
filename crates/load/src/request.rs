//! The run's requests, built once from its configuration: serialised for HTTP/1.1, as parts
//! for HTTP/2 (hyper's requests are not `Clone`).

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Uri};

use crate::config::{LoadConfig, RequestParts};
use crate::http1;

/// A request as it goes on the wire, serialised once.
pub(crate) struct SerializedRequest {
    pub(crate) bytes: Bytes,
    /// A HEAD: its answer has no body whatever its headers say.
    pub(crate) head: bool,
    /// The status of a successful answer (None: any 2xx).
    pub(crate) expect_status: Option<u16>,
}

/// One request of the run as HTTP/2 sends it (hyper's requests are not `Clone`: each exchange
/// builds its own from these parts, the body shared).
pub(crate) struct H2Request {
    pub(crate) method: Method,
    /// Absolute: hyper takes `:scheme` and `:authority` from it.
    pub(crate) uri: Uri,
    pub(crate) headers: hyper::HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) expect_status: Option<u16>,
}

impl H2Request {
    pub(crate) fn build(&self) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(self.body.clone()));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }
}

/// The run's requests as HTTP/1.1 sends them: the first, then any rotated through.
pub(crate) fn for_http1(config: &LoadConfig) -> anyhow::Result<Vec<SerializedRequest>> {
    let path = config.url.path_and_query().map_or("/", |pq| pq.as_str());
    let authority = config.authority();
    let mut requests = vec![SerializedRequest {
        bytes: http1::serialize_request(
            &config.method,
            path,
            &authority,
            &config.headers,
            &config.body,
        )?,
        head: config.method == hyper::Method::HEAD,
        expect_status: config.expect_status,
    }];
    for r in &config.rotation {
        anyhow::ensure!(
            r.target.starts_with('/'),
            "a rotated request's target {:?} does not start with '/'",
            r.target
        );
        requests.push(SerializedRequest {
            bytes: http1::serialize_request(&r.method, &r.target, &authority, &r.headers, &r.body)?,
            head: r.method == hyper::Method::HEAD,
            expect_status: r.expect_status.or(config.expect_status),
        });
    }
    Ok(requests)
}

/// The run's requests as HTTP/2 exchanges build them: the first, then any rotated through.
pub(crate) fn for_http2(config: &LoadConfig) -> anyhow::Result<Vec<H2Request>> {
    let base = format!(
        "{}://{}",
        config.url.scheme_str().unwrap_or("http"),
        config.authority()
    );
    let path = config.url.path_and_query().map_or("/", |pq| pq.as_str());
    let first = RequestParts {
        method: config.method.clone(),
        target: path.to_owned(),
        headers: config.headers.clone(),
        body: config.body.clone(),
        expect_status: config.expect_status,
    };
    std::iter::once(&first)
        .chain(&config.rotation)
        .map(|r| {
            let mut headers = hyper::HeaderMap::new();
            for (k, v) in &r.headers {
                // HTTP/2 names the host in `:authority`, from the URL.
                if k != hyper::header::HOST {
                    headers.append(k.clone(), v.clone());
                }
            }
            Ok(H2Request {
                method: r.method.clone(),
                uri: format!("{base}{}", r.target).parse()?,
                headers,
                body: r.body.clone(),
                expect_status: r.expect_status.or(config.expect_status),
            })
        })
        .collect()
}
