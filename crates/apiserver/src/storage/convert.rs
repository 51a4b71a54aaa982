//! Conversion between the versions of one stored resource.
//!
//! Every version of a resource shares one stored form. For most resources the versions differ
//! only in `apiVersion` (CRD versions without a conversion webhook: strategy `None`).
//!
//! CRDs of conversion strategy `Webhook` are not converted here: their objects are stored in
//! the storage version only, and a request at another served version is served by the storage
//! at the storage version (`webhook.rs` names it and the CRD's webhook) while the HTTP layer
//! (`http/converted.rs`) converts through the webhook (`crate::conversion`) on the way in and
//! out, outside the store's lock, since a webhook call is async. A request at the storage
//! version calls nothing, unless its body is of another version.
//!
//! Events are
//! the exception that matters to controllers: `events.k8s.io/v1` and core `v1` Events are one
//! resource in the real server, so an event recorded through one API is listed and watched
//! through the other (`kubectl get events` reads core events; kube-runtime's recorder writes
//! `events.k8s.io/v1`). They are stored in the core form and renamed field by field.
//!
//! HorizontalPodAutoscalers are stored as `autoscaling/v2`. An `autoscaling/v1` client sees
//! the CPU utilization target as `targetCPUUtilizationPercentage`, and the v2 fields v1 has no
//! place for (other metrics, current metrics, behavior, conditions) in the annotations
//! upstream's conversion uses (`autoscaling.alpha.kubernetes.io/...`), so a v1 client's
//! read-modify-write keeps them.

use std::sync::Arc;

use serde_json::{Map, Value, json};

/// The `apiVersion` of `events.k8s.io/v1`.
pub(crate) const EVENTS_V1: &str = "events.k8s.io/v1";

/// `(core v1 field, events.k8s.io/v1 field)` of the renamed top-level Event fields.
const EVENT_RENAMES: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

fn is_event(obj: &Value) -> bool {
    obj.get("kind").and_then(Value::as_str) == Some("Event")
}

fn rename(obj: &mut Value, from_to: impl Iterator<Item = (&'static str, &'static str)>) {
    if let Some(map) = obj.as_object_mut() {
        for (from, to) in from_to {
            if let Some(v) = map.remove(from) {
                map.insert(to.to_string(), v);
            }
        }
    }
}

/// The stored version of HorizontalPodAutoscalers.
const HPA_V2: &str = "autoscaling/v2";
/// Their other version.
const HPA_V1: &str = "autoscaling/v1";
/// The annotations holding what `autoscaling/v1` has no field for.
const HPA_METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const HPA_CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const HPA_BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const HPA_CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";

fn is_hpa(obj: &Value) -> bool {
    obj.get("kind").and_then(Value::as_str) == Some("HorizontalPodAutoscaler")
}

/// Whether a v2 metric (spec or status) is the CPU utilization one v1 has a field for.
fn is_cpu_utilization(m: &Value, side: &str) -> bool {
    m["type"] == "Resource"
        && m["resource"]["name"] == "cpu"
        && m["resource"][side]["averageUtilization"].is_number()
        && (side != "target" || m["resource"]["target"]["type"] == "Utilization")
}

