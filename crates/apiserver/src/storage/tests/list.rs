//! Lists: selectors, pagination from one snapshot, expired tokens, resourceVersion semantics.

use super::*;

fn seed(s: &Storage, n: usize) {
    let cms = res(s, "", "configmaps");
    for i in 0..n {
        let mut body = cm(&format!("cm-{i:02}"), json!({}));
        body["metadata"]["labels"] = json!({"parity": if i % 2 == 0 { "even" } else { "odd" }});
        s.create(&cms, Some("default"), body, &w()).unwrap();
    }
}

#[test]
fn list_shape_and_namespaces() {
    let s = store();
    seed(&s, 3);
    let cms = res(&s, "", "configmaps");
    s.create(&cms, Some("kube-system"), cm("sys", json!({})), &w())
        .unwrap();
    let list = s
        .list(&cms, Some("default"), &ListOptions::default())
        .unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(
        list["metadata"]["resourceVersion"],
        s.resource_version().to_string()
    );
    assert!(list["metadata"].get("continue").is_none());
    assert_eq!(names(&list), vec!["cm-00", "cm-01", "cm-02"]);
    for item in list["items"].as_array().unwrap() {
        assert_eq!(
            (item["apiVersion"].as_str(), item["kind"].as_str()),
            (Some("v1"), Some("ConfigMap"))
        );
    }
    assert_eq!(
        names(&s.list(&cms, None, &ListOptions::default()).unwrap()).len(),
        4
    );
    assert_eq!(
        names(
            &s.list(&cms, Some("kube-public"), &ListOptions::default())
                .unwrap()
        )
        .len(),
        0
    );
}

#[test]
fn label_and_field_selectors() {
    let s = store();
    seed(&s, 4);
    let cms = res(&s, "", "configmaps");
    let opts = ListOptions {
        label_selector: Some("parity=even".into()),
        ..Default::default()
    };
    assert_eq!(
        names(&s.list(&cms, None, &opts).unwrap()),
        vec!["cm-00", "cm-02"]
    );
    let opts = ListOptions {
        label_selector: Some("parity notin (even),!missing".into()),
        ..Default::default()
    };
    assert_eq!(
        names(&s.list(&cms, None, &opts).unwrap()),
        vec!["cm-01", "cm-03"]
    );
    let opts = ListOptions {
        field_selector: Some("metadata.name=cm-01".into()),
        ..Default::default()
    };
    assert_eq!(names(&s.list(&cms, None, &opts).unwrap()), vec!["cm-01"]);
    let opts = ListOptions {
        field_selector: Some("metadata.namespace!=default".into()),
        ..Default::default()
    };
    assert!(names(&s.list(&cms, None, &opts).unwrap()).is_empty());
    let opts = ListOptions {
        field_selector: Some("status.phase=Running".into()),
        ..Default::default()
    };
    let err = s.list(&cms, None, &opts).unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "field label not supported: status.phase")
    );
    let ns = res(&s, "", "namespaces");
    let opts = ListOptions {
        field_selector: Some("status.phase=Active".into()),
        ..Default::default()
    };
    assert_eq!(names(&s.list(&ns, None, &opts).unwrap()).len(), 4);
    let pods = res(&s, "", "pods");
    let pod = |name: &str, node: &str| json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}});
    s.create(&pods, Some("default"), pod("p1", "n1"), &w())
        .unwrap();
    s.create(&pods, Some("default"), pod("p2", "n2"), &w())
        .unwrap();
    let opts = ListOptions {
        field_selector: Some("spec.nodeName=n2,status.phase=Pending".into()),
        ..Default::default()
    };
    assert_eq!(names(&s.list(&pods, None, &opts).unwrap()), vec!["p2"]);
    let opts = ListOptions {
        label_selector: Some("a in (".into()),
        ..Default::default()
    };
    assert_eq!(s.list(&cms, None, &opts).unwrap_err().code, 400);
}

