//! Table tests of predicates and handlers, and the sources' delivery through the dispatcher.
//!
//! A recording queue stands in for the workqueue, so each test sees exactly which items a
//! handler added and at which priority.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use controller_runtime::Request;
use controller_runtime::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use controller_runtime::handler::{
    EnqueueRequestForObject, EnqueueRequestForOwner, EnqueueRequestsFromMapFunc, EventHandler,
    Funcs, OwnerScope, with_low_priority_when_unchanged,
};
use controller_runtime::predicate::{self, Predicate};
use controller_runtime::source::{self, Channel, EventDispatcher, Func, Source, Watch};
use controller_runtime::workqueue::{AddOpts, LOW_PRIORITY, Queue};
use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use metav1::OwnerReference;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------------------------------------
// A queue that records what handlers do.

/// One recorded call: the item and the priority it was added at (`None`: a plain add).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Added {
    item: Request,
    priority: Option<i32>,
}

#[derive(Default)]
struct RecordingQueue {
    added: Mutex<Vec<Added>>,
}

impl RecordingQueue {
    fn take(&self) -> Vec<Added> {
        std::mem::take(&mut *self.added.lock())
    }
}

impl Queue<Request> for RecordingQueue {
    fn add(&self, item: Request) {
        self.added.lock().push(Added {
            item,
            priority: None,
        });
    }
    fn add_after(&self, _item: Request, _delay: Duration) {
        panic!("handlers never add_after");
    }
    fn add_rate_limited(&self, _item: Request) {
        panic!("handlers never add_rate_limited");
    }
    fn add_with_opts(&self, opts: AddOpts, item: Request) {
        assert_eq!(opts.after, None);
        assert!(!opts.rate_limited);
        self.added.lock().push(Added {
            item,
            priority: opts.priority,
        });
    }
    fn forget(&self, _item: &Request) {}
    fn num_requeues(&self, _item: &Request) -> u32 {
        0
    }
    fn get(&self) -> BoxFuture<'_, Option<Request>> {
        Box::pin(async { None })
    }
    fn done(&self, _item: &Request) {}
    fn len(&self) -> usize {
        self.added.lock().len()
    }
    fn shut_down(&self) {}
    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn is_shutting_down(&self) -> bool {
        false
    }
}

fn plain(ns: &str, name: &str) -> Added {
    Added {
        item: Request::new(ns, name),
        priority: None,
    }
}
fn low(ns: &str, name: &str) -> Added {
    Added {
        item: Request::new(ns, name),
        priority: Some(LOW_PRIORITY),
    }
}

// ---------------------------------------------------------------------------------------------
// Objects.

fn cm(ns: &str, name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some(ns.into());
    cm.metadata.name = Some(name.into());
    cm
}

fn with_rv(mut cm: ConfigMap, rv: &str) -> ConfigMap {
    cm.metadata.resource_version = Some(rv.into());
    cm
}

fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn update<K>(old: K, new: K) -> UpdateEvent<K> {
    UpdateEvent {
        old: Arc::new(old),
        new: Arc::new(new),
    }
}
fn create<K>(obj: K, initial: bool) -> CreateEvent<K> {
    CreateEvent {
        object: Arc::new(obj),
        is_in_initial_list: initial,
    }
}
fn delete<K>(obj: K) -> DeleteEvent<K> {
    DeleteEvent {
        object: Arc::new(obj),
        delete_state_unknown: false,
    }
}
fn generic<K>(obj: K) -> GenericEvent<K> {
    GenericEvent {
        object: Arc::new(obj),
    }
}

fn owner_ref(
    api_version: &str,
    kind: &str,
    name: &str,
    controller: Option<bool>,
) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        controller,
        block_owner_deletion: None,
    }
}

fn pod_owned_by(refs: Vec<OwnerReference>) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.namespace = Some("ns".into());
    pod.metadata.name = Some("pod".into());
    pod.metadata.owner_references = Some(refs);
    pod
}

// ---------------------------------------------------------------------------------------------
// Predicates.

