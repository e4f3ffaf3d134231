//! Workloads as data: what a workload sends (one request, or a few sent in turn) and the check
//! every answer must pass. wasmlab's own workloads are definitions of this kind, in
//! `suites/workloads.toml` (the library); a suite defines its own with `[[workload]]` tables.
//! docs/workloads.md describes every field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The library's text: the workloads a suite may name without defining them.
pub const LIBRARY_TOML: &str = include_str!("../../../../suites/workloads.toml");

/// Most requests a workload may rotate through.
pub const MAX_REQUESTS: usize = 100;
/// Largest request body (inline, from a file or generated).
pub const MAX_BODY_BYTES: u64 = 64 << 20;

/// One workload: its name, what it sends and what its answers must be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    pub name: String,
    /// One line for people: what the workload asks of a server.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub about: String,
    /// The request, when the workload sends one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<RequestSpec>,
    /// Several requests, sent in turn: each connection starts at its own place in the list, so
    /// together the connections send the mix evenly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<RequestSpec>,
    /// The check each answer must pass (a request may carry its own instead).
    #[serde(default)]
    pub expect: Expect,
}

/// One request of a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    #[serde(default = "default_method")]
    pub method: String,
    /// The path and query, starting with `/`.
    pub path: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The body, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The body, read from this file (relative to the suite file's directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_file: Option<PathBuf>,
    /// A body of this many bytes, printable and position-dependent (a truncated or shuffled echo
    /// of it shows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_size: Option<u64>,
    /// This request's own check, in place of the workload's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
}

/// What an answer must be. Every field given must hold; with none but `status`, the status alone
/// is checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// One status (`200`), or any success (`"2xx"`).
    #[serde(default = "default_status")]
    pub status: ExpectStatus,
    /// The body, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// A regular expression the body (as UTF-8 text) must match somewhere; anchor it with `^…$`
    /// to match the whole body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_matches: Option<String>,
    /// The body's length in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_length: Option<u64>,
    /// The body's SHA-256, in hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_sha256: Option<String>,
    /// The body is the request's body.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub echo: bool,
    /// The body is a decimal counter: of two answers in a row, the second is one more than the
    /// first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub increments: bool,
    /// Headers the answer must carry with exactly these values (names in any case).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

fn default_method() -> String {
    "GET".into()
}
fn default_status() -> ExpectStatus {
    ExpectStatus::Code(200)
}

/// The status an answer must have: one code, or any success (`"2xx"`: a component the lab did
/// not write may answer 200, 201 or 203 to what it serves).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StatusText", into = "StatusText")]
pub enum ExpectStatus {
    Code(u16),
    Success,
}

/// How a status is written in TOML and JSON: a number, or `"2xx"`.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum StatusText {
    Code(u16),
    Class(String),
}

impl TryFrom<StatusText> for ExpectStatus {
    type Error = String;
    fn try_from(t: StatusText) -> Result<Self, String> {
        match t {
            StatusText::Code(c) => Ok(ExpectStatus::Code(c)),
            StatusText::Class(c) if c == "2xx" => Ok(ExpectStatus::Success),
            StatusText::Class(c) => Err(format!(
                "status {c:?}: give a number (200) or \"2xx\" (any success)"
            )),
        }
    }
}

impl From<ExpectStatus> for StatusText {
    fn from(s: ExpectStatus) -> Self {
        match s {
            ExpectStatus::Code(c) => StatusText::Code(c),
            ExpectStatus::Success => StatusText::Class("2xx".into()),
        }
    }
}

impl ExpectStatus {
    pub fn accepts(self, status: u16) -> bool {
        match self {
            ExpectStatus::Code(c) => c == status,
            ExpectStatus::Success => (200..300).contains(&status),
        }
    }

    /// The one code, if the check names one (the load generator's `expect_status`: None is any
    /// success).
    pub fn code(self) -> Option<u16> {
        match self {
            ExpectStatus::Code(c) => Some(c),
            ExpectStatus::Success => None,
        }
    }