#[test]
fn pages_come_from_the_first_page_snapshot() {
    let s = store();
    seed(&s, 5);
    let cms = res(&s, "", "configmaps");
    let first = s
        .list(
            &cms,
            Some("default"),
            &ListOptions {
                limit: Some(2),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(names(&first), vec!["cm-00", "cm-01"]);
    assert_eq!(first["metadata"]["remainingItemCount"], 3);
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    let list_rv = first["metadata"]["resourceVersion"].clone();
    // Writes after the first page are not seen by later pages.
    s.delete(&cms, Some("default"), "cm-02", &DeleteOptions::default())
        .unwrap();
    s.create(&cms, Some("default"), cm("cm-99", json!({})), &w())
        .unwrap();
    let second = s
        .list(
            &cms,
            Some("default"),
            &ListOptions {
                limit: Some(2),
                continue_token: Some(token),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(names(&second), vec!["cm-02", "cm-03"]);
    assert_eq!(second["metadata"]["resourceVersion"], list_rv);
    let token = second["metadata"]["continue"].as_str().unwrap().to_string();
    let third = s
        .list(
            &cms,
            Some("default"),
            &ListOptions {
                limit: Some(2),
                continue_token: Some(token),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(names(&third), vec!["cm-04"]);
    assert!(third["metadata"].get("continue").is_none());
    assert!(third["metadata"].get("remainingItemCount").is_none());
    // A fresh list sees the writes.
    let fresh = s
        .list(&cms, Some("default"), &ListOptions::default())
        .unwrap();
    assert!(names(&fresh).contains(&"cm-99".to_string()));
    assert!(!names(&fresh).contains(&"cm-02".to_string()));
}

#[test]
fn selected_pages_have_no_remaining_count() {
    let s = store();
    seed(&s, 6);
    let cms = res(&s, "", "configmaps");
    let opts = ListOptions {
        limit: Some(2),
        label_selector: Some("parity=odd".into()),
        ..Default::default()
    };
    let first = s.list(&cms, None, &opts).unwrap();
    assert_eq!(names(&first), vec!["cm-01", "cm-03"]);
    assert!(first["metadata"].get("remainingItemCount").is_none());
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    let second = s
        .list(
            &cms,
            None,
            &ListOptions {
                continue_token: Some(token),
                ..opts
            },
        )
        .unwrap();
    assert_eq!(names(&second), vec!["cm-05"]);
}

#[test]
fn expired_continue_token_is_gone() {
    let s = store();
    seed(&s, 3);
    let cms = res(&s, "", "configmaps");
    let first = s
        .list(
            &cms,
            None,
            &ListOptions {
                limit: Some(1),
                ..Default::default()
            },
        )
        .unwrap();
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    create_cm(&s, "cm-09");
    s.compact();
    let err = s
        .list(
            &cms,
            None,
            &ListOptions {
                limit: Some(1),
                continue_token: Some(token),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
    assert_eq!(
        err.message,
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
    );
    // The Status offers a token that lists the rest at the latest resourceVersion: what was
    // created since shows up.
    let offered = err.to_status()["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(err.continue_token.as_deref(), Some(offered.as_str()));
    let rest = s
        .list(
            &cms,
            None,
            &ListOptions {
                continue_token: Some(offered),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(names(&rest), vec!["cm-01", "cm-02", "cm-09"]);
    assert_eq!(
        rest["metadata"]["resourceVersion"],
        s.resource_version().to_string()
    );
    let err = s
        .list(
            &cms,
            None,
            &ListOptions {
                continue_token: Some("garbage".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(err.code, 400);
}

#[test]
fn old_snapshots_are_dropped() {
    let config = StorageConfig {
        list_snapshots: 2,
        ..Default::default()
    };
    let s = Storage::new(config);
    seed(&s, 3);
    let cms = res(&s, "", "configmaps");
    let mut tokens = Vec::new();
    for i in 0..3 {
        let page = s
            .list(
                &cms,
                None,
                &ListOptions {
                    limit: Some(1),
                    ..Default::default()
                },
            )
            .unwrap();
        tokens.push(page["metadata"]["continue"].as_str().unwrap().to_string());
        s.create(
            &cms,
            Some("default"),
            cm(&format!("more-{i}"), json!({})),
            &w(),
        )
        .unwrap();
    }
    let cont = |t: &String| {
        s.list(
            &cms,
            None,
            &ListOptions {
                continue_token: Some(t.clone()),
                ..Default::default()
            },
        )
    };
    assert_eq!(cont(&tokens[0]).unwrap_err().code, 410);
    assert!(cont(&tokens[1]).is_ok());
    assert!(cont(&tokens[2]).is_ok());
}

#[test]
fn resource_version_semantics() {
    let s = store();
    seed(&s, 2);
    let cms = res(&s, "", "configmaps");
    let rv = s.resource_version();
    let page = s
        .list(
            &cms,
            None,
            &ListOptions {
                limit: Some(1),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(page["metadata"]["resourceVersion"], rv.to_string());
    create_cm(&s, "later");
    // Exact at a kept snapshot: the old state.
    let exact = ListOptions {
        resource_version: Some(rv.to_string()),
        resource_version_match: Some("Exact".into()),
        ..Default::default()
    };
    let old = s.list(&cms, None, &exact).unwrap();
    assert_eq!(names(&old), vec!["cm-00", "cm-01"]);
    assert_eq!(old["metadata"]["resourceVersion"], rv.to_string());
    // Exact at a state never snapshotted: too old.
    let gone = ListOptions {
        resource_version: Some("1".into()),
        ..exact.clone()
    };
    assert_eq!(s.list(&cms, None, &gone).unwrap_err().code, 410);
    // NotOlderThan / legacy / "0": the latest state.
    for opts in [
        ListOptions {
            resource_version: Some(rv.to_string()),
            resource_version_match: Some("NotOlderThan".into()),
            ..Default::default()
        },
        ListOptions {
            resource_version: Some(rv.to_string()),
            ..Default::default()
        },
        ListOptions {
            resource_version: Some("0".into()),
            ..Default::default()
        },
    ] {
        let l = s.list(&cms, None, &opts).unwrap();
        assert_eq!(names(&l).len(), 3);
        assert_eq!(
            l["metadata"]["resourceVersion"],
            s.resource_version().to_string()
        );
    }
    let future = ListOptions {
        resource_version: Some("999999".into()),
        ..Default::default()
    };
    assert_eq!(s.list(&cms, None, &future).unwrap_err().code, 504);
    let bad = ListOptions {
        resource_version: Some("abc".into()),
        ..Default::default()
    };
    assert_eq!(s.list(&cms, None, &bad).unwrap_err().code, 400);
}

#[tokio::test(start_paused = true)]
async fn events_of_both_apis_are_one_resource() {
    let s = store();
    let core = res(&s, "", "events");
    let v1 = res(&s, "events.k8s.io", "events");
    let mut watch = s
        .watch(
            &core,
            None,
            &WatchOptions {
                resource_version: Some(s.resource_version().to_string()),
                ..Default::default()
            },
        )
        .unwrap();
    let body = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
        "note": "pulled", "reason": "Pulled", "type": "Normal", "reportingController": "ctl",
        "reportingInstance": "ctl-1", "action": "Pull", "eventTime": "2024-01-01T00:00:00.000000Z",
    });
    let created = s.create(&v1, Some("default"), body, &w()).unwrap();
    assert_eq!(created["apiVersion"], "events.k8s.io/v1");
    assert_eq!(created["note"], "pulled");
    let as_core = s.get(&core, Some("default"), "e1", None).unwrap();
    assert_eq!(as_core["apiVersion"], "v1");
    assert_eq!(as_core["message"], "pulled");
    assert_eq!(as_core["involvedObject"]["name"], "p");
    assert_eq!(as_core["reportingComponent"], "ctl");
    match watch.events.recv().await.unwrap() {
        WatchEvent::Added(o) => assert_eq!(o["involvedObject"]["name"], "p"),
        other => panic!("{other:?}"),
    }
    let opts = ListOptions {
        field_selector: Some("involvedObject.name=p,reason=Pulled".into()),
        ..Default::default()
    };
    assert_eq!(names(&s.list(&core, None, &opts).unwrap()), vec!["e1"]);
    assert_eq!(names(&s.list(&v1, None, &opts).unwrap()), vec!["e1"]);
    let patched = s
        .patch(
            &v1,
            Some("default"),
            "e1",
            None,
            PatchType::Merge,
            br#"{"series":{"count":2,"lastObservedTime":"2024-01-01T00:01:00.000000Z"}}"#,
            &w(),
        )
        .unwrap();
    assert_eq!(patched["series"]["count"], 2);
    assert_eq!(
        s.get(&core, Some("default"), "e1", None).unwrap()["series"]["count"],
        2
    );
    // The note of an events.k8s.io Event is immutable (`ValidateEventUpdate`).
    let err = s
        .patch(
            &v1,
            Some("default"),
            "e1",
            None,
            PatchType::Merge,
            br#"{"note":"again"}"#,
            &w(),
        )
        .unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "Event.events.k8s.io \"e1\" is invalid: message: Invalid value: \"again\": field is immutable"
    );
}

#[test]
fn resource_version_match_is_checked() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let list = |m: &str, rv: Option<&str>| {
        let opts = ListOptions {
            resource_version: rv.map(String::from),
            resource_version_match: Some(m.into()),
            ..Default::default()
        };
        s.list(&cms, None, &opts)
    };
    let err = list("Exact", None).unwrap_err();
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("resourceVersionMatch is forbidden unless resourceVersion is provided"),
        "{}",
        err.message
    );
    assert_eq!(list("Exact", Some("0")).unwrap_err().code, 422);
    assert_eq!(list("Sometimes", Some("1")).unwrap_err().code, 422);
    assert!(list("NotOlderThan", Some("0")).is_ok());
}

#[test]
fn hpas_written_at_v1_are_read_at_v2_and_back() {
    let s = store();
    let v1 = res(&s, "autoscaling", "horizontalpodautoscalers");
    let v2 = s
        .resolve("autoscaling", "v2", "horizontalpodautoscalers")
        .unwrap();
    let body = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60},
    });
    let created = s.create(&v1, Some("default"), body, &w()).unwrap();
    assert_eq!(created["apiVersion"], "autoscaling/v1");
    assert_eq!(created["spec"]["targetCPUUtilizationPercentage"], 60);
    let as_v2 = s.get(&v2, Some("default"), "web", None).unwrap();
    assert_eq!(as_v2["apiVersion"], "autoscaling/v2");
    assert_eq!(
        as_v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 60}}}])
    );
    assert!(
        as_v2["spec"]
            .get("targetCPUUtilizationPercentage")
            .is_none()
    );

    // A v2 client adds a memory metric; a v1 client's read-modify-write keeps it.
    let mut with_memory = as_v2.clone();
    with_memory["spec"]["metrics"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "Resource", "resource": {"name": "memory",
            "target": {"type": "AverageValue", "averageValue": "500Mi"}}}));
    s.update(&v2, Some("default"), "web", None, with_memory, &w())
        .unwrap();
    let mut read = s.get(&v1, Some("default"), "web", None).unwrap();
    assert!(
        read["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
            .as_str()
            .unwrap()
            .contains("memory")
    );
    read["spec"]["maxReplicas"] = json!(8);
    s.update(&v1, Some("default"), "web", None, read, &w())
        .unwrap();
    let after = s.get(&v2, Some("default"), "web", None).unwrap();
    assert_eq!(after["spec"]["maxReplicas"], 8);
    assert_eq!(after["spec"]["metrics"].as_array().unwrap().len(), 2);
    assert!(after["metadata"].get("annotations").is_none());
}

/// The compactor, on tokio's paused clock: a continue token outlives one compaction interval
/// and is gone after the second tick (each tick compacts to what the previous one saw), as
/// kube-apiserver's etcd compactor behaves; watches from before then get 410 too.
#[tokio::test(start_paused = true)]
async fn the_compactor_expires_continue_tokens_after_two_intervals() {
    let s = store();
    seed(&s, 3);
    let cms = res(&s, "", "configmaps");
    let page = |token: Option<String>| {
        s.list(
            &cms,
            None,
            &ListOptions {
                limit: Some(1),
                continue_token: token,
                ..Default::default()
            },
        )
    };
    let first = page(None).unwrap();
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    let listed_at = rv_of(&first);
    create_cm(&s, "later");
    let interval = std::time::Duration::from_secs(300);
    let compactor = tokio::spawn(s.compactor(interval));
    // The first tick compacts nothing; it records where the history is.
    tokio::time::sleep(interval + std::time::Duration::from_secs(1)).await;
    assert_eq!(names(&page(Some(token.clone())).unwrap()), vec!["cm-01"]);
    // The second tick compacts up to what the first saw, past the list's resourceVersion.
    tokio::time::sleep(interval).await;
    let err = page(Some(token)).unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
    assert!(err.continue_token.is_some());
    let from = |rv: u64| WatchOptions {
        resource_version: Some(rv.to_string()),
        ..Default::default()
    };
    let mut watch = s.watch(&cms, None, &from(listed_at)).unwrap();
    let first_event = tokio::time::timeout(std::time::Duration::from_secs(5), watch.events.recv());
    assert!(
        matches!(first_event.await, Ok(Some(WatchEvent::Error(st))) if st["code"] == 410),
        "a watch from before the compaction is gone"
    );
    // From what the compaction kept, it still works.
    let mut watch = s.watch(&cms, None, &from(listed_at + 1)).unwrap();
    create_cm(&s, "latest");
    let first_event = tokio::time::timeout(std::time::Duration::from_secs(5), watch.events.recv());
    assert!(
        matches!(first_event.await, Ok(Some(WatchEvent::Added(_)))),
        "the later create"
    );
    // Dropping the storage ends the compactor.
    drop(watch);
    drop(s);
    tokio::time::sleep(interval * 2).await;
    assert!(compactor.is_finished());
}

/// `list_shared` selects as LIST does and hands out the stored objects themselves.
#[test]
fn list_shared_selects_without_copies() {
    let s = store();
    seed(&s, 5);
    let cms = res(&s, "", "configmaps");
    s.create(&cms, Some("kube-system"), cm("sys", json!({})), &w())
        .unwrap();
    let even = s
        .list_shared(&cms, Some("default"), Some("parity=even"), None)
        .unwrap();
    let names: Vec<&str> = even
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cm-00", "cm-02", "cm-04"]);
    let again = s
        .list_shared(&cms, Some("default"), Some("parity=even"), None)
        .unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&even[0], &again[0]),
        "shared, not copied"
    );
    assert_eq!(
        *even[0],
        s.get(&cms, Some("default"), "cm-00", None).unwrap()
    );
    let everywhere = s
        .list_shared(&cms, None, None, Some("metadata.name=sys"))
        .unwrap();
    assert_eq!(everywhere.len(), 1);
    let err = s
        .list_shared(&cms, None, Some("a in (b"), None)
        .unwrap_err();
    assert_eq!(err.code, 400, "{err:?}");
}

/// `owned_shared` answers an owner's dependents of one resource from the owner index.
#[test]
fn owned_shared_answers_the_dependents_of_one_resource() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let secrets = res(&s, "", "secrets");
    let owner = s
        .create(&cms, Some("default"), cm("owner", json!({})), &w())
        .unwrap();
    let owned = |name: &str, kind: &str| {
        json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
            "uid": owner["metadata"]["uid"]}]}})
    };
    for name in ["b", "a"] {
        s.create(&cms, Some("default"), owned(name, "ConfigMap"), &w())
            .unwrap();
    }
    s.create(&secrets, Some("default"), owned("s", "Secret"), &w())
        .unwrap();
    s.create(&cms, Some("default"), cm("unrelated", json!({})), &w())
        .unwrap();
    let uid = owner["metadata"]["uid"].as_str().unwrap();
    let names = |objs: Vec<std::sync::Arc<Value>>| -> Vec<String> {
        objs.iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(s.owned_shared(&cms, uid)), ["a", "b"]);
    assert_eq!(names(s.owned_shared(&secrets, uid)), ["s"]);
    assert!(s.owned_shared(&cms, "no-such-uid").is_empty());
}