#[test]
fn change_predicates_filter_updates_only() {
    let gen_of = |g: Option<i64>| {
        let mut d = Deployment::default();
        d.metadata.generation = g;
        d
    };
    // (name, old, new, generation_changed)
    let generation_cases = [
        ("same generation", gen_of(Some(1)), gen_of(Some(1)), false),
        ("bumped generation", gen_of(Some(1)), gen_of(Some(2)), true),
        ("no generation on either", gen_of(None), gen_of(None), false),
        ("generation appears", gen_of(None), gen_of(Some(1)), true),
    ];
    for (name, old, new, want) in generation_cases {
        let got = predicate::GenerationChanged.update(&update(old, new));
        assert_eq!(got, want, "generation_changed: {name}");
    }

    let rv_cases = [
        (
            "resync: same rv",
            with_rv(cm("a", "b"), "7"),
            with_rv(cm("a", "b"), "7"),
            false,
        ),
        (
            "real change",
            with_rv(cm("a", "b"), "7"),
            with_rv(cm("a", "b"), "8"),
            true,
        ),
        ("no rv on either", cm("a", "b"), cm("a", "b"), false),
    ];
    for (name, old, new, want) in rv_cases {
        let got = predicate::ResourceVersionChanged.update(&update(old, new));
        assert_eq!(got, want, "resource_version_changed: {name}");
    }

    let labelled = |l: Option<BTreeMap<String, String>>| {
        let mut c = cm("a", "b");
        c.metadata.labels = l.clone();
        c.metadata.annotations = l;
        c
    };
    // (name, old labels, new labels, changed)
    let map_cases = [
        ("none -> none", None, None, false),
        ("none -> empty", None, labels(&[]), false),
        ("same", labels(&[("a", "1")]), labels(&[("a", "1")]), false),
        (
            "value changed",
            labels(&[("a", "1")]),
            labels(&[("a", "2")]),
            true,
        ),
        (
            "key added",
            labels(&[("a", "1")]),
            labels(&[("a", "1"), ("b", "1")]),
            true,
        ),
        ("all removed", labels(&[("a", "1")]), None, true),
    ];
    for (name, old, new, want) in map_cases {
        let ev = update(labelled(old), labelled(new));
        assert_eq!(
            predicate::LabelChanged.update(&ev),
            want,
            "label_changed: {name}"
        );
        assert_eq!(
            predicate::AnnotationChanged.update(&ev),
            want,
            "annotation_changed: {name}"
        );
    }

    // Creates, deletes and generic events always pass the change predicates.
    let preds: Vec<predicate::BoxPredicate<ConfigMap>> = vec![
        predicate::generation_changed(),
        predicate::resource_version_changed(),
        predicate::label_changed(),
        predicate::annotation_changed(),
    ];
    for p in &preds {
        assert!(p.create(&create(cm("a", "b"), false)));
        assert!(p.delete(&delete(cm("a", "b"))));
        assert!(p.generic(&generic(cm("a", "b"))));
    }
}

