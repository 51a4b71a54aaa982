//! Watches: from a resourceVersion, from 0, resume, 410 after compaction, bookmarks,
//! initial-events-end, selection transitions, slow watchers, close_watches.

use std::time::Duration;

use super::*;

async fn next(watch: &mut Watch) -> WatchEvent {
    tokio::time::timeout(Duration::from_secs(5), watch.events.recv())
        .await
        .expect("an event in time")
        .expect("the watch is open")
}

async fn quiet(watch: &mut Watch) -> bool {
    tokio::time::timeout(Duration::from_secs(1), watch.events.recv())
        .await
        .is_err()
}

async fn ended(watch: &mut Watch) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_secs(5), watch.events.recv()).await,
        Ok(None)
    )
}

fn name_of(ev: &WatchEvent) -> (&'static str, String) {
    let (t, o) = match ev {
        WatchEvent::Added(o) => ("ADDED", o),
        WatchEvent::Modified(o) => ("MODIFIED", o),
        WatchEvent::Deleted(o) => ("DELETED", o),
        WatchEvent::Bookmark(o) => ("BOOKMARK", o),
        WatchEvent::Error(o) => ("ERROR", o),
    };
    (t, o["metadata"]["name"].as_str().unwrap_or("").to_string())
}

fn ev(t: &'static str, name: &str) -> (&'static str, String) {
    (t, name.to_string())
}

#[tokio::test(start_paused = true)]
async fn from_zero_sends_state_then_changes() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    create_cm(&s, "a");
    let mut watch = s
        .watch(
            &cms,
            Some("default"),
            &WatchOptions {
                resource_version: Some("0".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "a"));
    create_cm(&s, "b");
    s.patch(
        &cms,
        Some("default"),
        "b",
        None,
        PatchType::Merge,
        br#"{"data":{"x":"1"}}"#,
        &w(),
    )
    .unwrap();
    s.delete(&cms, Some("default"), "a", &DeleteOptions::default())
        .unwrap();
    s.create(&cms, Some("kube-system"), cm("other-ns", json!({})), &w())
        .unwrap();
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "b"));
    assert_eq!(name_of(&next(&mut watch).await), ev("MODIFIED", "b"));
    let deleted = next(&mut watch).await;
    assert_eq!(name_of(&deleted), ev("DELETED", "a"));
    if let WatchEvent::Deleted(o) = &deleted {
        assert_eq!(
            rv_of(o),
            s.resource_version() - 1,
            "the deletion's resourceVersion"
        );
    }
    assert!(quiet(&mut watch).await, "other namespaces are not watched");
    // Unset behaves as "0".
    let mut unset = s.watch(&cms, None, &WatchOptions::default()).unwrap();
    let mut got = vec![
        name_of(&next(&mut unset).await),
        name_of(&next(&mut unset).await),
    ];
    got.sort();
    assert_eq!(got, vec![ev("ADDED", "b"), ev("ADDED", "other-ns")]);
}

#[tokio::test(start_paused = true)]
async fn from_a_resource_version_is_exclusive_and_resumable() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let a = create_cm(&s, "a");
    create_cm(&s, "b");
    create_cm(&s, "c");
    let opts = WatchOptions {
        resource_version: a["metadata"]["resourceVersion"].as_str().map(String::from),
        ..Default::default()
    };
    let mut watch = s.watch(&cms, None, &opts).unwrap();
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "b"));
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "c"));
    assert!(quiet(&mut watch).await);
    let current = WatchOptions {
        resource_version: Some(s.resource_version().to_string()),
        ..Default::default()
    };
    let mut live = s.watch(&cms, None, &current).unwrap();
    assert!(quiet(&mut live).await);
    create_cm(&s, "d");
    assert_eq!(name_of(&next(&mut live).await), ev("ADDED", "d"));
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "d"));
}

