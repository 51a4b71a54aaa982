//! Create, get, update, patch: system fields, generation, conflicts, status, scale, dry-run,
//! bad input.

use super::*;

#[test]
fn system_namespaces_exist() {
    let s = store();
    let ns = res(&s, "", "namespaces");
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let n = s.get(&ns, None, name, None).unwrap();
        assert_eq!(n["status"]["phase"], "Active");
        assert_eq!(n["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(n["metadata"]["labels"]["kubernetes.io/metadata.name"], name);
        assert_eq!(n["kind"], "Namespace");
        assert!(n["metadata"].get("generation").is_none());
        // Each has its `default` ServiceAccount, as the ServiceAccount controller makes it.
        let sa = s
            .get(&res(&s, "", "serviceaccounts"), Some(name), "default", None)
            .unwrap();
        assert_eq!(
            (sa["kind"].as_str(), sa["metadata"]["namespace"].as_str()),
            (Some("ServiceAccount"), Some(name))
        );
    }
    // Four namespaces and their four ServiceAccounts.
    assert_eq!(s.resource_version(), 8);
}

#[test]
fn create_sets_system_fields() {
    let s = store();
    let mut body = cm("a", json!({"k": "v"}));
    body["metadata"]["uid"] = json!("client-uid");
    body["metadata"]["creationTimestamp"] = json!("2000-01-01T00:00:00Z");
    let created = s
        .create(&res(&s, "", "configmaps"), Some("default"), body, &w())
        .unwrap();
    let m = &created["metadata"];
    assert_eq!(m["namespace"], "default");
    assert_ne!(m["uid"], "client-uid");
    assert_eq!(m["uid"].as_str().unwrap().len(), 36);
    assert_ne!(m["creationTimestamp"], "2000-01-01T00:00:00Z");
    assert!(m["creationTimestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(rv_of(&created), 9);
    assert!(
        m.get("generation").is_none(),
        "configmaps keep no generation"
    );
    let got = s
        .get(&res(&s, "", "configmaps"), Some("default"), "a", None)
        .unwrap();
    assert_eq!(got, created);
}

#[test]
fn create_without_kind_and_api_version_fills_them() {
    let s = store();
    let created = s
        .create(
            &res(&s, "", "configmaps"),
            Some("default"),
            json!({"metadata": {"name": "x"}}),
            &w(),
        )
        .unwrap();
    assert_eq!(
        (created["apiVersion"].as_str(), created["kind"].as_str()),
        (Some("v1"), Some("ConfigMap"))
    );
}

#[test]
fn generate_name_appends_five_characters() {
    let s = store();
    let body = json!({"metadata": {"generateName": "job-"}, "data": {}});
    let a = s
        .create(
            &res(&s, "", "configmaps"),
            Some("default"),
            body.clone(),
            &w(),
        )
        .unwrap();
    let b = s
        .create(&res(&s, "", "configmaps"), Some("default"), body, &w())
        .unwrap();
    let name = a["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("job-") && name.len() == 9, "{name}");
    assert_ne!(a["metadata"]["name"], b["metadata"]["name"]);
}

#[test]
fn resource_versions_increase_once_per_write() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let a = create_cm(&s, "a");
    let b = create_cm(&s, "b");
    assert_eq!(rv_of(&b), rv_of(&a) + 1);
    let mut upd = a.clone();
    upd["data"] = json!({"a": "2"});
    let a2 = s
        .update(&cms, Some("default"), "a", None, upd, &w())
        .unwrap();
    assert_eq!(rv_of(&a2), rv_of(&b) + 1);
    assert_eq!(s.resource_version(), rv_of(&a2));
}

#[test]
fn no_op_update_stores_nothing() {
    let s = store();
    let a = create_cm(&s, "a");
    let before = s.resource_version();
    let same = s
        .update(
            &res(&s, "", "configmaps"),
            Some("default"),
            "a",
            None,
            a.clone(),
            &w(),
        )
        .unwrap();
    assert_eq!(same, a);
    assert_eq!(s.resource_version(), before);
}

#[test]
fn stale_update_conflicts() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let a = create_cm(&s, "a");
    let mut first = a.clone();
    first["data"] = json!({"a": "2"});
    s.update(&cms, Some("default"), "a", None, first, &w())
        .unwrap();
    let mut stale = a.clone();
    stale["data"] = json!({"a": "3"});
    let err = fails_unchanged(&s, 409, || {
        s.update(&cms, Some("default"), "a", None, stale, &w())
    });
    assert_eq!(err.reason, "Conflict");
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );
    // Without a resourceVersion the update is unconditional.
    let mut blind = cm("a", json!({"a": "4"}));
    blind["metadata"]["namespace"] = json!("default");
    let out = s
        .update(&cms, Some("default"), "a", None, blind, &w())
        .unwrap();
    assert_eq!(out["data"]["a"], "4");
    assert_eq!(out["metadata"]["uid"], a["metadata"]["uid"]);
    assert_eq!(
        out["metadata"]["creationTimestamp"],
        a["metadata"]["creationTimestamp"]
    );
}

#[test]
fn generation_tracks_spec_changes_only() {
    let s = store();
    let deps = res(&s, "apps", "deployments");
    let d = s
        .create(&deps, Some("default"), deployment("web", 1), &w())
        .unwrap();
    assert_eq!(d["metadata"]["generation"], 1);
    let mut labelled = d.clone();
    labelled["metadata"]["labels"] = json!({"x": "y"});
    let d2 = s
        .update(&deps, Some("default"), "web", None, labelled, &w())
        .unwrap();
    assert_eq!(
        d2["metadata"]["generation"], 1,
        "metadata changes keep the generation"
    );
    let mut scaled = d2.clone();
    scaled["spec"]["replicas"] = json!(3);
    let d3 = s
        .update(&deps, Some("default"), "web", None, scaled, &w())
        .unwrap();
    assert_eq!(d3["metadata"]["generation"], 2);
    let mut status = d3.clone();
    status["status"] = json!({"replicas": 3});
    let d4 = s
        .update(&deps, Some("default"), "web", Some("status"), status, &w())
        .unwrap();
    assert_eq!(
        d4["metadata"]["generation"], 2,
        "status changes keep the generation"
    );
    // Clients cannot set the generation.
    let mut forged = d4.clone();
    forged["metadata"]["generation"] = json!(40);
    forged["metadata"]["labels"] = json!({"x": "z"});
    let d5 = s
        .update(&deps, Some("default"), "web", None, forged, &w())
        .unwrap();
    assert_eq!(d5["metadata"]["generation"], 2);
}

#[test]
fn status_writes_change_what_the_kind_status_strategy_allows() {
    let s = store();
    // A namespace's status patch that also sets an annotation keeps it (upstream resets only
    // `spec`), as the e2e "should apply changes to a namespace status" expects.
    let nss = res(&s, "", "namespaces");
    s.create(&nss, None, json!({"metadata": {"name": "st"}}), &w())
        .unwrap();
    let patched = s
        .patch(
            &nss,
            None,
            "st",
            Some("status"),
            PatchType::Merge,
            br#"{"metadata":{"annotations":{"e2e-patched-ns-status":"st"}},
                "status":{"conditions":[{"type":"StatusPatch","status":"True","reason":"E2E","message":"patched"}]},
                "spec":{"finalizers":["example.com/x"]}}"#,
            &w(),
        )
        .unwrap();
    assert_eq!(
        patched["metadata"]["annotations"]["e2e-patched-ns-status"],
        "st"
    );
    assert_eq!(patched["status"]["conditions"][0]["type"], "StatusPatch");
    assert_eq!(
        patched["spec"]["finalizers"],
        json!(["kubernetes"]),
        "spec is reset"
    );
    let got = s.get(&nss, None, "st", None).unwrap();
    assert_eq!(
        got["metadata"]["annotations"]["e2e-patched-ns-status"],
        "st"
    );

    // A pod's status write may change labels, not owner references.
    let pods = res(&s, "", "pods");
    let owner = create_cm(&s, "owner");
    let uid = owner["metadata"]["uid"].clone();
    let pod = json!({"metadata": {"name": "p", "ownerReferences": [{"apiVersion": "v1",
        "kind": "ConfigMap", "name": "owner", "uid": uid}]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let created = s.create(&pods, Some("default"), pod, &w()).unwrap();
    let mut body = created.clone();
    body["metadata"]["labels"] = json!({"phase": "seen"});
    body["metadata"]["ownerReferences"] = json!([]);
    body["status"]["phase"] = json!("Running");
    let updated = s
        .update(&pods, Some("default"), "p", Some("status"), body, &w())
        .unwrap();
    assert_eq!(updated["metadata"]["labels"]["phase"], "seen");
    assert_eq!(updated["metadata"]["ownerReferences"][0]["uid"], uid);
    assert_eq!(updated["status"]["phase"], "Running");

    // A deployment's status write keeps its labels (reset by its strategy) but takes its
    // annotations.
    let deps = res(&s, "apps", "deployments");
    let d = s
        .create(&deps, Some("default"), deployment("lab", 1), &w())
        .unwrap();
    let mut body = d.clone();
    body["metadata"]["labels"] = json!({"x": "y"});
    body["metadata"]["annotations"] = json!({"note": "kept"});
    body["status"] = json!({"replicas": 1});
    let d2 = s
        .update(&deps, Some("default"), "lab", Some("status"), body, &w())
        .unwrap();
    assert!(d2["metadata"].get("labels").is_none());
    assert_eq!(d2["metadata"]["annotations"]["note"], "kept");
    assert_eq!(d2["metadata"]["generation"], 1);
}

#[test]
fn status_is_isolated_both_ways() {
    let s = store();
    let deps = res(&s, "apps", "deployments");
    let mut body = deployment("web", 1);
    body["status"] = json!({"replicas": 9});
    let d = s.create(&deps, Some("default"), body, &w()).unwrap();
    assert_eq!(d["status"], json!({}), "status of a create is dropped");
    // Main resource: status changes ignored.
    let mut main = d.clone();
    main["status"] = json!({"replicas": 5});
    main["spec"]["replicas"] = json!(2);
    let d2 = s
        .update(&deps, Some("default"), "web", None, main, &w())
        .unwrap();
    assert_eq!(d2["status"], json!({}));
    assert_eq!(d2["spec"]["replicas"], 2);
    // Status subresource: only status changes.
    let mut st = d2.clone();
    st["status"] = json!({"replicas": 2});
    st["spec"]["replicas"] = json!(7);
    st["metadata"]["labels"] = json!({"ignored": "yes"});
    let d3 = s
        .update(&deps, Some("default"), "web", Some("status"), st, &w())
        .unwrap();
    assert_eq!(d3["status"]["replicas"], 2);
    assert_eq!(d3["spec"]["replicas"], 2);
    assert!(d3["metadata"].get("labels").is_none());
    // Patches too.
    let d4 = s
        .patch(
            &deps,
            Some("default"),
            "web",
            Some("status"),
            PatchType::Merge,
            br#"{"status":{"readyReplicas":1},"spec":{"replicas":9}}"#,
            &w(),
        )
        .unwrap();
    assert_eq!(d4["status"]["readyReplicas"], 1);
    assert_eq!(d4["spec"]["replicas"], 2);
    let d5 = s
        .patch(
            &deps,
            Some("default"),
            "web",
            None,
            PatchType::Merge,
            br#"{"status":{"readyReplicas":0}}"#,
            &w(),
        )
        .unwrap();
    assert_eq!(d5["status"]["readyReplicas"], 1);
    assert_eq!(
        rv_of(&d5),
        rv_of(&d4),
        "an ignored status patch stores nothing"
    );
    // Resources without a status subresource keep what is sent.
    let sa = s
        .create(
            &res(&s, "", "serviceaccounts"),
            Some("default"),
            json!({"metadata": {"name": "sa"}}),
            &w(),
        )
        .unwrap();
    assert!(sa.get("status").is_none());
    let err = s
        .get(
            &res(&s, "", "configmaps"),
            Some("default"),
            "x",
            Some("status"),
        )
        .unwrap_err();
    assert_eq!(err.code, 404);
}

#[test]
fn scale_subresource() {
    let s = store();
    let deps = res(&s, "apps", "deployments");
    s.create(&deps, Some("default"), deployment("web", 2), &w())
        .unwrap();
    let scale = s.get(&deps, Some("default"), "web", Some("scale")).unwrap();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 2);
    assert_eq!(scale["status"]["replicas"], 0);
    assert_eq!(scale["status"]["selector"], "app=web");
    let mut put = scale.clone();
    put["spec"]["replicas"] = json!(5);
    let out = s
        .update(&deps, Some("default"), "web", Some("scale"), put, &w())
        .unwrap();
    assert_eq!(out["spec"]["replicas"], 5);
    let d = s.get(&deps, Some("default"), "web", None).unwrap();
    assert_eq!(d["spec"]["replicas"], 5);
    assert_eq!(d["metadata"]["generation"], 2);
    let out = s
        .patch(
            &deps,
            Some("default"),
            "web",
            Some("scale"),
            PatchType::Merge,
            br#"{"spec":{"replicas":1}}"#,
            &w(),
        )
        .unwrap();
    assert_eq!(out["spec"]["replicas"], 1);
    // A stale Scale conflicts; a negative one is invalid.
    fails_unchanged(&s, 409, || {
        s.update(
            &deps,
            Some("default"),
            "web",
            Some("scale"),
            scale.clone(),
            &w(),
        )
    });
    let neg = json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "web"}, "spec": {"replicas": -1}});
    fails_unchanged(&s, 422, || {
        s.update(&deps, Some("default"), "web", Some("scale"), neg, &w())
    });
    assert_eq!(
        s.get(
            &res(&s, "apps", "daemonsets"),
            Some("default"),
            "x",
            Some("scale")
        )
        .unwrap_err()
        .code,
        404
    );
}

