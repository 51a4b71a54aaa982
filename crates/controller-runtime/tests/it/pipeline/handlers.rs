//! Table tests of every handler, with the priorities they use.

use super::support::*;

#[test]
fn enqueue_request_for_object() {
    let q = RecordingQueue::default();
    let h = EnqueueRequestForObject;

    h.handle(&Event::Create(create(cm("ns", "a"), false)), &q);
    assert_eq!(q.take(), vec![plain("ns", "a")]);
    // Initial list: low priority.
    h.handle(&Event::Create(create(cm("ns", "a"), true)), &q);
    assert_eq!(q.take(), vec![low("ns", "a")]);
    // A real update: the new object's key, default priority.
    h.handle(
        &Event::Update(update(
            with_rv(cm("ns", "a"), "1"),
            with_rv(cm("ns", "a"), "2"),
        )),
        &q,
    );
    assert_eq!(q.take(), vec![plain("ns", "a")]);
    // A resync (same resourceVersion): low priority.
    h.handle(
        &Event::Update(update(
            with_rv(cm("ns", "a"), "2"),
            with_rv(cm("ns", "a"), "2"),
        )),
        &q,
    );
    assert_eq!(q.take(), vec![low("ns", "a")]);
    h.handle(&Event::Delete(delete(cm("ns", "a"))), &q);
    assert_eq!(q.take(), vec![plain("ns", "a")]);
    h.handle(&Event::Generic(generic(cm("ns", "a"))), &q);
    assert_eq!(q.take(), vec![plain("ns", "a")]);

    // Cluster-scoped objects have no namespace in the request.
    let mut nsobj = Namespace::default();
    nsobj.metadata.name = Some("team-a".into());
    h.handle(&Event::Generic(generic(nsobj)), &q);
    assert_eq!(
        q.take(),
        vec![Added {
            item: Request::cluster_scoped("team-a"),
            priority: None
        }]
    );

    // An object without a name is skipped, not enqueued as "".
    h.handle(&Event::Generic(generic(ConfigMap::default())), &q);
    assert_eq!(q.take(), vec![]);
}

#[test]
fn enqueue_request_for_owner_table() {
    let rs =
        |name: &str, controller: Option<bool>| owner_ref("apps/v1", "ReplicaSet", name, controller);
    // (name, handler, owner refs, expected requests)
    let controller_only = EnqueueRequestForOwner::of::<ReplicaSet>();
    let every = EnqueueRequestForOwner::of::<ReplicaSet>().every_owner();
    let cases: Vec<(
        &str,
        &EnqueueRequestForOwner,
        Vec<OwnerReference>,
        Vec<Added>,
    )> = vec![
        (
            "controller ref",
            &controller_only,
            vec![rs("r1", Some(true))],
            vec![plain("ns", "r1")],
        ),
        (
            "non-controller ref ignored",
            &controller_only,
            vec![rs("r1", None)],
            vec![],
        ),
        (
            "controller=false ignored",
            &controller_only,
            vec![rs("r1", Some(false))],
            vec![],
        ),
        (
            "only the controller among several",
            &controller_only,
            vec![rs("r1", None), rs("r2", Some(true)), rs("r3", Some(false))],
            vec![plain("ns", "r2")],
        ),
        (
            "every owner: all matching refs",
            &every,
            vec![rs("r1", None), rs("r2", Some(true)), rs("r3", Some(false))],
            vec![plain("ns", "r1"), plain("ns", "r2"), plain("ns", "r3")],
        ),
        (
            "wrong kind",
            &every,
            vec![owner_ref("apps/v1", "Deployment", "d", Some(true))],
            vec![],
        ),
        (
            "wrong group, same kind",
            &every,
            vec![owner_ref("example.com/v1", "ReplicaSet", "x", Some(true))],
            vec![],
        ),
        (
            "core group is not apps",
            &every,
            vec![owner_ref("v1", "ReplicaSet", "x", Some(true))],
            vec![],
        ),
        (
            "any version of the group matches",
            &controller_only,
            vec![owner_ref("apps/v1beta2", "ReplicaSet", "old", Some(true))],
            vec![plain("ns", "old")],
        ),
        (
            "controller ref of another kind: nothing (not the next ref)",
            &controller_only,
            vec![
                owner_ref("apps/v1", "Deployment", "d", Some(true)),
                rs("r1", None),
            ],
            vec![],
        ),
        (
            "malformed apiVersion ignored",
            &every,
            vec![
                owner_ref("apps/v1/extra", "ReplicaSet", "bad", None),
                rs("r1", None),
            ],
            vec![plain("ns", "r1")],
        ),
        ("no refs", &every, vec![], vec![]),
    ];
    for (name, handler, refs, want) in cases {
        let q = RecordingQueue::default();
        handler.handle(&Event::Generic(generic(pod_owned_by(refs.clone()))), &q);
        assert_eq!(q.take(), want, "{name}: generic");
        handler.handle(&Event::Delete(delete(pod_owned_by(refs.clone()))), &q);
        assert_eq!(q.take(), want, "{name}: delete");
        handler.handle(
            &Event::Create(create(pod_owned_by(refs.clone()), false)),
            &q,
        );
        assert_eq!(q.take(), want, "{name}: create");
    }

    // Core-group owners, given by group and kind.
    let q = RecordingQueue::default();
    let by_cm = EnqueueRequestForOwner::new("", "ConfigMap", OwnerScope::Namespaced);
    by_cm.handle(
        &Event::Generic(generic(pod_owned_by(vec![owner_ref(
            "v1",
            "ConfigMap",
            "c",
            Some(true),
        )]))),
        &q,
    );
    assert_eq!(q.take(), vec![plain("ns", "c")]);

    // Cluster-scoped owner type: no namespace in the request.
    let by_role = EnqueueRequestForOwner::of::<ClusterRole>().every_owner();
    let owned = pod_owned_by(vec![owner_ref(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "admin",
        None,
    )]);
    by_role.handle(&Event::Generic(generic(owned)), &q);
    assert_eq!(
        q.take(),
        vec![Added {
            item: Request::cluster_scoped("admin"),
            priority: None
        }]
    );
}

