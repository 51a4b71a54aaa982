//! Conversion between the versions of one stored resource.
//!
//! Every version of a resource shares one stored form. For most resources the versions differ
//! only in `apiVersion` (CRD versions without a conversion webhook: strategy `None`). Events are
//! the exception that matters to controllers: `events.k8s.io/v1` and core `v1` Events are one
//! resource in the real server, so an event recorded through one API is listed and watched
//! through the other (`kubectl get events` reads core events; kube-runtime's recorder writes
//! `events.k8s.io/v1`). They are stored in the core form and renamed field by field.

use std::sync::Arc;

use serde_json::Value;

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

/// The stored object as a client of `api_version` sees it (a copy).
pub(crate) fn to_version(obj: &Value, api_version: &str) -> Value {
    let mut v = obj.clone();
    let stored = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if stored == api_version {
        return v;
    }
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
}