#[test]
fn patch_types() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    create_cm(&s, "a");
    let out = s
        .patch(
            &cms,
            Some("default"),
            "a",
            None,
            PatchType::Merge,
            br#"{"data":{"b":"2","a":null}}"#,
            &w(),
        )
        .unwrap();
    assert_eq!(out["data"], json!({"b": "2"}));
    let out = s
        .patch(
            &cms,
            Some("default"),
            "a",
            None,
            PatchType::Json,
            br#"[{"op":"add","path":"/data/c","value":"3"}]"#,
            &w(),
        )
        .unwrap();
    assert_eq!(out["data"], json!({"b": "2", "c": "3"}));
    let out = s
        .patch(
            &cms,
            Some("default"),
            "a",
            None,
            PatchType::Strategic,
            br#"{"metadata":{"labels":{"x":"1"}}}"#,
            &w(),
        )
        .unwrap();
    assert_eq!(out["metadata"]["labels"]["x"], "1");
    // A failing JSON patch test, a malformed body, a missing object.
    fails_unchanged(&s, 422, || {
        s.patch(
            &cms,
            Some("default"),
            "a",
            None,
            PatchType::Json,
            br#"[{"op":"test","path":"/data/b","value":"9"}]"#,
            &w(),
        )
    });
    fails_unchanged(&s, 400, || {
        s.patch(
            &cms,
            Some("default"),
            "a",
            None,
            PatchType::Merge,
            b"{nope",
            &w(),
        )
    });
    fails_unchanged(&s, 404, || {
        s.patch(
            &cms,
            Some("default"),
            "zz",
            None,
            PatchType::Merge,
            b"{}",
            &w(),
        )
    });
    // A patch naming a stale resourceVersion conflicts.
    fails_unchanged(&s, 409, || {
        s.patch(
            &cms,
            Some("default"),
            "a",
            None,
            PatchType::Merge,
            br#"{"metadata":{"resourceVersion":"1"}}"#,
            &w(),
        )
    });
}

