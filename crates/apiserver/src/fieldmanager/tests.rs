//! Field-set logic: FieldsV1 round trips, sets read off configurations, comparisons, and the
//! apply rules (co-ownership, conflicts, force, removal, lists merged by key).

use serde_json::{Value, json};

use super::fieldpath::{FieldSet, PathElement};
use super::shape::Shape;
use super::walk::{compare, config_set};
use super::{Error, Writer, apply, record_update};

const NOW: &str = "2026-01-01T00:00:00Z";

fn w(manager: &str) -> Writer<'_> {
    Writer {
        manager,
        subresource: None,
        api_version: "v1",
        now: NOW,
    }
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d"}, "data": data})
}

fn fields_of(obj: &Value, manager: &str) -> Option<Value> {
    obj["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager)
        .map(|e| e["fieldsV1"].clone())
}

fn deployment(containers: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"template": {"spec": {"containers": containers}}}})
}

#[test]
fn fields_v1_round_trip_keeps_members_and_dots() {
    let v = json!({
        "f:data": {".": {}, "f:a": {}},
        "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}},
                   "f:finalizers": {"v:\"x\"": {}}}
    });
    let set = FieldSet::from_fields_v1(&v).unwrap();
    assert!(set.contains(&[PathElement::Field("data".into())]));
    assert!(!set.contains(&[PathElement::Field("spec".into())]));
    assert_eq!(set.to_fields_v1(), v);
    assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
}

#[test]
fn config_set_owns_leaves_and_keyed_items_not_maps() {
    let shape = Shape::builtin("apps", "Deployment");
    let d =
        deployment(json!([{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]));
    let set = config_set(&d, &shape).unwrap();
    assert_eq!(
        set.to_fields_v1(),
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
            ".": {}, "f:image": {}, "f:name": {},
            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
        }}}}}})
    );
}

#[test]
fn config_set_rejects_missing_keys_and_duplicates() {
    let shape = Shape::builtin("apps", "Deployment");
    let e = config_set(&deployment(json!([{"image": "x"}])), &shape).unwrap_err();
    assert!(e.to_string().contains("omits key field \"name\""), "{e}");
    let e = config_set(&deployment(json!([{"name": "a"}, {"name": "a"}])), &shape).unwrap_err();
    assert!(
        e.to_string()
            .contains("duplicate entries for key [name=\"a\"]"),
        "{e}"
    );
}

#[test]
fn compare_marks_new_maps_as_members() {
    let shape = Shape::builtin("", "ConfigMap");
    let c = compare(None, &cm(json!({"a": "1"})), &shape);
    assert_eq!(
        c.changed.to_fields_v1(),
        json!({"f:data": {".": {}, "f:a": {}}})
    );
    let c = compare(
        Some(&cm(json!({"a": "1", "b": "2"}))),
        &cm(json!({"a": "3"})),
        &shape,
    );
    assert_eq!(c.changed.to_fields_v1(), json!({"f:data": {"f:a": {}}}));
    assert_eq!(c.removed.to_fields_v1(), json!({"f:data": {"f:b": {}}}));
}

#[test]
fn two_managers_same_value_co_own() {
    let shape = Shape::builtin("", "ConfigMap");
    let a = apply(None, &cm(json!({"k": "v"})), &shape, &w("a"), false).unwrap();
    let b = apply(
        Some(&a),
        &cm(json!({"k": "v", "x": "1"})),
        &shape,
        &w("b"),
        false,
    )
    .unwrap();
    assert_eq!(fields_of(&b, "a").unwrap(), json!({"f:data": {"f:k": {}}}));
    assert_eq!(
        fields_of(&b, "b").unwrap(),
        json!({"f:data": {"f:k": {}, "f:x": {}}})
    );
    // a stops applying k: b still owns it, so it stays; a's entry is gone (no fields left).
    let a2 = apply(
        Some(&b),
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        &shape,
        &w("a"),
        false,
    )
    .unwrap();
    assert_eq!(a2["data"], json!({"k": "v", "x": "1"}));
    assert!(fields_of(&a2, "a").is_none());
}

