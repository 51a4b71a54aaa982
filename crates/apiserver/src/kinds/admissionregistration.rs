//! `admissionregistration.k8s.io/v1`: webhook configurations and validating admission
//! policies (stored, not enforced).

use super::{
    CAT_API_EXTENSIONS, GENERATION, Row, STATUS, StatusStrategy, Strategy, defaults::*, row,
    strategy::DEFAULT, strategy::STATUS_META,
};
use crate::table::columns::*;
use serde_json::{Value, json};

const G: &str = "admissionregistration.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false).categories(CAT_API_EXTENSIONS).strategy(&MUTATING_WEBHOOK_CONFIGURATIONS),
    row(G, "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false).categories(CAT_API_EXTENSIONS).flags(STATUS | GENERATION).strategy(&VALIDATING_ADMISSION_POLICIES),
    row(G, "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false).categories(CAT_API_EXTENSIONS).flags(GENERATION).strategy(&VALIDATING_ADMISSION_POLICY_BINDINGS),
    row(G, "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false).categories(CAT_API_EXTENSIONS).strategy(&VALIDATING_WEBHOOK_CONFIGURATIONS),
];

// ---- mutatingwebhookconfigurations

/// MutatingWebhookConfigurations.
pub(super) const MUTATING_WEBHOOK_CONFIGURATIONS: Strategy = Strategy {
    columns: webhook_columns,
    ..DEFAULT
};

/// The columns of both webhook configurations.
fn webhook_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Webhooks", |o| json!(count(o, "/webhooks")))]
}

// ---- validatingadmissionpolicies

/// ValidatingAdmissionPolicies.
pub(super) const VALIDATING_ADMISSION_POLICIES: Strategy = Strategy {
    defaults: Some(policy_defaults),
    status: StatusStrategy::SpecAnd(STATUS_META),
    columns: policy_columns,
    ..DEFAULT
};

fn policy_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    default_at(obj, ".spec.failurePolicy", json!("Fail"));
    if let Some(m) = obj.pointer_mut("/spec/matchConstraints") {
        default_match_resources(m);
    }
}

fn policy_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Validations", |o| json!(count(o, "/spec/validations"))),
        ("ParamKind", |o| match get(o, "/spec/paramKind") {
            Some(p) if p.is_object() => json!(format!(
                "{}/{}",
                p["apiVersion"].as_str().unwrap_or(""),
                p["kind"].as_str().unwrap_or("")
            )),
            _ => json!("<unset>"),
        }),
    ]
}

// ---- validatingadmissionpolicybindings

/// ValidatingAdmissionPolicyBindings.
pub(super) const VALIDATING_ADMISSION_POLICY_BINDINGS: Strategy = Strategy {
    defaults: Some(policy_binding_defaults),
    ..DEFAULT
};

fn policy_binding_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    if let Some(m) = obj.pointer_mut("/spec/matchResources") {
        default_match_resources(m);
    }
}

// ---- validatingwebhookconfigurations

/// ValidatingWebhookConfigurations.
pub(super) const VALIDATING_WEBHOOK_CONFIGURATIONS: Strategy = Strategy {
    columns: webhook_columns,
    ..DEFAULT
};