#[test]
fn apply_creates_then_owns_what_it_applies() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let apply = |body: &[u8], manager: Option<&str>| {
        let opts = WriteOptions {
            field_manager: manager.map(String::from),
            ..Default::default()
        };
        s.patch(
            &cms,
            Some("default"),
            "ap",
            None,
            PatchType::Apply,
            body,
            &opts,
        )
    };
    let a1 = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ap"},"data":{"a":"1"}}"#;
    assert_eq!(apply(a1, None).unwrap_err().code, 422);
    let created = apply(a1, Some("m")).unwrap();
    assert_eq!(created["data"]["a"], "1");
    assert_eq!(
        created["metadata"]["managedFields"][0]["operation"],
        "Apply"
    );
    // The same manager applying only `b`: `a` is no longer applied and nobody else owns it.
    let b2 = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ap"},"data":{"b":"2"}}"#;
    let merged = apply(b2, Some("m")).unwrap();
    assert_eq!(merged["data"], json!({"b": "2"}));
}

#[test]
fn dry_run_changes_nothing() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let a = create_cm(&s, "a");
    let before = s.dump();
    let dry = WriteOptions {
        dry_run: true,
        ..Default::default()
    };
    let out = s
        .create(&cms, Some("default"), cm("b", json!({})), &dry)
        .unwrap();
    assert_eq!(out["metadata"]["name"], "b");
    assert!(out["metadata"]["uid"].is_string());
    let mut upd = a.clone();
    upd["data"] = json!({"z": "1"});
    let out = s
        .update(&cms, Some("default"), "a", None, upd, &dry)
        .unwrap();
    assert_eq!(out["data"]["z"], "1");
    s.patch(
        &cms,
        Some("default"),
        "a",
        None,
        PatchType::Merge,
        br#"{"data":{"q":"1"}}"#,
        &dry,
    )
    .unwrap();
    let del = DeleteOptions {
        dry_run: true,
        ..Default::default()
    };
    s.delete(&cms, Some("default"), "a", &del).unwrap();
    s.delete_collection(&cms, Some("default"), &ListOptions::default(), &del)
        .unwrap();
    let svc = json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}});
    s.create(&res(&s, "", "services"), Some("default"), svc, &dry)
        .unwrap();
    assert_eq!(s.dump(), before);
}

