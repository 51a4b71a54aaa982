//! Client certificates, as kube-apiserver's x509 authenticator reads them: a certificate that
//! chains to the server's client CA, is valid now and is meant for client authentication
//! authenticates as its subject's common name (CN), in its organizations (O) as groups.
//!
//! The TLS listener *requests* a certificate without requiring one and without judging it in
//! the handshake (which still proves the client holds the certificate's key: rustls verifies the
//! handshake signature); the certificate is judged here, per request, as upstream does after the
//! handshake. So a certificate from another CA, expired, or not for client auth is a 401
//! `Unauthorized`, not a TLS failure. A certificate whose CN is empty authenticates no one, and
//! the request goes on to its other credentials.
//!
//! [`ClientCa`] is the CA the server trusts, generated at every start, and mints certificates
//! for users ([`crate::Server::client_certificate`]).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rand::Rng;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose, PublicKeyData,
    SigningKey,
};
use rustls::RootCertStore;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;

use super::user::UserInfo;
use crate::error::Error;

/// The certificate chain a client presented in the TLS handshake (end entity first), carried
/// on each of its requests as an extension.
#[derive(Clone, Debug)]
pub struct PeerCertificates(pub Arc<[CertificateDer<'static>]>);

/// Why a client certificate authenticates no one (never logged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("verifying certificate failed: {0}")]
pub struct CertificateError(String);

/// What a minted client certificate says: the user (CN), groups (O), validity, and whether it is
/// for client authentication (`extendedKeyUsage: clientAuth`).
#[derive(Clone, Debug)]
pub struct ClientCertificateParams {
    /// The user name: the subject's CN.
    pub user: String,
    /// The groups: one subject O each.
    pub groups: Vec<String>,
    /// Valid from (default: an hour ago, for clocks a little behind).
    pub not_before: SystemTime,
    /// Valid until (default: a year from now).
    pub not_after: SystemTime,
    /// Marked for client authentication (default `true`; `false` makes a server-auth-only
    /// certificate, which the API server refuses).
    pub client_auth: bool,
}

impl ClientCertificateParams {
    /// A client certificate for `user` in `groups`, valid for a year.
    pub fn new(user: &str, groups: &[&str]) -> ClientCertificateParams {
        let now = SystemTime::now();
        ClientCertificateParams {
            user: user.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            not_before: now - Duration::from_secs(3600),
            not_after: now + Duration::from_secs(365 * 24 * 3600),
            client_auth: true,
        }
    }
}

fn cert_err(e: rcgen::Error) -> Error {
    Error::Certificate(e.to_string())
}

/// The client CA: the certificate authority whose certificates the server accepts, with its key
/// to mint them.
pub struct ClientCa {
    key: KeyPair,
    /// The CA certificate's subject, DER: the issuer of what it signs.
    subject_der: Vec<u8>,
    pem: String,
    verifier: Arc<dyn ClientCertVerifier>,
}

impl std::fmt::Debug for ClientCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCa").finish_non_exhaustive()
    }
}