    /// An answer without a body (204 and 304).
    fn has_no_body(self) -> bool {
        matches!(self, ExpectStatus::Code(204 | 304))
    }
}

impl std::fmt::Display for ExpectStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpectStatus::Code(c) => write!(f, "{c}"),
            ExpectStatus::Success => f.write_str("2xx"),
        }
    }
}

impl Default for Expect {
    fn default() -> Self {
        Self {
            status: default_status(),
            body: None,
            body_matches: None,
            body_length: None,
            body_sha256: None,
            echo: false,
            increments: false,
            headers: BTreeMap::new(),
        }
    }
}

/// A file of `[[workload]]` tables (the library's shape).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definitions {
    #[serde(default, rename = "workload")]
    pub workloads: Vec<Workload>,
}

/// wasmlab's workloads (`suites/workloads.toml`).
pub fn library() -> &'static [Workload] {
    static LIBRARY: OnceLock<Vec<Workload>> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        toml::from_str::<Definitions>(LIBRARY_TOML)
            .expect("suites/workloads.toml parses (checked by the model's tests)")
            .workloads
    })
}

/// The library's names, for error messages.
pub fn library_names() -> String {
    library()
        .iter()
        .map(|w| w.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A request's body as the generator sends it for `body_size`: printable and position-dependent.
pub fn generated_body(len: u64) -> Vec<u8> {
    const PATTERN: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..len as usize)
        .map(|i| PATTERN[i % PATTERN.len()])
        .collect()
}

/// An answer as verification saw it.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Workload {
    /// The requests sent in turn (one for a workload with `request`).
    pub fn each_request(&self) -> impl Iterator<Item = &RequestSpec> {
        self.request.iter().chain(&self.requests)
    }

    /// The check `r`'s answers must pass.
    pub fn expect_for<'a>(&'a self, r: &'a RequestSpec) -> &'a Expect {
        r.expect.as_ref().unwrap_or(&self.expect)
    }

    /// The first request: the one a cold start and the readiness probe send.
    pub fn first_request(&self) -> &RequestSpec {
        self.each_request()
            .next()
            .expect("a validated workload has a request")
    }

    /// Makes body files relative to `dir` (the suite file's directory) absolute.
    pub fn resolve_paths(&mut self, dir: &Path) {
        for r in self.request.iter_mut().chain(&mut self.requests) {
            if let Some(f) = &mut r.body_file
                && f.is_relative()
            {
                *f = dir.join(&*f);
            }
        }
    }

    /// Checks the definition: a request with a method, a path, headers and at most one body that
    /// can be sent, and for each request a check some answer could pass. Errors name the workload
    /// and the field.
    pub fn validate(&self) -> anyhow::Result<()> {
        let name = &self.name;
        let fail = |e: anyhow::Error| anyhow::anyhow!("workload {name:?}: {e:#}");
        anyhow::ensure!(
            !name.is_empty()
                && name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
            "workload {name:?}: a name is 1 to 64 letters, digits, '.', '_' or '-' (it names files and CSV rows)"
        );
        match (&self.request, self.requests.len()) {
            (Some(_), 0) => {}
            (None, 1..=MAX_REQUESTS) => {}
            (Some(_), _) => {
                return Err(fail(anyhow::anyhow!(
                    "give `request` or `requests`, not both"
                )));
            }
            (None, 0) => {
                return Err(fail(anyhow::anyhow!(
                    "no request: give `request = {{ path = \"/...\" }}` or `requests = [...]`"
                )));
            }
            (None, n) => {
                return Err(fail(anyhow::anyhow!(
                    "`requests` has {n} requests; at most {MAX_REQUESTS}"
                )));
            }
        }
        let labels = self
            .request
            .iter()
            .map(|r| ("request".to_owned(), r))
            .chain(
                self.requests
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (format!("requests[{i}]"), r)),
            );
        for (label, r) in labels {
            let body = r.validate(&label).map_err(fail)?;
            let expect_label = match &r.expect {
                Some(_) => format!("{label}.expect"),
                None => "expect".to_owned(),
            };
            let no_body = r.method.eq_ignore_ascii_case("HEAD");
            self.expect_for(r)
                .validate(&expect_label, &body, no_body)
                .map_err(fail)?;
        }
        Ok(())
    }
}

