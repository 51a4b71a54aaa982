//! Binding a pod to a node (`POST .../bindings` or `.../pods/NAME/binding`), as a scheduler
//! does: the pod gets `spec.nodeName` and a `PodScheduled` condition; the Binding itself is
//! never stored (upstream's `BindingREST`).

use serde_json::{Value, json};

use super::commit::{commit_update, current};
use super::meta;
use super::options::WriteOptions;
use super::store::{State, obj_key};
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::validation::{FieldError, invalid_kind};

/// The answer of a successful binding or eviction: a `Status` of `Success`, code 201.
pub(crate) fn created_status() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

/// Binds the pod the Binding names (`url_name` is the pod of a `pods/NAME/binding` request)
/// to the Binding's target node.
pub(crate) fn bind(
    st: &mut State,
    pods: &ResourceInfo,
    namespace: &str,
    url_name: Option<&str>,
    binding: &Value,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    let name = meta::name(binding);
    if let Some(url_name) = url_name
        && name != url_name
    {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    }
    let target = binding.get("target").unwrap_or(&Value::Null);
    let kind = target.get("kind").and_then(Value::as_str).unwrap_or("");
    if !kind.is_empty() && kind != "Node" {
        errs.push(FieldError::not_supported(
            "target.kind",
            &Value::from(kind),
            &["Node", "<empty>"],
        ));
    }
    let node = target.get("name").and_then(Value::as_str).unwrap_or("");
    if node.is_empty() {
        errs.push(FieldError::required("target.name", ""));
    }
    if !errs.is_empty() {
        return Err(invalid_kind("Binding", "", name, &errs));
    }
    let key = obj_key(pods, Some(namespace), name);
    let old = current(st, pods, &key, None)?;
    if meta::is_deleting(&old) {
        return Err(ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on pods/binding \"{name}\": pod {name} is being deleted, cannot be assigned to a host"
            ),
        ));
    }
    let assigned = meta::get_path(&old, ".spec.nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !assigned.is_empty() {
        return Err(ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on pods/binding \"{name}\": pod {name} is already assigned to node \"{assigned}\""
            ),
        ));
    }
    let mut new = (*old).clone();
    meta::set_path(&mut new, ".spec.nodeName", Value::from(node));
    if let Some(notes) = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        && !notes.is_empty()
    {
        let m = meta::meta_mut(&mut new);
        let annotations = m.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = annotations.as_object_mut() {
            a.extend(notes.clone());
        }
    }
    let scheduled = json!({"type": "PodScheduled", "status": "True",
        "lastProbeTime": null, "lastTransitionTime": meta::now()});
    let status = new
        .as_object_mut()
        .map(|m| m.entry("status").or_insert_with(|| json!({})));
    if let Some(status) = status.and_then(Value::as_object_mut) {
        let conditions = status.entry("conditions").or_insert_with(|| json!([]));
        if let Some(list) = conditions.as_array_mut() {
            list.retain(|c| c.get("type").and_then(Value::as_str) != Some("PodScheduled"));
            list.push(scheduled);
        }
    }
    commit_update(st, pods, key, old, new, Some("binding"), opts)?;
    Ok(created_status())
}
