//! Deletion: finalizers, propagation policies with garbage collection, namespaces,
//! deletecollection, preconditions.

use super::*;

fn owned_cm(name: &str, owner: &Value, block: bool) -> Value {
    let mut body = cm(name, json!({}));
    body["metadata"]["ownerReferences"] = json!([{
        "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "blockOwnerDeletion": block,
    }]);
    body
}

fn exists(s: &Storage, r: &ResourceInfo, ns: Option<&str>, name: &str) -> bool {
    s.get(r, ns, name, None).is_ok()
}

#[test]
fn delete_answers_status_or_object() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let a = create_cm(&s, "a");
    let out = s
        .delete(&cms, Some("default"), "a", &DeleteOptions::default())
        .unwrap();
    assert_eq!(out["kind"], "Status");
    assert_eq!(out["status"], "Success");
    assert_eq!(out["details"]["uid"], a["metadata"]["uid"]);
    assert!(!exists(&s, &cms, Some("default"), "a"));
    let err = s
        .delete(&cms, Some("default"), "a", &DeleteOptions::default())
        .unwrap_err();
    assert_eq!(err.code, 404);
    let pods = res(&s, "", "pods");
    let pod =
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}});
    s.create(&pods, Some("default"), pod, &w()).unwrap();
    let out = s
        .delete(&pods, Some("default"), "p", &DeleteOptions::default())
        .unwrap();
    assert_eq!(out["kind"], "Pod");
}

#[test]
fn finalizers_hold_deletion_until_removed() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let mut body = cm("f", json!({}));
    body["metadata"]["finalizers"] = json!(["example.com/cleanup"]);
    s.create(&cms, Some("default"), body, &w()).unwrap();
    let marked = s
        .delete(&cms, Some("default"), "f", &DeleteOptions::default())
        .unwrap();
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
    assert!(exists(&s, &cms, Some("default"), "f"));
    // A second delete changes nothing.
    let rv = s.resource_version();
    s.delete(&cms, Some("default"), "f", &DeleteOptions::default())
        .unwrap();
    assert_eq!(s.resource_version(), rv);
    // No new finalizers on a deleting object; other updates pass and keep the timestamp.
    let mut more = marked.clone();
    more["metadata"]["finalizers"] = json!(["example.com/cleanup", "other"]);
    let err = fails_unchanged(&s, 422, || {
        s.update(&cms, Some("default"), "f", None, more, &w())
    });
    assert!(
        err.message
            .contains("no new finalizers can be added if the object is being deleted"),
        "{}",
        err.message
    );
    let mut clear_ts = marked.clone();
    clear_ts["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("deletionTimestamp");
    clear_ts["data"] = json!({"x": "1"});
    let upd = s
        .update(&cms, Some("default"), "f", None, clear_ts, &w())
        .unwrap();
    assert_eq!(
        upd["metadata"]["deletionTimestamp"],
        marked["metadata"]["deletionTimestamp"]
    );
    // Removing the last finalizer removes the object.
    let out = s
        .patch(
            &cms,
            Some("default"),
            "f",
            None,
            PatchType::Merge,
            br#"{"metadata":{"finalizers":null}}"#,
            &w(),
        )
        .unwrap();
    assert_eq!(out["metadata"]["name"], "f");
    assert!(!exists(&s, &cms, Some("default"), "f"));
}

#[test]
fn deletion_bumps_generation_of_generation_keeping_kinds() {
    let s = store();
    let deps = res(&s, "apps", "deployments");
    let mut d = deployment("web", 1);
    d["metadata"]["finalizers"] = json!(["x/y"]);
    s.create(&deps, Some("default"), d, &w()).unwrap();
    let marked = s
        .delete(&deps, Some("default"), "web", &DeleteOptions::default())
        .unwrap();
    assert_eq!(marked["metadata"]["generation"], 2);
}