#[test]
fn a_dry_run_create_answers_at_the_requests_version() {
    let s = store();
    let events = res(&s, "events.k8s.io", "events");
    let dry = WriteOptions {
        dry_run: true,
        ..Default::default()
    };
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "x/y", "reportingInstance": "i", "action": "A",
        "reason": "R", "type": "Normal", "regarding": {"kind": "Pod", "name": "p"}});
    let out = s
        .create(&events, Some("default"), event.clone(), &dry)
        .unwrap();
    let stored = s
        .create(&events, Some("default"), event, &WriteOptions::default())
        .unwrap();
    assert_eq!(out["apiVersion"], "events.k8s.io/v1");
    assert_eq!(out["regarding"], stored["regarding"]);
}

#[test]
fn bad_names_are_invalid() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let err = fails_unchanged(&s, 422, || {
        s.create(&cms, Some("default"), cm("Bad_Name", json!({})), &w())
    });
    assert_eq!(err.reason, "Invalid");
    assert!(
        err.message.starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"),
        "{}",
        err.message
    );
    let details = err.details.unwrap();
    assert_eq!(details["kind"], "ConfigMap");
    assert_eq!(details["causes"][0]["field"], "metadata.name");
    let err = fails_unchanged(&s, 422, || {
        s.create(&cms, Some("default"), json!({"metadata": {}}), &w())
    });
    assert!(
        err.message
            .contains("metadata.name: Required value: name or generateName is required"),
        "{}",
        err.message
    );
    // Namespaces are DNS-1123 labels (no dots), services DNS-1035 (no leading digit).
    let ns = res(&s, "", "namespaces");
    fails_unchanged(&s, 422, || {
        s.create(&ns, None, json!({"metadata": {"name": "a.b"}}), &w())
    });
    let svc = res(&s, "", "services");
    fails_unchanged(&s, 422, || {
        s.create(
            &svc,
            Some("default"),
            json!({"metadata": {"name": "1svc"}, "spec": {}}),
            &w(),
        )
    });
    let deps = res(&s, "apps", "deployments");
    let err = fails_unchanged(&s, 422, || {
        s.create(&deps, Some("default"), deployment("Web", 1), &w())
    });
    assert!(
        err.message
            .starts_with("Deployment.apps \"Web\" is invalid"),
        "{}",
        err.message
    );
}