impl RequestSpec {
    /// The body this request sends.
    pub fn load_body(&self) -> anyhow::Result<Vec<u8>> {
        Ok(match (&self.body, &self.body_file, self.body_size) {
            (Some(b), _, _) => b.clone().into_bytes(),
            (_, Some(f), _) => {
                std::fs::read(f).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", f.display()))?
            }
            (_, _, Some(n)) => generated_body(n),
            _ => Vec::new(),
        })
    }

    /// Checks the request (`label` names it in errors) and returns its body.
    fn validate(&self, label: &str) -> anyhow::Result<Vec<u8>> {
        anyhow::ensure!(
            http::Method::from_bytes(self.method.as_bytes()).is_ok(),
            "`{label}.method` {:?} is not an HTTP method",
            self.method
        );
        anyhow::ensure!(
            self.path.starts_with('/') && self.path.parse::<http::uri::PathAndQuery>().is_ok(),
            "`{label}.path` {:?} is not a path and query starting with '/'",
            self.path
        );
        for (k, v) in &self.headers {
            let Ok(name) = http::HeaderName::from_bytes(k.as_bytes()) else {
                anyhow::bail!("`{label}.headers`: {k:?} is not a header name");
            };
            anyhow::ensure!(
                http::HeaderValue::from_str(v).is_ok(),
                "`{label}.headers.{k}`: {v:?} is not a header value (visible ASCII)"
            );
            anyhow::ensure!(
                name != http::header::CONTENT_LENGTH && name != http::header::TRANSFER_ENCODING,
                "`{label}.headers.{k}`: the load generator frames the body itself; give the body instead"
            );
        }
        let sources = [
            self.body.is_some(),
            self.body_file.is_some(),
            self.body_size.is_some(),
        ];
        anyhow::ensure!(
            sources.iter().filter(|s| **s).count() <= 1,
            "`{label}`: give one of `body`, `body_file` and `body_size`, not several"
        );
        if let Some(f) = &self.body_file {
            let meta = std::fs::metadata(f)
                .map_err(|e| anyhow::anyhow!("`{label}.body_file` {}: {e}", f.display()))?;
            anyhow::ensure!(
                meta.is_file(),
                "`{label}.body_file` {} is not a file",
                f.display()
            );
            anyhow::ensure!(
                meta.len() <= MAX_BODY_BYTES,
                "`{label}.body_file` {} is {} bytes; at most {MAX_BODY_BYTES}",
                f.display(),
                meta.len()
            );
        }
        if let Some(n) = self.body_size {
            anyhow::ensure!(
                n <= MAX_BODY_BYTES,
                "`{label}.body_size` {n}: at most {MAX_BODY_BYTES}"
            );
        }
        self.load_body()
            .map_err(|e| anyhow::anyhow!("`{label}.body_file`: {e}"))
    }
}

