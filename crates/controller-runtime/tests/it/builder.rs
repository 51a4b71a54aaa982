//! The Builder, the typed reconcile helper and the finalizer helper against the embedded API
//! server: the seeds' Foo-owns-Pod example, event filters on every watch, and a finalizer's
//! life from add to removal.

use crate::support;

use std::sync::Arc;
use std::time::Duration;
use support::server;

use controller_runtime::ObjectKey;
use controller_runtime::builder::{self, ControllerBuilder, Input};
use controller_runtime::client::{self, Client};
use controller_runtime::event::{self as events, GenericEvent, Object};
use controller_runtime::finalizer::{self, Event};
use controller_runtime::handler::{EnqueueRequestForObject, EnqueueRequestsFromMapFunc};
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::reconcile::{self, Action, ReconcileContext, ReconcileError, Reconciler};
use controller_runtime::{Request, source};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::{NamespaceResourceScope, jiff};
use kube_client::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_core::{ApiResource, DynamicObject};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------------------------------------
// Fixtures

/// The seeds' `Foo`: a namespaced custom kind `example.com/v1 Foo`, written by hand (what
/// `#[derive(CustomResource)]` generates, without the dependency).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Foo {
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<serde_json::Value>,
}

impl kube_core::Resource for Foo {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;
    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        "Foo".into()
    }
    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        "example.com".into()
    }
    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        "foos".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A Foo as the API wants it (with apiVersion and kind).
fn foo(ns: &str, name: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Foo",
           "metadata": {"namespace": ns, "name": name}, "spec": {"replicas": 1}}))
    .unwrap()
}

/// Foos in `default`, written as dynamic objects (the typed `Foo` has no TypeMeta).
fn dynamic_foos(client: &kube_client::Client) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), "default", &ApiResource::erase::<Foo>(&()))
}

/// A manager that serves no HTTP (never :8080 in tests).
fn manager(client: &kube_client::Client) -> Manager {
    let options = ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled);
    Manager::new(client.clone(), options).unwrap()
}

async fn install_foo_crd(client: &kube_client::Client) {
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap();
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    let foos = Api::<Foo>::namespaced(client.clone(), "default");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while foos.list(&Default::default()).await.is_err() {
        assert!(tokio::time::Instant::now() < deadline, "CRD never served");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (at most 20 s, polling) until `cond` holds; panics with `what` otherwise.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

type Log = Arc<Mutex<Vec<String>>>;

/// A reconciler that logs `"<tag> <name>"` for each request.
fn recorder(log: &Log, tag: &'static str) -> impl Reconciler + 'static {
    let log = log.clone();
    reconcile::from_fn(move |req: Request, _ctx| {
        log.lock().push(format!("{tag} {}", req.name));
        async { Ok(Action::done()) }
    })
}

fn count(log: &Log, line: &str) -> usize {
    log.lock().iter().filter(|l| *l == line).count()
}

fn owner_ref(
    kind: &str,
    api_version: &str,
    name: &str,
    uid: &str,
    controller: bool,
) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
        controller: Some(controller),
        ..Default::default()
    }
}

fn pod(name: &str, owners: Vec<OwnerReference>) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"namespace": "default", "name": name, "ownerReferences": owners},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .unwrap()
}

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The event filter of the filter tests: objects labelled `pass`, whatever their type.
fn labelled_pass(e: &events::Event<dyn Object>) -> bool {
    let labels = e.object().metadata().labels.as_ref();
    labels.is_some_and(|l| l.contains_key("pass"))
}

/// Runs the manager until the returned token is cancelled.
fn run(mgr: &Manager) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let ctx = CancellationToken::new();
    let handle = tokio::spawn({
        let (mgr, ctx) = (mgr.clone(), ctx.clone());
        async move { mgr.start(ctx).await.expect("manager runs") }
    });
    (ctx, handle)
}

