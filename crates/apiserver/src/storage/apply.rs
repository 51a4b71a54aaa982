//! Server-side apply requests (`PATCH` with `application/apply-patch+yaml`): the request checks
//! the real server makes, then [`crate::fieldmanager::apply`] on the object, its `status` or
//! its `scale`, and the usual create or update path with the managed fields it computed.

use serde_json::{Value, json};

use super::commit::{create_with, current, shape_of, update_with, writer};
use super::convert::to_version;
use super::options::WriteOptions;
use super::store::obj_key;
use super::store::{State, res_key};
use super::{meta, scale};
use crate::error::ApiError;
use crate::fieldmanager;
use crate::resource::ResourceInfo;

/// 422 for an apply without `fieldManager`, as `ValidatePatchOptions` words it.
fn manager_required() -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
    )
    .with_details(json!({
        "group": "meta.k8s.io",
        "kind": "PatchOptions",
        "causes": [{
            "reason": "FieldValueRequired",
            "message": "Required value: is required for apply patch",
            "field": "fieldManager",
        }],
    }))
}

/// Server-side apply of `body` to the object `name`, or to its `status` or `scale`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    subresource: Option<&str>,
    body: &[u8],
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    if opts.field_manager.as_deref().is_none_or(str::is_empty) {
        return Err(manager_required());
    }
    let config = fieldmanager::parse_config(body)?;
    if subresource == Some("scale") {
        return apply_scale(st, res, namespace, name, config, opts);
    }
    let mut config = check_config(res, name, config)?;
    super::crd::check_apply_config(st, res, namespace, name, &mut config, opts)?;
    let config = scoped(res, subresource, config);
    let key = obj_key(res, namespace, name);
    let shape = shape_of(st, res);
    let w = writer(res, opts, subresource);
    let exists = st.get(&res_key(res), &key).is_some();
    if !exists && subresource.is_none() {
        let obj = fieldmanager::apply(None, &config, &shape, &w.get(), opts.force)?;
        let managed = managed_of(&obj);
        return create_with(st, res, namespace, obj, opts, Some(managed))
            .map(std::sync::Arc::unwrap_or_clone);
    }
    let old = current(st, res, &key, subresource)?;
    let live = to_version(&old, &res.api_version());
    let merged = fieldmanager::apply(Some(&live), &config, &shape, &w.get(), opts.force)?;
    let managed = managed_of(&merged);
    update_with(
        st,
        res,
        namespace,
        name,
        subresource,
        merged,
        opts,
        Some(managed),
    )
}

fn managed_of(obj: &Value) -> Value {
    obj.pointer("/metadata/managedFields")
        .cloned()
        .unwrap_or(Value::Null)
}

/// The checks of an applied configuration: its version is the request's, its name the URL's
/// (filled in when absent), no `managedFields`.
fn check_config(res: &ResourceInfo, name: &str, mut config: Value) -> Result<Value, ApiError> {
    let expected = res.api_version();
    let given = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if given != expected {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {given}, expected: {expected}"
        )));
    }
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind != res.kind {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {}: the kind in the data ({kind}) does not match the expected kind ({})",
            res.version, res.kind, res.kind
        )));
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    match meta::meta_str(&config, "name") {
        Some(n) if !n.is_empty() && n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        Some(n) if !n.is_empty() => {}
        _ => meta::set_meta(&mut config, "name", Value::from(name)),
    }
    Ok(config)
}

/// What of the configuration the request may set: not `status` on the main resource of a kind
/// with a status subresource; only `status` (and the metadata its status strategy allows)
/// through the status subresource.
fn scoped(res: &ResourceInfo, subresource: Option<&str>, mut config: Value) -> Value {
    let Some(map) = config.as_object_mut() else {
        return config;
    };
    match subresource {
        None if res.status_subresource => {
            map.remove("status");
        }
        None => {}
        Some(_) => {
            map.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status"))
        }
    }
    // A status configuration sets the metadata its kind's status strategy lets a status
    // write change (see `storage::status`).
    if let Some(sub) = subresource
        && let Some(m) = map.get_mut("metadata").and_then(Value::as_object_mut)
    {
        m.retain(|k, _| {
            matches!(k.as_str(), "name" | "namespace" | "resourceVersion")
                || (sub == "status"
                    && matches!(
                        k.as_str(),
                        "labels" | "annotations" | "finalizers" | "ownerReferences"
                    )
                    && super::status::may_set_meta(res, k))
        });
    }
    config
}

/// Apply of an `autoscaling/v1 Scale`: its `spec.replicas` applied to the object's replicas
/// field through the `scale` subresource.
fn apply_scale(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    config: Value,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    let key = obj_key(res, namespace, name);
    let old = current(st, res, &key, Some("scale"))?;
    let info = res.scale.clone().ok_or_else(super::options::not_served)?;
    let given = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if given != "autoscaling/v1" {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {given}, expected: autoscaling/v1"
        )));
    }
    let mut parent =
        json!({"apiVersion": res.api_version(), "kind": res.kind, "metadata": {"name": name}});
    if let Some(replicas) = config.pointer("/spec/replicas") {
        meta::set_path(&mut parent, &info.spec_replicas_path, replicas.clone());
    }
    let live = to_version(&old, &res.api_version());
    let w = writer(res, opts, Some("scale"));
    let merged = fieldmanager::apply(
        Some(&live),
        &parent,
        &shape_of(st, res),
        &w.get(),
        opts.force,
    )?;
    let replicas = meta::get_path(&merged, &info.spec_replicas_path)
        .cloned()
        .unwrap_or(json!(0));
    let mut body =
        json!({"kind": "Scale", "metadata": {"name": name}, "spec": {"replicas": replicas}});
    if let Some(rv) = config.pointer("/metadata/resourceVersion") {
        body["metadata"]["resourceVersion"] = rv.clone();
    }
    scale::update(
        st,
        res,
        namespace,
        name,
        body,
        opts,
        Some(managed_of(&merged)),
    )
}
