//! CRDs: registration, status, serving, subresources, schema checks, deletion.

use std::time::Duration;

use super::*;

pub(super) fn crd_body() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
            "versions": [
                {
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "integer"}, "replicas": {"type": "integer"}}},
                        "status": {"type": "object", "properties": {
                            "replicas": {"type": "integer"}, "selector": {"type": "string"}}},
                    }}},
                    "subresources": {"status": {}, "scale": {
                        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector"}},
                },
                {
                    "name": "v1beta1", "served": true, "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                },
            ],
        },
    })
}

pub(super) fn widget(name: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": 1, "replicas": 1}})
}

pub(super) fn install(s: &Storage) -> (Value, ResourceInfo) {
    let crds = res(s, "apiextensions.k8s.io", "customresourcedefinitions");
    let crd = s.create(&crds, None, crd_body(), &w()).unwrap();
    let widgets = s
        .resolve("example.com", "v1", "widgets")
        .expect("served at once");
    (crd, widgets)
}

#[test]
fn creating_a_crd_serves_its_resource() {
    let s = store();
    assert!(s.resolve("example.com", "v1", "widgets").is_none());
    let (crd, widgets) = install(&s);
    let conds = crd["status"]["conditions"].as_array().unwrap();
    let cond = |t: &str| conds.iter().find(|c| c["type"] == t).unwrap()["status"].clone();
    assert_eq!(cond("Established"), "True");
    assert_eq!(cond("NamesAccepted"), "True");
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");
    assert_eq!(crd["status"]["acceptedNames"]["listKind"], "WidgetList");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    assert_eq!(crd["spec"]["names"]["singular"], "widget");
    assert!(
        widgets.namespaced && widgets.custom && widgets.generation && widgets.status_subresource
    );
    assert_eq!(widgets.short_names, vec!["wd"]);
    assert_eq!(widgets.categories, vec!["all"]);
    assert_eq!(widgets.list_kind, "WidgetList");
    assert!(widgets.scale.is_some());
    let beta = s.resolve("example.com", "v1beta1", "widgets").unwrap();
    assert!(!beta.status_subresource);
    assert!(
        s.served_resources()
            .iter()
            .any(|r| r.group == "example.com")
    );
}

#[test]
fn every_served_version_publishes_the_storage_version_hash() {
    let s = store();
    install(&s);
    // sha256("example.com/v1/Widget")[..8] in base64, for both served versions.
    let want = json!("gIwvi5rymmg=");
    for version in ["v1", "v1beta1"] {
        let doc =
            crate::discovery::resource_list(&s.served_resources(), "example.com", version).unwrap();
        let widgets = doc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "widgets")
            .unwrap()
            .clone();
        assert_eq!(widgets["storageVersionHash"], want, "{version}");
        // Subresources have none (v1 serves `status`).
        let status = doc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "widgets/status");
        assert!(status.is_some() == (version == "v1"));
        assert!(status.is_none_or(|s| s.get("storageVersionHash").is_none()));
    }
    // Moving storage to v1beta1 moves the hash of both.
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let mut crd = s.get(&crds, None, "widgets.example.com", None).unwrap();
    crd["spec"]["versions"][0]["storage"] = json!(false);
    crd["spec"]["versions"][1]["storage"] = json!(true);
    s.update(&crds, None, "widgets.example.com", None, crd, &w())
        .unwrap();
    let v1 = s.resolve("example.com", "v1", "widgets").unwrap();
    assert_eq!(
        v1.storage_version_hash.as_deref(),
        Some(crate::resource::storage_version_hash("example.com", "v1beta1", "Widget").as_str())
    );
}

