//! The checks every object's metadata gets on create and update (apimachinery's
//! `ValidateObjectMeta`): label keys and values, annotation keys and size, finalizer names,
//! owner references.

use crt_labels::validation::{is_qualified_name, is_valid_label_value};
use serde_json::Value;

use super::field::FieldError;
use crate::error::ApiError;

/// The most bytes all annotations of an object may take.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// A metadata map that is not `map[string]string` cannot be decoded: 400, as the real
/// server's decoder answers.
fn string_map<'a>(
    kind: &str,
    meta: &'a serde_json::Map<String, Value>,
    field: &str,
) -> Result<Vec<(&'a String, &'a str)>, ApiError> {
    let Some(v) = meta.get(field).filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let Some(map) = v.as_object() else {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"v1\" cannot be handled as a {kind}: json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{field} of type map[string]string",
            json_type(v)
        )));
    };
    map.iter()
        .map(|(k, v)| match v.as_str() {
            Some(s) => Ok((k, s)),
            None => Err(ApiError::bad_request(format!(
                "{kind} in version \"v1\" cannot be handled as a {kind}: json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{field} of type string",
                json_type(v)
            ))),
        })
        .collect()
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Checks `metadata`: 400 for shapes that cannot be decoded, else the 422 field errors.
pub(crate) fn validate(kind: &str, obj: &Value) -> Result<Vec<FieldError>, ApiError> {
    let mut errs = Vec::new();
    let Some(meta) = obj.get("metadata").and_then(Value::as_object) else {
        return Ok(errs);
    };
    for (k, v) in string_map(kind, meta, "labels")? {
        for msg in is_qualified_name(k) {
            errs.push(FieldError::invalid(
                "metadata.labels",
                &Value::from(k.as_str()),
                &msg,
            ));
        }
        for msg in is_valid_label_value(v) {
            errs.push(FieldError::invalid(
                "metadata.labels",
                &Value::from(v),
                &msg,
            ));
        }
    }
    let annotations = string_map(kind, meta, "annotations")?;
    let mut total = 0;
    for (k, v) in &annotations {
        total += k.len() + v.len();
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(
                "metadata.annotations",
                &Value::from(k.as_str()),
                &msg,
            ));
        }
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(
            "metadata.annotations",
            TOTAL_ANNOTATION_SIZE_LIMIT,
        ));
    }
    if let Some(fins) = meta.get("finalizers").filter(|v| !v.is_null()) {
        let Some(list) = fins.as_array() else {
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"v1\" cannot be handled as a {kind}: json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.finalizers of type []string",
                json_type(fins)
            )));
        };
        for (i, f) in list.iter().enumerate() {
            let field = format!("metadata.finalizers[{i}]");
            match f.as_str() {
                Some(name) => {
                    for msg in is_qualified_name(name) {
                        errs.push(FieldError::invalid(field.clone(), f, &msg));
                    }
                }
                None => errs.push(FieldError::invalid(field, f, "must be a string")),
            }
        }
    }
    if let Some(refs) = meta.get("ownerReferences").and_then(Value::as_array) {
        let mut controllers = 0;
        for r in refs {
            let s = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("");
            let field = "metadata.ownerReferences";
            for (f, what) in [
                ("apiVersion", "version"),
                ("kind", "kind"),
                ("name", "name"),
                ("uid", "uid"),
            ] {
                if s(f).is_empty() {
                    errs.push(FieldError::invalid(
                        format!("{field}.{f}"),
                        &Value::from(""),
                        &format!("{what} must not be empty"),
                    ));
                }
            }
            if r.get("controller").and_then(Value::as_bool) == Some(true) {
                controllers += 1;
            }
        }
        if controllers > 1 {
            errs.push(FieldError::invalid(
                "metadata.ownerReferences",
                &Value::from(refs.clone()),
                "Only one reference can have Controller set to true",
            ));
        }
    }
    Ok(errs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_annotations_finalizers_owners() {
        let ok = json!({"metadata": {"labels": {"app.kubernetes.io/name": "web", "x": ""},
            "annotations": {"Example.com/Note": "anything at all"}, "finalizers": ["example.com/f"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u", "controller": true}]}});
        assert!(validate("ConfigMap", &ok).unwrap().is_empty());
        let bad = json!({"metadata": {"labels": {"bad key": "v", "k": "bad value!"},
            "finalizers": ["a/b/c"], "ownerReferences": [{"kind": "X", "name": "n", "uid": "u", "controller": true},
            {"apiVersion": "v1", "kind": "X", "name": "m", "uid": "w", "controller": true}]}});
        let errs = validate("ConfigMap", &bad).unwrap();
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "metadata.labels",
                "metadata.labels",
                "metadata.finalizers[0]",
                "metadata.ownerReferences.apiVersion",
                "metadata.ownerReferences"
            ]
        );
        let err = validate("ConfigMap", &json!({"metadata": {"labels": {"a": 1}}})).unwrap_err();
        assert_eq!(err.code, 400);
    }
}
