//! A workload's requests as the lab sends them: each body loaded once, each with the check its
//! answers must pass. Verification sends them one by one, the load cells hand them to the load
//! generator, and a launch is ready (a cold start over) when the first one is answered with its
//! expected status.

use bytes::Bytes;
use wasmlab_load::{LoadConfig, RequestParts};
use wasmlab_model::suite::ServerSuite;
use wasmlab_model::workload::{Expect, Workload};

/// One request of a workload, ready to send.
#[derive(Debug, Clone)]
pub struct SentRequest {
    pub method: String,
    /// The path and query.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
    pub expect: Expect,
}

impl SentRequest {
    /// Every request of `w`, in the order the workload sends them.
    pub fn all_of(w: &Workload) -> anyhow::Result<Vec<SentRequest>> {
        w.each_request()
            .map(|r| {
                let body = r
                    .load_body()
                    .map_err(|e| anyhow::anyhow!("workload {:?}: {e:#}", w.name))?;
                Ok(SentRequest {
                    method: r.method.clone(),
                    target: r.path.clone(),
                    headers: r
                        .headers
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    body: Bytes::from(body),
                    expect: w.expect_for(r).clone(),
                })
            })
            .collect()
    }

    /// `GET path`, ready on a 200 (a variant's own `ready_path`, the upstream's `/`).
    pub fn get(path: &str) -> Self {
        SentRequest {
            method: "GET".into(),
            target: path.into(),
            headers: Vec::new(),
            body: Bytes::new(),
            expect: Expect::default(),
        }
    }

    /// `GET /greet`, as messages name it.
    pub fn describe(&self) -> String {
        format!("{} {}", self.method, self.target)
    }

    /// The request on the wire with `Connection: close`, for a probe on a fresh connection to
    /// `authority` (`host:port`, sent as `Host` unless the request names its own).
    pub fn closing_bytes(&self, authority: &str) -> Vec<u8> {
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.target).into_bytes();
        if !self
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("host"))
        {
            out.extend_from_slice(format!("host: {authority}\r\n").as_bytes());
        }
        for (k, v) in &self.headers {
            out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
        }
        if !self.body.is_empty() || matches!(self.method.as_str(), "POST" | "PUT" | "PATCH") {
            out.extend_from_slice(format!("content-length: {}\r\n", self.body.len()).as_bytes());
        }
        out.extend_from_slice(b"connection: close\r\n\r\n");
        out.extend_from_slice(&self.body);
        out
    }

    fn parts(&self) -> anyhow::Result<RequestParts> {
        let headers = self
            .headers
            .iter()
            .map(|(k, v)| Ok((k.parse()?, v.parse()?)))
            .collect::<anyhow::Result<_>>()?;
        Ok(RequestParts {
            method: self.method.parse()?,
            target: self.target.clone(),
            headers,
            body: self.body.clone(),
            expect_status: self.expect.status.code(),
        })
    }
}

/// Every workload a suite names, its requests ready to send: body files are read once per run.
pub struct Workloads {
    named: Vec<(String, Vec<SentRequest>)>,
}

impl Workloads {
    pub fn of(suite: &ServerSuite) -> anyhow::Result<Self> {
        let named = suite
            .named_workloads()
            .into_iter()
            .map(|name| {
                let w = suite
                    .workload(&name)
                    .ok_or_else(|| anyhow::anyhow!("workload {name:?} is not defined"))?;
                Ok((name, SentRequest::all_of(w)?))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self { named })
    }

    /// The requests of a workload the suite names.
    pub fn requests(&self, name: &str) -> anyhow::Result<&[SentRequest]> {
        self.named
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, r)| r.as_slice())
            .ok_or_else(|| anyhow::anyhow!("workload {name:?} is not defined"))
    }
}

/// A load against `base` (`http://host:port`, or https) sending `requests` in turn, each answer
/// counted a success when its status is the one its check expects.
pub(crate) fn load_config(base: &str, requests: &[SentRequest]) -> anyhow::Result<LoadConfig> {
    let (first, rest) = requests
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("a workload without a request"))?;
    let mut config = LoadConfig::new(&format!("{base}{}", first.target))?;
    let parts = first.parts()?;
    config.method = parts.method;
    config.headers = parts.headers;
    config.body = parts.body;
    config.expect_status = parts.expect_status;
    config.rotation = rest
        .iter()
        .map(SentRequest::parts)
        .collect::<anyhow::Result<_>>()?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_closes_and_frames_its_body() {
        let w: Workload = toml::from_str(
            r#"name = "w"
request = { method = "POST", path = "/in?x=1", headers = { "x-k" = "v" }, body = "abc" }
expect = { status = 201 }
"#,
        )
        .unwrap();
        let r = SentRequest::all_of(&w).unwrap().remove(0);
        let addr = "127.0.0.1:9";
        assert_eq!(
            String::from_utf8(r.closing_bytes(addr)).unwrap(),
            "POST /in?x=1 HTTP/1.1\r\nhost: 127.0.0.1:9\r\nx-k: v\r\ncontent-length: 3\r\nconnection: close\r\n\r\nabc"
        );
        let c = load_config("http://127.0.0.1:9", &[r.clone(), SentRequest::get("/")]).unwrap();
        assert_eq!((c.expect_status, c.rotation.len()), (Some(201), 1));
        assert_eq!(c.rotation[0].expect_status, Some(200));
        assert_eq!(c.url.path_and_query().unwrap().as_str(), "/in?x=1");
    }
}
