//! DELETE on an object or a collection: the propagation policy, the answer the real server
//! gives (the deleted object or a `Status`), and the deletion itself, which the synchronous
//! controllers (`gc.rs`) carry out with its follow-ups.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::{Value, json};

use super::convert::to_version;
use super::gc::{Outcome, Policy, delete_one, finalizers_for, held_by_spec, marked, run_queue};
use super::options::{DeleteOptions, ListOptions};
use super::rules::SYSTEM_NAMESPACES;
use super::store::{Loc, State, obj_key, res_key};
use super::{admit, meta, select::Selection};
use crate::admission::Operation;
use crate::error::ApiError;
use crate::resource::{ResourceInfo, names};

/// Whether the real server answers a deletion of this resource with the deleted object
/// (`ReturnDeletedObject`) rather than a `Status`.
fn returns_deleted_object(res: &ResourceInfo) -> bool {
    res.custom || crate::kinds::strategy_of(&res.group, &res.plural).delete_returns_object
}

/// The `Status` answered for a completed deletion.
fn success_status(res: &ResourceInfo, obj: &Value) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": meta::name(obj), "group": res.group, "kind": res.plural, "uid": meta::uid(obj)},
    })
}

/// DELETE.
pub(crate) fn delete(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    opts: &DeleteOptions,
) -> Result<Value, ApiError> {
    let key = obj_key(res, namespace, name);
    let loc = Loc {
        res: res_key(res),
        key,
    };
    let obj = st
        .get(&loc.res, &loc.key)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&res.group_resource(), name))?;
    let gr = res.group_resource();
    if let Some(uid) = opts.precondition_uid.as_deref().filter(|u| !u.is_empty())
        && uid != meta::uid(&obj)
    {
        let why = format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            meta::uid(&obj)
        );
        return Err(ApiError::conflict(&gr, name, &why));
    }
    if let Some(rv) = opts
        .precondition_resource_version
        .as_deref()
        .filter(|r| !r.is_empty())
        && rv != meta::resource_version(&obj)
    {
        let why = format!(
            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
            meta::resource_version(&obj)
        );
        return Err(ApiError::conflict(&gr, name, &why));
    }
    let policy = Policy::of(res, opts.propagation_policy.as_deref())?;
    // The immortal namespaces are refused by the admission chain (NamespaceLifecycle).
    admit::admit(
        st,
        res,
        Operation::Delete,
        None,
        None,
        Some(&obj),
        opts.dry_run,
        &opts.warnings,
        opts.user.as_deref(),
    )?;
    if st.graceful_pods
        && loc.res == "pods"
        && let Some(marked) = graceful_mark(&obj, opts.grace_period_seconds)
    {
        let stored = if opts.dry_run || meta::same_content(&obj, &marked) {
            Arc::new(marked)
        } else {
            st.put(&loc.res, loc.key.clone(), marked)
        };
        return Ok(to_version(&stored, &res.api_version()));
    }
    if opts.dry_run {
        let fins = finalizers_for(&loc, &obj, policy);
        if fins.is_empty() && !held_by_spec(&obj) {
            return Ok(deleted_answer(res, &obj));
        }
        return Ok(to_version(&marked(&loc, &obj, &fins), &res.api_version()));
    }
    let mut queue = VecDeque::new();
    let outcome = delete_one(st, &loc, policy, &mut queue);
    run_queue(st, queue);
    match outcome {
        Some(Outcome::Marked(obj)) => Ok(to_version(&obj, &res.api_version())),
        Some(Outcome::Removed(obj)) => Ok(deleted_answer(res, &obj)),
        None => Err(ApiError::not_found(&gr, name)),
    }
}