async fn stop(ctx: CancellationToken, handle: tokio::task::JoinHandle<()>) {
    ctx.cancel();
    handle.await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Errors and names

#[tokio::test]
async fn every_builder_error_and_the_default_name() {
    let (_server, client) = server().await;
    let mgr = manager(&client);
    let log = Log::default();
    let r = || recorder(&log, "r");

    // No watches at all. (A second for, owns without a for, and a typed reconciler for another
    // type than the for type do not compile: see the builder module's compile_fail doctests.)
    let err = ControllerBuilder::new(&mgr)
        .named("empty")
        .build_reconciler(r())
        .await
        .unwrap_err();
    assert!(
        matches!(err, builder::Error::NoWatches { ref name } if name == "empty"),
        "{err}"
    );

    // No for and no name.
    let (_tx, channel) = source::channel::<ConfigMap>(1);
    let err = ControllerBuilder::new(&mgr)
        .watches(Input::new().with_source(channel), EnqueueRequestForObject)
        .build_reconciler(r())
        .await
        .unwrap_err();
    assert!(matches!(err, builder::Error::MissingName), "{err}");

    // None of the failed builds took a name: "empty" is still free.
    let (_tx, channel) = source::channel::<ConfigMap>(1);
    let c = ControllerBuilder::new(&mgr)
        .named("empty")
        .watches(Input::new().with_source(channel), EnqueueRequestForObject)
        .build_reconciler(r())
        .await
        .unwrap();
    assert_eq!(c.name(), "empty");

    // Default name: the for kind, lowercased; a second controller of that name is refused.
    let c = ControllerBuilder::new(&mgr)
        .for_(Input::<ConfigMap>::new())
        .build_reconciler(r())
        .await
        .unwrap();
    assert_eq!(c.name(), "configmap");
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &mgr.registry().lock()).unwrap();
    assert!(
        text.contains("controller_runtime_max_concurrent_reconciles{controller=\"configmap\"} 1"),
        "the builder hands the manager's metrics: {text}"
    );
    let err = ControllerBuilder::new(&mgr)
        .for_(Input::<ConfigMap>::new())
        .build_reconciler(r())
        .await
        .unwrap_err();
    assert!(
        matches!(err, builder::Error::DuplicateName(ref n) if n == "configmap"),
        "{err}"
    );
    let err = ControllerBuilder::new(&mgr)
        .named("configmap")
        .for_(Input::<Secret>::new())
        .build_reconciler(r())
        .await
        .unwrap_err();
    assert!(matches!(err, builder::Error::DuplicateName(_)), "{err}");

    // Metadata-only for: still named after the kind.
    let c = ControllerBuilder::new(&mgr)
        .for_(Input::<Secret>::metadata())
        .build_reconciler(r())
        .await
        .unwrap();
    assert_eq!(c.name(), "secret");

    // Invalid options: the controller's error is the source.
    let err = ControllerBuilder::new(&mgr)
        .named("zero-workers")
        .for_(Input::<Pod>::new())
        .with_options(
            controller_runtime::controller::ControllerOptions::default()
                .with_max_concurrent_reconciles(0),
        )
        .build_reconciler(r())
        .await
        .unwrap_err();
    assert!(matches!(err, builder::Error::Controller { .. }), "{err}");
    assert!(std::error::Error::source(&err).is_some());
}

// ---------------------------------------------------------------------------------------------
// Foo owns Pods