#[test]
fn bad_requests_leave_the_store_unchanged() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    create_cm(&s, "a");
    let err = fails_unchanged(&s, 409, || {
        s.create(&cms, Some("default"), cm("a", json!({})), &w())
    });
    assert_eq!(
        (err.reason.as_str(), err.message.as_str()),
        ("AlreadyExists", "configmaps \"a\" already exists")
    );
    let err = fails_unchanged(&s, 404, || {
        s.create(&cms, Some("nope"), cm("b", json!({})), &w())
    });
    assert_eq!(err.message, "namespaces \"nope\" not found");
    let mut wrong_kind = cm("b", json!({}));
    wrong_kind["kind"] = json!("Secret");
    fails_unchanged(&s, 400, || {
        s.create(&cms, Some("default"), wrong_kind, &w())
    });
    let mut wrong_version = cm("b", json!({}));
    wrong_version["apiVersion"] = json!("apps/v1");
    let err = fails_unchanged(&s, 400, || {
        s.create(&cms, Some("default"), wrong_version, &w())
    });
    assert_eq!(
        err.message,
        "the API version in the data (apps/v1) does not match the expected API version (v1)"
    );
    let mut other_ns = cm("b", json!({}));
    other_ns["metadata"]["namespace"] = json!("kube-system");
    let err = fails_unchanged(&s, 400, || s.create(&cms, Some("default"), other_ns, &w()));
    assert_eq!(
        err.message,
        "the namespace of the provided object does not match the namespace sent on the request"
    );
    fails_unchanged(&s, 400, || {
        s.create(&cms, Some("default"), json!([1, 2]), &w())
    });
    let err = fails_unchanged(&s, 400, || {
        s.update(&cms, Some("default"), "a", None, cm("b", json!({})), &w())
    });
    assert_eq!(
        err.message,
        "the name of the object (b) does not match the name on the URL (a)"
    );
    let err = fails_unchanged(&s, 404, || {
        s.update(&cms, Some("default"), "zz", None, cm("zz", json!({})), &w())
    });
    assert_eq!(err.message, "configmaps \"zz\" not found");
    let err = s.get(&cms, Some("default"), "zz", None).unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    let mut with_uid = s.get(&cms, Some("default"), "a", None).unwrap();
    with_uid["metadata"]["uid"] = json!("other");
    let err = fails_unchanged(&s, 422, || {
        s.update(&cms, Some("default"), "a", None, with_uid, &w())
    });
    assert!(err.message.contains("metadata.uid"), "{}", err.message);
    let pods = res(&s, "", "pods");
    let err = fails_unchanged(&s, 422, || {
        s.create(
            &pods,
            Some("default"),
            json!({"metadata": {"name": "p"}, "spec": {}}),
            &w(),
        )
    });
    assert!(
        err.message.contains("spec.containers: Required value"),
        "{}",
        err.message
    );
}

