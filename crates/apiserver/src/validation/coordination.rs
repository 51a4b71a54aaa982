//! `coordination.k8s.io/v1` (`pkg/apis/coordination/validation/validation.go`): Leases.

use serde_json::Value;

use super::{FieldError, at};

/// `ValidateLease` / `ValidateLeaseUpdate` (`ValidateLeaseSpec`): a positive duration, a
/// non-negative transition count.
pub(crate) fn lease(obj: &Value, _old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let int = |f: &str| at(obj, &["spec", f]).and_then(Value::as_i64);
    if let Some(d) = int("leaseDurationSeconds")
        && d <= 0
    {
        errs.push(FieldError::invalid(
            "spec.leaseDurationSeconds",
            &Value::from(d),
            "must be greater than 0",
        ));
    }
    if let Some(t) = int("leaseTransitions")
        && t < 0
    {
        errs.push(FieldError::invalid(
            "spec.leaseTransitions",
            &Value::from(t),
            "must be greater than or equal to 0",
        ));
    }
}
