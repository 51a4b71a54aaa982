//! `apps/v1` (`pkg/apis/apps/validation/validation.go`).

use serde_json::Value;

use super::{FieldError, array_at, at, has, immutable};

/// The rules Deployment, ReplicaSet, StatefulSet and DaemonSet share: a selector that matches
/// the template's labels, a pod template with containers, an immutable selector.
pub(crate) fn workload(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    if !has(obj, &["spec", "selector"]) {
        errs.push(FieldError::required("spec.selector", ""));
    } else if let (Some(sel), Some(labels)) = (
        at(obj, &["spec", "selector", "matchLabels"]).and_then(Value::as_object),
        at(obj, &["spec", "template", "metadata", "labels"]).and_then(Value::as_object),
    ) && sel.iter().any(|(k, v)| labels.get(k) != Some(v))
    {
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            &Value::Object(labels.clone()),
            "`selector` does not match template `labels`",
        ));
    }
    if array_at(obj, &["spec", "template", "spec", "containers"]).is_empty() {
        errs.push(FieldError::required("spec.template.spec.containers", ""));
    }
    if let Some(old) = old {
        immutable(obj, old, &["spec", "selector"], errs);
    }
}