#[test]
fn background_deletion_collects_dependents() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let owner = create_cm(&s, "owner");
    s.create(
        &cms,
        Some("default"),
        owned_cm("child", &owner, false),
        &w(),
    )
    .unwrap();
    let child = s.get(&cms, Some("default"), "child", None).unwrap();
    s.create(
        &cms,
        Some("default"),
        owned_cm("grandchild", &child, false),
        &w(),
    )
    .unwrap();
    // A dependent with a second, living owner only loses the dangling reference.
    let other = create_cm(&s, "other");
    let mut shared = owned_cm("shared", &owner, false);
    let second = owned_cm("x", &other, false)["metadata"]["ownerReferences"][0].clone();
    shared["metadata"]["ownerReferences"]
        .as_array_mut()
        .unwrap()
        .push(second);
    s.create(&cms, Some("default"), shared, &w()).unwrap();
    s.delete(&cms, Some("default"), "owner", &DeleteOptions::default())
        .unwrap();
    assert!(!exists(&s, &cms, Some("default"), "owner"));
    assert!(!exists(&s, &cms, Some("default"), "child"));
    assert!(!exists(&s, &cms, Some("default"), "grandchild"));
    let shared = s.get(&cms, Some("default"), "shared", None).unwrap();
    assert_eq!(
        shared["metadata"]["ownerReferences"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        shared["metadata"]["ownerReferences"][0]["uid"],
        other["metadata"]["uid"]
    );
}

#[test]
fn dependents_of_an_owner_with_finalizers_wait_for_it() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let mut body = cm("owner", json!({}));
    body["metadata"]["finalizers"] = json!(["x/y"]);
    let owner = s.create(&cms, Some("default"), body, &w()).unwrap();
    s.create(
        &cms,
        Some("default"),
        owned_cm("child", &owner, false),
        &w(),
    )
    .unwrap();
    s.delete(&cms, Some("default"), "owner", &DeleteOptions::default())
        .unwrap();
    assert!(exists(&s, &cms, Some("default"), "child"));
    s.patch(
        &cms,
        Some("default"),
        "owner",
        None,
        PatchType::Merge,
        br#"{"metadata":{"finalizers":[]}}"#,
        &w(),
    )
    .unwrap();
    assert!(!exists(&s, &cms, Some("default"), "owner"));
    assert!(!exists(&s, &cms, Some("default"), "child"));
}

#[test]
fn foreground_deletion_waits_for_blocking_dependents() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let owner = create_cm(&s, "owner");
    let mut blocking = owned_cm("blocking", &owner, true);
    blocking["metadata"]["finalizers"] = json!(["x/y"]);
    s.create(&cms, Some("default"), blocking, &w()).unwrap();
    s.create(
        &cms,
        Some("default"),
        owned_cm("plain", &owner, false),
        &w(),
    )
    .unwrap();
    let fg = DeleteOptions {
        propagation_policy: Some("Foreground".into()),
        ..Default::default()
    };
    let out = s.delete(&cms, Some("default"), "owner", &fg).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    assert!(out["metadata"]["deletionTimestamp"].is_string());
    assert!(
        !exists(&s, &cms, Some("default"), "plain"),
        "dependents are deleted"
    );
    let blocking = s.get(&cms, Some("default"), "blocking", None).unwrap();
    assert!(blocking["metadata"]["deletionTimestamp"].is_string());
    assert!(
        exists(&s, &cms, Some("default"), "owner"),
        "the blocking dependent holds the owner"
    );
    s.patch(
        &cms,
        Some("default"),
        "blocking",
        None,
        PatchType::Merge,
        br#"{"metadata":{"finalizers":null}}"#,
        &w(),
    )
    .unwrap();
    assert!(!exists(&s, &cms, Some("default"), "blocking"));
    assert!(!exists(&s, &cms, Some("default"), "owner"));
}