#[test]
fn enqueue_request_for_owner_priorities_and_updates() {
    let q = RecordingQueue::default();
    let h = EnqueueRequestForOwner::of::<ReplicaSet>();
    let rs = |name: &str| owner_ref("apps/v1", "ReplicaSet", name, Some(true));
    let pod = |owner: &str, rv: &str| {
        let mut p = pod_owned_by(vec![rs(owner)]);
        p.metadata.resource_version = Some(rv.into());
        p
    };

    h.handle(&Event::Create(create(pod("r1", "1"), true)), &q);
    assert_eq!(
        q.take(),
        vec![low("ns", "r1")],
        "initial-list create is low priority"
    );

    // The owner changed: both the old and the new owner are reconciled.
    h.handle(&Event::Update(update(pod("r1", "1"), pod("r2", "2"))), &q);
    assert_eq!(q.take(), vec![plain("ns", "r1"), plain("ns", "r2")]);
    // Same owner on both sides: enqueued once.
    h.handle(&Event::Update(update(pod("r1", "1"), pod("r1", "2"))), &q);
    assert_eq!(q.take(), vec![plain("ns", "r1")]);
    // Resync: once, low priority.
    h.handle(&Event::Update(update(pod("r1", "2"), pod("r1", "2"))), &q);
    assert_eq!(q.take(), vec![low("ns", "r1")]);
}

