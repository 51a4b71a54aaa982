//! `admissionregistration.k8s.io/v1`: webhook configurations and validating admission
//! policies (stored, not enforced).

mod mutatingwebhookconfiguration;
mod validatingadmissionpolicy;
mod validatingadmissionpolicybinding;
mod validatingwebhookconfiguration;

use super::{CAT_API_EXTENSIONS, GENERATION, Row, STATUS, row};
use crate::table::columns::*;
use serde_json::json;

const G: &str = "admissionregistration.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false).categories(CAT_API_EXTENSIONS).strategy(&mutatingwebhookconfiguration::STRATEGY),
    row(G, "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false).categories(CAT_API_EXTENSIONS).flags(STATUS | GENERATION).strategy(&validatingadmissionpolicy::STRATEGY),
    row(G, "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false).categories(CAT_API_EXTENSIONS).flags(GENERATION).strategy(&validatingadmissionpolicybinding::STRATEGY),
    row(G, "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false).categories(CAT_API_EXTENSIONS).strategy(&validatingwebhookconfiguration::STRATEGY),
];

/// The columns of both webhook configurations.
pub(super) fn webhook_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Webhooks", |o| json!(count(o, "/webhooks")))]
}