#[test]
fn foreground_deletion_is_not_blocked_by_an_ownership_cycle() {
    // Upstream's e2e "should not be blocked by dependency circle": a owns b owns c owns a, each
    // reference blocking; deleting one in the foreground removes all three.
    let s = store();
    let cms = res(&s, "", "configmaps");
    let a = create_cm(&s, "a");
    let b = s
        .create(&cms, Some("default"), owned_cm("b", &a, true), &w())
        .unwrap();
    let c = s
        .create(&cms, Some("default"), owned_cm("c", &b, true), &w())
        .unwrap();
    let refs = owned_cm("a", &c, true)["metadata"]["ownerReferences"].clone();
    let patch = json!({"metadata": {"ownerReferences": refs}}).to_string();
    s.patch(
        &cms,
        Some("default"),
        "a",
        None,
        PatchType::Merge,
        patch.as_bytes(),
        &w(),
    )
    .unwrap();
    let fg = DeleteOptions {
        propagation_policy: Some("Foreground".into()),
        ..Default::default()
    };
    s.delete(&cms, Some("default"), "a", &fg).unwrap();
    for name in ["a", "b", "c"] {
        assert!(!exists(&s, &cms, Some("default"), name), "{name} is gone");
    }
}

#[test]
fn foreground_without_dependents_removes_at_once() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    create_cm(&s, "lonely");
    let fg = DeleteOptions {
        propagation_policy: Some("Foreground".into()),
        ..Default::default()
    };
    let out = s.delete(&cms, Some("default"), "lonely", &fg).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    assert!(!exists(&s, &cms, Some("default"), "lonely"));
}

#[test]
fn orphan_deletion_keeps_dependents() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let owner = create_cm(&s, "owner");
    s.create(&cms, Some("default"), owned_cm("child", &owner, true), &w())
        .unwrap();
    let orphan = DeleteOptions {
        propagation_policy: Some("Orphan".into()),
        ..Default::default()
    };
    let out = s.delete(&cms, Some("default"), "owner", &orphan).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["orphan"]));
    assert!(!exists(&s, &cms, Some("default"), "owner"));
    let child = s.get(&cms, Some("default"), "child", None).unwrap();
    assert!(child["metadata"].get("ownerReferences").is_none());
    let bad = DeleteOptions {
        propagation_policy: Some("Sometimes".into()),
        ..Default::default()
    };
    create_cm(&s, "x");
    fails_unchanged(&s, 422, || s.delete(&cms, Some("default"), "x", &bad));
}