#[test]
fn custom_objects_live_like_built_ins() {
    let s = store();
    let (_, widgets) = install(&s);
    let mut body = widget("w1");
    body["status"] = json!({"replicas": 4});
    let created = s.create(&widgets, Some("default"), body, &w()).unwrap();
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(
        created.get("status").is_none(),
        "status of a create is dropped"
    );
    let st = s
        .patch(
            &widgets,
            Some("default"),
            "w1",
            Some("status"),
            PatchType::Merge,
            br#"{"status":{"replicas":1,"selector":"app=w"}}"#,
            &w(),
        )
        .unwrap();
    assert_eq!(st["status"]["replicas"], 1);
    let scale = s
        .get(&widgets, Some("default"), "w1", Some("scale"))
        .unwrap();
    assert_eq!(
        (
            scale["spec"]["replicas"].clone(),
            scale["status"]["selector"].clone()
        ),
        (json!(1), json!("app=w"))
    );
    let mut put = scale.clone();
    put["spec"]["replicas"] = json!(3);
    s.update(&widgets, Some("default"), "w1", Some("scale"), put, &w())
        .unwrap();
    let got = s.get(&widgets, Some("default"), "w1", None).unwrap();
    assert_eq!(got["spec"]["replicas"], 3);
    assert_eq!(got["metadata"]["generation"], 2);
    // Another served version reads the same object.
    let beta = s.resolve("example.com", "v1beta1", "widgets").unwrap();
    let as_beta = s.get(&beta, Some("default"), "w1", None).unwrap();
    assert_eq!(as_beta["apiVersion"], "example.com/v1beta1");
    // v1beta1 has no status subresource: its status is content, and bumps the generation.
    let mut via_beta = as_beta.clone();
    via_beta["status"] = json!({"replicas": 9});
    let out = s
        .update(&beta, Some("default"), "w1", None, via_beta, &w())
        .unwrap();
    assert_eq!(out["status"]["replicas"], 9);
    assert_eq!(out["metadata"]["generation"], 3);
    let list = s.list(&widgets, None, &ListOptions::default()).unwrap();
    assert_eq!(list["kind"], "WidgetList");
    assert_eq!(list["items"][0]["kind"], "Widget");
    // Strategic merge patch is refused for custom resources.
    let err = fails_unchanged(&s, 415, || {
        s.patch(
            &widgets,
            Some("default"),
            "w1",
            None,
            PatchType::Strategic,
            br#"{"spec":{"size":2}}"#,
            &w(),
        )
    });
    assert_eq!(err.reason, "UnsupportedMediaType");
    // Deleting a custom object answers the object.
    let out = s
        .delete(&widgets, Some("default"), "w1", &DeleteOptions::default())
        .unwrap();
    assert_eq!(out["kind"], "Widget");
}

#[test]
fn invalid_crds_are_rejected() {
    let s = store();
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let mut wrong_name = crd_body();
    wrong_name["metadata"]["name"] = json!("gadgets.example.com");
    let err = fails_unchanged(&s, 422, || s.create(&crds, None, wrong_name, &w()));
    assert!(
        err.message
            .contains("must be spec.names.plural+\".\"+spec.group"),
        "{}",
        err.message
    );
    assert!(err.message.starts_with(
        "CustomResourceDefinition.apiextensions.k8s.io \"gadgets.example.com\" is invalid"
    ));
    let mut two_storage = crd_body();
    two_storage["spec"]["versions"][1]["storage"] = json!(true);
    let err = fails_unchanged(&s, 422, || s.create(&crds, None, two_storage, &w()));
    assert!(
        err.message
            .contains("must have exactly one version marked as storage version"),
        "{}",
        err.message
    );
    let mut scope = crd_body();
    scope["spec"]["scope"] = json!("Galaxy");
    let err = fails_unchanged(&s, 422, || s.create(&crds, None, scope, &w()));
    assert!(
        err.message
            .contains("spec.scope: Unsupported value: \"Galaxy\""),
        "{}",
        err.message
    );
    let mut no_schema = crd_body();
    no_schema["spec"]["versions"][0]
        .as_object_mut()
        .unwrap()
        .remove("schema");
    let err = fails_unchanged(&s, 422, || s.create(&crds, None, no_schema, &w()));
    assert!(
        err.message.contains("schemas are required"),
        "{}",
        err.message
    );
    let mut no_dot = crd_body();
    no_dot["spec"]["group"] = json!("example");
    no_dot["metadata"]["name"] = json!("widgets.example");
    fails_unchanged(&s, 422, || s.create(&crds, None, no_dot, &w()));
    assert!(s.resolve("example.com", "v1", "widgets").is_none());
}

#[test]
fn cluster_scoped_crd() {
    let s = store();
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let mut body = crd_body();
    body["spec"]["scope"] = json!("Cluster");
    s.create(&crds, None, body, &w()).unwrap();
    let widgets = s.resolve("example.com", "v1", "widgets").unwrap();
    assert!(!widgets.namespaced);
    let created = s.create(&widgets, None, widget("global"), &w()).unwrap();
    assert!(created["metadata"].get("namespace").is_none());
}

