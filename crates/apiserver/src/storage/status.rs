//! What a write to the `status` subresource may change: upstream's status strategies
//! (`PrepareForUpdate` of each registry's `StatusStrategy`, summed up by its
//! `GetResetFields`).
//!
//! A status write takes the request's object, then puts back what the kind's strategy
//! resets from the stored one, always `spec`; the generic update rules (creation timestamp,
//! deletion timestamp and grace period, generation, uid) apply as on any update. Each
//! built-in kind names its [`Strategy`] in its `kinds` strategy (`status`): most keep only
//! `spec`, so a status write also changes labels, annotations, finalizers and owner
//! references; deployments keep `metadata.labels` too; pods `metadata.deletionTimestamp`
//! and `metadata.ownerReferences`; CustomResourceDefinitions, APIServices, volume
//! attachments and validating admission policies the metadata `ResetObjectMetaForStatus`
//! resets; flow schemas and priority level configurations all of `metadata` but
//! `managedFields`. Custom resources keep only the request's `status` (apiextensions' status
//! strategy copies the stored object and sets the status).

use serde_json::Value;

use super::meta;
use crate::resource::ResourceInfo;

/// A kind's status strategy.
pub(crate) use crate::kinds::StatusStrategy as Strategy;

/// The status strategy of `res`.
pub(crate) fn strategy(res: &ResourceInfo) -> Strategy {
    if res.custom {
        return Strategy::StatusOnly;
    }
    crate::kinds::strategy_of(&res.group, &res.plural).status
}

/// Whether a status write may set `metadata.<field>` of `res` (server-side apply keeps only
/// these of a status configuration's metadata, besides its name, namespace and
/// resourceVersion).
pub(crate) fn may_set_meta(res: &ResourceInfo, field: &str) -> bool {
    match strategy(res) {
        Strategy::Spec => true,
        Strategy::SpecAnd(kept) => !kept.contains(&field),
        Strategy::SpecAndMetadata | Strategy::StatusOnly => false,
    }
}

/// The proposed object of a status write: `body` with what `res`'s strategy keeps put back
/// from `old` (the update rules common to every write are the caller's).
pub(crate) fn prepare(res: &ResourceInfo, old: &Value, body: Value) -> Value {
    let strategy = strategy(res);
    if strategy == Strategy::StatusOnly {
        let mut new = old.clone();
        if let Some(map) = new.as_object_mut() {
            match body.get("status") {
                Some(s) => map.insert("status".into(), s.clone()),
                None => map.remove("status"),
            };
        }
        return new;
    }
    let mut new = body;
    let Some(map) = new.as_object_mut() else {
        return new;
    };
    match old.get("spec") {
        Some(spec) => map.insert("spec".into(), spec.clone()),
        None => map.remove("spec"),
    };
    let kept: &[&str] = match strategy {
        Strategy::SpecAnd(kept) => kept,
        _ => &[],
    };
    if strategy == Strategy::SpecAndMetadata {
        let managed = meta::get_path(&new, ".metadata.managedFields").cloned();
        let mut metadata = old.get("metadata").cloned().unwrap_or_default();
        if let (Some(m), Some(managed)) = (metadata.as_object_mut(), managed) {
            m.insert("managedFields".into(), managed);
        }
        if let Some(map) = new.as_object_mut() {
            map.insert("metadata".into(), metadata);
        }
        return new;
    }
    for field in kept {
        let v = old
            .get("metadata")
            .and_then(|m| m.get(*field))
            .cloned()
            .unwrap_or(Value::Null);
        meta::set_meta(&mut new, field, v);
    }
    new
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn res(group: &str, plural: &str) -> ResourceInfo {
        ResourceInfo::builtins()
            .into_iter()
            .find(|r| r.group == group && r.plural == plural)
            .unwrap()
    }

    fn old() -> Value {
        json!({"metadata": {"name": "a", "labels": {"l": "old"}, "annotations": {"a": "old"},
            "ownerReferences": [{"uid": "u"}]}, "spec": {"x": 1}, "status": {"phase": "old"}})
    }

    fn body() -> Value {
        json!({"metadata": {"name": "a", "labels": {"l": "new"}, "annotations": {"a": "new"}},
            "spec": {"x": 2}, "status": {"phase": "new"}})
    }

    #[test]
    fn each_kind_keeps_what_its_strategy_resets() {
        let ns = prepare(&res("", "namespaces"), &old(), body());
        assert_eq!(ns["spec"], json!({"x": 1}));
        assert_eq!(ns["status"]["phase"], "new");
        assert_eq!(ns["metadata"]["annotations"]["a"], "new");
        assert_eq!(ns["metadata"]["labels"]["l"], "new");
        assert!(ns["metadata"].get("ownerReferences").is_none());

        let deploy = prepare(&res("apps", "deployments"), &old(), body());
        assert_eq!(deploy["metadata"]["labels"]["l"], "old");
        assert_eq!(deploy["metadata"]["annotations"]["a"], "new");

        let pod = prepare(&res("", "pods"), &old(), body());
        assert_eq!(pod["metadata"]["ownerReferences"], json!([{"uid": "u"}]));
        assert_eq!(pod["metadata"]["labels"]["l"], "new");

        let va = prepare(&res("storage.k8s.io", "volumeattachments"), &old(), body());
        assert_eq!(va["metadata"]["labels"]["l"], "old");
        assert_eq!(va["metadata"]["annotations"]["a"], "old");
        assert_eq!(va["status"]["phase"], "new");

        let fs = prepare(
            &res("flowcontrol.apiserver.k8s.io", "flowschemas"),
            &old(),
            body(),
        );
        assert_eq!(fs["metadata"], old()["metadata"]);
        assert_eq!(fs["spec"], json!({"x": 1}));

        let mut widgets = res("", "configmaps");
        widgets.custom = true;
        assert_eq!(
            prepare(&widgets, &old(), body())["metadata"],
            old()["metadata"]
        );
        assert!(may_set_meta(&res("", "namespaces"), "annotations"));
        assert!(!may_set_meta(&res("apps", "deployments"), "labels"));
    }
}