/// core/v1 ReplicationControllers orphan their pods when a deletion names no policy
/// (upstream's `DefaultGarbageCollectionPolicy` for them); naming one, or the deprecated
/// `orphanDependents: false`, collects them as for every other kind.
#[test]
fn replication_controllers_orphan_by_default() {
    let s = store();
    let rcs = res(&s, "", "replicationcontrollers");
    let pods = res(&s, "", "pods");
    let rc = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
            "spec": {"replicas": 0, "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    };
    let pod = |name: &str, owner: &Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "ownerReferences": [{
                "apiVersion": "v1", "kind": "ReplicationController",
                "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    };
    let kept = s.create(&rcs, Some("default"), rc("kept"), &w()).unwrap();
    s.create(&pods, Some("default"), pod("kept-1", &kept), &w())
        .unwrap();
    let out = s
        .delete(&rcs, Some("default"), "kept", &DeleteOptions::default())
        .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["orphan"]), "{out}");
    assert!(!exists(&s, &rcs, Some("default"), "kept"));
    let orphan = s.get(&pods, Some("default"), "kept-1", None).unwrap();
    assert!(
        orphan["metadata"].get("ownerReferences").is_none(),
        "{orphan}"
    );

    let collected = s.create(&rcs, Some("default"), rc("gone"), &w()).unwrap();
    s.create(&pods, Some("default"), pod("gone-1", &collected), &w())
        .unwrap();
    let background = DeleteOptions {
        propagation_policy: Some("Background".into()),
        ..Default::default()
    };
    s.delete(&rcs, Some("default"), "gone", &background)
        .unwrap();
    assert!(!exists(&s, &pods, Some("default"), "gone-1"));
}

/// A foreground deletion keeps a dependent that has another standing owner, removing only
/// the reference to the deleted owner, and deletes the dependents it alone owned (the
/// garbage collector's "solid owner" rule; upstream's e2e spec "should not delete dependents
/// that have both valid owner and owner that's waiting for dependents to be deleted").
#[test]
fn foreground_deletion_keeps_dependents_with_another_owner() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let going = create_cm(&s, "going");
    let staying = create_cm(&s, "staying");
    let only = owned_cm("only-going", &going, true);
    s.create(&cms, Some("default"), only, &w()).unwrap();
    let mut both = owned_cm("both", &going, true);
    let second = owned_cm("x", &staying, false)["metadata"]["ownerReferences"][0].clone();
    both["metadata"]["ownerReferences"]
        .as_array_mut()
        .unwrap()
        .push(second);
    s.create(&cms, Some("default"), both, &w()).unwrap();
    let fg = DeleteOptions {
        propagation_policy: Some("Foreground".into()),
        ..Default::default()
    };
    s.delete(&cms, Some("default"), "going", &fg).unwrap();
    assert!(!exists(&s, &cms, Some("default"), "going"));
    assert!(!exists(&s, &cms, Some("default"), "only-going"));
    let kept = s.get(&cms, Some("default"), "both", None).unwrap();
    assert!(
        kept["metadata"].get("deletionTimestamp").is_none(),
        "{kept}"
    );
    let refs = kept["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(refs.len(), 1, "{kept}");
    assert_eq!(refs[0]["uid"], staying["metadata"]["uid"]);
}

#[test]
fn preconditions() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let a = create_cm(&s, "a");
    let wrong_uid = DeleteOptions {
        precondition_uid: Some("nope".into()),
        ..Default::default()
    };
    let err = fails_unchanged(&s, 409, || s.delete(&cms, Some("default"), "a", &wrong_uid));
    assert!(
        err.message
            .contains("Precondition failed: UID in precondition: nope"),
        "{}",
        err.message
    );
    let wrong_rv = DeleteOptions {
        precondition_resource_version: Some("1".into()),
        ..Default::default()
    };
    fails_unchanged(&s, 409, || s.delete(&cms, Some("default"), "a", &wrong_rv));
    let right = DeleteOptions {
        precondition_uid: a["metadata"]["uid"].as_str().map(String::from),
        precondition_resource_version: a["metadata"]["resourceVersion"].as_str().map(String::from),
        ..Default::default()
    };
    s.delete(&cms, Some("default"), "a", &right).unwrap();
}

#[test]
fn namespace_deletion_removes_contents_then_itself() {
    let s = store();
    let ns = res(&s, "", "namespaces");
    let cms = res(&s, "", "configmaps");
    s.create(&ns, None, json!({"metadata": {"name": "team"}}), &w())
        .unwrap();
    s.create(&cms, Some("team"), cm("a", json!({})), &w())
        .unwrap();
    let mut held = cm("held", json!({}));
    held["metadata"]["finalizers"] = json!(["x/y"]);
    s.create(&cms, Some("team"), held, &w()).unwrap();
    create_cm(&s, "elsewhere");
    let out = s
        .delete(&ns, None, "team", &DeleteOptions::default())
        .unwrap();
    assert_eq!(out["status"]["phase"], "Terminating");
    assert!(!exists(&s, &cms, Some("team"), "a"));
    assert!(exists(&s, &cms, Some("team"), "held"));
    let team = s.get(&ns, None, "team", None).unwrap();
    assert_eq!(team["status"]["phase"], "Terminating");
    let err = fails_unchanged(&s, 403, || {
        s.create(&cms, Some("team"), cm("new", json!({})), &w())
    });
    assert_eq!(
        err.message,
        "unable to create new content in namespace team because it is being terminated"
    );
    s.patch(
        &cms,
        Some("team"),
        "held",
        None,
        PatchType::Merge,
        br#"{"metadata":{"finalizers":null}}"#,
        &w(),
    )
    .unwrap();
    assert!(!exists(&s, &ns, None, "team"));
    assert!(exists(&s, &cms, Some("default"), "elsewhere"));
    let err = fails_unchanged(&s, 403, || {
        s.delete(&ns, None, "default", &DeleteOptions::default())
    });
    assert_eq!(
        err.message,
        "namespaces \"default\" is forbidden: this namespace may not be deleted"
    );
}

