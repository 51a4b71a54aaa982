//! CertificateSigningRequests: `approval` writes only the approval conditions.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The CertificateSigningRequest strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
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