#[tokio::test(start_paused = true)]
async fn too_old_resource_version_gets_410() {
    let config = StorageConfig {
        watch_window: 3,
        ..Default::default()
    };
    let s = Storage::new(config);
    let cms = res(&s, "", "configmaps");
    for i in 0..5 {
        create_cm(&s, &format!("c{i}"));
    }
    let mut watch = s
        .watch(
            &cms,
            None,
            &WatchOptions {
                resource_version: Some("2".into()),
                ..Default::default()
            },
        )
        .unwrap();
    match next(&mut watch).await {
        WatchEvent::Error(status) => {
            assert_eq!(status["code"], 410);
            assert_eq!(status["reason"], "Expired");
            assert_eq!(status["message"], "too old resource version: 2 (10)");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    assert!(ended(&mut watch).await);
    // Within the window it resumes.
    let mut ok = s
        .watch(
            &cms,
            None,
            &WatchOptions {
                resource_version: Some("11".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(name_of(&next(&mut ok).await), ev("ADDED", "c3"));
}

#[tokio::test(start_paused = true)]
async fn compaction_forces_410_on_resume() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let a = create_cm(&s, "a");
    create_cm(&s, "b");
    s.compact();
    let opts = WatchOptions {
        resource_version: a["metadata"]["resourceVersion"].as_str().map(String::from),
        ..Default::default()
    };
    let mut watch = s.watch(&cms, None, &opts).unwrap();
    assert!(matches!(next(&mut watch).await, WatchEvent::Error(st) if st["code"] == 410));
    // From the current version it still works.
    let now = WatchOptions {
        resource_version: Some(s.resource_version().to_string()),
        ..Default::default()
    };
    let mut live = s.watch(&cms, None, &now).unwrap();
    create_cm(&s, "c");
    assert_eq!(name_of(&next(&mut live).await), ev("ADDED", "c"));
}

#[tokio::test(start_paused = true)]
async fn bookmarks_are_periodic() {
    let config = StorageConfig {
        bookmark_interval: Duration::from_secs(10),
        ..Default::default()
    };
    let s = Storage::new(config);
    let cms = res(&s, "", "configmaps");
    let opts = WatchOptions {
        resource_version: Some(s.resource_version().to_string()),
        allow_bookmarks: true,
        ..Default::default()
    };
    let mut watch = s.watch(&cms, None, &opts).unwrap();
    // A write to another resource moves the bookmark's resourceVersion too.
    s.create(
        &res(&s, "", "secrets"),
        Some("default"),
        json!({"metadata": {"name": "s"}}),
        &w(),
    )
    .unwrap();
    tokio::time::advance(Duration::from_secs(11)).await;
    match next(&mut watch).await {
        WatchEvent::Bookmark(b) => {
            assert_eq!(b["kind"], "ConfigMap");
            assert_eq!(b["apiVersion"], "v1");
            assert_eq!(
                b["metadata"]["resourceVersion"],
                s.resource_version().to_string()
            );
        }
        other => panic!("expected a bookmark, got {other:?}"),
    }
    create_cm(&s, "x");
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "x"));
    tokio::time::advance(Duration::from_secs(10)).await;
    assert!(matches!(next(&mut watch).await, WatchEvent::Bookmark(_)));
    // Without allowBookmarks, none.
    let mut plain = s
        .watch(
            &cms,
            None,
            &WatchOptions {
                resource_version: Some(s.resource_version().to_string()),
                ..Default::default()
            },
        )
        .unwrap();
    tokio::time::advance(Duration::from_secs(30)).await;
    assert!(quiet(&mut plain).await);
}

#[tokio::test(start_paused = true)]
async fn send_initial_events_ends_with_a_bookmark() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    create_cm(&s, "a");
    create_cm(&s, "b");
    let rv = s.resource_version();
    let opts = WatchOptions {
        send_initial_events: true,
        allow_bookmarks: true,
        resource_version: Some("".into()),
        ..Default::default()
    };
    let mut watch = s.watch(&cms, None, &opts).unwrap();
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "a"));
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "b"));
    match next(&mut watch).await {
        WatchEvent::Bookmark(b) => {
            assert_eq!(
                b["metadata"]["annotations"]["k8s.io/initial-events-end"],
                "true"
            );
            assert_eq!(b["metadata"]["resourceVersion"], rv.to_string());
        }
        other => panic!("expected the initial-events-end bookmark, got {other:?}"),
    }
    create_cm(&s, "c");
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "c"));
}