impl ClientCa {
    /// A new CA (`crt-apiserver-client-ca`, ECDSA P-256).
    ///
    /// ```
    /// use crt_apiserver::auth::x509::{ClientCa, ClientCertificateParams};
    /// let ca = ClientCa::generate().unwrap();
    /// let (cert_pem, key_pem) = ca.issue(&ClientCertificateParams::new("jane", &["devs"])).unwrap();
    /// assert!(cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    /// assert!(key_pem.contains("PRIVATE KEY"));
    /// ```
    pub fn generate() -> Result<ClientCa, Error> {
        let key = KeyPair::generate().map_err(cert_err)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(cert_err)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "crt-apiserver-client-ca");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = params.self_signed(&key).map_err(cert_err)?;
        ClientCa::from_parts(key, ca.der(), ca.pem())
    }

    /// The CA kept with a server's data: its key (PKCS#8, DER) and certificate (PEM), as
    /// [`ClientCa::key_der`] and [`ClientCa::ca_pem`] answered.
    pub(crate) fn from_kept(key_der: &[u8], pem: &str) -> Result<ClientCa, Error> {
        let key = KeyPair::try_from(key_der).map_err(cert_err)?;
        let der = x509_parser::pem::parse_x509_pem(pem.as_bytes())
            .map_err(|e| Error::Certificate(format!("the client CA certificate: {e}")))?
            .1
            .contents;
        ClientCa::from_parts(key, &CertificateDer::from(der), pem.to_string())
    }

    fn from_parts(key: KeyPair, der: &CertificateDer<'_>, pem: String) -> Result<ClientCa, Error> {
        let subject_der = x509_parser::parse_x509_certificate(der)
            .map_err(|e| Error::Certificate(e.to_string()))?
            .1
            .tbs_certificate
            .subject
            .as_raw()
            .to_vec();
        let mut roots = RootCertStore::empty();
        roots
            .add(der.clone().into_owned())
            .map_err(|e| Error::Tls(e.to_string()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| Error::Tls(e.to_string()))?;
        Ok(ClientCa {
            key,
            subject_der,
            pem,
            verifier,
        })
    }

    /// The CA's private key (PKCS#8, DER), to keep it with the data.
    pub(crate) fn key_der(&self) -> Vec<u8> {
        self.key.serialize_der()
    }

    /// The CA certificate, PEM (what kube-apiserver's `--client-ca-file` holds).
    pub fn ca_pem(&self) -> &str {
        &self.pem
    }

    /// A new key and a certificate for it signed by this CA: `(certificate PEM, key PEM)`.
    ///
    /// The certificate is written here rather than by rcgen, whose subjects hold one value per
    /// attribute type: a user in several groups needs one `O` each.
    pub fn issue(&self, params: &ClientCertificateParams) -> Result<(String, String), Error> {
        let key = KeyPair::generate().map_err(cert_err)?;
        let tbs = der::tbs_certificate(&self.subject_der, params, &key.subject_public_key_info())?;
        let signature = self.key.sign(&tbs).map_err(cert_err)?;
        let cert = der::certificate(&tbs, &signature);
        Ok((der::pem("CERTIFICATE", &cert), key.serialize_pem()))
    }

    /// The user `chain` (end entity first) authenticates at `now`: `Ok(None)` when the
    /// certificate names no user (an empty CN), an error when it does not verify.
    pub fn authenticate(
        &self,
        chain: &[CertificateDer<'static>],
        now: UnixTime,
    ) -> Result<Option<UserInfo>, CertificateError> {
        let (end_entity, intermediates) = chain
            .split_first()
            .ok_or_else(|| CertificateError("no certificate".into()))?;
        self.verifier
            .verify_client_cert(end_entity, intermediates, now)
            .map_err(|e| CertificateError(e.to_string()))?;
        let (_, cert) = x509_parser::parse_x509_certificate(end_entity)
            .map_err(|e| CertificateError(e.to_string()))?;
        let subject = cert.subject();
        let name = subject
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .unwrap_or("");
        if name.is_empty() {
            return Ok(None);
        }
        let groups = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok())
            .map(String::from)
            .collect();
        Ok(Some(UserInfo {
            name: name.into(),
            groups,
            ..Default::default()
        }))
    }
}

/// The DER of a client certificate (RFC 5280), ECDSA P-256 with SHA-256.
mod der {
    use base64::Engine;

    use super::*;