#[test]
fn immutable_fields() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let mut body = cm("frozen", json!({"a": "1"}));
    body["immutable"] = json!(true);
    let frozen = s.create(&cms, Some("default"), body, &w()).unwrap();
    let mut changed = frozen.clone();
    changed["data"] = json!({"a": "2"});
    let err = fails_unchanged(&s, 422, || {
        s.update(&cms, Some("default"), "frozen", None, changed, &w())
    });
    assert!(
        err.message
            .contains("data: Forbidden: field is immutable when `immutable` is set"),
        "{}",
        err.message
    );
    let mut labels = frozen.clone();
    labels["metadata"]["labels"] = json!({"ok": "yes"});
    s.update(&cms, Some("default"), "frozen", None, labels, &w())
        .unwrap();
    let deps = res(&s, "apps", "deployments");
    let d = s
        .create(&deps, Some("default"), deployment("web", 1), &w())
        .unwrap();
    let mut sel = d.clone();
    sel["spec"]["selector"] = json!({"matchLabels": {"app": "other"}});
    sel["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
    let err = fails_unchanged(&s, 422, || {
        s.update(&deps, Some("default"), "web", None, sel, &w())
    });
    assert!(
        err.message.contains("spec.selector: Invalid value"),
        "{}",
        err.message
    );
    assert!(err.message.contains("field is immutable"));
    let svcs = res(&s, "", "services");
    let svc = s
        .create(
            &svcs,
            Some("default"),
            json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}),
            &w(),
        )
        .unwrap();
    assert_eq!(svc["spec"]["clusterIP"], "10.96.0.1");
    let mut ip = svc.clone();
    ip["spec"]["clusterIP"] = json!("10.96.0.99");
    fails_unchanged(&s, 422, || {
        s.update(&svcs, Some("default"), "svc", None, ip, &w())
    });
    // Leaving the clusterIP out keeps it.
    let mut no_ip = svc.clone();
    no_ip["spec"].as_object_mut().unwrap().remove("clusterIP");
    no_ip["metadata"]["labels"] = json!({"a": "b"});
    let out = s
        .update(&svcs, Some("default"), "svc", None, no_ip, &w())
        .unwrap();
    assert_eq!(out["spec"]["clusterIP"], "10.96.0.1");
}

