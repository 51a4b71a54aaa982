//! Reading objects (`serde_json::Value`s as the store holds them): metadata, owners, selectors,
//! pod readiness. Every accessor answers a neutral value for a missing or mistyped field.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use crt_labels::{LabelSelector, MatchExpression};
use serde_json::{Value, json};

use crate::clock;

/// The string at a JSON pointer (`/spec/nodeName`), or `""`.
pub(crate) fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The integer at a JSON pointer.
pub(crate) fn i64_at(obj: &Value, pointer: &str) -> Option<i64> {
    obj.pointer(pointer).and_then(Value::as_i64)
}

/// `metadata.name`.
pub(crate) fn name(obj: &Value) -> &str {
    str_at(obj, "/metadata/name")
}

/// `metadata.namespace`.
pub(crate) fn namespace(obj: &Value) -> &str {
    str_at(obj, "/metadata/namespace")
}

/// `metadata.uid`.
pub(crate) fn uid(obj: &Value) -> &str {
    str_at(obj, "/metadata/uid")
}

/// Whether `metadata.deletionTimestamp` is set.
pub(crate) fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// The string map at a pointer (labels, annotations, a nodeSelector).
pub(crate) fn string_map(obj: &Value, pointer: &str) -> BTreeMap<String, String> {
    obj.pointer(pointer)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.labels`.
pub(crate) fn labels(obj: &Value) -> BTreeMap<String, String> {
    string_map(obj, "/metadata/labels")
}

/// An annotation's value.
pub(crate) fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// The array at a pointer (empty when absent).
pub(crate) fn array<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The controller owner reference: `(kind, name, uid)`.
pub(crate) fn controller_of(obj: &Value) -> Option<(&str, &str, &str)> {
    array(obj, "/metadata/ownerReferences")
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| (str_at(r, "/kind"), str_at(r, "/name"), str_at(r, "/uid")))
}

/// Whether `owner` (by uid) is `obj`'s controller.
pub(crate) fn controlled_by(obj: &Value, owner: &Value) -> bool {
    controller_of(obj).is_some_and(|(_, _, uid)| uid == self::uid(owner))
}

/// An owner reference naming `owner` as controller (`blockOwnerDeletion` too, as the
/// workload controllers write it).
pub(crate) fn controller_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": str_at(owner, "/apiVersion"),
        "kind": str_at(owner, "/kind"),
        "name": name(owner),
        "uid": uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The structured label selector at a pointer (`metav1.LabelSelector`) as a selector; `None`
/// when it is absent or does not parse (it then selects nothing).
pub(crate) fn selector(obj: &Value, pointer: &str) -> Option<LabelSelector> {
    let sel = obj.pointer(pointer)?.as_object()?;
    let labels = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let expressions = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(|es| es.iter().map(match_expression).collect::<Vec<_>>())
        .unwrap_or_default();
    LabelSelector::from_parts(labels, expressions).ok()
}

/// A `matchExpressions` entry (of a label or node selector term).
pub(crate) fn match_expression(e: &Value) -> MatchExpression {
    MatchExpression {
        key: str_at(e, "/key").to_string(),
        operator: str_at(e, "/operator").to_string(),
        values: array(e, "/values")
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
    }
}

/// The condition of `type_` in `status.conditions`.
pub(crate) fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    array(obj, "/status/conditions")
        .iter()
        .find(|c| str_at(c, "/type") == type_)
}

/// Whether the pod's `Ready` condition is `True`.
pub(crate) fn pod_ready(pod: &Value) -> bool {
    condition(pod, "Ready").is_some_and(|c| str_at(c, "/status") == "True")
}

/// Whether the pod is available at `now`: ready for at least `min_ready_seconds`.
pub(crate) fn pod_available(pod: &Value, min_ready_seconds: i64, now: DateTime<Utc>) -> bool {
    let Some(ready) = condition(pod, "Ready").filter(|c| str_at(c, "/status") == "True") else {
        return false;
    };
    if min_ready_seconds <= 0 {
        return true;
    }
    clock::parse(str_at(ready, "/lastTransitionTime"))
        .is_some_and(|t| t + chrono::Duration::seconds(min_ready_seconds) <= now)
}

/// Whether the pod has ended (`Succeeded` or `Failed`).
pub(crate) fn pod_terminal(pod: &Value) -> bool {
    matches!(str_at(pod, "/status/phase"), "Succeeded" | "Failed")
}

/// Whether a controller counts the pod: not ended and not being deleted.
pub(crate) fn pod_active(pod: &Value) -> bool {
    !pod_terminal(pod) && !is_deleting(pod)
}

/// Applies a JSON merge patch (RFC 7386) to `target`: what the store makes of it, so a
/// controller can tell a patch that changes nothing before sending it.
pub(crate) fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    if let Value::Object(t) = target {
        for (k, v) in patch {
            if v.is_null() {
                t.remove(k);
            } else {
                merge(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

/// Whether merging `patch` into `obj` would change it.
pub(crate) fn changes(obj: &Value, patch: &Value) -> bool {
    let mut merged = obj.clone();
    merge(&mut merged, patch);
    merged != *obj
}

/// A count for a status field that upstream omits when zero: the number, or `null` (which
/// a merge patch removes).
pub(crate) fn omit_zero(n: i64) -> Value {
    if n == 0 { Value::Null } else { json!(n) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_read_match_labels_and_expressions() {
        let obj = json!({"spec": {"selector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}],
        }}});
        let sel = selector(&obj, "/spec/selector").unwrap();
        let mut l = BTreeMap::from([("app".to_string(), "web".to_string())]);
        assert!(!sel.matches(&l));
        l.insert("tier".into(), "a".into());
        assert!(sel.matches(&l));
        assert!(selector(&obj, "/spec/missing").is_none());
    }

    #[test]
    fn availability_waits_min_ready_seconds() {
        let now = Utc::now();
        let since = clock::time(now - chrono::Duration::seconds(5));
        let pod = json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": since}]}});
        assert!(pod_ready(&pod));
        assert!(pod_available(&pod, 0, now));
        assert!(pod_available(&pod, 5, now));
        assert!(!pod_available(&pod, 6, now));
    }
}