#[test]
fn empty_namespace_goes_at_once() {
    let s = store();
    let ns = res(&s, "", "namespaces");
    s.create(&ns, None, json!({"metadata": {"name": "empty"}}), &w())
        .unwrap();
    let out = s
        .delete(&ns, None, "empty", &DeleteOptions::default())
        .unwrap();
    assert_eq!(out["status"]["phase"], "Terminating");
    assert!(!exists(&s, &ns, None, "empty"));
}

#[test]
fn delete_collection_by_selector() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        let mut body = cm(name, json!({}));
        body["metadata"]["labels"] = json!({"app": app});
        s.create(&cms, Some("default"), body, &w()).unwrap();
    }
    s.create(&cms, Some("kube-system"), cm("k", json!({})), &w())
        .unwrap();
    let sel = ListOptions {
        label_selector: Some("app=web".into()),
        ..Default::default()
    };
    let out = s
        .delete_collection(&cms, Some("default"), &sel, &DeleteOptions::default())
        .unwrap();
    assert_eq!(out["kind"], "ConfigMapList");
    assert_eq!(names(&out), vec!["a", "b"]);
    let left = s.list(&cms, None, &ListOptions::default()).unwrap();
    assert_eq!(names(&left), vec!["c", "k"]);
    s.delete_collection(
        &cms,
        Some("default"),
        &ListOptions::default(),
        &DeleteOptions::default(),
    )
    .unwrap();
    assert_eq!(
        names(&s.list(&cms, None, &ListOptions::default()).unwrap()),
        vec!["k"]
    );
}

#[test]
fn objects_created_for_absent_owners_are_collected() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let owner = create_cm(&s, "owner");
    let mut ghost_owner = owner.clone();
    ghost_owner["metadata"]["uid"] = json!("no-such-uid");
    let created = s
        .create(
            &cms,
            Some("default"),
            owned_cm("orphaned", &ghost_owner, false),
            &w(),
        )
        .unwrap();
    assert_eq!(
        created["metadata"]["name"], "orphaned",
        "the create itself succeeds"
    );
    assert!(
        !exists(&s, &cms, Some("default"), "orphaned"),
        "then the GC collects it"
    );
    // One living owner keeps it; the dangling reference goes.
    let mut two = owned_cm("two", &owner, false);
    let ghost_ref = owned_cm("x", &ghost_owner, false)["metadata"]["ownerReferences"][0].clone();
    two["metadata"]["ownerReferences"]
        .as_array_mut()
        .unwrap()
        .push(ghost_ref);
    s.create(&cms, Some("default"), two, &w()).unwrap();
    let two = s.get(&cms, Some("default"), "two", None).unwrap();
    assert_eq!(
        two["metadata"]["ownerReferences"].as_array().unwrap().len(),
        1
    );
    // An owner in another namespace does not count.
    s.create(
        &cms,
        Some("kube-system"),
        owned_cm("elsewhere", &owner, false),
        &w(),
    )
    .unwrap();
    assert!(!exists(&s, &cms, Some("kube-system"), "elsewhere"));
    // A cluster-scoped owner does.
    let node = s
        .create(
            &res(&s, "", "nodes"),
            None,
            json!({"metadata": {"name": "n1"}}),
            &w(),
        )
        .unwrap();
    s.create(
        &cms,
        Some("default"),
        owned_cm("on-node", &node, false),
        &w(),
    )
    .unwrap();
    assert!(exists(&s, &cms, Some("default"), "on-node"));
}