/// The seeds' example: `For(Foo).Owns(Pod)`. A change to a Pod reconciles its controller
/// owner, not an owner that is not its controller; `every_owner` reconciles both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foo_owns_pod_enqueues_the_controller_owner() {
    let (_server, client) = server().await;
    install_foo_crd(&client).await;
    let mgr = manager(&client);
    let log = Log::default();
    ControllerBuilder::new(&mgr)
        .for_(Input::<Foo>::new())
        .owns(Input::<Pod>::new())
        .complete_reconciler(recorder(&log, "foo"))
        .await
        .unwrap();
    ControllerBuilder::new(&mgr)
        .named("foo-every-owner")
        .for_(Input::<Foo>::new())
        .owns(Input::<Pod>::new().every_owner())
        .complete_reconciler(recorder(&log, "every"))
        .await
        .unwrap();
    // The same with Foo as a dynamic type: owners are matched by group and kind.
    ControllerBuilder::new(&mgr)
        .named("foo-dynamic")
        .for_(Input::<DynamicObject>::with_dynamic_type(
            ApiResource::erase::<Foo>(&()),
        ))
        .owns(Input::<Pod>::new())
        .complete_reconciler(recorder(&log, "dyn"))
        .await
        .unwrap();
    let (ctx, handle) = run(&mgr);

    let foos = dynamic_foos(&client);
    let mut uids = Vec::new();
    for name in ["a", "b", "z"] {
        let created = foos
            .create(&PostParams::default(), &foo("default", name))
            .await
            .unwrap();
        uids.push(created.metadata.uid.unwrap());
    }
    for name in ["a", "b", "z"] {
        eventually(&format!("foo {name} reconciled"), || {
            count(&log, &format!("foo {name}")) == 1
        })
        .await;
        eventually(&format!("every {name} reconciled"), || {
            count(&log, &format!("every {name}")) == 1
        })
        .await;
        eventually(&format!("dyn {name} reconciled"), || {
            count(&log, &format!("dyn {name}")) == 1
        })
        .await;
    }

    // p1: controlled by a, also owned (not controlled) by b.
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    let p1 = pod(
        "p1",
        vec![
            owner_ref("Foo", "example.com/v1", "a", &uids[0], true),
            owner_ref("Foo", "example.com/v1", "b", &uids[1], false),
        ],
    );
    pods.create(&PostParams::default(), &p1).await.unwrap();
    // A later pod controlled by z: once z is reconciled, p1's create has been handled too
    // (one informer delivers in order; one worker takes keys in order).
    let p2 = pod(
        "p2",
        vec![owner_ref("Foo", "example.com/v1", "z", &uids[2], true)],
    );
    pods.create(&PostParams::default(), &p2).await.unwrap();
    eventually("p2's create reconciles z", || {
        count(&log, "foo z") == 2 && count(&log, "every z") == 2
    })
    .await;
    assert_eq!(
        count(&log, "foo a"),
        2,
        "p1's create reconciles its controller owner"
    );
    assert_eq!(
        count(&log, "foo b"),
        1,
        "b is not p1's controller: not reconciled"
    );
    assert_eq!(count(&log, "every a"), 2, "every-owner: a");
    assert_eq!(count(&log, "every b"), 2, "every-owner: b too");
    // The dynamic controller has its own informers: wait for both pods' events there.
    eventually("the dynamic controller saw p1 and p2", || {
        count(&log, "dyn z") == 2 && count(&log, "dyn a") == 2
    })
    .await;
    assert_eq!(
        count(&log, "dyn b"),
        1,
        "dynamic for type: controller owner only"
    );

    // An update of the owned pod reconciles its owner again.
    pods.patch(
        "p1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
    )
    .await
    .unwrap();
    eventually("p1's update reconciles a", || count(&log, "foo a") == 3).await;
    // And so does its delete.
    pods.delete("p1", &DeleteParams::default()).await.unwrap();
    eventually("p1's delete reconciles a", || count(&log, "foo a") == 4).await;
    eventually("and every owner", || count(&log, "every b") == 4).await;
    assert_eq!(
        count(&log, "foo b"),
        1,
        "never b for the controller-owner-only watch"
    );
    // A Pod owned by some other kind enqueues nothing.
    let p3 = pod(
        "p3",
        vec![owner_ref("ReplicaSet", "apps/v1", "a", "u", true)],
    );
    pods.create(&PostParams::default(), &p3).await.unwrap();
    pods.create(
        &PostParams::default(),
        &pod(
            "p4",
            vec![owner_ref("Foo", "example.com/v1", "z", &uids[2], true)],
        ),
    )
    .await
    .unwrap();
    eventually("p4 reconciles z", || count(&log, "foo z") == 3).await;
    assert_eq!(
        count(&log, "foo a"),
        4,
        "a ReplicaSet owner named a is not Foo a"
    );
    stop(ctx, handle).await;
}

// ---------------------------------------------------------------------------------------------
// Event filters