#[test]
fn label_selector_predicate() {
    let with_labels = |pairs: &[(&str, &str)]| {
        let mut c = cm("a", "b");
        c.metadata.labels = labels(pairs);
        c
    };
    // (selector, labels, matches)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);
    let cases: &[Case] = &[
        ("app=web", &[("app", "web")], true),
        ("app=web", &[("app", "db")], false),
        ("app=web", &[], false),
        ("app!=web", &[], true),
        ("app in (web, api)", &[("app", "api")], true),
        ("app notin (web)", &[("app", "api")], true),
        ("app", &[("app", "")], true),
        ("!app", &[("app", "x")], false),
        ("app=web,tier=front", &[("app", "web")], false),
        ("", &[("anything", "x")], true),
    ];
    for (sel, pairs, want) in cases {
        let p = predicate::label_selector::<ConfigMap>(sel).unwrap();
        let obj = with_labels(pairs);
        assert_eq!(
            p.create(&create(obj.clone(), false)),
            *want,
            "{sel:?} create on {pairs:?}"
        );
        assert_eq!(p.delete(&delete(obj.clone())), *want, "{sel:?} delete");
        assert_eq!(p.generic(&generic(obj.clone())), *want, "{sel:?} generic");
        // Updates look at the new object.
        assert_eq!(
            p.update(&update(cm("a", "b"), obj)),
            *want,
            "{sel:?} update"
        );
    }

    // A malformed selector is an error when the predicate is built.
    for bad in [
        "app in (web",
        "app in web",
        "=web",
        "app notin",
        "a b",
        "x,,y",
        "app=web)",
    ] {
        let err = predicate::label_selector::<ConfigMap>(bad);
        assert!(err.is_err(), "{bad:?} should not parse");
        let msg = err.err().unwrap().to_string();
        assert!(msg.contains(bad), "the error names the selector: {msg}");
    }

    // The structured form (a Deployment's spec.selector).
    let structured = metav1::LabelSelector {
        match_labels: labels(&[("app", "web")]),
        match_expressions: Some(vec![metav1::LabelSelectorRequirement {
            key: "tier".into(),
            operator: "NotIn".into(),
            values: Some(vec!["db".into()]),
        }]),
    };
    let p = predicate::LabelSelectorPredicate::from_label_selector(&structured).unwrap();
    assert!(p.generic(&generic(with_labels(&[("app", "web"), ("tier", "front")]))));
    assert!(!p.generic(&generic(with_labels(&[("app", "web"), ("tier", "db")]))));
    let bad_op = metav1::LabelSelector {
        match_labels: None,
        match_expressions: Some(vec![metav1::LabelSelectorRequirement {
            key: "tier".into(),
            operator: "Near".into(),
            values: None,
        }]),
    };
    assert!(predicate::LabelSelectorPredicate::from_label_selector(&bad_op).is_err());
}

#[test]
fn closure_predicates_and_combinators() {
    let yes = || predicate::Funcs::<ConfigMap>::new().boxed();
    let no = || {
        predicate::Funcs::<ConfigMap>::new()
            .on_create(|_| false)
            .on_update(|_| false)
            .on_delete(|_| false)
            .on_generic(|_| false)
            .boxed()
    };
    let ev = generic(cm("a", "b"));
    // (name, predicate, passes)
    let cases: Vec<(&str, predicate::BoxPredicate<ConfigMap>, bool)> = vec![
        ("funcs default", yes(), true),
        ("funcs all false", no(), false),
        ("and(yes, yes)", predicate::and([yes(), yes()]), true),
        ("and(yes, no)", predicate::and([yes(), no()]), false),
        ("and()", predicate::and([]), true),
        ("or(no, yes)", predicate::or([no(), yes()]), true),
        ("or(no, no)", predicate::or([no(), no()]), false),
        ("or()", predicate::or([]), false),
        ("not(yes)", predicate::not(yes()), false),
        ("not(no)", predicate::not(no()), true),
        (
            "not(and(yes, no))",
            predicate::not(predicate::and([yes(), no()])),
            true,
        ),
    ];
    for (name, p, want) in cases {
        assert_eq!(p.generic(&ev), want, "{name}: generic");
        assert_eq!(
            p.create(&create(cm("a", "b"), false)),
            want,
            "{name}: create"
        );
        assert_eq!(
            p.update(&update(cm("a", "b"), cm("a", "b"))),
            want,
            "{name}: update"
        );
        assert_eq!(p.delete(&delete(cm("a", "b"))), want, "{name}: delete");
    }

    // Funcs decides per kind.
    let only_creates = predicate::Funcs::<ConfigMap>::new()
        .on_update(|_| false)
        .on_delete(|e| e.delete_state_unknown)
        .on_generic(|_| false);
    assert!(only_creates.create(&create(cm("a", "b"), true)));
    assert!(!only_creates.update(&update(cm("a", "b"), cm("a", "b"))));
    assert!(!only_creates.delete(&delete(cm("a", "b"))));
    let unknown = DeleteEvent {
        object: Arc::new(cm("a", "b")),
        delete_state_unknown: true,
    };
    assert!(only_creates.delete(&unknown));

    // from_fn filters the object (the new one for updates).
    let named_x = predicate::from_fn(|c: &ConfigMap| c.metadata.name.as_deref() == Some("x"));
    assert!(named_x.create(&create(cm("a", "x"), false)));
    assert!(!named_x.create(&create(cm("a", "y"), false)));
    assert!(named_x.update(&update(cm("a", "y"), cm("a", "x"))));
    assert!(!named_x.update(&update(cm("a", "x"), cm("a", "y"))));
    assert!(named_x.delete(&delete(cm("a", "x"))));
    assert!(!named_x.generic(&generic(cm("a", "y"))));
}