#[test]
fn delete_answers_the_held_object_or_the_outcome() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    create_cm(&s, "a");
    let mut held = cm("held", json!({}));
    held["metadata"]["finalizers"] = json!(["x/y"]);
    s.create(&cms, Some("default"), held, &w()).unwrap();
    let gone = s
        .delete(&cms, Some("default"), "a", &DeleteOptions::default())
        .unwrap();
    assert_eq!(gone["kind"], "Status");
    assert_eq!(gone["status"], "Success");
    let pending = s
        .delete(&cms, Some("default"), "held", &DeleteOptions::default())
        .unwrap();
    assert_eq!(pending["kind"], "ConfigMap");
    assert!(pending["metadata"]["deletionTimestamp"].is_string());
}

/// Makes pod `name` Running and Ready, as a kubelet would (a Pending pod is evicted
/// whatever its budget says).
fn run_ready(s: &Storage, pods: &ResourceInfo, name: &str) {
    let status = json!({"status": {"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]}});
    s.patch(
        pods,
        Some("default"),
        name,
        Some("status"),
        PatchType::Merge,
        status.to_string().as_bytes(),
        &w(),
    )
    .unwrap();
}

#[test]
fn an_eviction_the_disruption_budget_does_not_allow_is_a_429() {
    let s = store();
    let pods = res(&s, "", "pods");
    let pdbs = res(&s, "policy", "poddisruptionbudgets");
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "db-0", "labels": {"app": "db"}},
        "spec": {"containers": [{"name": "c", "image": "postgres"}]}});
    s.create(&pods, Some("default"), pod, &w()).unwrap();
    run_ready(&s, &pods, "db-0");
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "db"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}});
    s.create(&pdbs, Some("default"), pdb, &w()).unwrap();
    let eviction =
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "db-0"}});
    let cause = |e: &ApiError| {
        assert_eq!(
            (e.code, e.reason.as_str()),
            (429, "TooManyRequests"),
            "{e:?}"
        );
        assert_eq!(
            e.message,
            "Cannot evict pod as it would violate the pod's disruption budget."
        );
        let d = e.details.as_ref().unwrap();
        assert_eq!(d["causes"][0]["reason"], "DisruptionBudget");
        d["causes"][0]["message"].as_str().unwrap().to_string()
    };
    let err = s.evict("default", "db-0", &eviction, &w()).unwrap_err();
    assert_eq!(
        cause(&err),
        "The disruption budget db is still being processed by the server."
    );
    let status = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "db"},
        "status": {"observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 1,
                   "desiredHealthy": 1, "expectedPods": 1}});
    s.update(&pdbs, Some("default"), "db", Some("status"), status, &w())
        .unwrap();
    let err = s.evict("default", "db-0", &eviction, &w()).unwrap_err();
    assert_eq!(
        cause(&err),
        "The disruption budget db needs 1 healthy pods and has 1 currently"
    );
    assert!(
        s.get(&pods, Some("default"), "db-0", None).is_ok(),
        "the pod stays"
    );
    // A pod that is not Ready, while the budget has its desired healthy pods, goes without
    // taking a disruption; a Pending one goes whatever the budget.
    for (name, phase) in [("db-1", "Running"), ("db-2", "Pending")] {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "db"}},
            "spec": {"containers": [{"name": "c", "image": "postgres"}]}});
        s.create(&pods, Some("default"), pod, &w()).unwrap();
        let status = json!({"status": {"phase": phase}});
        s.patch(
            &pods,
            Some("default"),
            name,
            Some("status"),
            PatchType::Merge,
            status.to_string().as_bytes(),
            &w(),
        )
        .unwrap();
        let eviction =
            json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}});
        s.evict("default", name, &eviction, &w()).unwrap();
        assert!(s.get(&pods, Some("default"), name, None).is_err());
    }
    let pdb = s.get(&pdbs, Some("default"), "db", None).unwrap();
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(pdb["status"].get("disruptedPods").is_none());
}