/// `with_event_filter` is asked by the For watch, an Owns watch and a `watches` source alike;
/// a watch's own predicates come on top.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_filter_applies_to_every_watch() {
    let (_server, client) = server().await;
    let mgr = manager(&client);
    let log = Log::default();
    let (tx, channel) = source::channel::<Pod>(16);
    ControllerBuilder::new(&mgr)
        .for_(Input::<ConfigMap>::new())
        .owns(Input::<Secret>::new())
        .watches(Input::new().with_source(channel), EnqueueRequestForObject)
        .with_event_filter(labelled_pass)
        .complete_reconciler(recorder(&log, "r"))
        .await
        .unwrap();
    let (ctx, handle) = run(&mgr);
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let secrets = Api::<Secret>::namespaced(client.clone(), "default");

    // For: a blocked ConfigMap, then a passing one.
    cms.create(&PostParams::default(), &cm("cm-blocked", &[]))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &cm("cm-pass", &[("pass", "")]))
        .await
        .unwrap();
    // Owns: Secrets controlled by (unlabelled, so filtered out themselves) ConfigMaps.
    for (secret, owner, labels) in [
        ("s1", "owner-blocked", &[][..]),
        ("s2", "owner-pass", &[("pass", "")][..]),
    ] {
        let owner_cm = cms
            .create(&PostParams::default(), &cm(owner, &[]))
            .await
            .unwrap();
        let uid = owner_cm.metadata.uid.unwrap();
        let mut s = Secret {
            metadata: cm(secret, labels).metadata,
            ..Default::default()
        };
        s.metadata.owner_references = Some(vec![owner_ref("ConfigMap", "v1", owner, &uid, true)]);
        secrets.create(&PostParams::default(), &s).await.unwrap();
    }
    // Watches: generic events from a channel.
    let ghost = Pod {
        metadata: cm("chan-blocked", &[]).metadata,
        ..Default::default()
    };
    tx.send(GenericEvent {
        object: Arc::new(ghost),
    })
    .await
    .unwrap();
    let ghost = Pod {
        metadata: cm("chan-pass", &[("pass", "")]).metadata,
        ..Default::default()
    };
    tx.send(GenericEvent {
        object: Arc::new(ghost),
    })
    .await
    .unwrap();

    for name in ["cm-pass", "owner-pass", "chan-pass"] {
        eventually(&format!("{name} reconciled"), || {
            count(&log, &format!("r {name}")) == 1
        })
        .await;
    }
    for name in ["cm-blocked", "owner-blocked", "chan-blocked"] {
        assert_eq!(count(&log, &format!("r {name}")), 0, "{name} filtered out");
    }
    stop(ctx, handle).await;
}

/// `watches` watches a type through the cache with any handler (here a map function) and the
/// event filter applies; a raw watch is already bound, so the filter does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_through_the_cache_and_raw_watch() {
    let (_server, client) = server().await;
    let mgr = manager(&client);
    let log = Log::default();
    let (tx, channel) = source::channel::<Pod>(16);
    let to_target = EnqueueRequestsFromMapFunc::new(|cm: &ConfigMap| {
        let target = cm.metadata.labels.as_ref()?.get("target")?.clone();
        Some(Request::new("default", target))
    });
    ControllerBuilder::new(&mgr)
        .named("mapper")
        .watches(Input::<ConfigMap>::new(), to_target)
        .watches_raw(source::watch(channel, EnqueueRequestForObject, vec![]))
        .with_event_filter(labelled_pass)
        .complete_reconciler(recorder(&log, "r"))
        .await
        .unwrap();
    let (ctx, handle) = run(&mgr);
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");
    cms.create(
        &PostParams::default(),
        &cm("c1", &[("target", "t-blocked")]),
    )
    .await
    .unwrap();
    cms.create(
        &PostParams::default(),
        &cm("c2", &[("target", "t-pass"), ("pass", "")]),
    )
    .await
    .unwrap();
    let unlabelled = Pod {
        metadata: cm("raw", &[]).metadata,
        ..Default::default()
    };
    tx.send(GenericEvent {
        object: Arc::new(unlabelled),
    })
    .await
    .unwrap();
    eventually("t-pass reconciled", || count(&log, "r t-pass") == 1).await;
    eventually("the raw watch's event reconciled", || {
        count(&log, "r raw") == 1
    })
    .await;
    assert_eq!(count(&log, "r t-blocked"), 0, "filtered out");
    assert_eq!(
        count(&log, "r c1") + count(&log, "r c2"),
        0,
        "mapped, not the object"
    );
    stop(ctx, handle).await;
}