impl Expect {
    /// Checks that some answer to a request with body `sent` could pass (`no_body`: the answer
    /// has none, as to HEAD). `label` names the check in errors.
    fn validate(&self, label: &str, sent: &[u8], no_body: bool) -> anyhow::Result<()> {
        let never = |why: String| anyhow::anyhow!("`{label}`: no answer could pass: {why}");
        if let ExpectStatus::Code(c) = self.status {
            anyhow::ensure!(
                (200..=599).contains(&c),
                "`{label}.status` {c} is not the status of a final answer (200 to 599)"
            );
        }
        let pattern = match &self.body_matches {
            Some(p) => Some(regex_lite::Regex::new(p).map_err(|e| {
                anyhow::anyhow!("`{label}.body_matches` {p:?} is not a regular expression: {e}")
            })?),
            None => None,
        };
        if let Some(d) = &self.body_sha256 {
            anyhow::ensure!(
                d.len() == 64 && d.chars().all(|c| c.is_ascii_hexdigit()),
                "`{label}.body_sha256` {d:?} is not a SHA-256 digest (64 hex digits)"
            );
        }
        for (k, v) in &self.headers {
            anyhow::ensure!(
                http::HeaderName::from_bytes(k.as_bytes()).is_ok(),
                "`{label}.headers`: {k:?} is not a header name"
            );
            anyhow::ensure!(
                http::HeaderValue::from_str(v).is_ok(),
                "`{label}.headers.{k}`: {v:?} is not a header value (visible ASCII)"
            );
        }
        let no_body = no_body || self.status.has_no_body();
        if self.increments {
            if self.body.is_some() || self.body_sha256.is_some() || self.echo {
                return Err(never(
                    "`increments` asks for a different body each time, and `body`, `body_sha256` or `echo` for a fixed one".into(),
                ));
            }
            if no_body {
                return Err(never(format!(
                    "`increments` needs a number in the body, and a {} answer has no body",
                    self.empty_reason(no_body)
                )));
            }
        }
        let wanted: Option<&[u8]> = match (&self.body, self.echo) {
            (Some(b), true) if b.as_bytes() != sent => {
                return Err(never(format!(
                    "`body` is {} bytes and `echo` asks for the request's {} bytes",
                    b.len(),
                    sent.len()
                )));
            }
            (Some(b), _) => Some(b.as_bytes()),
            (None, true) => Some(sent),
            (None, false) => None,
        };
        let wanted = match (wanted, no_body) {
            (Some(b), true) if !b.is_empty() => {
                return Err(never(format!(
                    "a {} answer has no body, and the check asks for {} bytes",
                    self.empty_reason(no_body),
                    b.len()
                )));
            }
            (None, true) => Some(&[][..]),
            (w, _) => w,
        };
        if let Some(b) = wanted {
            let answer = Answer {
                // Any success would do: 200 stands for them.
                status: self.status.code().unwrap_or(200),
                headers: self
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                body: b.to_vec(),
            };
            self.judge_with(&answer, sent, None, pattern.as_ref())
                .map_err(|why| never(format!("the only body it allows fails it: {why}")))?;
        }
        Ok(())
    }

    fn empty_reason(&self, head: bool) -> String {
        match self.status {
            s if s.has_no_body() => s.to_string(),
            _ if head => "HEAD".into(),
            s => s.to_string(),
        }
    }

    /// Judges an answer to a request that sent `sent`. `previous` is the counter of the answer
    /// before, for `increments` (None: the first of the two). The error says which check failed
    /// and what came back.
    pub fn judge(&self, answer: &Answer, sent: &[u8], previous: Option<u64>) -> Result<(), String> {
        let pattern = match &self.body_matches {
            Some(p) => Some(regex_lite::Regex::new(p).map_err(|e| format!("bad pattern: {e}"))?),
            None => None,
        };
        self.judge_with(answer, sent, previous, pattern.as_ref())
    }

