//! The checks every object's metadata gets on create and update (apimachinery's
//! `ValidateObjectMeta`, and the core group's wrapper of it): `generateName` and the name in
//! the kind's format, label keys and values, annotation keys and size, owner references,
//! finalizer names.
//!
//! Paths and values are upstream's: label and annotation errors name the map
//! (`metadata.labels`) with the bad key or value as the value; owner-reference errors name
//! the field without an index (`metadata.ownerReferences.uid`); a finalizer that is not a
//! qualified name is reported at `metadata.finalizers`, one that is neither standard nor
//! domain-qualified at `metadata.finalizers[i]`.

use crt_labels::validation::is_valid_label_value;
use serde_json::{Map, Value};

use super::field::{
    FieldError, NameFormat, go_strings, name_problems, qualified_name_problems, validate_name,
};
use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// The most bytes all annotations of an object may take.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// The finalizers upstream accepts without a domain.
const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

/// A metadata map that is not `map[string]string` cannot be decoded: 400, as the real
/// server's decoder answers.
fn string_map<'a>(
    res: &ResourceInfo,
    meta: &'a Map<String, Value>,
    field: &str,
) -> Result<Option<&'a Map<String, Value>>, ApiError> {
    let Some(v) = meta.get(field).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let Some(map) = v.as_object() else {
        return Err(undecodable(
            res,
            &format!(
                "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{field} of type map[string]string",
                json_type(v)
            ),
        ));
    };
    if let Some(bad) = map.values().find(|v| !v.is_string()) {
        return Err(undecodable(
            res,
            &format!(
                "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{field} of type string",
                json_type(bad)
            ),
        ));
    }
    Ok(Some(map))
}

fn undecodable(res: &ResourceInfo, why: &str) -> ApiError {
    let kind = &res.kind;
    ApiError::bad_request(format!(
        "{kind} in version \"{}\" cannot be handled as a {kind}: {why}",
        res.version
    ))
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

/// Whether the kind's validation goes through the core group's `ValidateObjectMeta`, which
/// adds the standard-or-qualified finalizer rule. Custom resources, CRDs, Leases and the
/// admission and aggregation kinds use apimachinery's directly.
fn kube_finalizer_rule(res: &ResourceInfo) -> bool {
    !res.custom
        && !matches!(
            res.group.as_str(),
            "apiextensions.k8s.io"
                | "coordination.k8s.io"
                | "admissionregistration.k8s.io"
                | "apiregistration.k8s.io"
        )
}

/// Checks `metadata` of an object of `res`, whose kind requires names in `format`: 400 for
/// shapes that cannot be decoded, else the 422 field errors in upstream's order
/// (`generateName`, `name`, labels, annotations, owner references, finalizers). A missing name
/// is the caller's to report (it depends on whether a name is generated).
pub(crate) fn validate(
    res: &ResourceInfo,
    format: NameFormat,
    obj: &Value,
) -> Result<Vec<FieldError>, ApiError> {
    let mut errs = Vec::new();
    let Some(meta) = obj.get("metadata").and_then(Value::as_object) else {
        return Ok(errs);
    };
    if let Some(prefix) = meta
        .get("generateName")
        .and_then(Value::as_str)
        .filter(|g| !g.is_empty())
    {
        for msg in name_problems(format, prefix, true) {
            errs.push(FieldError::invalid(
                "metadata.generateName",
                &Value::from(prefix),
                &msg,
            ));
        }
    }
    if let Some(name) = meta
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        errs.extend(validate_name(format, name, "metadata.name"));
    }
    if let Some(labels) = string_map(res, meta, "labels")? {
        validate_labels(labels, "metadata.labels", &mut errs);
    }
    if let Some(annotations) = string_map(res, meta, "annotations")? {
        validate_annotations(annotations, "metadata.annotations", &mut errs);
    }
    if let Some(refs) = meta.get("ownerReferences").and_then(Value::as_array) {
        validate_owner_references(refs, &mut errs);
    }
    if let Some(fins) = meta.get("finalizers").filter(|v| !v.is_null()) {
        let Some(list) = fins.as_array() else {
            return Err(undecodable(
                res,
                &format!(
                    "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.finalizers of type []string",
                    json_type(fins)
                ),
            ));
        };
        validate_finalizers(list, kube_finalizer_rule(res), &mut errs);
    }
    Ok(errs)
}

