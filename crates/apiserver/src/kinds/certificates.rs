//! `certificates.k8s.io/v1`: certificate signing requests (stored; nothing signs them).

use super::{GET_PATCH_UPDATE, Row, STATUS, Strategy, Sub, row, strategy::DEFAULT};
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", false)
        .short(&["csr"]).flags(STATUS)
        .extra(&[Sub { name: "approval", group: "certificates.k8s.io", version: "v1", kind: "CertificateSigningRequest", verbs: GET_PATCH_UPDATE }]).strategy(&CERTIFICATE_SIGNING_REQUESTS),
];

// ---- certificatesigningrequests

/// CertificateSigningRequests: `approval` writes only the approval conditions.
pub(super) const CERTIFICATE_SIGNING_REQUESTS: Strategy = Strategy {
    subresource_validators: &[("approval", validation::certificates::approval)],
    own_subresources: &["approval"],
    columns_after_age: csr_after_age,
    ..DEFAULT
};

fn csr_after_age() -> Vec<(&'static str, CellFn)> {
    vec![
        ("SignerName", |o| or_none(string(o, "/spec/signerName"))),
        ("Requestor", |o| string(o, "/spec/username")),
        ("RequestedDuration", |o| {
            match get(o, "/spec/expirationSeconds").and_then(Value::as_i64) {
                Some(secs) => json!(human_duration(secs)),
                None => json!("<none>"),
            }
        }),
        ("Condition", csr_condition),
    ]
}