#[test]
fn a_dry_run_eviction_checks_the_budget_but_charges_nothing_and_keeps_the_pod() {
    let s = store();
    let pods = res(&s, "", "pods");
    let pdbs = res(&s, "policy", "poddisruptionbudgets");
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "db-0", "labels": {"app": "db"}},
        "spec": {"containers": [{"name": "c", "image": "postgres"}]}});
    s.create(&pods, Some("default"), pod, &w()).unwrap();
    run_ready(&s, &pods, "db-0");
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "db"},
        "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "db"}}}});
    s.create(&pdbs, Some("default"), pdb, &w()).unwrap();
    let status = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "db"},
        "status": {"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 1,
                   "desiredHealthy": 0, "expectedPods": 1}});
    s.update(&pdbs, Some("default"), "db", Some("status"), status, &w())
        .unwrap();
    let allowed = |s: &Storage| {
        s.get(&pdbs, Some("default"), "db", None).unwrap()["status"]["disruptionsAllowed"].clone()
    };
    // Dry run in the Eviction's deleteOptions, then in the request.
    let in_body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "db-0"}, "deleteOptions": {"dryRun": ["All"]}});
    let answer = s.evict("default", "db-0", &in_body, &w()).unwrap();
    assert_eq!(answer["status"], "Success");
    let plain =
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "db-0"}});
    let dry = WriteOptions {
        dry_run: true,
        ..w()
    };
    s.evict("default", "db-0", &plain, &dry).unwrap();
    assert!(
        s.get(&pods, Some("default"), "db-0", None).is_ok(),
        "the pod stays"
    );
    assert_eq!(allowed(&s), 1, "nothing charged to the budget");
    // For real: the pod goes and the budget is charged.
    s.evict("default", "db-0", &plain, &w()).unwrap();
    assert!(s.get(&pods, Some("default"), "db-0", None).is_err());
    assert_eq!(allowed(&s), 0);
    let pdb = s.get(&pdbs, Some("default"), "db", None).unwrap();
    let condition = &pdb["status"]["conditions"][0];
    assert_eq!(
        (
            &condition["type"],
            &condition["status"],
            &condition["reason"]
        ),
        (
            &json!("DisruptionAllowed"),
            &json!("False"),
            &json!("InsufficientPods")
        )
    );
}

#[test]
fn bound_pods_are_deleted_gracefully_while_kubelets_run() {
    let s = store();
    let pods = res(&s, "", "pods");
    let pod = |name: &str, node: Option<&str>| {
        let mut p = json!({"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        if let Some(node) = node {
            p["spec"]["nodeName"] = json!(node);
        }
        s.create(&pods, Some("default"), p, &w()).unwrap();
    };
    let del = |name: &str, grace: Option<i64>| {
        let opts = DeleteOptions {
            grace_period_seconds: grace,
            ..DeleteOptions::default()
        };
        s.delete(&pods, Some("default"), name, &opts)
    };
    let get = |name: &str| s.get(&pods, Some("default"), name, None).ok();

    // Off (the default): a bound pod goes at once.
    pod("a", Some("node-1"));
    del("a", None).unwrap();
    assert!(get("a").is_none());

    s.set_graceful_pod_deletion(true);
    pod("b", Some("node-1"));
    let marked = del("b", None).unwrap();
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        get("b").unwrap()["metadata"]["deletionGracePeriodSeconds"],
        30
    );
    // A shorter grace period shortens it; a longer one changes nothing.
    del("b", Some(5)).unwrap();
    let rv = get("b").unwrap()["metadata"]["resourceVersion"].clone();
    assert_eq!(
        get("b").unwrap()["metadata"]["deletionGracePeriodSeconds"],
        5
    );
    del("b", Some(10)).unwrap();
    assert_eq!(get("b").unwrap()["metadata"]["resourceVersion"], rv);
    // The kubelet's final delete.
    del("b", Some(0)).unwrap();
    assert!(get("b").is_none());
    // An unbound pod has nothing to stop.
    pod("c", None);
    del("c", None).unwrap();
    assert!(get("c").is_none());
}
