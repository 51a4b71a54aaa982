//! `certificates.k8s.io/v1`: certificate signing requests (stored; nothing signs them).

mod certificatesigningrequest;

use super::{GET_PATCH_UPDATE, Row, STATUS, Sub, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", false)
        .short(&["csr"]).flags(STATUS)
        .extra(&[Sub { name: "approval", group: "certificates.k8s.io", version: "v1", kind: "CertificateSigningRequest", verbs: GET_PATCH_UPDATE }]).strategy(&certificatesigningrequest::STRATEGY),
];