/// An `autoscaling/v2` HorizontalPodAutoscaler as `autoscaling/v1` shows it.
fn hpa_v2_to_v1(v2: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::from(HPA_V1));
    out.insert("kind".into(), v2["kind"].clone());
    let mut meta = v2.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut notes = Map::new();
    let spec = &v2["spec"];
    let metrics = spec["metrics"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut v1_spec = Map::new();
    for f in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(x) = spec.get(f) {
            v1_spec.insert(f.into(), x.clone());
        }
    }
    if let Some(cpu) = metrics.iter().find(|m| is_cpu_utilization(m, "target")) {
        v1_spec.insert(
            "targetCPUUtilizationPercentage".into(),
            cpu["resource"]["target"]["averageUtilization"].clone(),
        );
    }
    let other: Vec<&Value> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m, "target"))
        .collect();
    if !other.is_empty() {
        notes.insert(HPA_METRICS.into(), Value::from(json!(other).to_string()));
    }
    if let Some(b) = spec.get("behavior").filter(|b| !b.is_null()) {
        notes.insert(HPA_BEHAVIOR.into(), Value::from(b.to_string()));
    }
    out.insert("spec".into(), Value::Object(v1_spec));
    if let Some(status) = v2.get("status").filter(|s| s.is_object()) {
        let mut v1_status = Map::new();
        for f in [
            "observedGeneration",
            "lastScaleTime",
            "currentReplicas",
            "desiredReplicas",
        ] {
            if let Some(x) = status.get(f) {
                v1_status.insert(f.into(), x.clone());
            }
        }
        let current = status["currentMetrics"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        if let Some(cpu) = current.iter().find(|m| is_cpu_utilization(m, "current")) {
            v1_status.insert(
                "currentCPUUtilizationPercentage".into(),
                cpu["resource"]["current"]["averageUtilization"].clone(),
            );
        }
        if !current.is_empty() {
            notes.insert(
                HPA_CURRENT_METRICS.into(),
                Value::from(json!(current).to_string()),
            );
        }
        if let Some(c) = status
            .get("conditions")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty())
        {
            notes.insert(HPA_CONDITIONS.into(), Value::from(json!(c).to_string()));
        }
        out.insert("status".into(), Value::Object(v1_status));
    }
    if !notes.is_empty()
        && let Some(m) = meta.as_object_mut()
    {
        let annotations = m.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = annotations.as_object_mut() {
            a.extend(notes);
        }
    }
    out.insert("metadata".into(), meta);
    Value::Object(out)
}

/// An `autoscaling/v1` HorizontalPodAutoscaler in the stored `autoscaling/v2` form (in place).
fn hpa_v1_to_v2(obj: &mut Value) {
    let mut notes = Map::new();
    if let Some(a) = obj
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        for k in [
            HPA_METRICS,
            HPA_CURRENT_METRICS,
            HPA_BEHAVIOR,
            HPA_CONDITIONS,
        ] {
            if let Some(v) = a.remove(k) {
                notes.insert(k.to_string(), v);
            }
        }
    }
    if obj
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
        && let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut)
    {
        m.remove("annotations");
    }
    let note = |k: &str| -> Option<Value> {
        notes
            .get(k)
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str(s).ok())
    };
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    map.insert("apiVersion".into(), Value::from(HPA_V2));
    let mut spec = match map.remove("spec") {
        Some(Value::Object(s)) => s,
        _ => Map::new(),
    };
    let mut metrics = Vec::new();
    if let Some(cpu) = spec
        .remove("targetCPUUtilizationPercentage")
        .filter(|v| !v.is_null())
    {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": cpu}}}));
    }
    if let Some(Value::Array(other)) = note(HPA_METRICS) {
        metrics.extend(other);
    }
    if metrics.is_empty() {
        // v1's implicit target, made explicit as upstream's conversion does.
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}));
    }
    spec.insert("metrics".into(), Value::Array(metrics));
    if let Some(b) = note(HPA_BEHAVIOR) {
        spec.insert("behavior".into(), b);
    }
    map.insert("spec".into(), Value::Object(spec));
    if let Some(Value::Object(mut status)) = map.remove("status") {
        let cpu = status.remove("currentCPUUtilizationPercentage");
        match note(HPA_CURRENT_METRICS) {
            Some(current) => {
                status.insert("currentMetrics".into(), current);
            }
            None => {
                if let Some(cpu) = cpu.filter(|v| !v.is_null()) {
                    status.insert(
                        "currentMetrics".into(),
                        json!([{"type": "Resource",
                        "resource": {"name": "cpu", "current": {"averageUtilization": cpu}}}]),
                    );
                }
            }
        }
        if let Some(c) = note(HPA_CONDITIONS) {
            status.insert("conditions".into(), c);
        }
        map.insert("status".into(), Value::Object(status));
    }
}