fn initial_events_end_at(ev: WatchEvent) -> String {
    match ev {
        WatchEvent::Bookmark(b) => {
            assert_eq!(
                b["metadata"]["annotations"]["k8s.io/initial-events-end"],
                "true"
            );
            b["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_string()
        }
        other => panic!("expected the initial-events-end bookmark, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_withheld_initial_events_end_comes_after_a_write_or_when_cleared() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    create_cm(&s, "a");
    s.withhold_initial_events_end(true);
    let opts = WatchOptions {
        send_initial_events: true,
        resource_version: Some("".into()),
        ..Default::default()
    };
    let mut watch = s.watch(&cms, None, &opts).unwrap();
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "a"));
    assert!(quiet(&mut watch).await);
    // A write to the resource moves the "watch cache": its event, then the bookmark.
    create_cm(&s, "b");
    let rv = s.resource_version();
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "b"));
    assert_eq!(
        initial_events_end_at(next(&mut watch).await),
        rv.to_string()
    );
    create_cm(&s, "c");
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "c"));
    assert!(quiet(&mut watch).await, "the bookmark comes once");

    // Withheld again, then cleared: the bookmark comes at the current version.
    let mut watch = s.watch(&cms, None, &opts).unwrap();
    for _ in 0..3 {
        assert_eq!(name_of(&next(&mut watch).await).0, "ADDED");
    }
    assert!(quiet(&mut watch).await);
    s.withhold_initial_events_end(false);
    let rv = s.resource_version();
    assert_eq!(
        initial_events_end_at(next(&mut watch).await),
        rv.to_string()
    );
    // Off: a new streaming list ends at once.
    let mut watch = s.watch(&cms, None, &opts).unwrap();
    for _ in 0..3 {
        assert_eq!(name_of(&next(&mut watch).await).0, "ADDED");
    }
    assert_eq!(
        initial_events_end_at(next(&mut watch).await),
        rv.to_string()
    );
}

#[tokio::test(start_paused = true)]
async fn selection_transitions() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let opts = WatchOptions {
        label_selector: Some("app=web".into()),
        resource_version: Some(s.resource_version().to_string()),
        ..Default::default()
    };
    let mut watch = s.watch(&cms, None, &opts).unwrap();
    create_cm(&s, "a");
    let label = |v: &str| format!(r#"{{"metadata":{{"labels":{{"app":"{v}"}}}}}}"#);
    s.patch(
        &cms,
        Some("default"),
        "a",
        None,
        PatchType::Merge,
        label("web").as_bytes(),
        &w(),
    )
    .unwrap();
    s.patch(
        &cms,
        Some("default"),
        "a",
        None,
        PatchType::Merge,
        br#"{"data":{"z":"1"}}"#,
        &w(),
    )
    .unwrap();
    let leave = s
        .patch(
            &cms,
            Some("default"),
            "a",
            None,
            PatchType::Merge,
            label("db").as_bytes(),
            &w(),
        )
        .unwrap();
    s.patch(
        &cms,
        Some("default"),
        "a",
        None,
        PatchType::Merge,
        br#"{"data":{"z":"2"}}"#,
        &w(),
    )
    .unwrap();
    assert_eq!(name_of(&next(&mut watch).await), ev("ADDED", "a"));
    assert_eq!(name_of(&next(&mut watch).await), ev("MODIFIED", "a"));
    match next(&mut watch).await {
        WatchEvent::Deleted(o) => {
            assert_eq!(
                o["metadata"]["labels"]["app"], "web",
                "the last selected state"
            );
            assert_eq!(
                o["metadata"]["resourceVersion"],
                leave["metadata"]["resourceVersion"]
            );
        }
        other => panic!("expected DELETED, got {other:?}"),
    }
    assert!(quiet(&mut watch).await);
    let field = WatchOptions {
        field_selector: Some("metadata.name=zz".into()),
        ..Default::default()
    };
    create_cm(&s, "zz");
    let mut by_field = s.watch(&cms, None, &field).unwrap();
    assert_eq!(name_of(&next(&mut by_field).await), ev("ADDED", "zz"));
    let bad = WatchOptions {
        field_selector: Some("spec.x=1".into()),
        ..Default::default()
    };
    assert_eq!(s.watch(&cms, None, &bad).unwrap_err().code, 400);
}

