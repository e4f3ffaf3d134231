//! A run's whole configuration as JSON: what the lab sends each of a cell's generators (`wasmlab
//! load --config -`), on this machine or another, so every part sends exactly what one
//! generator would (every request of a rotation, its expected status).

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};

use crate::config::{LoadConfig, RequestParts};

/// [`LoadConfig`] as data. The wall-clock start, cancellation and output are the command's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    pub url: String,
    pub requests: Vec<RequestSpec>,
    pub connections: usize,
    pub threads: usize,
    pub duration_secs: Option<f64>,
    /// Seconds sent first and not counted (see [`LoadConfig::warm_up`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_up_secs: Option<f64>,
    pub request_budget: Option<u64>,
    pub rate: Option<f64>,
    pub http2: bool,
    pub streams: usize,
    /// HTTPS: a PEM file on the machine that runs the part.
    pub ca_file: Option<PathBuf>,
    pub insecure: bool,
    pub timeout_secs: f64,
    pub spin: bool,
}

/// One request: the first is sent to `url`'s path, the rest rotated through on the same host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    /// The body's bytes.
    pub body: Vec<u8>,
    pub expect_status: Option<u16>,
}

impl LoadSpec {
    pub fn of(c: &LoadConfig) -> Self {
        let first = RequestSpec {
            method: c.method.to_string(),
            target: c
                .url
                .path_and_query()
                .map_or("/", |pq| pq.as_str())
                .to_owned(),
            headers: headers(&c.headers),
            body: c.body.to_vec(),
            expect_status: c.expect_status,
        };
        let rest = c.rotation.iter().map(|r| RequestSpec {
            method: r.method.to_string(),
            target: r.target.clone(),
            headers: headers(&r.headers),
            body: r.body.to_vec(),
            expect_status: r.expect_status,
        });
        Self {
            url: c.url.to_string(),
            requests: std::iter::once(first).chain(rest).collect(),
            connections: c.connections,
            threads: c.threads,
            duration_secs: c.duration.map(|d| d.as_secs_f64()),
            warm_up_secs: c.warm_up.map(|d| d.as_secs_f64()),
            request_budget: c.requests,
            rate: c.rate,
            http2: c.http2,
            streams: c.streams,
            ca_file: c.ca_file.clone(),
            insecure: c.insecure,
            timeout_secs: c.timeout.as_secs_f64(),
            spin: c.spin,
        }
    }

    /// The configuration this describes; a field that cannot be one is refused with the reason.
    pub fn config(&self) -> anyhow::Result<LoadConfig> {
        let mut c = LoadConfig::new(&self.url)?;
        let (first, rest) = self
            .requests
            .split_first()
            .ok_or_else(|| anyhow::anyhow!("the configuration has no request"))?;
        let first_target: hyper::Uri = first
            .target
            .parse()
            .map_err(|e| anyhow::anyhow!("{:?} is not a path: {e}", first.target))?;
        let mut url = c.url.into_parts();
        url.path_and_query = first_target.path_and_query().cloned();
        c.url = hyper::Uri::from_parts(url)?;
        c.method = method(&first.method)?;
        c.headers = parse_headers(&first.headers)?;
        c.body = Bytes::from(first.body.clone());
        c.expect_status = first.expect_status;
        c.rotation = rest
            .iter()
            .map(|r| {
                Ok(RequestParts {
                    method: method(&r.method)?,
                    target: r.target.clone(),
                    headers: parse_headers(&r.headers)?,
                    body: Bytes::from(r.body.clone()),
                    expect_status: r.expect_status,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        c.connections = self.connections;
        c.threads = self.threads;
        c.duration = seconds("duration", self.duration_secs)?;
        c.warm_up = seconds("warm-up", self.warm_up_secs)?;
        c.requests = self.request_budget;
        c.rate = self.rate;
        c.http2 = self.http2;
        c.streams = self.streams;
        c.ca_file = self.ca_file.clone();
        c.insecure = self.insecure;
        anyhow::ensure!(
            self.timeout_secs.is_finite() && self.timeout_secs > 0.0,
            "timeout {} is not a duration",
            self.timeout_secs
        );
        c.timeout = Duration::from_secs_f64(self.timeout_secs);
        c.spin = self.spin;
        Ok(c)
    }
}

/// `secs` as a duration; a negative or not finite number is refused, named `what`.
fn seconds(what: &str, secs: Option<f64>) -> anyhow::Result<Option<Duration>> {
    secs.map(|s| {
        anyhow::ensure!(s.is_finite() && s >= 0.0, "{what} {s} is not a duration");
        Ok(Duration::from_secs_f64(s))
    })
    .transpose()
}

fn headers(h: &[(HeaderName, HeaderValue)]) -> Vec<(String, String)> {
    h.iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

fn parse_headers(h: &[(String, String)]) -> anyhow::Result<Vec<(HeaderName, HeaderValue)>> {
    h.iter()
        .map(|(k, v)| {
            Ok((
                HeaderName::from_bytes(k.as_bytes())
                    .map_err(|e| anyhow::anyhow!("header name {k:?}: {e}"))?,
                HeaderValue::from_str(v).map_err(|e| anyhow::anyhow!("header {k}: {e}"))?,
            ))
        })
        .collect()
}

fn method(m: &str) -> anyhow::Result<hyper::Method> {
    m.parse()
        .map_err(|_| anyhow::anyhow!("{m:?} is not an HTTP method"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_survives_its_json() {
        let mut c = LoadConfig::new("http://127.0.0.1:9/greet?name=a").unwrap();
        c.method = hyper::Method::POST;
        c.headers = vec![(
            HeaderName::from_static("x-k"),
            HeaderValue::from_static("v"),
        )];
        c.body = Bytes::from_static(b"\x00\xffbody");
        c.expect_status = Some(201);
        c.rotation = vec![RequestParts {
            method: hyper::Method::GET,
            target: "/missing".into(),
            headers: Vec::new(),
            body: Bytes::new(),
            expect_status: Some(404),
        }];
        c.rate = Some(1234.5);
        c.connections = 7;
        c.duration = Some(Duration::from_millis(1500));
        c.warm_up = Some(Duration::from_millis(250));
        let spec = LoadSpec::of(&c);
        let back: LoadSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
        let d = back.config().unwrap();
        assert_eq!(LoadSpec::of(&d), spec);
        assert_eq!(d.url.to_string(), "http://127.0.0.1:9/greet?name=a");
        assert_eq!(d.rotation[0].expect_status, Some(404));
        assert_eq!(d.warm_up, Some(Duration::from_millis(250)));
        let e = serde_json::from_str::<LoadSpec>("{\"url\": \"http://x/\", \"extra\": 1}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field"), "{e}");
        let mut bad = spec.clone();
        bad.requests.clear();
        assert!(bad.config().unwrap_err().to_string().contains("no request"));
    }
}