/// Filters come before each watch's own predicates: both must pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_filter_and_watch_predicates_both_hold() {
    let (_server, client) = server().await;
    let mgr = manager(&client);
    let log = Log::default();
    let only_b = |e: &events::Event<ConfigMap>| {
        e.object()
            .metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with('b'))
    };
    ControllerBuilder::new(&mgr)
        .for_(Input::<ConfigMap>::new().with_predicate(only_b))
        .with_event_filter(labelled_pass)
        .complete_reconciler(recorder(&log, "r"))
        .await
        .unwrap();
    let (ctx, handle) = run(&mgr);
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");
    for (name, labels) in [
        ("a1", vec![("pass", "")]),
        ("b1", vec![]),
        ("b2", vec![("pass", "")]),
    ] {
        cms.create(&PostParams::default(), &cm(name, &labels))
            .await
            .unwrap();
    }
    eventually("b2 reconciled", || count(&log, "r b2") == 1).await;
    assert_eq!(count(&log, "r a1"), 0, "a1 fails the watch predicate");
    assert_eq!(count(&log, "r b1"), 0, "b1 fails the event filter");
    stop(ctx, handle).await;
}

// ---------------------------------------------------------------------------------------------
// Metadata-only projection

/// `Input::metadata` watches through a metadata-only informer, and the typed reconciler reads
/// the same projection from the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_for_and_typed_reconcile() {
    use kube_core::PartialObjectMeta;
    let (_server, client) = server().await;
    let mgr = manager(&client);
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    ControllerBuilder::new(&mgr)
        .for_(Input::<ConfigMap>::metadata())
        .complete(seen.clone(), |cm, seen| async move {
            seen.lock()
                .push(cm.metadata.name.clone().unwrap_or_default());
            Ok(Action::done())
        })
        .await
        .unwrap();
    let (ctx, handle) = run(&mgr);
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm("meta", &[]))
        .await
        .unwrap();
    eventually("the metadata reconcile", || {
        seen.lock().iter().any(|n| n == "meta")
    })
    .await;
    assert!(
        mgr.cache()
            .peek_informer_with::<PartialObjectMeta<ConfigMap>>(&())
            .is_some()
            && mgr.cache().peek_informer_with::<ConfigMap>(&()).is_none(),
        "only a metadata informer"
    );
    stop(ctx, handle).await;
}

// ---------------------------------------------------------------------------------------------
// Typed reconcile

/// The typed helper hands over the cached object, and skips a request whose object is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_reconcile_reads_the_cache_and_skips_a_deleted_object() {
    let (_server, client) = server().await;
    let mgr = manager(&client);
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let typed = reconcile::for_object(
        mgr.client(),
        (),
        seen.clone(),
        |cm: Arc<ConfigMap>, seen: ReconcileContext<Mutex<Vec<String>>>| async move {
            let value = cm
                .data
                .as_ref()
                .and_then(|d| d.get("k"))
                .cloned()
                .unwrap_or_default();
            // The context derefs to the data, and carries the controller's name.
            seen.lock().push(format!(
                "{} {value} ({})",
                cm.metadata.name.as_deref().unwrap_or_default(),
                seen.controller()
            ));
            Ok(Action::requeue_after(Duration::from_secs(60)))
        },
    );
    let ctx = CancellationToken::new();
    mgr.cache().start(ctx.clone());

    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let mut live = cm("live", &[]);
    live.data = Some([("k".to_string(), "v".to_string())].into());
    cms.create(&PostParams::default(), &live).await.unwrap();
    cms.create(&PostParams::default(), &cm("doomed", &[]))
        .await
        .unwrap();
    let objects = mgr.client().objects::<ConfigMap>();
    // The first read starts the informer; wait until it holds both.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while objects
        .get(&ObjectKey::new("default", "doomed"))
        .await
        .is_err()
    {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let action = typed
        .reconcile(
            Request::new("default", "live"),
            ReconcileContext::new("typed"),
        )
        .await
        .unwrap();
    assert_eq!(
        action.requeue_after_duration(),
        Some(Duration::from_secs(60))
    );
    assert_eq!(*seen.lock(), ["live v (typed)"]);

    cms.delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    while objects
        .get(&ObjectKey::new("default", "doomed"))
        .await
        .is_ok()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cache saw the delete"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let action = typed
        .reconcile(
            Request::new("default", "doomed"),
            ReconcileContext::new("typed"),
        )
        .await
        .unwrap();
    assert_eq!(action, Action::done(), "a gone object is done");
    let action = typed
        .reconcile(
            Request::new("default", "never-was"),
            ReconcileContext::new("typed"),
        )
        .await
        .unwrap();
    assert_eq!(action, Action::done());
    assert_eq!(
        *seen.lock(),
        ["live v (typed)"],
        "the function never saw a gone object"
    );
    ctx.cancel();
}