#[tokio::test(start_paused = true)]
async fn deleting_a_crd_removes_its_objects_and_watches() {
    let s = store();
    let (_, widgets) = install(&s);
    s.create(&widgets, Some("default"), widget("a"), &w())
        .unwrap();
    let mut held = widget("held");
    held["metadata"]["finalizers"] = json!(["x/y"]);
    s.create(&widgets, Some("default"), held, &w()).unwrap();
    let now = WatchOptions {
        resource_version: Some(s.resource_version().to_string()),
        ..Default::default()
    };
    let mut watch = s.watch(&widgets, None, &now).unwrap();
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let out = s
        .delete(
            &crds,
            None,
            "widgets.example.com",
            &DeleteOptions::default(),
        )
        .unwrap();
    assert!(out["metadata"]["deletionTimestamp"].is_string());
    // The held object keeps the CRD (and the resource) alive, closed to new objects.
    assert!(s.resolve("example.com", "v1", "widgets").is_some());
    let err = fails_unchanged(&s, 405, || {
        s.create(&widgets, Some("default"), widget("late"), &w())
    });
    assert_eq!(
        err.message,
        "create not allowed while custom resource definition is terminating"
    );
    assert!(s.get(&widgets, Some("default"), "a", None).is_err());
    s.patch(
        &widgets,
        Some("default"),
        "held",
        None,
        PatchType::Merge,
        br#"{"metadata":{"finalizers":null}}"#,
        &w(),
    )
    .unwrap();
    assert!(s.resolve("example.com", "v1", "widgets").is_none());
    assert_eq!(
        s.get(&crds, None, "widgets.example.com", None)
            .unwrap_err()
            .code,
        404
    );
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), watch.events.recv()).await {
            Ok(Some(e)) => seen.push(e),
            Ok(None) => break,
            Err(_) => panic!("the watch was not closed"),
        }
    }
    assert!(matches!(&seen[0], WatchEvent::Deleted(o) if o["metadata"]["name"] == "a"));
    // The resource is gone for callers still holding its ResourceInfo.
    assert_eq!(
        s.list(&widgets, None, &ListOptions::default())
            .unwrap_err()
            .code,
        404
    );
    // And can be installed again, empty.
    let (_, again) = install(&s);
    assert!(names(&s.list(&again, None, &ListOptions::default()).unwrap()).is_empty());
}

#[test]
fn custom_objects_are_defaulted_pruned_and_validated() {
    let s = store();
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let mut body = crd_body();
    body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = json!({
        "type": "object",
        "required": ["size"],
        "properties": {
            "size": {"type": "integer", "minimum": 1},
            "replicas": {"type": "integer"},
            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        },
    });
    s.create(&crds, None, body, &w()).unwrap();
    let widgets = s.resolve("example.com", "v1", "widgets").unwrap();
    let mut obj = widget("ok");
    obj["spec"]["junk"] = json!(1);
    obj["spec"]["free"] = json!({"anything": {"goes": true}});
    obj["topLevelJunk"] = json!("x");
    let created = s.create(&widgets, Some("default"), obj, &w()).unwrap();
    assert_eq!(created["spec"]["mode"], "slow", "defaulted");
    assert!(created["spec"].get("junk").is_none(), "pruned");
    assert!(created.get("topLevelJunk").is_none(), "pruned");
    assert_eq!(
        created["spec"]["free"]["anything"]["goes"], true,
        "preserved"
    );
    let mut bad = widget("bad");
    bad["spec"] = json!({"size": "big", "mode": "medium"});
    let err = fails_unchanged(&s, 422, || s.create(&widgets, Some("default"), bad, &w()));
    assert!(
        err.message
            .starts_with("Widget.example.com \"bad\" is invalid"),
        "{}",
        err.message
    );
    assert!(err.message.contains("spec.size"), "{}", err.message);
    assert!(err.message.contains("spec.mode"), "{}", err.message);
    let mut missing = widget("missing");
    missing["spec"] = json!({});
    let err = fails_unchanged(&s, 422, || {
        s.create(&widgets, Some("default"), missing, &w())
    });
    assert!(
        err.message.contains("spec.size: Required value"),
        "{}",
        err.message
    );
    // Updates are checked too.
    let mut upd = created.clone();
    upd["spec"]["size"] = json!(0);
    fails_unchanged(&s, 422, || {
        s.update(&widgets, Some("default"), "ok", None, upd, &w())
    });
    // A schema that is not structural is rejected with the CRD.
    let mut not_structural = crd_body();
    not_structural["metadata"]["name"] = json!("gizmos.example.com");
    not_structural["spec"]["names"] = json!({"plural": "gizmos", "kind": "Gizmo"});
    not_structural["spec"]["versions"][0]["schema"]["openAPIV3Schema"] =
        json!({"type": "object", "properties": {"spec": {}}});
    let err = fails_unchanged(&s, 422, || s.create(&crds, None, not_structural, &w()));
    assert!(
        err.message
            .contains("spec.versions[0].schema.openAPIV3Schema"),
        "{}",
        err.message
    );
}