#[tokio::test(start_paused = true)]
async fn slow_watchers_are_closed_without_blocking_writers() {
    let config = StorageConfig {
        watcher_buffer: 4,
        ..Default::default()
    };
    let s = Storage::new(config);
    let cms = res(&s, "", "configmaps");
    let now = WatchOptions {
        resource_version: Some(s.resource_version().to_string()),
        ..Default::default()
    };
    let mut slow = s.watch(&cms, None, &now).unwrap();
    // Two watchers that keep up, one of each channel kind (the HTTP layer uses the shared
    // one): they read what is queued after every write, as a client reading its stream does.
    let mut fast = s.watch(&cms, None, &now).unwrap();
    let mut fast_shared = s.watch_shared(&cms, None, &now).unwrap();
    let (mut got, mut got_shared) = (Vec::new(), Vec::new());
    // Writes with nobody reading the slow watcher: its channel fills up.
    for i in 0..200 {
        create_cm(&s, &format!("c{i}"));
        while let Ok(ev) = fast.events.try_recv() {
            got.push(name_of(&ev));
        }
        while let Ok(ev) = fast_shared.events.try_recv() {
            got_shared.push(name_of(&ev.to_watch_event()));
        }
    }
    assert_eq!(
        s.watch_count(),
        2,
        "the slow watcher was dropped, the readers were not"
    );
    let mut seen = 0;
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_secs(1), slow.events.recv()).await {
        seen += 1;
    }
    assert!(seen < 200, "the stream ended early ({seen} events)");
    // The readers got every event, in order, though the slow one was closed meanwhile.
    let all: Vec<_> = (0..200).map(|i| ev("ADDED", &format!("c{i}"))).collect();
    assert_eq!(got, all);
    assert_eq!(got_shared, all);
    // And they stay open: the next write reaches them too.
    create_cm(&s, "after");
    assert_eq!(name_of(&next(&mut fast).await), ev("ADDED", "after"));
    let shared_next = tokio::time::timeout(Duration::from_secs(5), fast_shared.events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(name_of(&shared_next.to_watch_event()), ev("ADDED", "after"));
    assert_eq!(
        names(&s.list(&cms, None, &ListOptions::default()).unwrap()).len(),
        201
    );
}

#[tokio::test(start_paused = true)]
async fn close_watches_ends_every_watch() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let now = WatchOptions {
        resource_version: Some(s.resource_version().to_string()),
        ..Default::default()
    };
    let mut a = s.watch(&cms, None, &now).unwrap();
    let mut b = s.watch(&res(&s, "", "namespaces"), None, &now).unwrap();
    assert_eq!(s.watch_count(), 2);
    s.close_watches();
    assert!(ended(&mut a).await);
    assert!(ended(&mut b).await);
    assert_eq!(s.watch_count(), 0);
    // A dropped watch is forgotten at the next write.
    let c = s.watch(&cms, None, &now).unwrap();
    drop(c);
    tokio::time::sleep(Duration::from_millis(10)).await;
    create_cm(&s, "x");
    assert_eq!(s.watch_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn gc_and_namespace_deletion_are_seen_by_watchers() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let ns = res(&s, "", "namespaces");
    s.create(&ns, None, json!({"metadata": {"name": "team"}}), &w())
        .unwrap();
    s.create(&cms, Some("team"), cm("a", json!({})), &w())
        .unwrap();
    let now = WatchOptions {
        resource_version: Some(s.resource_version().to_string()),
        ..Default::default()
    };
    let mut cm_watch = s.watch(&cms, None, &now).unwrap();
    let mut ns_watch = s.watch(&ns, None, &now).unwrap();
    s.delete(&ns, None, "team", &DeleteOptions::default())
        .unwrap();
    assert_eq!(name_of(&next(&mut cm_watch).await), ev("DELETED", "a"));
    assert_eq!(name_of(&next(&mut ns_watch).await), ev("MODIFIED", "team"));
    let mut rest = vec![];
    while let Ok(Some(e)) =
        tokio::time::timeout(Duration::from_secs(1), ns_watch.events.recv()).await
    {
        rest.push(name_of(&e).0);
    }
    assert_eq!(rest.last(), Some(&"DELETED"));
}