// ---------------------------------------------------------------------------------------------
// Handlers.

#[test]
fn enqueue_request_for_object() {
    let q = RecordingQueue::default();
    let h = EnqueueRequestForObject;

    h.create(&create(cm("ns", "a"), false), &q);
    assert_eq!(q.take(), vec![plain("ns", "a")]);
    // Initial list: low priority.
    h.create(&create(cm("ns", "a"), true), &q);
    assert_eq!(q.take(), vec![low("ns", "a")]);
    // A real update: the new object's key, default priority.
    h.update(
        &update(with_rv(cm("ns", "a"), "1"), with_rv(cm("ns", "a"), "2")),
        &q,
    );
    assert_eq!(q.take(), vec![plain("ns", "a")]);
    // A resync (same resourceVersion): low priority.
    h.update(
        &update(with_rv(cm("ns", "a"), "2"), with_rv(cm("ns", "a"), "2")),
        &q,
    );
    assert_eq!(q.take(), vec![low("ns", "a")]);
    h.delete(&delete(cm("ns", "a")), &q);
    assert_eq!(q.take(), vec![plain("ns", "a")]);
    h.generic(&generic(cm("ns", "a")), &q);
    assert_eq!(q.take(), vec![plain("ns", "a")]);

    // Cluster-scoped objects have no namespace in the request.
    let mut nsobj = Namespace::default();
    nsobj.metadata.name = Some("team-a".into());
    h.generic(&generic(nsobj), &q);
    assert_eq!(
        q.take(),
        vec![Added {
            item: Request::cluster_scoped("team-a"),
            priority: None
        }]
    );

    // An object without a name is skipped, not enqueued as "".
    h.generic(&generic(ConfigMap::default()), &q);
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
        handler.generic(&generic(pod_owned_by(refs.clone())), &q);
        assert_eq!(q.take(), want, "{name}: generic");
        handler.delete(&delete(pod_owned_by(refs.clone())), &q);
        assert_eq!(q.take(), want, "{name}: delete");
        handler.create(&create(pod_owned_by(refs.clone()), false), &q);
        assert_eq!(q.take(), want, "{name}: create");
    }

    // Core-group owners, given by group and kind.
    let q = RecordingQueue::default();
    let by_cm = EnqueueRequestForOwner::new("", "ConfigMap", OwnerScope::Namespaced);
    by_cm.generic(
        &generic(pod_owned_by(vec![owner_ref(
            "v1",
            "ConfigMap",
            "c",
            Some(true),
        )])),
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
    by_role.generic(&generic(owned), &q);
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

    h.create(&create(pod("r1", "1"), true), &q);
    assert_eq!(
        q.take(),
        vec![low("ns", "r1")],
        "initial-list create is low priority"
    );

    // The owner changed: both the old and the new owner are reconciled.
    h.update(&update(pod("r1", "1"), pod("r2", "2")), &q);
    assert_eq!(q.take(), vec![plain("ns", "r1"), plain("ns", "r2")]);
    // Same owner on both sides: enqueued once.
    h.update(&update(pod("r1", "1"), pod("r1", "2")), &q);
    assert_eq!(q.take(), vec![plain("ns", "r1")]);
    // Resync: once, low priority.
    h.update(&update(pod("r1", "2"), pod("r1", "2")), &q);
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

    h.create(&create(cm_for("a+b+a", "1"), false), &q);
    assert_eq!(
        q.take(),
        vec![plain("ns", "a"), plain("ns", "b")],
        "deduplicated, in order"
    );
    h.create(&create(cm_for("a", "1"), true), &q);
    assert_eq!(q.take(), vec![low("ns", "a")]);
    // Update maps old and new, each item once.
    h.update(&update(cm_for("a+b", "1"), cm_for("b+c", "2")), &q);
    assert_eq!(
        q.take(),
        vec![plain("ns", "a"), plain("ns", "b"), plain("ns", "c")]
    );
    h.update(&update(cm_for("a", "2"), cm_for("a", "2")), &q);
    assert_eq!(q.take(), vec![low("ns", "a")]);
    h.delete(&delete(cm_for("x", "3")), &q);
    assert_eq!(q.take(), vec![plain("ns", "x")]);
    h.generic(&generic(cm_for("", "3")), &q);
    assert_eq!(q.take(), vec![]);

    // An Option works as the map's result too.
    let opt = EnqueueRequestsFromMapFunc::new(|c: &ConfigMap| {
        c.metadata.name.clone().map(|n| Request::new("other", n))
    });
    opt.generic(&generic(cm("ns", "z")), &q);
    assert_eq!(q.take(), vec![plain("other", "z")]);
}