#[test]
fn cluster_scoped_objects_have_no_namespace() {
    let s = store();
    let nodes = res(&s, "", "nodes");
    let mut body = json!({"metadata": {"name": "n1", "namespace": "default"}});
    body["spec"] = json!({});
    let n = s.create(&nodes, None, body, &w()).unwrap();
    assert!(n["metadata"].get("namespace").is_none());
    assert!(s.get(&nodes, None, "n1", None).is_ok());
}

#[test]
fn concurrent_writers_get_distinct_increasing_versions() {
    let s = store();
    let start = s.resource_version();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let s = s.clone();
            std::thread::spawn(move || {
                let cms = res(&s, "", "configmaps");
                let mut last = 0;
                let mut rvs = Vec::new();
                for i in 0..100 {
                    let out = s
                        .create(
                            &cms,
                            Some("default"),
                            cm(&format!("t{t}-{i}"), json!({})),
                            &w(),
                        )
                        .unwrap();
                    let rv = rv_of(&out);
                    assert!(rv > last, "increasing within a writer");
                    last = rv;
                    rvs.push(rv);
                }
                rvs
            })
        })
        .collect();
    let mut all: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 400, "every write got its own resourceVersion");
    assert_eq!(s.resource_version(), start + 400);
    assert_eq!(all, ((start + 1)..=(start + 400)).collect::<Vec<_>>());
}

