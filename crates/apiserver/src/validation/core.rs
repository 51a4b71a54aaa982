//! The core group (`pkg/apis/core/validation/validation.go`).

use serde_json::Value;

use super::{FieldError, at, immutable, str_at};

/// `ValidateConfigMap` / `ValidateConfigMapUpdate`.
pub(crate) fn config_map(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    if let Some(old) = old {
        immutable_data(obj, old, &["data", "binaryData"], errs);
    }
}

/// `ValidateSecret` / `ValidateSecretUpdate`.
pub(crate) fn secret(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    if let Some(old) = old {
        immutable_data(obj, old, &["data", "binaryData", "stringData"], errs);
        immutable(obj, old, &["type"], errs);
    }
}

/// The data of an object marked `immutable: true` cannot change, nor the mark.
fn immutable_data(obj: &Value, old: &Value, fields: &[&str], errs: &mut Vec<FieldError>) {
    if at(old, &["immutable"]) != Some(&Value::Bool(true)) {
        return;
    }
    let msg = "field is immutable when `immutable` is set";
    if at(obj, &["immutable"]) != Some(&Value::Bool(true)) {
        errs.push(FieldError::forbidden("immutable", msg));
    }
    for f in fields {
        if at(obj, &[f]) != at(old, &[f]) {
            errs.push(FieldError::forbidden(*f, msg));
        }
    }
}

/// `ValidateService` / `ValidateServiceUpdate`.
pub(crate) fn service(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    if let Some(old) = old {
        let old_ip = str_at(old, &["spec", "clusterIP"]);
        if !old_ip.is_empty() && old_ip != str_at(obj, &["spec", "clusterIP"]) {
            immutable(obj, old, &["spec", "clusterIP"], errs);
        }
    }
}

/// `ValidatePersistentVolumeClaim` / `ValidatePersistentVolumeClaimUpdate`.
pub(crate) fn persistent_volume_claim(
    obj: &Value,
    old: Option<&Value>,
    errs: &mut Vec<FieldError>,
) {
    if let Some(old) = old {
        let changed = ["storageClassName", "accessModes", "volumeMode"]
            .iter()
            .any(|f| at(obj, &["spec", f]) != at(old, &["spec", f]));
        if changed {
            errs.push(FieldError::forbidden(
                "spec",
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_immutable_config_map_keeps_its_data() {
        let old = json!({"immutable": true, "data": {"a": "1"}});
        let new = json!({"immutable": true, "data": {"a": "2"}});
        let mut errs = Vec::new();
        config_map(&new, Some(&old), &mut errs);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "data");
        assert_eq!(
            errs[0].message,
            "Forbidden: field is immutable when `immutable` is set"
        );
    }
}