#[tokio::test(start_paused = true)]
async fn shared_watches_share_one_event_per_change() {
    let config = StorageConfig {
        bookmark_interval: Duration::from_secs(10),
        ..Default::default()
    };
    let s = Storage::new(config);
    let cms = res(&s, "", "configmaps");
    create_cm(&s, "before");
    let now = WatchOptions {
        resource_version: Some(s.resource_version().to_string()),
        ..Default::default()
    };
    let mut a = s.watch_shared(&cms, None, &now).unwrap();
    let mut b = s.watch_shared(&cms, None, &now).unwrap();
    let mut owned = s.watch(&cms, None, &now).unwrap();
    let selected = WatchOptions {
        label_selector: Some("app=web".into()),
        ..now.clone()
    };
    let mut sel = s.watch_shared(&cms, None, &selected).unwrap();
    create_cm(&s, "x");
    s.patch(
        &cms,
        Some("default"),
        "x",
        None,
        PatchType::Merge,
        br#"{"metadata":{"labels":{"app":"web"}}}"#,
        &w(),
    )
    .unwrap();
    let (ea, eb) = (
        a.events.recv().await.unwrap(),
        b.events.recv().await.unwrap(),
    );
    assert_eq!(ea.event_type(), "ADDED");
    let (la, lb) = (ea.to_json_line(), eb.to_json_line());
    assert_eq!(la.as_ptr(), lb.as_ptr(), "encoded once for both watchers");
    // A built-in kind's object is written as kube-apiserver encodes its Go struct.
    let text = std::str::from_utf8(&la).unwrap();
    assert!(
        text.starts_with(
            r#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"default","uid":"#
        ),
        "{text}"
    );
    let parsed: Value = serde_json::from_slice(&la).unwrap();
    assert_eq!(parsed["type"], "ADDED");
    assert_eq!(parsed["object"]["metadata"]["name"], "x");
    assert_eq!(name_of(&next(&mut owned).await), ev("ADDED", "x"));
    assert_eq!(a.events.recv().await.unwrap().event_type(), "MODIFIED");
    // The selected watcher sees the object enter its selection.
    let entered = sel.events.recv().await.unwrap();
    assert_eq!(entered.event_type(), "ADDED");
    assert_eq!(name_of(&entered.to_watch_event()), ev("ADDED", "x"));
    // From 0: the current state first; bookmarks; errors.
    let mut from_zero = s
        .watch_shared(
            &cms,
            None,
            &WatchOptions {
                allow_bookmarks: true,
                ..Default::default()
            },
        )
        .unwrap();
    let mut initial = vec![
        from_zero.events.recv().await.unwrap().object()["metadata"]["name"].clone(),
        from_zero.events.recv().await.unwrap().object()["metadata"]["name"].clone(),
    ];
    initial.sort_by_key(|v| v.to_string());
    assert_eq!(initial, vec![json!("before"), json!("x")]);
    tokio::time::advance(Duration::from_secs(11)).await;
    assert_eq!(
        from_zero.events.recv().await.unwrap().event_type(),
        "BOOKMARK"
    );
    s.compact();
    let mut old = s
        .watch_shared(
            &cms,
            None,
            &WatchOptions {
                resource_version: Some("1".into()),
                ..Default::default()
            },
        )
        .unwrap();
    let err = old.events.recv().await.unwrap();
    assert_eq!(
        (err.event_type(), err.object()["code"].clone()),
        ("ERROR", json!(410))
    );
    assert!(old.events.recv().await.is_none());
    s.close_watches();
    assert!(a.events.recv().await.is_none());
}

/// A custom object is an unstructured map upstream: its watch events keep sorted keys, where a
/// built-in kind's are written in its Go struct's order.
#[tokio::test]
async fn custom_objects_are_watched_with_sorted_keys() {
    let s = store();
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": true}}}]},
    });
    s.create(&crds, None, crd, &w()).unwrap();
    let widgets = s.resolve("example.com", "v1", "widgets").unwrap();
    let mut watch = s
        .watch_shared(&widgets, Some("default"), &WatchOptions::default())
        .unwrap();
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "w", "namespace": "default"}, "spec": {"a": 1}});
    s.create(&widgets, Some("default"), widget, &w()).unwrap();
    let line = watch.events.recv().await.unwrap().to_json_line();
    let text = std::str::from_utf8(&line).unwrap();
    assert!(
        text.starts_with(r#"{"type":"ADDED","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"creationTimestamp":"#),
        "{text}"
    );
}