#[test]
fn secrets_merge_string_data() {
    let s = store();
    let secrets = res(&s, "", "secrets");
    let body = json!({"metadata": {"name": "s"}, "stringData": {"user": "admin"}, "data": {"pw": "c2VjcmV0"}});
    let created = s.create(&secrets, Some("default"), body, &w()).unwrap();
    assert_eq!(
        created["data"],
        json!({"pw": "c2VjcmV0", "user": "YWRtaW4="})
    );
    assert!(created.get("stringData").is_none());
    assert_eq!(created["type"], "Opaque");
    let out = s
        .patch(
            &secrets,
            Some("default"),
            "s",
            None,
            PatchType::Merge,
            br#"{"stringData":{"pw":"new"}}"#,
            &w(),
        )
        .unwrap();
    assert_eq!(out["data"]["pw"], "bmV3");
    let bad = json!({"metadata": {"name": "b"}, "data": {"x": "not base64!"}});
    fails_unchanged(&s, 400, || s.create(&secrets, Some("default"), bad, &w()));
}

#[test]
fn metadata_is_validated() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let mut body = cm("l", json!({}));
    body["metadata"]["labels"] = json!({"bad key": "v"});
    let err = fails_unchanged(&s, 422, || s.create(&cms, Some("default"), body, &w()));
    assert!(
        err.message
            .contains("metadata.labels: Invalid value: \"bad key\""),
        "{}",
        err.message
    );
    let a = create_cm(&s, "a");
    let mut upd = a.clone();
    upd["metadata"]["labels"] = json!({"k": "bad value!"});
    fails_unchanged(&s, 422, || {
        s.update(&cms, Some("default"), "a", None, upd, &w())
    });
    let mut two = cm("two", json!({}));
    two["metadata"]["ownerReferences"] = json!([
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1", "controller": true},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "2", "controller": true},
    ]);
    let err = fails_unchanged(&s, 422, || s.create(&cms, Some("default"), two, &w()));
    assert!(
        err.message
            .contains("Only one reference can have Controller set to true"),
        "{}",
        err.message
    );
    let mut numeric = cm("n", json!({}));
    numeric["metadata"]["annotations"] = json!({"a": 1});
    fails_unchanged(&s, 400, || s.create(&cms, Some("default"), numeric, &w()));
}

#[test]
fn node_ports_are_allocated_kept_and_checked() {
    let s = store();
    let svcs = res(&s, "", "services");
    let svc = |name: &str, ty: &str, ports: Value| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"type": ty, "selector": {"app": name}, "ports": ports}})
    };
    let web = s
        .create(
            &svcs,
            Some("default"),
            svc(
                "web",
                "NodePort",
                json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}]),
            ),
            &w(),
        )
        .unwrap();
    let np = |o: &Value, i: usize| o["spec"]["ports"][i]["nodePort"].as_i64().unwrap();
    let (a, b) = (np(&web, 0), np(&web, 1));
    assert!((30000..=32767).contains(&a) && (30000..=32767).contains(&b) && a != b);

    let internal = s
        .create(
            &svcs,
            Some("default"),
            svc("internal", "ClusterIP", json!([{"port": 80}])),
            &w(),
        )
        .unwrap();
    assert!(internal["spec"]["ports"][0].get("nodePort").is_none());

    let err = s
        .create(
            &svcs,
            Some("default"),
            svc("clash", "NodePort", json!([{"port": 80, "nodePort": a}])),
            &w(),
        )
        .unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        format!(
            "Service \"clash\" is invalid: spec.ports[0].nodePort: Invalid value: {a}: provided port is already allocated"
        )
    );
    let err = s
        .create(
            &svcs,
            Some("default"),
            svc("low", "NodePort", json!([{"port": 80, "nodePort": 80}])),
            &w(),
        )
        .unwrap_err();
    assert_eq!(
        err.message,
        "Service \"low\" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"
    );

    // An update that leaves the node ports out keeps them.
    let mut update = svc(
        "web",
        "NodePort",
        json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}]),
    );
    update["metadata"]["resourceVersion"] = web["metadata"]["resourceVersion"].clone();
    let updated = s
        .update(&svcs, Some("default"), "web", None, update, &w())
        .unwrap();
    assert_eq!((np(&updated, 0), np(&updated, 1)), (a, b));
}