#[test]
fn funcs_handler_and_low_priority_wrapper() {
    let q = RecordingQueue::default();
    let h = Funcs::<ConfigMap>::new()
        .on_create(|e, q| q.add(Request::new("c", e.object.metadata.name.clone().unwrap())))
        .on_update(|e, q| q.add(Request::new("u", e.new.metadata.name.clone().unwrap())))
        .on_delete(|e, q| q.add(Request::new("d", e.object.metadata.name.clone().unwrap())));

    h.create(&create(cm("ns", "a"), false), &q);
    h.create(&create(cm("ns", "b"), true), &q);
    h.update(
        &update(with_rv(cm("ns", "c"), "1"), with_rv(cm("ns", "c"), "2")),
        &q,
    );
    h.update(
        &update(with_rv(cm("ns", "d"), "2"), with_rv(cm("ns", "d"), "2")),
        &q,
    );
    h.delete(&delete(cm("ns", "e")), &q);
    h.generic(&generic(cm("ns", "f")), &q); // no closure: nothing
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
        fn create(&self, e: &CreateEvent<ConfigMap>, q: &dyn Queue<Request>) {
            q.add(Request::new("n", e.object.metadata.name.clone().unwrap()));
        }
        fn update(&self, e: &UpdateEvent<ConfigMap>, q: &dyn Queue<Request>) {
            q.add(Request::new("n", e.new.metadata.name.clone().unwrap()));
        }
        fn delete(&self, _: &DeleteEvent<ConfigMap>, _: &dyn Queue<Request>) {}
        fn generic(&self, _: &GenericEvent<ConfigMap>, _: &dyn Queue<Request>) {}
    }
    let wrapped = with_low_priority_when_unchanged(Naive);
    wrapped.create(&create(cm("ns", "a"), true), &q);
    wrapped.create(&create(cm("ns", "b"), false), &q);
    wrapped.update(
        &update(with_rv(cm("ns", "c"), "5"), with_rv(cm("ns", "c"), "5")),
        &q,
    );
    assert_eq!(
        q.take(),
        vec![low("n", "a"), plain("n", "b"), low("n", "c")]
    );
}

// ---------------------------------------------------------------------------------------------
// Dispatcher and sources.

#[test]
fn dispatcher_asks_every_predicate_before_the_handler() {
    let q = Arc::new(RecordingQueue::default());
    let d = EventDispatcher::new(
        Arc::new(EnqueueRequestForObject),
        q.clone(),
        vec![
            predicate::label_selector("app").unwrap(),
            predicate::resource_version_changed(),
        ],
    );
    let mut labelled = with_rv(cm("ns", "a"), "1");
    labelled.metadata.labels = labels(&[("app", "x")]);
    let mut labelled2 = labelled.clone();
    labelled2.metadata.resource_version = Some("2".into());

    assert!(!d.create(&create(cm("ns", "unlabelled"), false)));
    assert!(d.create(&create(labelled.clone(), false)));
    assert!(
        !d.update(&update(labelled.clone(), labelled.clone())),
        "resync filtered"
    );
    assert!(d.update(&update(labelled.clone(), labelled2)));
    assert!(d.dispatch(&controller_runtime::event::Event::Delete(delete(labelled))));
    assert_eq!(
        q.take(),
        vec![plain("ns", "a"), plain("ns", "a"), plain("ns", "a")]
    );
}

