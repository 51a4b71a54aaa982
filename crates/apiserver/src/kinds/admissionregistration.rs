//! `admissionregistration.k8s.io/v1`: webhook configurations and validating admission
//! policies (stored, not enforced).

use super::{CAT_API_EXTENSIONS, GENERATION, Row, STATUS, row};

const G: &str = "admissionregistration.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false).categories(CAT_API_EXTENSIONS),
    row(G, "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false).categories(CAT_API_EXTENSIONS).flags(STATUS | GENERATION),
    row(G, "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false).categories(CAT_API_EXTENSIONS).flags(GENERATION),
    row(G, "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false).categories(CAT_API_EXTENSIONS),
];