#[test]
fn enqueue_requests_from_map_func() {
    let q = RecordingQueue::default();
    // Each ConfigMap maps to the apps named in its "apps" label, comma-separated.
    let h = EnqueueRequestsFromMapFunc::new(|c: &ConfigMap| {
        let ns = c.metadata.namespace.clone().unwrap_or_default();
        let apps = c
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("apps").cloned())
            .unwrap_or_default();
        apps.split('+')
            .filter(|s| !s.is_empty())
            .map(|a| Request::new(&ns, a))
            .collect::<Vec<_>>()
    });
    let cm_for = |apps: &str, rv: &str| {
        let mut c = with_rv(cm("ns", "cfg"), rv);
        c.metadata.labels = labels(&[("apps", apps)]);
        c
    };

    h.handle(&Event::Create(create(cm_for("a+b+a", "1"), false)), &q);
    assert_eq!(
        q.take(),
        vec![plain("ns", "a"), plain("ns", "b")],
        "deduplicated, in order"
    );
    h.handle(&Event::Create(create(cm_for("a", "1"), true)), &q);
    assert_eq!(q.take(), vec![low("ns", "a")]);
    // Update maps old and new, each item once.
    h.handle(
        &Event::Update(update(cm_for("a+b", "1"), cm_for("b+c", "2"))),
        &q,
    );
    assert_eq!(
        q.take(),
        vec![plain("ns", "a"), plain("ns", "b"), plain("ns", "c")]
    );
    h.handle(
        &Event::Update(update(cm_for("a", "2"), cm_for("a", "2"))),
        &q,
    );
    assert_eq!(q.take(), vec![low("ns", "a")]);
    h.handle(&Event::Delete(delete(cm_for("x", "3"))), &q);
    assert_eq!(q.take(), vec![plain("ns", "x")]);
    h.handle(&Event::Generic(generic(cm_for("", "3"))), &q);
    assert_eq!(q.take(), vec![]);

    // An Option works as the map's result too.
    let opt = EnqueueRequestsFromMapFunc::new(|c: &ConfigMap| {
        c.metadata.name.clone().map(|n| Request::new("other", n))
    });
    opt.handle(&Event::Generic(generic(cm("ns", "z"))), &q);
    assert_eq!(q.take(), vec![plain("other", "z")]);
}

#[test]
fn funcs_handler_and_low_priority_wrapper() {
    let q = RecordingQueue::default();
    let h = Funcs::<ConfigMap>::new()
        .on_create(|e, q| q.add(Request::new("c", e.object.metadata.name.clone().unwrap())))
        .on_update(|e, q| q.add(Request::new("u", e.new.metadata.name.clone().unwrap())))
        .on_delete(|e, q| q.add(Request::new("d", e.object.metadata.name.clone().unwrap())));

    h.handle(&Event::Create(create(cm("ns", "a"), false)), &q);
    h.handle(&Event::Create(create(cm("ns", "b"), true)), &q);
    h.handle(
        &Event::Update(update(
            with_rv(cm("ns", "c"), "1"),
            with_rv(cm("ns", "c"), "2"),
        )),
        &q,
    );
    h.handle(
        &Event::Update(update(
            with_rv(cm("ns", "d"), "2"),
            with_rv(cm("ns", "d"), "2"),
        )),
        &q,
    );
    h.handle(&Event::Delete(delete(cm("ns", "e"))), &q);
    h.handle(&Event::Generic(generic(cm("ns", "f"))), &q); // no closure: nothing
    assert_eq!(
        q.take(),
        vec![
            plain("c", "a"),
            low("c", "b"),
            plain("u", "c"),
            low("u", "d"),
            plain("d", "e")
        ]
    );

    // A hand-written handler that only knows `add` gets the same rule through the wrapper.
    struct Naive;
    impl EventHandler<ConfigMap> for Naive {
        fn handle(&self, event: &Event<ConfigMap>, q: &dyn Enqueue<Request>) {
            if let Event::Create(_) | Event::Update(_) = event {
                q.add(Request::new(
                    "n",
                    event.object().metadata.name.clone().unwrap(),
                ));
            }
        }
    }
    let wrapped = LowPriorityWhenUnchanged(Naive);
    wrapped.handle(&Event::Create(create(cm("ns", "a"), true)), &q);
    wrapped.handle(&Event::Create(create(cm("ns", "b"), false)), &q);
    wrapped.handle(
        &Event::Update(update(
            with_rv(cm("ns", "c"), "5"),
            with_rv(cm("ns", "c"), "5"),
        )),
        &q,
    );
    assert_eq!(
        q.take(),
        vec![low("n", "a"), plain("n", "b"), low("n", "c")]
    );
}

#[test]
fn owner_of_typed_kinds_reads_group_and_scope() {
    // Deployments are namespaced in group apps; ClusterRoles are cluster-scoped.
    let q = RecordingQueue::default();
    let pod = pod_owned_by(vec![owner_ref("apps/v1", "Deployment", "web", Some(true))]);
    EnqueueRequestForOwner::of::<Deployment>().handle(&Event::Generic(generic(pod)), &q);
    assert_eq!(q.take(), vec![plain("ns", "web")]);
    let _: Channel<Pod> = Channel::new(tokio::sync::mpsc::channel(1).1);
}
