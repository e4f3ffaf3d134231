//! The native gateway's integration tests, one binary (see docs/testing.md): real gateway
//! processes on loopback ports, asked by real clients.

mod clients;
mod http;
mod http2_tls;
mod slow_clients;
