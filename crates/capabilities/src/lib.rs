//! The capabilities the host gives to handlers: the shared counter of `/state` and the upstream
//! client of `/proxy`. The gateway's native and Wasm executors share this implementation, and so
//! does the socket server, natively and compiled to wasm32-wasip2. On wasm32-wasip1, where tokio
//! cannot open a socket, only the upstream exchange's common part is here ([`answer`],
//! [`within_timeout`]): the socket server brings its own connections (WASIX's).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;

#[cfg(not(all(target_os = "wasi", target_env = "p1")))]
pub use client::Capabilities;

/// Longest wait for the upstream before `/proxy` answers 502.
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(10);

/// An upstream's answer, read whole: its body on a 2xx, a message naming the status otherwise.
/// The outer error is the exchange's own (the connection failed while the body was read).
pub async fn answer(resp: hyper::Response<Incoming>) -> Result<Result<Bytes, String>, String> {
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok(if status.is_success() {
        Ok(body)
    } else {
        Err(format!("upstream answered {status}"))
    })
}

/// `exchange`, or a message when it takes longer than [`UPSTREAM_TIMEOUT`].
pub async fn within_timeout<T>(
    exchange: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::time::timeout(UPSTREAM_TIMEOUT, exchange)
        .await
        .unwrap_or_else(|_| Err(format!("upstream timed out after {UPSTREAM_TIMEOUT:?}")))
}

#[cfg(not(all(target_os = "wasi", target_env = "p1")))]
mod client {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use bytes::Bytes;
    use http_body_util::Empty;
    use hyper::Uri;
    use hyper_util::client::legacy::{Client, connect::HttpConnector};
    use hyper_util::rt::TokioExecutor;

    use super::{answer, within_timeout};

    pub struct Capabilities {
        counter: AtomicU64,
        upstream: Option<Upstream>,
    }

    struct Upstream {
        base: Uri,
        client: Client<HttpConnector, Empty<Bytes>>,
    }

    impl Capabilities {
        /// `upstream` is an `http://host:port` base URL; without one, `/proxy` answers 502.
        pub fn new(upstream: Option<&str>) -> anyhow::Result<Self> {
            let upstream = upstream
                .map(|u| -> anyhow::Result<Upstream> {
                    let base: Uri = u
                        .parse()
                        .map_err(|e| anyhow::anyhow!("--upstream {u:?} is not a URL: {e}"))?;
                    anyhow::ensure!(
                        base.scheme_str() == Some("http") && base.authority().is_some(),
                        "--upstream {u:?} must be an http://host:port URL"
                    );
                    let mut connector = HttpConnector::new();
                    connector.set_nodelay(true);
                    let client = Client::builder(TokioExecutor::new())
                        .pool_idle_timeout(Duration::from_secs(30))
                        .build(connector);
                    Ok(Upstream { base, client })
                })
                .transpose()?;
            Ok(Self {
                counter: AtomicU64::new(0),
                upstream,
            })
        }

        pub fn increment(&self) -> u64 {
            self.counter.fetch_add(1, Ordering::Relaxed) + 1
        }

        /// `GET target` on the upstream; the body on a 2xx, a message otherwise.
        pub async fn upstream_get(&self, target: &str) -> Result<Bytes, String> {
            let up = self
                .upstream
                .as_ref()
                .ok_or_else(|| "no upstream configured (--upstream)".to_owned())?;
            let uri = Uri::builder()
                .scheme("http")
                .authority(up.base.authority().expect("checked at start").clone())
                .path_and_query(target)
                .build()
                .map_err(|e| format!("bad target {target:?}: {e}"))?;
            within_timeout(async {
                let resp = up.client.get(uri).await.map_err(|e| e.to_string())?;
                answer(resp).await?
            })
            .await
        }
    }

    impl wasmlab_handlers::Host for Capabilities {
        async fn state_increment(&self) -> Result<u64, String> {
            Ok(self.increment())
        }

        async fn proxy_get(&self, target: &str) -> Result<Vec<u8>, String> {
            self.upstream_get(target).await.map(Vec::from)
        }
    }
}