/// Waits (virtual time) until `q` recorded `n` items.
async fn wait_for(q: &RecordingQueue, n: usize) {
    for _ in 0..1000 {
        if q.len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("expected {n} items, have {}", q.len());
}

#[tokio::test(start_paused = true)]
async fn channel_source_fans_out_to_every_watch() {
    let (tx, channel) = source::channel::<ConfigMap>(4);
    let ctx = CancellationToken::new();
    let q1 = Arc::new(RecordingQueue::default());
    let q2 = Arc::new(RecordingQueue::default());

    // Events sent before any watch started wait in the channel.
    tx.send(generic(cm("ns", "early"))).await.unwrap();

    // Two watches on one channel: one sees everything, one only names starting with "b".
    let all = source::watch(channel.clone(), EnqueueRequestForObject, vec![]);
    let only_b = source::watch(
        channel.clone().buffer_size(1),
        EnqueueRequestForObject,
        vec![Arc::new(predicate::from_fn(|c: &ConfigMap| {
            c.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with('b'))
        })) as predicate::BoxPredicate<ConfigMap>],
    );
    all.start(ctx.clone(), q1.clone()).await.unwrap();
    only_b.start(ctx.clone(), q2.clone()).await.unwrap();
    assert!(all.describe().contains("ConfigMap"), "{}", all.describe());

    for name in ["a1", "b1", "a2", "b2", "b3"] {
        tx.send(generic(cm("ns", name))).await.unwrap();
    }
    wait_for(&q1, 6).await;
    wait_for(&q2, 3).await;
    let names = |q: &RecordingQueue| {
        q.take()
            .into_iter()
            .map(|a| a.item.name)
            .collect::<Vec<_>>()
    };
    let got1 = names(&q1);
    // The early event reached the first watch started; order is kept per watch.
    assert_eq!(got1, ["early", "a1", "b1", "a2", "b2", "b3"]);
    assert_eq!(names(&q2), ["b1", "b2", "b3"]);

    // A watch whose controller stopped no longer receives; the others still do.
    let ctx2 = CancellationToken::new();
    let q3 = Arc::new(RecordingQueue::default());
    let third = source::watch(channel.clone(), EnqueueRequestForObject, vec![]);
    third.start(ctx2.clone(), q3.clone()).await.unwrap();
    ctx2.cancel();
    tokio::time::sleep(Duration::from_millis(1)).await;
    tx.send(generic(cm("ns", "late"))).await.unwrap();
    wait_for(&q1, 1).await;
    assert_eq!(names(&q1), ["late"]);
    assert_eq!(q3.len(), 0);
    ctx.cancel();
}