#[tokio::test(start_paused = true)]
async fn updating_a_crd_changes_what_is_served() {
    let s = store();
    let (crd, widgets) = install(&s);
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let beta = s.resolve("example.com", "v1beta1", "widgets").unwrap();
    let now = WatchOptions {
        resource_version: Some(s.resource_version().to_string()),
        ..Default::default()
    };
    let mut beta_watch = s.watch(&beta, None, &now).unwrap();
    let mut v1_watch = s.watch(&widgets, None, &now).unwrap();
    // Stop serving v1beta1 and add v2 as the new storage version.
    let mut upd = crd.clone();
    upd["spec"]["versions"][1]["served"] = json!(false);
    let mut v2 = upd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    upd["spec"]["versions"][0]["storage"] = json!(false);
    upd["spec"]["versions"].as_array_mut().unwrap().push(v2);
    let out = s
        .update(&crds, None, "widgets.example.com", None, upd, &w())
        .unwrap();
    assert_eq!(out["metadata"]["generation"], 2);
    assert_eq!(out["status"]["storedVersions"], json!(["v1", "v2"]));
    assert!(s.resolve("example.com", "v1beta1", "widgets").is_none());
    assert!(s.resolve("example.com", "v2", "widgets").is_some());
    assert!(matches!(
        tokio::time::timeout(Duration::from_secs(1), beta_watch.events.recv()).await,
        Ok(None)
    ));
    s.create(&widgets, Some("default"), widget("still"), &w())
        .unwrap();
    assert!(matches!(
        v1_watch.events.recv().await,
        Some(WatchEvent::Added(_))
    ));
    // The scope cannot change.
    let mut scope = out.clone();
    scope["spec"]["scope"] = json!("Cluster");
    fails_unchanged(&s, 422, || {
        s.update(&crds, None, "widgets.example.com", None, scope, &w())
    });
}

#[test]
fn a_crd_update_is_defaulted_like_a_create() {
    // An update built from the manifest (kubectl replace, or an operator re-installing its CRD)
    // carries no listKind or singular: the server defaults them again instead of refusing.
    let s = store();
    let (crd, _) = install(&s);
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let mut body = crd_body();
    body["metadata"]["resourceVersion"] = crd["metadata"]["resourceVersion"].clone();
    let updated = s
        .update(&crds, None, "widgets.example.com", None, body, &w())
        .expect("an update without the defaulted names is accepted");
    assert_eq!(updated["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(updated["spec"]["names"]["singular"], "widget");
    assert_eq!(updated["spec"]["conversion"]["strategy"], "None");
}

#[test]
fn objects_read_with_a_default_their_schema_gained_later() {
    let s = store();
    let (crd, widgets) = install(&s);
    let stored = s
        .create(&widgets, Some("default"), widget("w"), &w())
        .unwrap();
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let mut updated = crd.clone();
    updated["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["color"] = json!({"type": "string", "default": "blue"});
    s.update(&crds, None, "widgets.example.com", None, updated, &w())
        .unwrap();
    let read = s.get(&widgets, Some("default"), "w", None).unwrap();
    assert_eq!(read["spec"]["color"], "blue");
    assert_eq!(read["spec"]["size"], 1);
    // Nothing was written: the object's resourceVersion is the one it was stored with.
    assert_eq!(rv_of(&read), rv_of(&stored));
    let list = s
        .list(&widgets, Some("default"), &Default::default())
        .unwrap();
    assert_eq!(list["items"][0]["spec"]["color"], "blue");
}
