//! Bad inputs of the core group, metadata and the small groups (RBAC, coordination, events).

use serde_json::json;

use super::{Case, check_all, object};

#[tokio::test]
async fn core_bad_inputs_are_refused_as_upstream_refuses_them() {
    check_all(vec![
        Case::create(
            "ValidateObjectMeta: label values (IsValidLabelValue)",
            object("v1", "ConfigMap", "bad-label", json!({"metadata": {"labels": {"a": "-x"}}})),
            "ConfigMap \"bad-label\" is invalid: metadata.labels: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        )
        .causes(&[("FieldValueInvalid", "metadata.labels")]),
        Case::update(
            "ValidateConfigMapUpdate: immutable data",
            object("v1", "ConfigMap", "frozen", json!({"immutable": true, "data": {"a": "1"}})),
            object("v1", "ConfigMap", "frozen", json!({"immutable": true, "data": {"a": "2"}})),
            "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set",
        ),
    ])
    .await;
}