    /// ecdsa-with-SHA256 (1.2.840.10045.4.3.2).
    const ECDSA_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
    const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
    const ORGANIZATION: &[u8] = &[0x55, 0x04, 0x0a];
    const KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
    const EXT_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];
    const BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];
    const CLIENT_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];
    const SERVER_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];

    fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let len = content.len();
        if len < 0x80 {
            out.push(len as u8);
        } else {
            let bytes: Vec<u8> = len
                .to_be_bytes()
                .into_iter()
                .skip_while(|b| *b == 0)
                .collect();
            out.push(0x80 | bytes.len() as u8);
            out.extend(bytes);
        }
        out.extend_from_slice(content);
        out
    }

    fn seq(parts: &[&[u8]]) -> Vec<u8> {
        tlv(0x30, &parts.concat())
    }

    fn attribute(oid: &[u8], value: &str) -> Vec<u8> {
        tlv(0x31, &seq(&[&tlv(0x06, oid), &tlv(0x0c, value.as_bytes())]))
    }

    fn time(t: SystemTime) -> Vec<u8> {
        let t = chrono::DateTime::<chrono::Utc>::from(t);
        if (1950..2050).contains(&chrono::Datelike::year(&t)) {
            tlv(0x17, t.format("%y%m%d%H%M%SZ").to_string().as_bytes())
        } else {
            tlv(0x18, t.format("%Y%m%d%H%M%SZ").to_string().as_bytes())
        }
    }

    fn extension(oid: &[u8], critical: bool, value: &[u8]) -> Vec<u8> {
        let oid = tlv(0x06, oid);
        let value = tlv(0x04, value);
        if critical {
            seq(&[&oid, &[0x01, 0x01, 0xff], &value])
        } else {
            seq(&[&oid, &value])
        }
    }

    pub(super) fn tbs_certificate(
        issuer: &[u8],
        params: &ClientCertificateParams,
        spki: &[u8],
    ) -> Result<Vec<u8>, Error> {
        if params.not_after <= params.not_before {
            return Err(Error::Certificate(
                "a certificate must end after it starts".into(),
            ));
        }
        let mut serial: [u8; 16] = rand::rng().random();
        serial[0] &= 0x7f;
        serial[0] |= 0x01;
        // Subject: the organizations (groups), then the common name (user), as Go orders them.
        let mut subject = Vec::new();
        for group in &params.groups {
            subject.extend(attribute(ORGANIZATION, group));
        }
        subject.extend(attribute(COMMON_NAME, &params.user));
        let usage = if params.client_auth {
            CLIENT_AUTH
        } else {
            SERVER_AUTH
        };
        let extensions = seq(&[
            // keyUsage: digitalSignature.
            &extension(KEY_USAGE, true, &[0x03, 0x02, 0x07, 0x80]),
            &extension(EXT_KEY_USAGE, false, &seq(&[&tlv(0x06, usage)])),
            // basicConstraints: not a CA.
            &extension(BASIC_CONSTRAINTS, true, &seq(&[])),
        ]);
        Ok(seq(&[
            &[0xa0, 0x03, 0x02, 0x01, 0x02], // version 3
            &tlv(0x02, &serial),
            &seq(&[&tlv(0x06, ECDSA_SHA256)]),
            issuer,
            &seq(&[&time(params.not_before), &time(params.not_after)]),
            &tlv(0x30, &subject),
            spki,
            &tlv(0xa3, &extensions),
        ]))
    }

    pub(super) fn certificate(tbs: &[u8], signature: &[u8]) -> Vec<u8> {
        let mut bits = vec![0x00];
        bits.extend_from_slice(signature);
        seq(&[tbs, &seq(&[&tlv(0x06, ECDSA_SHA256)]), &tlv(0x03, &bits)])
    }

    pub(super) fn pem(label: &str, der: &[u8]) -> String {
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        let mut out = format!("-----BEGIN {label}-----\n");
        for line in b64.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(line).unwrap_or_default());
            out.push('\n');
        }
        out.push_str(&format!("-----END {label}-----\n"));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn der(pem: &str) -> Vec<CertificateDer<'static>> {
        use rustls::pki_types::pem::PemObject;
        CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn now() -> UnixTime {
        UnixTime::now()
    }

    #[test]
    fn cn_is_the_user_and_o_the_groups() {
        let ca = ClientCa::generate().unwrap();
        let (cert, _) = ca
            .issue(&ClientCertificateParams::new("jane", &["devs", "ops"]))
            .unwrap();
        let user = ca.authenticate(&der(&cert), now()).unwrap().unwrap();
        assert_eq!(user.name, "jane");
        assert_eq!(user.groups, ["devs", "ops"]);
        assert!(user.uid.is_empty());
    }

    #[test]
    fn another_ca_expired_or_server_only_certificates_are_refused() {
        let ca = ClientCa::generate().unwrap();
        let other = ClientCa::generate().unwrap();
        let (foreign, _) = other
            .issue(&ClientCertificateParams::new(
                "mallory",
                &["system:masters"],
            ))
            .unwrap();
        assert!(ca.authenticate(&der(&foreign), now()).is_err());

        let mut expired = ClientCertificateParams::new("old", &[]);
        expired.not_before = SystemTime::now() - Duration::from_secs(7200);
        expired.not_after = SystemTime::now() - Duration::from_secs(3600);
        let (expired, _) = ca.issue(&expired).unwrap();
        assert!(ca.authenticate(&der(&expired), now()).is_err());

        let mut server_only = ClientCertificateParams::new("srv", &[]);
        server_only.client_auth = false;
        let (server_only, _) = ca.issue(&server_only).unwrap();
        assert!(ca.authenticate(&der(&server_only), now()).is_err());

        assert!(ca.authenticate(&[], now()).is_err());
        let garbage = vec![CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00])];
        assert!(ca.authenticate(&garbage, now()).is_err());
    }

    #[test]
    fn an_empty_cn_names_no_one() {
        let ca = ClientCa::generate().unwrap();
        let (cert, _) = ca.issue(&ClientCertificateParams::new("", &["g"])).unwrap();
        assert_eq!(ca.authenticate(&der(&cert), now()), Ok(None));
    }
}