/// A graceful deletion of a pod (upstream's `CheckGracefulDelete` for pods): a pod bound to a
/// node that has not ended, deleted with a grace period above 0 (the request's, else its
/// `terminationGracePeriodSeconds`, 30 by default; a negative one is 1), is marked to go
/// at the end of the period, or sooner than an earlier deletion said. `None`: removed now.
fn graceful_mark(pod: &Value, requested: Option<i64>) -> Option<Value> {
    let spec = pod.get("spec");
    let bound = spec
        .and_then(|s| s.get("nodeName"))
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let phase = meta::get_path(pod, ".status.phase").and_then(Value::as_str);
    if !bound || matches!(phase, Some("Succeeded" | "Failed")) {
        return None;
    }
    let grace = requested
        .or_else(|| {
            spec.and_then(|s| s.get("terminationGracePeriodSeconds"))
                .and_then(Value::as_i64)
        })
        .unwrap_or(30);
    let grace = if grace < 0 { 1 } else { grace };
    if grace == 0 {
        return None;
    }
    let earlier =
        meta::get_path(pod, ".metadata.deletionGracePeriodSeconds").and_then(Value::as_i64);
    if meta::is_deleting(pod) && earlier.is_some_and(|e| e <= grace) {
        return Some(pod.clone());
    }
    let mut marked = pod.clone();
    meta::set_meta(
        &mut marked,
        "deletionTimestamp",
        Value::from(meta::seconds_from_now(grace)),
    );
    meta::set_meta(
        &mut marked,
        "deletionGracePeriodSeconds",
        Value::from(grace),
    );
    Some(marked)
}

fn deleted_answer(res: &ResourceInfo, obj: &Value) -> Value {
    if returns_deleted_object(res) {
        to_version(obj, &res.api_version())
    } else {
        success_status(res, obj)
    }
}

/// DELETE on a collection: deletes every selected object; answers the list of what was
/// deleted (or marked).
pub(crate) fn delete_collection(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    list: &ListOptions,
    opts: &DeleteOptions,
) -> Result<Value, ApiError> {
    let sel = Selection::parse(
        res,
        namespace,
        list.label_selector.as_deref(),
        list.field_selector.as_deref(),
    )?;
    let policy = Policy::of(res, opts.propagation_policy.as_deref())?;
    let rk = res_key(res);
    let selected: Vec<(super::store::ObjKey, Arc<Value>)> = st
        .data
        .get(&rk)
        .map(|objs| {
            objs.iter()
                .filter(|(_, o)| sel.matches(o))
                .map(|(k, o)| (k.clone(), o.clone()))
                .collect()
        })
        .unwrap_or_default();
    // The system namespaces are never deleted, by a collection delete either.
    let protected = |key: &super::store::ObjKey| {
        res.is(names::NAMESPACES) && SYSTEM_NAMESPACES[..3].contains(&key.1.as_str())
    };
    // Every deletion is admitted before any is carried out: a denied one changes nothing.
    for (_, obj) in selected.iter().filter(|(k, _)| !protected(k)) {
        admit::admit(
            st,
            res,
            Operation::Delete,
            None,
            None,
            Some(obj),
            opts.dry_run,
            &opts.warnings,
            opts.user.as_deref(),
        )?;
    }
    let mut items = Vec::new();
    for (key, obj) in selected {
        let loc = Loc {
            res: rk.clone(),
            key,
        };
        if protected(&loc.key) {
            continue;
        }
        if opts.dry_run {
            let fins = finalizers_for(&loc, &obj, policy);
            let shown = if fins.is_empty() && !held_by_spec(&obj) {
                (*obj).clone()
            } else {
                marked(&loc, &obj, &fins)
            };
            items.push(to_version(&shown, &res.api_version()));
            continue;
        }
        let mut queue = VecDeque::new();
        match delete_one(st, &loc, policy, &mut queue) {
            Some(Outcome::Marked(o)) | Some(Outcome::Removed(o)) => {
                items.push(to_version(&o, &res.api_version()))
            }
            None => {}
        }
        run_queue(st, queue);
    }
    Ok(json!({
        "apiVersion": res.api_version(),
        "kind": res.list_kind,
        "metadata": {"resourceVersion": st.rv.to_string()},
        "items": items,
    }))
}