#[test]
fn conflict_names_manager_and_fields_and_force_takes_over() {
    let shape = Shape::builtin("", "ConfigMap");
    let a = apply(
        None,
        &cm(json!({"k": "v", "j": "1"})),
        &shape,
        &w("a"),
        false,
    )
    .unwrap();
    let err = apply(
        Some(&a),
        &cm(json!({"k": "other", "j": "2"})),
        &shape,
        &w("b"),
        false,
    )
    .unwrap_err();
    assert!(matches!(&err, Error::Conflicts(c) if c.len() == 2));
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"a\":\n- .data.j\n- .data.k"
    );
    let forced = apply(Some(&a), &cm(json!({"k": "other"})), &shape, &w("b"), true).unwrap();
    assert_eq!(forced["data"], json!({"k": "other", "j": "1"}));
    assert_eq!(
        fields_of(&forced, "a").unwrap(),
        json!({"f:data": {"f:j": {}}})
    );
    assert_eq!(
        fields_of(&forced, "b").unwrap(),
        json!({"f:data": {"f:k": {}}})
    );
}

#[test]
fn reapply_removes_fields_no_one_owns() {
    let shape = Shape::builtin("", "ConfigMap");
    let mut c = cm(json!({"k": "v", "gone": "x"}));
    c["metadata"]["labels"] = json!({"l": "1"});
    let a = apply(None, &c, &shape, &w("a"), false).unwrap();
    let a2 = apply(Some(&a), &cm(json!({"k": "v"})), &shape, &w("a"), false).unwrap();
    assert_eq!(a2["data"], json!({"k": "v"}));
    assert!(a2["metadata"].get("labels").is_none());
    assert_eq!(a2["metadata"]["name"], "c");
    // Nothing applied in data any more: data itself goes.
    let a3 = apply(Some(&a2), &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"n": "1"}}}), &shape, &w("a"), false).unwrap();
    assert!(a3.get("data").is_none());
    assert_eq!(a3["metadata"]["labels"], json!({"n": "1"}));
}

#[test]
fn containers_merge_by_name() {
    let shape = Shape::builtin("apps", "Deployment");
    let a = apply(
        None,
        &deployment(json!([{"name": "app", "image": "nginx:1"}])),
        &shape,
        &w("a"),
        false,
    )
    .unwrap();
    let b = apply(
        Some(&a),
        &deployment(json!([{"name": "log", "image": "busybox"}])),
        &shape,
        &w("b"),
        false,
    )
    .unwrap();
    let names: Vec<&str> = b["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "log"]);
    let err = apply(
        Some(&b),
        &deployment(json!([{"name": "app", "image": "nginx:2"}])),
        &shape,
        &w("b"),
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"a\": .spec.template.spec.containers[name=\"app\"].image"
    );
    // b drops its container: it goes; a's stays.
    let b2 = apply(Some(&b), &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 2}}), &shape, &w("b"), false).unwrap();
    assert_eq!(
        b2["spec"]["template"]["spec"]["containers"],
        json!([{"name": "app", "image": "nginx:1"}])
    );
}