// ---------------------------------------------------------------------------------------------
// Finalizer

const FINALIZER: &str = "example.com/cleanup";

/// The whole life: the finalizer is added before any work, the cleanup runs when the object
/// is deleted, the finalizer is removed, and the object is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizer_added_cleanup_run_then_removed() {
    let (_server, client) = server().await;
    install_foo_crd(&client).await;
    let mgr = manager(&client);
    let log = Log::default();

    struct Ctx {
        client: Client,
        log: Log,
    }
    let shared = Arc::new(Ctx {
        client: mgr.client().clone(),
        log: log.clone(),
    });
    ControllerBuilder::new(&mgr)
        .for_(Input::<Foo>::new())
        .complete(shared, |foo, ctx| async move {
            let foos = ctx.client.objects::<Foo>();
            finalizer::finalizer(&foos, FINALIZER, foo, |event| async {
                match event {
                    Event::Apply(foo) => {
                        let has = foo
                            .metadata
                            .finalizers
                            .iter()
                            .flatten()
                            .any(|f| f == FINALIZER);
                        ctx.log.lock().push(format!(
                            "apply {} finalizer={has}",
                            foo.metadata.name.as_deref().unwrap()
                        ));
                    }
                    Event::Cleanup(foo) => {
                        ctx.log
                            .lock()
                            .push(format!("cleanup {}", foo.metadata.name.as_deref().unwrap()));
                    }
                }
                Ok::<_, ReconcileError>(Action::done())
            })
            .await
            .map_err(ReconcileError::from)
        })
        .await
        .unwrap();
    let (ctx, handle) = run(&mgr);

    let foos = Api::<Foo>::namespaced(client.clone(), "default");
    let raw = dynamic_foos(&client);
    raw.create(&PostParams::default(), &foo("default", "f1"))
        .await
        .unwrap();
    eventually("apply ran with the finalizer in place", || {
        count(&log, "apply f1 finalizer=true") >= 1
    })
    .await;
    assert_eq!(
        count(&log, "apply f1 finalizer=false"),
        0,
        "no work before the finalizer"
    );
    let stored = foos.get("f1").await.unwrap();
    assert_eq!(
        stored.metadata.finalizers.as_deref(),
        Some(&[FINALIZER.to_string()][..])
    );

    // Delete: the object stays (our finalizer holds it) until the cleanup ran.
    foos.delete("f1", &DeleteParams::default()).await.unwrap();
    eventually("cleanup ran", || count(&log, "cleanup f1") == 1).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        match foos.get_opt("f1").await.unwrap() {
            None => break,
            Some(_) => assert!(tokio::time::Instant::now() < deadline, "f1 never went away"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop(ctx, handle).await;
    assert_eq!(count(&log, "cleanup f1"), 1, "one cleanup");
}

/// The cases without a controller: a deleted object without our finalizer is left alone; a
/// stale object fails the add with a conflict; a failed cleanup keeps the finalizer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizer_edge_cases() {
    let (_server, client) = server().await;
    let mgr = manager(&client);
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let objects = mgr.client().objects::<ConfigMap>();

    // Deleted without our finalizer: nothing to do, the closure is not called.
    let mut deleted = cm("gone", &[]);
    deleted.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
    deleted.metadata.finalizers = Some(vec!["someone.else/x".into()]);
    let action = finalizer::finalizer(&objects, FINALIZER, Arc::new(deleted), |_| async {
        panic!("not called")
    })
    .await
    .map_err(|e: finalizer::Error<ReconcileError>| e.to_string())
    .unwrap();
    assert_eq!(action, Action::done());

    // A stale resourceVersion: the add is refused (409), nothing else ran.
    let created = cms
        .create(&PostParams::default(), &cm("stale", &[]))
        .await
        .unwrap();
    cms.patch(
        "stale",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    let err = finalizer::finalizer(&objects, FINALIZER, Arc::new(created), |_| async {
        panic!("no work before the finalizer is in place")
    })
    .await
    .map(|_: Action| ())
    .unwrap_err();
    match &err {
        finalizer::Error::<ReconcileError>::AddFinalizer { source, .. } => {
            assert!(source.is_conflict(), "{source}")
        }
        other => panic!("expected AddFinalizer, got {other}"),
    }
    let reconcile_err = ReconcileError::from(err);
    assert!(
        reconcile_err.to_string().contains("conflict"),
        "{reconcile_err}"
    );
    assert!(!reconcile_err.is_terminal());

    // A fresh object gets the finalizer added and kept; others' finalizers survive.
    let fresh = cms.get("stale").await.unwrap();
    let mut with_other = fresh.clone();
    with_other.metadata.finalizers = Some(vec!["someone.else/x".into()]);
    let with_other = cms
        .replace("stale", &PostParams::default(), &with_other)
        .await
        .unwrap();
    finalizer::finalizer(
        &objects,
        FINALIZER,
        Arc::new(with_other),
        |event| async move {
            assert!(matches!(event, Event::Apply(_)));
            Ok::<_, ReconcileError>(Action::done())
        },
    )
    .await
    .map_err(ReconcileError::from)
    .unwrap();
    let stored = cms.get("stale").await.unwrap();
    assert_eq!(
        stored.metadata.finalizers.as_deref(),
        Some(&["someone.else/x".to_string(), FINALIZER.to_string()][..])
    );

    // A failed cleanup keeps the finalizer, and a terminal error stays terminal.
    cms.delete("stale", &DeleteParams::default()).await.unwrap();
    let deleting = cms.get("stale").await.unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some());
    let err = finalizer::finalizer(
        &objects,
        FINALIZER,
        Arc::new(deleting.clone()),
        |event| async move {
            assert!(matches!(event, Event::Cleanup(_)));
            Err::<Action, _>(ReconcileError::terminal("cloud said no"))
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(err, finalizer::Error::CleanupFailed(_)));
    assert!(ReconcileError::from(err).is_terminal());
    assert!(
        cms.get("stale")
            .await
            .unwrap()
            .metadata
            .finalizers
            .unwrap()
            .contains(&FINALIZER.to_string())
    );

    // A successful cleanup removes ours and leaves the other's, even when the cleanup itself
    // changed the object (the removal reads it afresh).
    finalizer::finalizer(&objects, FINALIZER, Arc::new(deleting), |_| async {
        let note = json!({"metadata": {"annotations": {"cleaned": "yes"}}});
        cms.patch("stale", &PatchParams::default(), &Patch::Merge(note))
            .await
            .map_err(client::Error::from)?;
        Ok::<_, client::Error>(Action::done())
    })
    .await
    .unwrap();
    let stored = cms.get("stale").await.unwrap();
    assert_eq!(
        stored.metadata.finalizers.as_deref(),
        Some(&["someone.else/x".to_string()][..])
    );
}

// ---------------------------------------------------------------------------------------------
// Operations annotations

/// The value of `metric{controller="<controller>"}` in the manager's registry.
fn gauge(mgr: &Manager, metric: &str, controller: &str) -> Option<i64> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &mgr.registry().lock()).unwrap();
    let series = format!("{metric}{{controller=\"{controller}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .map(|v| v.trim().parse().unwrap())
}