/// The stored object as a client of `api_version` sees it (a copy).
pub(crate) fn to_version(obj: &Value, api_version: &str) -> Value {
    let stored = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if stored == api_version {
        return obj.clone();
    }
    if api_version == HPA_V1 && stored == HPA_V2 && is_hpa(obj) {
        return hpa_v2_to_v1(obj);
    }
    let mut v = obj.clone();
    if api_version == EVENTS_V1 && stored == "v1" && is_event(&v) {
        rename(&mut v, EVENT_RENAMES.iter().copied());
    }
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), Value::from(api_version));
    }
    v
}

/// The stored object as a client of `api_version` sees it: the object itself when that is
/// its stored version, else a converted copy.
pub(crate) fn to_version_shared(obj: &Arc<Value>, api_version: &str) -> Arc<Value> {
    if obj.get("apiVersion").and_then(Value::as_str) == Some(api_version) {
        return obj.clone();
    }
    Arc::new(to_version(obj, api_version))
}

/// A request body of `api_version` in the stored form (in place).
pub(crate) fn to_storage(obj: &mut Value, api_version: &str) {
    if api_version == HPA_V1 && is_hpa(obj) {
        hpa_v1_to_v2(obj);
        return;
    }
    if api_version == EVENTS_V1 && is_event(obj) {
        rename(obj, EVENT_RENAMES.iter().map(|(core, v1)| (*v1, *core)));
        if let Some(m) = obj.as_object_mut() {
            m.insert("apiVersion".into(), Value::from("v1"));
        }
    }
}

/// The storage key of a resource: `events.k8s.io` events share the core ones.
pub(crate) fn storage_key(group: &str, plural: &str) -> String {
    match (group, plural) {
        ("", p) | ("events.k8s.io", p @ "events") => p.to_string(),
        (g, p) => format!("{p}.{g}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_round_trip() {
        let mut v1 = json!({"apiVersion": EVENTS_V1, "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Pod", "name": "p"}, "note": "hello", "reason": "Started",
            "reportingController": "ctl", "deprecatedCount": 2});
        let original = v1.clone();
        to_storage(&mut v1, EVENTS_V1);
        assert_eq!(v1["apiVersion"], "v1");
        assert_eq!(v1["involvedObject"]["name"], "p");
        assert_eq!(v1["message"], "hello");
        assert_eq!(v1["reportingComponent"], "ctl");
        assert_eq!(v1["count"], 2);
        assert!(v1.get("note").is_none());
        assert_eq!(to_version(&v1, EVENTS_V1), original);
        assert_eq!(to_version(&v1, "v1"), v1);
        assert_eq!(storage_key("events.k8s.io", "events"), "events");
        assert_eq!(storage_key("apps", "deployments"), "deployments.apps");
    }

    #[test]
    fn hpa_v1_and_v2_round_trip_through_annotations() {
        let v2 = json!({"apiVersion": HPA_V2, "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "annotations": {"team": "a"}},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
            "status": {"currentReplicas": 2, "desiredReplicas": 3,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 70}}}],
                "conditions": [{"type": "AbleToScale", "status": "True"}]}});
        let v1 = to_version(&v2, HPA_V1);
        assert_eq!(v1["apiVersion"], HPA_V1);
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 70);
        assert!(v1["spec"].get("metrics").is_none());
        let notes = &v1["metadata"]["annotations"];
        assert_eq!(notes["team"], "a");
        assert!(notes[HPA_METRICS].as_str().unwrap().contains("memory"));
        assert!(notes[HPA_BEHAVIOR].is_string() && notes[HPA_CONDITIONS].is_string());
        // A v1 client writes back what it read: the v2 object comes back whole.
        let mut back = v1.clone();
        to_storage(&mut back, HPA_V1);
        assert_eq!(back, v2);

        // A plain v1 object gets v1's implicit 80% CPU target explicitly.
        let mut plain = json!({"apiVersion": HPA_V1, "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "p"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "p"}, "maxReplicas": 3}});
        to_storage(&mut plain, HPA_V1);
        assert_eq!(plain["apiVersion"], HPA_V2);
        assert_eq!(
            plain["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
    }
}
