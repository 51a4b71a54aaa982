//! `certificates.k8s.io`: the conditions of a CertificateSigningRequest as its `approval`
//! subresource writes them (upstream's `validateConditions` and the update rule that keeps
//! `Approved`, `Denied` and `Failed` once set; the approval may add and change the others).

use serde_json::Value;

use super::FieldError;
use super::pod::{arr, s};

/// The condition types whose status may only be `True`, and which are never removed.
const TERMINAL: [&str; 3] = ["Approved", "Denied", "Failed"];

/// An update of a CertificateSigningRequest's approval: the conditions are well formed, at
/// most one of a type, not both `Approved` and `Denied`, and none of the terminal ones is
/// removed.
pub(crate) fn approval(obj: &Value, old: &Value, errs: &mut Vec<FieldError>) {
    let empty = Value::Null;
    let conditions = arr(obj.get("status").unwrap_or(&empty), "conditions");
    let mut seen: Vec<&str> = Vec::new();
    let (mut approved, mut denied) = (false, false);
    for (i, c) in conditions.iter().enumerate() {
        let at = format!("status.conditions[{i}]");
        let kind = s(c, "type");
        if kind.is_empty() {
            errs.push(FieldError::required(format!("{at}.type"), ""));
        }
        let status = s(c, "status");
        let allowed: &[&str] = if TERMINAL.contains(&kind) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if status.is_empty() {
            errs.push(FieldError::required(format!("{at}.status"), ""));
        } else if !allowed.contains(&status) {
            errs.push(FieldError::not_supported(
                format!("{at}.status"),
                &Value::from(status),
                allowed,
            ));
        }
        let exclusive = match kind {
            "Approved" => {
                approved = true;
                denied
            }
            "Denied" => {
                denied = true;
                approved
            }
            _ => false,
        };
        if exclusive {
            errs.push(FieldError::invalid(
                format!("{at}.type"),
                &Value::from(kind),
                "Approved and Denied conditions are mutually exclusive",
            ));
        }
        if seen.contains(&kind) {
            errs.push(FieldError::duplicate(
                format!("{at}.type"),
                &Value::from(kind),
            ));
        }
        seen.push(kind);
    }
    // The approval may add and change conditions, never remove a terminal one.
    let old_conditions = arr(old.get("status").unwrap_or(&empty), "conditions");
    for kind in TERMINAL {
        let count = |list: &[Value]| list.iter().filter(|c| s(c, "type") == kind).count();
        if count(conditions) < count(old_conditions) {
            errs.push(FieldError::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {kind:?}"),
            ));
        }
    }
}