#[test]
fn crd_map_list_merges_by_its_keys() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
                  "items": {"type": "object", "properties": {"id": {"type": "string"}, "v": {"type": "integer"}}}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "plain": {"type": "array", "items": {"type": "string"}}}}}});
    let shape = Shape::Schema(std::sync::Arc::new(schema), String::new());
    let obj = |spec: Value| json!({"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "x"}, "spec": spec});
    let a = apply(
        None,
        &obj(json!({"items": [{"id": "a", "v": 1}], "tags": ["t1"], "plain": ["p"]})),
        &shape,
        &w("a"),
        false,
    )
    .unwrap();
    let b = apply(
        Some(&a),
        &obj(json!({"items": [{"id": "b", "v": 2}], "tags": ["t2"]})),
        &shape,
        &w("b"),
        false,
    )
    .unwrap();
    assert_eq!(
        b["spec"]["items"],
        json!([{"id": "a", "v": 1}, {"id": "b", "v": 2}])
    );
    assert_eq!(b["spec"]["tags"], json!(["t1", "t2"]));
    assert_eq!(
        fields_of(&b, "b").unwrap(),
        json!({"f:spec": {"f:items": {"k:{\"id\":\"b\"}": {".": {}, "f:id": {}, "f:v": {}}}, "f:tags": {"v:\"t2\"": {}}}})
    );
    let err = apply(
        Some(&b),
        &obj(json!({"plain": ["q"]})),
        &shape,
        &w("b"),
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"a\": .spec.plain"
    );
}

/// A custom resource's metadata is ObjectMeta even when its schema says only
/// `metadata: {type: object}`: finalizers are a set, so a finalizer another manager added
/// does not conflict with re-applying the same configuration (upstream's e2e "ServerSideApply
/// should work for CRDs").
#[test]
fn a_custom_resources_finalizers_are_a_set() {
    let schema = json!({"type": "object", "properties": {"metadata": {"type": "object"},
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    let shape = Shape::Schema(std::sync::Arc::new(schema), String::new());
    let config = json!({"apiVersion": "x.io/v1", "kind": "X",
        "metadata": {"name": "x", "finalizers": ["test-finalizer"]}, "spec": {}});
    let applied = apply(None, &config, &shape, &w("apply_test"), false).unwrap();
    // Each finalizer is owned on its own (`v:`), not the list as one field.
    let owned = fields_of(&applied, "apply_test").unwrap();
    assert!(
        owned["f:metadata"]["f:finalizers"]["v:\"test-finalizer\""].is_object(),
        "{owned}"
    );
    let mut patched = applied.clone();
    patched["metadata"]["finalizers"] = json!(["test-finalizer", "another-one"]);
    record_update(Some(&applied), &mut patched, &shape, &w("patcher"));
    let again = apply(Some(&patched), &config, &shape, &w("apply_test"), false).unwrap();
    assert_eq!(
        again["metadata"]["finalizers"],
        json!(["test-finalizer", "another-one"])
    );
}

#[test]
fn update_owned_fields_conflict_with_apply() {
    let shape = Shape::builtin("", "ConfigMap");
    let mut created = cm(json!({"k": "v"}));
    record_update(None, &mut created, &shape, &w("kubectl-create"));
    assert_eq!(
        fields_of(&created, "kubectl-create").unwrap(),
        json!({"f:data": {".": {}, "f:k": {}}})
    );
    assert_eq!(
        created["metadata"]["managedFields"][0]["operation"],
        "Update"
    );
    let err = apply(
        Some(&created),
        &cm(json!({"k": "w"})),
        &shape,
        &w("a"),
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-create\" using v1: .data.k"
    );
    // An update takes fields from an applier without asking.
    let a = apply(
        Some(&created),
        &cm(json!({"k": "v", "m": "1"})),
        &shape,
        &w("a"),
        false,
    )
    .unwrap();
    let mut edited = a.clone();
    edited["data"]["m"] = json!("2");
    record_update(Some(&a), &mut edited, &shape, &w("editor"));
    assert_eq!(
        fields_of(&edited, "a").unwrap(),
        json!({"f:data": {"f:k": {}}})
    );
    assert_eq!(
        fields_of(&edited, "editor").unwrap(),
        json!({"f:data": {"f:m": {}}})
    );
}

#[test]
fn kubectl_takes_over_what_its_client_side_apply_set() {
    let shape = Shape::builtin("", "ConfigMap");
    let mut live = cm(json!({"a": "1", "b": "1"}));
    live["metadata"]["annotations"] = json!({
        "kubectl.kubernetes.io/last-applied-configuration":
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1","b":"0"}}"#
    });
    record_update(None, &mut live, &shape, &w("kubectl-client-side-apply"));
    // a still holds the last-applied value: kubectl takes it; b was changed since: conflict.
    let err = apply(
        Some(&live),
        &cm(json!({"a": "2", "b": "2"})),
        &shape,
        &w("kubectl"),
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.b"
    );
    let out = apply(
        Some(&live),
        &cm(json!({"a": "2"})),
        &shape,
        &w("kubectl"),
        false,
    )
    .unwrap();
    assert_eq!(out["data"]["a"], "2");
    // Only kubectl's own manager gets that.
    assert!(
        apply(
            Some(&live),
            &cm(json!({"a": "2"})),
            &shape,
            &w("other"),
            false
        )
        .is_err()
    );
}

#[test]
fn a_create_records_every_field_it_sets_for_its_writer() {
    let mut created =
        deployment(json!([{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]));
    record_update(
        None,
        &mut created,
        &Shape::builtin("apps", "Deployment"),
        &w("kubectl"),
    );
    let entries = created["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["operation"], "Update");
    assert_eq!(entries[0]["time"], NOW);
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:spec": {"f:template": {".": {}, "f:spec": {".": {}, "f:containers": {"k:{\"name\":\"app\"}": {
            ".": {}, "f:image": {}, "f:name": {},
            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}}}}}})
    );
    // An object that sets nothing a manager can own records no entry.
    let mut bare = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    record_update(
        None,
        &mut bare,
        &Shape::builtin("", "ConfigMap"),
        &w("kubectl"),
    );
    assert!(bare["metadata"].get("managedFields").is_none(), "{bare}");
}