    fn judge_with(
        &self,
        answer: &Answer,
        sent: &[u8],
        previous: Option<u64>,
        pattern: Option<&regex_lite::Regex>,
    ) -> Result<(), String> {
        let got = &answer.body;
        if !self.status.accepts(answer.status) {
            return Err(format!(
                "status {}, expected {} (body {:?})",
                answer.status,
                self.status,
                preview(got)
            ));
        }
        for (k, want) in &self.headers {
            match answer
                .headers
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(k))
            {
                None => return Err(format!("no {k} header, expected {want:?}")),
                Some((_, v)) if v != want => {
                    return Err(format!("header {k}: {v:?}, expected {want:?}"));
                }
                Some(_) => {}
            }
        }
        if let Some(b) = &self.body
            && b.as_bytes() != got.as_slice()
        {
            return Err(format!(
                "body {:?}, expected {:?}",
                preview(got),
                preview(b.as_bytes())
            ));
        }
        if self.echo && sent != got.as_slice() {
            return Err(format!(
                "body {:?} ({} bytes), expected the request's body ({} bytes)",
                preview(got),
                got.len(),
                sent.len()
            ));
        }
        if let Some(n) = self.body_length
            && got.len() as u64 != n
        {
            return Err(format!("a body of {} bytes, expected {n}", got.len()));
        }
        if let Some(d) = &self.body_sha256 {
            let digest = hex(&Sha256::digest(got));
            if !digest.eq_ignore_ascii_case(d) {
                return Err(format!(
                    "the body's SHA-256 is {digest}, expected {} (body {:?})",
                    d.to_ascii_lowercase(),
                    preview(got)
                ));
            }
        }
        if let Some(re) = pattern
            && !re.is_match(&String::from_utf8_lossy(got))
        {
            return Err(format!(
                "body {:?} does not match /{}/",
                preview(got),
                re.as_str()
            ));
        }
        if self.increments {
            let n =
                counter(got).ok_or_else(|| format!("body {:?} is not a number", preview(got)))?;
            if let Some(p) = previous
                && Some(n) != p.checked_add(1)
            {
                return Err(format!(
                    "counter {n}, expected {} (one more than the answer before)",
                    p.saturating_add(1)
                ));
            }
        }
        Ok(())
    }

    /// A one-line description: `200, body "hello"`.
    pub fn describe(&self) -> String {
        let mut parts = vec![self.status.to_string()];
        if let Some(b) = &self.body {
            parts.push(format!("body {:?}", preview(b.as_bytes())));
        }
        if self.echo {
            parts.push("the request's body back".into());
        }
        if let Some(p) = &self.body_matches {
            parts.push(format!("body matching /{p}/"));
        }
        if let Some(n) = self.body_length {
            parts.push(format!("a body of {n} bytes"));
        }
        if let Some(d) = &self.body_sha256 {
            parts.push(format!("body SHA-256 {}…", &d[..d.len().min(12)]));
        }
        if self.increments {
            parts.push("a counter that goes up by one".into());
        }
        for (k, v) in &self.headers {
            parts.push(format!("{k}: {v}"));
        }
        if parts.len() == 1 {
            parts.push("status only".into());
        }
        parts.join(", ")
    }
}

impl RequestSpec {
    /// A one-line description: `POST /echo (1024-byte body)`.
    pub fn describe(&self) -> String {
        let body = match (&self.body, &self.body_file, self.body_size) {
            (Some(b), _, _) => format!(" ({}-byte body)", b.len()),
            (_, Some(f), _) => format!(" (body from {})", f.display()),
            (_, _, Some(n)) => format!(" ({n}-byte body)"),
            _ => String::new(),
        };
        let headers = match self.headers.len() {
            0 => String::new(),
            1 => " + 1 header".into(),
            n => format!(" + {n} headers"),
        };
        format!("{} {}{headers}{body}", self.method, self.path)
    }
}

/// The counter in a body: a decimal number, surrounding whitespace allowed.
pub fn counter(body: &[u8]) -> Option<u64> {
    std::str::from_utf8(body).ok()?.trim().parse().ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The start of a body for a message: 80 characters at most, the length after a longer one.
pub fn preview(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    if s.len() > 80 {
        format!("{}… ({} bytes)", &s[..s.floor_char_boundary(80)], b.len())
    } else {
        s.into_owned()
    }
}

#[cfg(test)]
mod tests;
