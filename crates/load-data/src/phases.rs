//! Where each exchange's time went.

use serde::{Deserialize, Serialize};

use crate::histogram::LatencyMs;

/// Where each request's time went, like k6's `http_req_*` metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// TCP connections opened (each one's connect + handshake is one `connect` sample; a reused
    /// keep-alive connection adds none, as k6's http_req_connecting is 0 on reuse).
    pub connections_opened: u64,
    /// TCP connect of a new connection.
    pub connect: LatencyMs,
    /// HTTPS: TLS handshakes made (one per new connection), and of them those that resumed a
    /// session (no certificate sent or checked).
    #[serde(default)]
    pub tls_handshakes: u64,
    #[serde(default)]
    pub tls_resumed: u64,
    /// HTTPS: the TLS handshake of a new connection, after its TCP connect.
    #[serde(default)]
    pub tls: LatencyMs,
    /// From the start of the exchange to the request's last byte written to the socket.
    pub send: LatencyMs,
    /// From the last byte written to the first byte of the response read (time to first byte).
    pub wait: LatencyMs,
    /// From the first byte read to the end of the response body.
    pub receive: LatencyMs,
}
