//! ValidatingAdmissionPolicies.

use crate::kinds::{
    StatusStrategy, Strategy, defaults::*, strategy::DEFAULT, strategy::STATUS_META,
};
use crate::table::columns::*;
use serde_json::{Value, json};

/// The ValidatingAdmissionPolicy strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
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
