//! Evicting a pod (`POST .../pods/NAME/eviction` with a `policy/v1 Eviction`): the pod is
//! deleted unless a PodDisruptionBudget covering it allows no disruption, as upstream's
//! `EvictionREST` decides:
//! - a pod that is Pending, has ended or is being deleted is deleted whatever its budget;
//! - a pod that is not Ready is deleted without taking a disruption when its budget's
//!   `unhealthyPodEvictionPolicy` is `AlwaysAllow`, or when the budget has its desired
//!   healthy pods (`currentHealthy >= desiredHealthy > 0`);
//! - otherwise the budget must have computed its current generation and allow a disruption:
//!   one is taken from `disruptionsAllowed` (the `DisruptionAllowed` condition turns `False`
//!   at zero) and the pod is recorded under `disruptedPods` until the disruption controller
//!   sees it gone.
//!
//! With no disruption controller running (as in envtest), a budget whose status was never
//! computed refuses every eviction of the Running, Ready pods it covers.

use serde_json::{Value, json};

use super::bind::created_status;
use super::commit::commit_update;
use super::gc::namespace_range;
use super::options::{DeleteOptions, WriteOptions};
use super::store::{State, obj_key, res_key};
use super::{delete, meta, select};
use crate::error::ApiError;
use crate::resource::{ResourceInfo, names};

/// 429 `TooManyRequests` naming the budget in a `DisruptionBudget` cause.
fn refused(cause: String) -> ApiError {
    ApiError::new(
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    )
    .with_details(json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]}))
}

