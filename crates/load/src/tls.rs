//! HTTPS: one rustls client configuration per run, shared by every connection (so sessions are
//! resumed across connections, as a browser or k6 would), trusting the system's roots, a given
//! CA file, or, when asked, any certificate.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, ring};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_rustls::TlsConnector;

use std::path::Path;

use crate::config::LoadConfig;

/// What every TLS connection of a run shares.
pub(crate) struct Tls {
    pub(crate) connector: TlsConnector,
    pub(crate) server_name: ServerName<'static>,
}

/// The run's TLS client, or None for an `http://` URL.
pub(crate) fn client(config: &LoadConfig) -> anyhow::Result<Option<Tls>> {
    if config.url.scheme_str() != Some("https") {
        return Ok(None);
    }
    let tls = client_config(config.ca_file.as_deref(), config.insecure, config.http2)?;
    let host = config.url.host().unwrap_or_default();
    Ok(Some(Tls {
        connector: TlsConnector::from(tls),
        server_name: server_name(host)?,
    }))
}

/// The name a TLS client asks for (SNI) and checks the certificate against: a DNS name or an
/// IP address (a URL's host, brackets and all).
pub fn server_name(host: &str) -> anyhow::Result<ServerName<'static>> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned())
        .map_err(|e| anyhow::anyhow!("{host:?} is not a TLS server name: {e}"))
}

/// A TLS client configuration offering HTTP/1.1 (or with `http2` HTTP/2) by ALPN: trusting
/// `ca_file`'s certificates (PEM), else the system's roots, or with `insecure` any certificate.
pub fn client_config(
    ca_file: Option<&Path>,
    insecure: bool,
    http2: bool,
) -> anyhow::Result<Arc<ClientConfig>> {
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let mut tls = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        builder
            .with_root_certificates(roots(ca_file)?)
            .with_no_client_auth()
    };
    tls.alpn_protocols = vec![if http2 {
        b"h2".to_vec()
    } else {
        b"http/1.1".to_vec()
    }];
    Ok(Arc::new(tls))
}

/// The certificates a server's chain must lead to: `ca_file`'s, else the system's.
fn roots(ca_file: Option<&Path>) -> anyhow::Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let shown = path.display();
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| anyhow::anyhow!("--cacert {shown}: {e}"))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| anyhow::anyhow!("--cacert {shown}: {e}"))?;
            anyhow::ensure!(
                !certs.is_empty(),
                "--cacert {shown}: no PEM certificate in it"
            );
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| anyhow::anyhow!("--cacert {shown}: {e}"))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            anyhow::ensure!(
                added > 0,
                "no trust roots found on this system ({}); give --cacert FILE, or --insecure",
                found
                    .errors
                    .first()
                    .map_or_else(|| "none installed".to_owned(), |e| e.to_string())
            );
        }
    }
    Ok(roots)
}

/// `--insecure`: any certificate, for any name (signatures are still checked, so the handshake
/// costs what a verified one does apart from the chain).
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
