//! `batch/v1` (`pkg/apis/batch/validation/validation.go`).

use serde_json::Value;

use super::{FieldError, array_at, immutable};

/// `ValidateJob` / `ValidateJobUpdate`.
pub(crate) fn job(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    if array_at(obj, &["spec", "template", "spec", "containers"]).is_empty() {
        errs.push(FieldError::required("spec.template.spec.containers", ""));
    }
    if let Some(old) = old {
        for f in ["selector", "template", "completions"] {
            immutable(obj, old, &["spec", f], errs);
        }
    }
}