/// Evicts pod `name`: checks its disruption budget (and takes one disruption from it), then
/// deletes the pod with the Eviction's `deleteOptions`.
pub(crate) fn evict(
    st: &mut State,
    pods: &ResourceInfo,
    namespace: &str,
    name: &str,
    eviction: &Value,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    let in_body = meta::name(eviction);
    if !in_body.is_empty() && in_body != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let key = obj_key(pods, Some(namespace), name);
    let pod = st
        .get(&res_key(pods), &key)
        .cloned()
        .ok_or_else(|| ApiError::not_found("pods", name))?;
    let phase = meta::get_path(&pod, ".status.phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut delete_opts = delete_options(eviction.get("deleteOptions"));
    // A dry run when the request says `dryRun=All` or the Eviction's `deleteOptions` does (the
    // only value either may hold, so they cannot disagree), as upstream's `propagateDryRun`:
    // the budget is checked but not charged, and the pod stays.
    let dry_run_in_body = eviction
        .pointer("/deleteOptions/dryRun")
        .and_then(Value::as_array)
        .is_some_and(|d| !d.is_empty());
    delete_opts.dry_run = opts.dry_run || dry_run_in_body;
    // Upstream's `canIgnorePDB`.
    let ignore_budget = matches!(phase, "Succeeded" | "Failed" | "Pending");
    if !ignore_budget && !meta::is_deleting(&pod) {
        take_disruption(st, namespace, &pod, opts, delete_opts.dry_run)?;
    }
    delete_opts.user = opts.user.clone();
    delete::delete(st, pods, Some(namespace), name, &delete_opts)?;
    Ok(created_status())
}

/// The budget covering `pod`, if any, must allow a disruption; one is taken from it.
fn take_disruption(
    st: &mut State,
    namespace: &str,
    pod: &Value,
    opts: &WriteOptions,
    dry_run: bool,
) -> Result<(), ApiError> {
    let Some(pdbs_res) = st
        .registry
        .resolve_gr(names::POD_DISRUPTION_BUDGETS, "v1")
        .cloned()
    else {
        return Ok(());
    };
    let labels: std::collections::BTreeMap<String, String> = pod
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect();
    let covering: Vec<_> = st
        .data
        .get(&res_key(&pdbs_res))
        .into_iter()
        .flat_map(|objs| objs.range(namespace_range(namespace)))
        .filter(|(_, pdb)| {
            pdb.pointer("/spec/selector")
                .and_then(select::label_selector)
                .is_some_and(|s| !s.is_everything() && s.matches(&labels))
        })
        .map(|(k, pdb)| (k.clone(), pdb.clone()))
        .collect();
    let (key, pdb) = match covering.as_slice() {
        [] => return Ok(()),
        [one] => one.clone(),
        _ => {
            return Err(ApiError::new(
                500,
                "InternalError",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ));
        }
    };
    let pdb_name = key.1.clone();
    let int = |path: &str| {
        meta::get_path(&pdb, path)
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let ready = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    if !ready {
        let always = meta::get_path(&pdb, ".spec.unhealthyPodEvictionPolicy")
            .and_then(Value::as_str)
            == Some("AlwaysAllow");
        let desired = int(".status.desiredHealthy");
        if always || (int(".status.currentHealthy") >= desired && desired > 0) {
            // The unhealthy pod does not count towards the budget: deleted, nothing taken.
            return Ok(());
        }
    }
    let generation = meta::get_path(&pdb, ".metadata.generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let observed = meta::get_path(&pdb, ".status.observedGeneration").and_then(Value::as_i64);
    if observed.is_none_or(|o| o < generation) {
        return Err(refused(format!(
            "The disruption budget {pdb_name} is still being processed by the server."
        )));
    }
    let allowed = int(".status.disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::new(
            403,
            "Forbidden",
            format!(
                "poddisruptionbudget.policy \"{pdb_name}\" is forbidden: pdb disruptions allowed is negative"
            ),
        )
        .with_details(json!({"name": pdb_name, "group": "policy", "kind": "poddisruptionbudget"})));
    }
    if allowed == 0 {
        let desired = meta::get_path(&pdb, ".status.desiredHealthy")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let current = meta::get_path(&pdb, ".status.currentHealthy")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        return Err(refused(format!(
            "The disruption budget {pdb_name} needs {desired} healthy pods and has {current} currently"
        )));
    }
    if dry_run {
        return Ok(());
    }
    let mut new = (*pdb).clone();
    meta::set_path(&mut new, ".status.disruptionsAllowed", json!(allowed - 1));
    if allowed == 1 {
        insufficient_pods(&mut new);
    }
    meta::set_path(
        &mut new,
        &format!(".status.disruptedPods.{}", meta::name(pod)),
        Value::from(meta::now()),
    );
    let key = obj_key(&pdbs_res, Some(namespace), &pdb_name);
    commit_update(st, &pdbs_res, key, pdb, new, Some("status"), opts)?;
    Ok(())
}

/// Sets the budget's `DisruptionAllowed` condition to `False` (`InsufficientPods`), as
/// upstream's `UpdateDisruptionAllowedCondition` when no disruption is left.
fn insufficient_pods(pdb: &mut Value) {
    let observed = meta::get_path(pdb, ".status.observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut conditions: Vec<Value> = meta::get_path(pdb, ".status.conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let at = conditions
        .iter()
        .position(|c| c["type"] == "DisruptionAllowed");
    let since = match at.map(|i| &conditions[i]) {
        Some(c) if c["status"] == "False" => c["lastTransitionTime"].clone(),
        _ => Value::from(meta::now()),
    };
    let condition = json!({"type": "DisruptionAllowed", "status": "False",
        "reason": "InsufficientPods", "message": "", "observedGeneration": observed,
        "lastTransitionTime": since});
    match at {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
    meta::set_path(pdb, ".status.conditions", Value::Array(conditions));
}

/// The `deleteOptions` of an Eviction.
fn delete_options(v: Option<&Value>) -> DeleteOptions {
    let v = v.unwrap_or(&Value::Null);
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
    DeleteOptions {
        propagation_policy: s("/propagationPolicy"),
        dry_run: false,
        precondition_uid: s("/preconditions/uid"),
        precondition_resource_version: s("/preconditions/resourceVersion"),
        grace_period_seconds: v.get("gracePeriodSeconds").and_then(Value::as_i64),
        warnings: Default::default(),
        user: None,
    }
}