/// With operations annotations on, a reconcile request passes a GenerationChanged filter (a
/// ConfigMap's generation never changes), its token is recorded once handled, a paused object
/// is not reconciled (and counted), and taking it out of pause reconciles it and handles the
/// request made meanwhile. A controller without the option sees none of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_annotations_pause_and_request_reconciles() {
    use controller_runtime::controller::ControllerOptions;
    use controller_runtime::operations::{HANDLED_AT, PAUSED, REQUESTED_AT};
    use controller_runtime::predicate::GenerationChanged;

    let (_server, client) = server().await;
    let mgr = manager(&client);
    let log = Log::default();
    ControllerBuilder::new(&mgr)
        .for_(Input::<ConfigMap>::new())
        .with_event_filter(GenerationChanged)
        .with_options(ControllerOptions::default().with_operations_annotations(true))
        .complete_reconciler(recorder(&log, "ops"))
        .await
        .unwrap();
    ControllerBuilder::new(&mgr)
        .named("plain")
        .for_(Input::<ConfigMap>::new())
        .with_event_filter(GenerationChanged)
        .complete_reconciler(recorder(&log, "plain"))
        .await
        .unwrap();
    assert_eq!(
        gauge(
            &mgr,
            "controller_runtime_reconcile_paused_objects",
            "configmap"
        ),
        Some(0),
        "the series exists at zero"
    );
    assert_eq!(
        gauge(&mgr, "controller_runtime_reconcile_paused_objects", "plain"),
        None,
        "no series without the option"
    );
    let (ctx, handle) = run(&mgr);
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let annotate = |value: serde_json::Value| {
        let cms = cms.clone();
        async move {
            let patch = json!({"metadata": {"annotations": value}});
            cms.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        }
    };
    let handled = || {
        let cms = cms.clone();
        async move {
            let cm = cms.get("a").await.unwrap();
            cm.metadata
                .annotations
                .and_then(|a| a.get(HANDLED_AT).cloned())
        }
    };
    let poll_handled = |want: &'static str| async move {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while handled().await.as_deref() != Some(want) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "token {want} never recorded"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };

    cms.create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    eventually("created: both reconcile", || {
        count(&log, "ops a") == 1 && count(&log, "plain a") == 1
    })
    .await;

    // A request: reconciled although the generation is the same, then recorded.
    annotate(json!({REQUESTED_AT: "1"})).await;
    eventually("requested: reconciled", || count(&log, "ops a") == 2).await;
    poll_handled("1").await;

    // Paused: the events still come (the pause itself passes the filter), nothing reconciles.
    annotate(json!({PAUSED: "true"})).await;
    eventually("paused: counted", || {
        gauge(
            &mgr,
            "controller_runtime_reconcile_paused_objects",
            "configmap",
        ) == Some(1)
    })
    .await;
    annotate(json!({REQUESTED_AT: "2"})).await;
    // Resuming reconciles it and handles the request made while paused.
    annotate(json!({PAUSED: null})).await;
    poll_handled("2").await;
    assert_eq!(
        gauge(
            &mgr,
            "controller_runtime_reconcile_paused_objects",
            "configmap"
        ),
        Some(0)
    );
    assert_eq!(
        count(&log, "ops a"),
        3,
        "one reconcile after resuming, none while paused nor for the recorded tokens: {:?}",
        log.lock()
    );

    // Deleted while paused: it leaves the gauge.
    annotate(json!({PAUSED: "true"})).await;
    eventually("paused again", || {
        gauge(
            &mgr,
            "controller_runtime_reconcile_paused_objects",
            "configmap",
        ) == Some(1)
    })
    .await;
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    eventually("deleted: not counted", || {
        gauge(
            &mgr,
            "controller_runtime_reconcile_paused_objects",
            "configmap",
        ) == Some(0)
    })
    .await;
    assert_eq!(
        count(&log, "ops a"),
        4,
        "the deletion's reconcile: {:?}",
        log.lock()
    );
    assert_eq!(
        count(&log, "plain a"),
        2,
        "without the option only the create and the delete pass: {:?}",
        log.lock()
    );
    stop(ctx, handle).await;
}