/// `ValidateAnnotations`: every key a qualified name (case aside), at most 256 KiB in all,
/// reported at `field`.
fn validate_annotations(annotations: &Map<String, Value>, field: &str, errs: &mut Vec<FieldError>) {
    let mut total = 0;
    for (k, v) in annotations {
        total += k.len() + v.as_str().map_or(0, str::len);
        let problems = if k.bytes().any(|c| c.is_ascii_uppercase()) {
            qualified_name_problems(&k.to_lowercase())
        } else {
            qualified_name_problems(k)
        };
        for msg in problems {
            errs.push(FieldError::invalid(field, &Value::from(k.as_str()), &msg));
        }
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(field, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
}

/// The `metadata` of a resource embedded in a custom object (`x-kubernetes-embedded-resource`),
/// checked as upstream's `validateEmbeddedResource` does: ObjectMeta's rules for labels and
/// annotations, the name (optional there) as a path segment, all under `field`.
pub(crate) fn validate_embedded(meta: &Map<String, Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(name) = meta.get("name").and_then(Value::as_str) {
        let problems: &[(bool, &str)] = &[
            (name == ".", "may not be '.'"),
            (name == "..", "may not be '..'"),
            (name.contains('/'), "may not contain '/'"),
            (name.contains('%'), "may not contain '%'"),
        ];
        for (_, msg) in problems.iter().filter(|(bad, _)| *bad) {
            errs.push(FieldError::invalid(
                format!("{field}.name"),
                &Value::from(name),
                msg,
            ));
        }
    }
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        validate_labels(labels, &format!("{field}.labels"), &mut errs);
    }
    if let Some(annotations) = meta.get("annotations").and_then(Value::as_object) {
        validate_annotations(annotations, &format!("{field}.annotations"), &mut errs);
    }
    errs
}

/// `ValidateLabels`: every key a qualified name, every value a label value, reported at
/// `field` (the map, not the entry) with the bad key or value.
pub(crate) fn validate_labels(
    labels: &Map<String, Value>,
    field: &str,
    errs: &mut Vec<FieldError>,
) {
    for (k, v) in labels {
        for msg in qualified_name_problems(k) {
            errs.push(FieldError::invalid(field, &Value::from(k.as_str()), &msg));
        }
        if let Some(v) = v.as_str() {
            for msg in is_valid_label_value(v) {
                errs.push(FieldError::invalid(field, &Value::from(v), &msg));
            }
        }
    }
}

/// `ValidateOwnerReferences`.
fn validate_owner_references(refs: &[Value], errs: &mut Vec<FieldError>) {
    const FIELD: &str = "metadata.ownerReferences";
    let mut first_controller: Option<String> = None;
    for r in refs {
        let s = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (s("apiVersion"), s("kind"));
        // `schema.FromAPIVersionAndKind`: `group/version`, `version`, or (more slashes)
        // nothing at all.
        let (group, version) = match api_version.split_once('/') {
            None => ("", api_version),
            Some((g, v)) if !v.contains('/') => (g, v),
            Some(_) => ("", ""),
        };
        if version.is_empty() {
            errs.push(FieldError::invalid(
                format!("{FIELD}.apiVersion"),
                &Value::from(api_version),
                "version must not be empty",
            ));
        }
        for f in ["kind", "name", "uid"] {
            if s(f).is_empty() {
                errs.push(FieldError::invalid(
                    format!("{FIELD}.{f}"),
                    &Value::from(""),
                    "must not be empty",
                ));
            }
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(FieldError::invalid_go(
                FIELD,
                &go_owner_reference(r),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let this = format!("{kind}/{}", s("name"));
            match &first_controller {
                Some(first) => {
                    let all: Vec<String> = refs.iter().map(go_owner_reference).collect();
                    errs.push(FieldError::invalid_go(
                        FIELD,
                        &format!("[]v1.OwnerReference{{{}}}", all.join(", ")),
                        &format!("Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"),
                    ));
                }
                None => first_controller = Some(this),
            }
        }
    }
}

/// An owner reference as Go's `%#v` prints a `v1.OwnerReference` (pointers as Go shows a
/// set pointer, whose address is the real server's own).
fn go_owner_reference(r: &Value) -> String {
    let s = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("");
    let ptr = |f: &str| {
        if r.get(f).is_some_and(|v| !v.is_null()) {
            "(*bool)(0xc000000000)"
        } else {
            "(*bool)(nil)"
        }
    };
    format!(
        "v1.OwnerReference{{APIVersion:{:?}, Kind:{:?}, Name:{:?}, UID:{:?}, Controller:{}, BlockOwnerDeletion:{}}}",
        s("apiVersion"),
        s("kind"),
        s("name"),
        s("uid"),
        ptr("controller"),
        ptr("blockOwnerDeletion")
    )
}

/// `ValidateFinalizers`, and with `kube_rule` the core group's `validateKubeFinalizerName`.
fn validate_finalizers(list: &[Value], kube_rule: bool, errs: &mut Vec<FieldError>) {
    let (mut orphan, mut foreground) = (false, false);
    for f in list {
        let Some(name) = f.as_str() else { continue };
        for msg in qualified_name_problems(name) {
            errs.push(FieldError::invalid("metadata.finalizers", f, &msg));
        }
        orphan |= name == "orphan";
        foreground |= name == "foregroundDeletion";
    }
    if orphan && foreground {
        errs.push(FieldError::invalid_go(
            "metadata.finalizers",
            &go_strings(list.iter().filter_map(Value::as_str)),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    if kube_rule {
        for (i, f) in list.iter().enumerate() {
            let Some(name) = f.as_str() else { continue };
            if !name.contains('/') && !STANDARD_FINALIZERS.contains(&name) {
                errs.push(FieldError::invalid(
                    format!("metadata.finalizers[{i}]"),
                    f,
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res(plural: &str) -> ResourceInfo {
        ResourceInfo::builtins()
            .into_iter()
            .find(|r| r.plural == plural)
            .unwrap()
    }

    /// The checks with the name format of `res`'s kind, as the storage runs them.
    fn validate(res: &ResourceInfo, obj: &Value) -> Result<Vec<FieldError>, ApiError> {
        super::validate(res, crate::kinds::name_format(res), obj)
    }

    #[test]
    fn labels_annotations_finalizers_owners() {
        let cms = res("configmaps");
        let ok = json!({"metadata": {"name": "ok", "labels": {"app.kubernetes.io/name": "web", "x": ""},
            "annotations": {"Example.com/Note": "anything at all"}, "finalizers": ["example.com/f", "kubernetes"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u", "controller": true}]}});
        assert!(validate(&cms, &ok).unwrap().is_empty());
        let bad = json!({"metadata": {"labels": {"bad key": "v", "k": "bad value!"},
            "finalizers": ["a/b/c", "plain"], "ownerReferences": [{"kind": "X", "name": "n", "uid": "u", "controller": true},
            {"apiVersion": "v1", "kind": "X", "name": "m", "uid": "w", "controller": true}]}});
        let errs = validate(&cms, &bad).unwrap();
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "metadata.labels",
                "metadata.labels",
                "metadata.ownerReferences.apiVersion",
                "metadata.ownerReferences",
                "metadata.finalizers",
                "metadata.finalizers[1]",
            ]
        );
        assert!(
            errs[3]
                .message
                .ends_with("Found \"true\" in references for X/n and X/m")
        );
        let err = validate(&cms, &json!({"metadata": {"labels": {"a": 1}}})).unwrap_err();
        assert_eq!(err.code, 400);
    }

    #[test]
    fn leases_and_custom_resources_skip_the_kube_finalizer_rule() {
        let obj = json!({"metadata": {"name": "l", "finalizers": ["plain"]}});
        assert!(validate(&res("leases"), &obj).unwrap().is_empty());
        assert_eq!(validate(&res("configmaps"), &obj).unwrap().len(), 1);
    }

    #[test]
    fn names_follow_the_kind() {
        let roles = res("roles");
        let ok = json!({"metadata": {"name": "system:controller:Foo"}});
        assert!(validate(&roles, &ok).unwrap().is_empty());
        let errs = validate(&roles, &json!({"metadata": {"name": "a/b%c"}})).unwrap();
        let msgs: Vec<&str> = errs.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(
            msgs,
            vec![
                "Invalid value: \"a/b%c\": may not contain '/'",
                "Invalid value: \"a/b%c\": may not contain '%'"
            ]
        );
        let errs = validate(&res("namespaces"), &json!({"metadata": {"name": "a.b"}})).unwrap();
        assert_eq!(
            errs[0].message,
            "Invalid value: \"a.b\": must not contain dots"
        );
        let gen_ok = json!({"metadata": {"generateName": "web-", "name": "web-x7k2p"}});
        assert!(validate(&res("configmaps"), &gen_ok).unwrap().is_empty());
    }
}