#[tokio::test(start_paused = true)]
async fn channel_source_keeps_events_while_nobody_listens() {
    let (tx, channel) = source::channel::<ConfigMap>(8);
    let q = Arc::new(RecordingQueue::default());

    let ctx = CancellationToken::new();
    let d = EventDispatcher::new(Arc::new(EnqueueRequestForObject), q.clone(), vec![]);
    Source::<ConfigMap>::start(&channel, ctx.clone(), d.clone())
        .await
        .unwrap();
    tx.send(generic(cm("ns", "one"))).await.unwrap();
    wait_for(&q, 1).await;
    ctx.cancel(); // the only destination goes away
    tokio::time::sleep(Duration::from_millis(1)).await;

    tx.send(generic(cm("ns", "two"))).await.unwrap();
    tx.send(generic(cm("ns", "three"))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;

    // A new destination gets what was sent meanwhile, nothing lost.
    let ctx = CancellationToken::new();
    Source::<ConfigMap>::start(&channel, ctx.clone(), d)
        .await
        .unwrap();
    wait_for(&q, 3).await;
    let names: Vec<_> = q.take().into_iter().map(|a| a.item.name).collect();
    assert_eq!(names, ["one", "two", "three"]);
    ctx.cancel();
}

#[tokio::test]
async fn func_source_is_given_the_queue() {
    let q = Arc::new(RecordingQueue::default());
    let f = Func::new(|_ctx, queue: Arc<dyn Queue<Request>>| async move {
        queue.add(Request::new("ns", "from-func"));
        Ok(())
    })
    .named("seed");
    f.start(CancellationToken::new(), q.clone()).await.unwrap();
    assert_eq!(q.take(), vec![plain("ns", "from-func")]);
    assert_eq!(f.describe(), "seed");
    f.wait_for_sync(CancellationToken::new()).await.unwrap();

    let failing = Func::<Request>::new(|_, _| async { Err("no backend".into()) });
    let err = failing
        .start(CancellationToken::new(), q.clone())
        .await
        .unwrap_err();
    assert!(matches!(err, source::Error::Start { .. }));
    assert_eq!(
        std::error::Error::source(&err)
            .map(|e| e.to_string())
            .as_deref(),
        Some("no backend")
    );
}

#[test]
fn owner_of_typed_kinds_reads_group_and_scope() {
    // Deployments are namespaced in group apps; ClusterRoles are cluster-scoped.
    let q = RecordingQueue::default();
    let pod = pod_owned_by(vec![owner_ref("apps/v1", "Deployment", "web", Some(true))]);
    EnqueueRequestForOwner::of::<Deployment>().generic(&generic(pod), &q);
    assert_eq!(q.take(), vec![plain("ns", "web")]);
    let _: Channel<Pod> = Channel::new(tokio::sync::mpsc::channel(1).1);
}

#[tokio::test(start_paused = true)]
async fn channel_source_drains_then_stops_when_every_sender_is_gone() {
    let (tx, channel) = source::channel::<ConfigMap>(8);
    let q = Arc::new(RecordingQueue::default());
    let ctx = CancellationToken::new();
    let d = EventDispatcher::new(Arc::new(EnqueueRequestForObject), q.clone(), vec![]);
    Source::<ConfigMap>::start(&channel, ctx.clone(), d.clone())
        .await
        .unwrap();
    for name in ["a", "b", "c"] {
        tx.send(generic(cm("ns", name))).await.unwrap();
    }
    drop(tx);
    wait_for(&q, 3).await;
    let names: Vec<_> = q.take().into_iter().map(|a| a.item.name).collect();
    assert_eq!(
        names,
        ["a", "b", "c"],
        "events sent before the close are delivered"
    );

    // Starting a closed channel is not an error; it just delivers nothing.
    Source::<ConfigMap>::start(&channel, ctx.clone(), d)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(q.len(), 0);
}

#[test]
fn events_expose_their_object_and_kind() {
    use controller_runtime::event::Event;
    let obj = Arc::new(cm("ns", "a"));
    let newer = Arc::new(cm("ns", "b"));
    let cases = [
        (
            Event::Create(CreateEvent {
                object: obj.clone(),
                is_in_initial_list: false,
            }),
            "create",
            &obj,
        ),
        (
            Event::Update(UpdateEvent {
                old: obj.clone(),
                new: newer.clone(),
            }),
            "update",
            &newer,
        ),
        (
            Event::Delete(DeleteEvent {
                object: obj.clone(),
                delete_state_unknown: true,
            }),
            "delete",
            &obj,
        ),
        (
            Event::Generic(GenericEvent {
                object: obj.clone(),
            }),
            "generic",
            &obj,
        ),
    ];
    for (event, kind, want) in cases {
        assert_eq!(event.kind(), kind);
        // The same allocation: events share objects, never copy them.
        assert!(Arc::ptr_eq(event.object(), want), "{kind}");
        assert!(
            Arc::ptr_eq(event.clone().object(), want),
            "{kind}: clone shares too"
        );
    }
}
