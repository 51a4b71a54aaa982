//! TLS: a fresh self-signed certificate authority and a serving certificate for `127.0.0.1` and
//! `localhost`, generated at every start (ECDSA P-256, with the `ring` provider; a server with
//! a data directory keeps its CA there and only issues a new serving certificate), and the
//! rustls server configuration that offers HTTP/2 and HTTP/1.1 by ALPN.
//!
//! The API server's listener also *requests* a client certificate
//! ([`Certificates::server_config_requesting_client_certificates`]): any certificate is taken in
//! the handshake, which still proves the client holds its key (rustls verifies the handshake
//! signature), and is judged per request by the x509 authenticator
//! ([`crate::auth::x509`]), as kube-apiserver judges it after the handshake. No acceptable CA
//! names are sent, so clients offer the certificate they have.
//!
//! The process-level default crypto provider is never used or installed: the provider is passed
//! explicitly, so the server works next to code that installed another one (or none).

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};

use crate::error::Error;

/// The certificates of one server: the CA clients trust and the serving certificate and key.
#[derive(Clone)]
pub struct Certificates {
    /// The CA certificate, PEM; goes into the kubeconfig as `certificate-authority-data`.
    pub ca_pem: String,
    serving_der: CertificateDer<'static>,
    ca_der: CertificateDer<'static>,
    key_der: Vec<u8>,
    ca_key_der: Vec<u8>,
}

impl std::fmt::Debug for Certificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificates")
            .field("ca_pem", &self.ca_pem)
            .finish_non_exhaustive()
    }
}

fn cert_err(e: rcgen::Error) -> Error {
    Error::Certificate(e.to_string())
}

/// The CA's parameters: its name (the issuer of what it signs), usages and constraints.
fn ca_params() -> Result<CertificateParams, Error> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(cert_err)?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "crt-apiserver-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(ca_params)
}

impl Certificates {
    /// Generates a CA and a serving certificate valid for `127.0.0.1`, `::1`, `localhost` and the
    /// extra `hosts` (names or IP addresses).
    ///
    /// ```
    /// let certs = crt_apiserver::tls::Certificates::generate(&[]).unwrap();
    /// assert!(certs.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    /// ```
    pub fn generate(hosts: &[String]) -> Result<Certificates, Error> {
        let ca_key = KeyPair::generate().map_err(cert_err)?;
        let ca_pem = ca_params()?.self_signed(&ca_key).map_err(cert_err)?.pem();
        Certificates::from_ca(hosts, &ca_pem, &ca_key.serialize_der())
    }

    /// A new serving certificate (and key) for the same names as [`Certificates::generate`],
    /// signed by a kept CA: its certificate `ca_pem` and key `ca_key` (PKCS#8, DER), as
    /// [`Certificates::ca_key_der`] answered. Clients that trusted the CA before trust this.
    pub(crate) fn from_ca(
        hosts: &[String],
        ca_pem: &str,
        ca_key: &[u8],
    ) -> Result<Certificates, Error> {
        let ca_der = x509_parser::pem::parse_x509_pem(ca_pem.as_bytes())
            .map_err(|e| Error::Certificate(format!("the CA certificate: {e}")))?
            .1
            .contents;
        let ca_key_pair = KeyPair::try_from(ca_key).map_err(cert_err)?;
        let ca = rcgen::Issuer::new(ca_params()?, ca_key_pair);

        let mut names = vec![
            "127.0.0.1".to_string(),
            "::1".to_string(),
            "localhost".to_string(),
        ];
        for host in hosts {
            if !names.contains(host) {
                names.push(host.clone());
            }
        }
        let key = KeyPair::generate().map_err(cert_err)?;
        let mut params = CertificateParams::new(names).map_err(cert_err)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "crt-apiserver");
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let serving = params.signed_by(&key, &ca).map_err(cert_err)?;

        Ok(Certificates {
            ca_pem: ca_pem.to_string(),
            ca_der: CertificateDer::from(ca_der),
            serving_der: serving.der().clone(),
            key_der: key.serialize_der(),
            ca_key_der: ca_key.to_vec(),
        })
    }

    /// The CA's private key (PKCS#8, DER), to keep it with the data ([`Certificates::from_ca`]).
    pub(crate) fn ca_key_der(&self) -> &[u8] {
        &self.ca_key_der
    }

    /// The CA certificate, DER.
    pub fn ca_der(&self) -> &CertificateDer<'static> {
        &self.ca_der
    }

    /// The rustls server configuration: the serving certificate chain, ALPN `h2` then
    /// `http/1.1`, with the `ring` provider passed explicitly.
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, Error> {
        self.build_server_config(false)
    }

    /// [`Certificates::server_config`], also requesting (not requiring) a client certificate,
    /// which the handshake takes from any CA once the client proved it holds the key: what the
    /// API server's listener uses, judging the certificate per request.
    pub fn server_config_requesting_client_certificates(&self) -> Result<Arc<ServerConfig>, Error> {
        self.build_server_config(true)
    }

    fn build_server_config(&self, client_certs: bool) -> Result<Arc<ServerConfig>, Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()));
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Tls(e.to_string()))?;
        let builder = if client_certs {
            builder.with_client_cert_verifier(Arc::new(RequestClientCertificate::new(&provider)))
        } else {
            builder.with_no_client_auth()
        };
        let mut config = builder
            .with_single_cert(vec![self.serving_der.clone(), self.ca_der.clone()], key)
            .map_err(|e| Error::Tls(e.to_string()))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// Asks for a client certificate, takes any, and verifies the handshake signature made with its
/// key; the chain itself is judged later, per request ([`crate::auth::x509`]).
#[derive(Debug)]
struct RequestClientCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl RequestClientCertificate {
    fn new(provider: &CryptoProvider) -> RequestClientCertificate {
        RequestClientCertificate {
            algorithms: provider.signature_verification_algorithms,
        }
    }
}

impl ClientCertVerifier for RequestClientCertificate {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_server_config_with_alpn() {
        let certs = Certificates::generate(&["example.test".into()]).unwrap();
        let config = certs.server_config().unwrap();
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(certs.ca_pem.contains("BEGIN CERTIFICATE"));
    }

    #[test]
    fn each_generation_is_a_new_ca() {
        let a = Certificates::generate(&[]).unwrap();
        let b = Certificates::generate(&[]).unwrap();
        assert_ne!(a.ca_pem, b.ca_pem);
    }
}
