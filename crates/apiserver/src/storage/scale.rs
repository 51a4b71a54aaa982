//! The `scale` subresource: an `autoscaling/v1 Scale` view of a workload's replicas.

use serde_json::{Value, json};

use super::commit::{check_precondition, commit_update, current, set_managed};
use super::meta;
use super::options::{PatchType, WriteOptions, apply_patch};
use super::store::State;
use super::store::obj_key;
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::validation::{FieldError, invalid_kind};

/// The label selector of a built-in workload (`spec.selector`, a `LabelSelector` object) as
/// the string form `Scale.status.selector` carries.
fn selector_string(sel: &Value) -> String {
    if let Some(s) = sel.as_str() {
        return s.to_string();
    }
    super::select::label_selector(sel)
        .map(|s| s.to_string())
        .unwrap_or_default()
}

/// The `Scale` of an object.
pub(crate) fn to_scale(res: &ResourceInfo, obj: &Value) -> Value {
    let Some(info) = &res.scale else {
        return Value::Null;
    };
    let spec = meta::get_path(obj, &info.spec_replicas_path)
        .cloned()
        .unwrap_or(json!(0));
    let status = meta::get_path(obj, &info.status_replicas_path)
        .cloned()
        .unwrap_or(json!(0));
    let mut scale = json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta::name(obj),
            "uid": meta::uid(obj),
            "resourceVersion": meta::resource_version(obj),
            "creationTimestamp": meta::meta_str(obj, "creationTimestamp"),
        },
        "spec": {"replicas": spec},
        "status": {"replicas": status},
    });
    if let Some(ns) = meta::meta_str(obj, "namespace") {
        scale["metadata"]["namespace"] = Value::from(ns);
    }
    if let Some(path) = &info.label_selector_path
        && let Some(sel) = meta::get_path(obj, path)
    {
        let text = if res.custom {
            sel.as_str().unwrap_or_default().to_string()
        } else {
            selector_string(sel)
        };
        if !text.is_empty() {
            scale["status"]["selector"] = Value::from(text);
        }
    }
    scale
}

/// PUT on `scale`: sets the replicas of the object (with its generation bump); answers the new
/// `Scale`. `managed` are the object's new `managedFields` when server-side apply computed
/// them; `None` records an `Update` through `scale` for the request's field manager.
pub(crate) fn update(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    body: Value,
    opts: &WriteOptions,
    managed: Option<Value>,
) -> Result<Value, ApiError> {
    let key = obj_key(res, namespace, name);
    let old = current(st, res, &key, Some("scale"))?;
    let info = res.scale.clone().ok_or_else(super::options::not_served)?;
    if let Some(kind) = body.get("kind").and_then(Value::as_str)
        && kind != "Scale"
    {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"v1\" cannot be handled as a Scale: the kind in the data ({kind}) does not match the expected kind (Scale)"
        )));
    }
    if !meta::name(&body).is_empty() && meta::name(&body) != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            meta::name(&body)
        )));
    }
    check_precondition(res, &old, &body)?;
    let replicas = body
        .get("spec")
        .and_then(|s| s.get("replicas"))
        .cloned()
        .unwrap_or(json!(0));
    match replicas.as_i64() {
        Some(n) if n >= 0 && n <= i64::from(i32::MAX) => {}
        _ => {
            let err = FieldError::invalid(
                "spec.replicas",
                &replicas,
                "must be greater than or equal to 0",
            );
            return Err(invalid_kind("Scale", "autoscaling", name, &[err]));
        }
    }
    let mut new = (*old).clone();
    meta::set_path(&mut new, &info.spec_replicas_path, replicas);
    set_managed(
        st,
        res,
        Some(&old),
        &mut new,
        None,
        opts,
        Some("scale"),
        managed,
    );
    let stored = commit_update(st, res, key, old, new, Some("scale"), opts)?;
    Ok(to_scale(res, &stored))
}

/// PATCH on `scale` with a patch document: the patch applies to the object's `Scale`, which
/// is then written as by [`update`].
pub(crate) fn patch(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    patch_type: PatchType,
    body: &[u8],
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    let key = obj_key(res, namespace, name);
    let old = current(st, res, &key, Some("scale"))?;
    let base = to_scale(res, &old);
    let patched = apply_patch(res, &base, patch_type, body)?;
    update(st, res, namespace, name, patched, opts, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_of_a_label_selector_object() {
        let sel = json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]});
        assert_eq!(selector_string(&sel), "app=web,tier in (a)");
    }
}
