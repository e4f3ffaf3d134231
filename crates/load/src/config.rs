//! What a load run sends, where, and for how long.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Uri};

/// What to send, where, and for how long.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub url: Uri,
    pub method: Method,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    /// More requests sent in turn after the one above (`url`'s path and query, `method`,
    /// `headers`, `body`), to the same host: each connection starts at its own place in the
    /// list, so together the connections send the mix evenly.
    pub rotation: Vec<RequestParts>,
    /// The status an answer must have to count as a success (default: any 2xx); any other is
    /// counted in `non_2xx` (as a wrong status).
    pub expect_status: Option<u16>,
    pub connections: usize,
    pub threads: usize,
    /// Stop sending after this long (requests in flight are still awaited).
    pub duration: Option<Duration>,
    /// Send for this long first, on the same connections and at the same pace, and count none of
    /// it: the measured `duration` then begins on connections that are open and warm, as a
    /// server's steady state is. In the open loop an exchange belongs to the part its due time
    /// fell in, in the closed loop to the part it ended in.
    pub warm_up: Option<Duration>,
    /// Told when the measured part begins (after the warm-up) and when its last exchange has
    /// ended, before any connection closes: what a caller reading a server's CPU reads it at.
    pub window: Option<Window>,
    /// Stop after this many requests in all (closed loop only).
    pub requests: Option<u64>,
    /// Open loop: send at this constant arrival rate (requests per second, all threads together)
    /// instead of as fast as responses come back.
    pub rate: Option<f64>,
    /// HTTP/2 instead of HTTP/1.1: by prior knowledge over cleartext (h2c), by ALPN over TLS.
    pub http2: bool,
    /// HTTP/2: concurrent streams per connection, each sending its next request when its
    /// previous answer is complete (h2load's `-m`); the closed loop's concurrency is
    /// `connections x streams`.
    pub streams: usize,
    /// HTTPS: trust the certificates in this PEM file instead of the system's roots.
    pub ca_file: Option<std::path::PathBuf>,
    /// HTTPS: accept any certificate (the handshake's signatures are still checked).
    pub insecure: bool,
    /// A request not answered within this counts as a timeout and its connection is replaced.
    pub timeout: Duration,
    /// Set to stop early (Ctrl-C); what finished until then is reported.
    pub cancel: Option<Arc<AtomicBool>>,
    /// While waiting (for responses, and in the open loop for send times too), each worker polls
    /// its sockets and timers without sleeping instead of blocking in `epoll_wait`, so its CPU
    /// never idles. On a machine where waking an idle CPU is expensive (a VM), a server answering
    /// a sleeping generator pays that wake-up on every batch of replies, a cost no remote client
    /// would put on it; spinning takes it away. Only for a generator with CPUs of its own:
    /// spinning threads take their CPUs whole.
    pub spin: bool,
    /// Start at this wall-clock time (after the run's set-up), so generators on several
    /// machines begin together; at once if it has passed.
    pub start_at: Option<std::time::SystemTime>,
}

/// The edges of a run's measured part, as [`LoadConfig::window`] is told them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// The warm-up is over (at once without one): what is sent from now on is counted.
    Opens,
    /// Every counted exchange has ended; the connections are still open.
    Closes,
}

/// A callback told each [`Edge`] of a run, once, from one of the run's threads.
#[derive(Clone)]
pub struct Window(pub Arc<dyn Fn(Edge) + Send + Sync>);

impl std::fmt::Debug for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Window(..)")
    }
}

/// One request of a rotation.
#[derive(Debug, Clone)]
pub struct RequestParts {
    pub method: Method,
    /// The path and query, starting with `/`.
    pub target: String,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    /// The status its answers must have (default: the config's `expect_status`).
    pub expect_status: Option<u16>,
}

impl LoadConfig {
    pub fn new(url: &str) -> anyhow::Result<Self> {
        let url: Uri = url
            .parse()
            .map_err(|e| anyhow::anyhow!("{url:?} is not a URL: {e}"))?;
        anyhow::ensure!(
            matches!(url.scheme_str(), Some("http" | "https")),
            "{url}: the scheme must be http:// or https://"
        );
        anyhow::ensure!(url.host().is_some(), "URL {url} has no host");
        Ok(Self {
            url,
            method: Method::GET,
            headers: Vec::new(),
            body: Bytes::new(),
            rotation: Vec::new(),
            http2: false,
            streams: 1,
            ca_file: None,
            insecure: false,
            expect_status: None,
            connections: 50,
            threads: 1,
            duration: Some(Duration::from_secs(10)),
            warm_up: None,
            window: None,
            requests: None,
            start_at: None,
            rate: None,
            timeout: Duration::from_secs(10),
            cancel: None,
            spin: false,
        })
    }

    pub(crate) fn authority(&self) -> String {
        let host = self.url.host().unwrap_or("localhost");
        let default = match self.url.scheme_str() {
            Some("https") => 443,
            _ => 80,
        };
        let port = self.url.port_u16().unwrap_or(default);
        if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        }
    }
}

/// Parses durations like `10s`, `500ms`, `2m`, `1.5s` (a bare number is seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 10s, 500ms, 2m)"))?;
    let secs = match unit {
        "ms" => v / 1e3,
        "s" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {s:?} (use ms, s, m or h)"
            ));
        }
    };
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(format!("{s:?} is not a positive duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn rejects_bad_urls() {
        assert!(LoadConfig::new("ftp://x/").is_err());
        assert_eq!(
            LoadConfig::new("https://example.test/")
                .unwrap()
                .authority(),
            "example.test:443"
        );
        assert!(LoadConfig::new("not a url").is_err());
        assert!(LoadConfig::new("http://127.0.0.1:1/").is_ok());
    }
}
