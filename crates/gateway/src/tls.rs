//! HTTPS: the gateway's certificate and key (PEM files), rustls on ring, and ALPN offering HTTP/2
//! beside HTTP/1.1 when the gateway serves it.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// ALPN protocol ids (RFC 7301's registry).
pub const ALPN_H2: &[u8] = b"h2";
pub const ALPN_HTTP1: &[u8] = b"http/1.1";

/// The server's TLS settings from a certificate chain and its private key, PEM. With `http2`,
/// ALPN offers `h2` first; a client that offers neither protocol gets HTTP/1.1.
pub fn server_config(
    cert_file: &Path,
    key_file: &Path,
    http2: bool,
) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let chain = CertificateDer::pem_file_iter(cert_file)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("--tls-cert {}", cert_file.display()))?;
    anyhow::ensure!(
        !chain.is_empty(),
        "--tls-cert {}: no certificate in it (a PEM file with BEGIN CERTIFICATE)",
        cert_file.display()
    );
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => anyhow::anyhow!(
            "--tls-key {}: no private key in it (a PEM file with BEGIN PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)",
            key_file.display()
        ),
        e => anyhow::anyhow!("--tls-key {}: {e}", key_file.display()),
    })?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .context("--tls-cert and --tls-key do not make a usable pair")?;
    config.alpn_protocols = if http2 {
        vec![ALPN_H2.to_vec(), ALPN_HTTP1.to_vec()]
    } else {
        vec![ALPN_HTTP1.to_vec()]
    };
    Ok(Arc::new(config))
}
