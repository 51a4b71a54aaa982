//! The cache, the Kind source and the client against the embedded API server, over HTTP.

use crate::support;

use std::sync::Arc;
use std::time::Duration;
use support::server;

use controller_runtime::cache::{
    ALL_NAMESPACES, ByObject, Cache, CacheOptions, ListOptions, NamespaceConfig, namespaces,
};
use controller_runtime::client::Client;
use controller_runtime::controller::{Controller, ControllerOptions};
use controller_runtime::handler::Funcs;
use controller_runtime::reconcile::{self, Action};
use controller_runtime::source::Kind;
use controller_runtime::{ObjectKey, Request, controller};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_client::core::{
    ApiResource, DynamicObject, GroupVersionKind, ObjectMeta, PartialObjectMeta,
};
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The names of listed objects, sorted.
fn sorted_names<K: kube_client::core::Resource>(objects: &[Arc<K>]) -> Vec<String> {
    let mut names: Vec<String> = objects
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

fn cm(ns: &str, name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
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

/// Creates a ConfigMap through the API server (not the cache). Retried once when the request
/// never reached the server: after the tests stop and restart the listener, kube-client may
/// still hand out a pooled connection the server has closed.
async fn create_cm(client: &kube_client::Client, ns: &str, name: &str, labels: &[(&str, &str)]) {
    let api = Api::<ConfigMap>::namespaced(client.clone(), ns);
    let obj = cm(ns, name, labels);
    match api.create(&PostParams::default(), &obj).await {
        Err(kube_client::Error::Service(_) | kube_client::Error::HyperError(_)) => {
            api.create(&PostParams::default(), &obj).await.unwrap();
        }
        created => {
            created.unwrap();
        }
    }
}

/// Waits (at most 20 s, polling) until `cond` holds; panics with `what` otherwise.
/// Sets the `team` label of the ConfigMap `name` through the API server (a merge patch).
async fn set_team(api: &Api<ConfigMap>, name: &str, team: &str) {
    let patch = json!({"metadata": {"labels": {"team": team}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

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

/// A handler that logs `create NAME`, `update NAME`, `delete NAME [unknown]`.
fn logging_handler<K: kube_core::Resource + Send + Sync + 'static>(log: &Log) -> Funcs<K> {
    let name = |o: &K| o.meta().name.clone().unwrap_or_default();
    let (l1, l2, l3) = (log.clone(), log.clone(), log.clone());
    Funcs::new()
        .on_create(move |e, _| l1.lock().push(format!("create {}", name(&e.object))))
        .on_update(move |e, _| l2.lock().push(format!("update {}", name(&e.new))))
        .on_delete(move |e, _| {
            let unknown = if e.delete_state_unknown {
                " unknown"
            } else {
                ""
            };
            l3.lock()
                .push(format!("delete {}{unknown}", name(&e.object)))
        })
}

fn noop_controller(name: &str, options: ControllerOptions) -> Controller {
    Controller::new(
        name,
        reconcile::from_fn(|_req: Request, _ctx| async { Ok(Action::done()) }),
        options,
    )
    .unwrap()
}

/// A no-op controller named `name` whose Kind source on ConfigMaps logs every event.
async fn logging_configmap_controller(name: &str, cache: &Cache) -> (Controller, Log) {
    let log: Log = Default::default();
    let controller = noop_controller(name, ControllerOptions::default());
    controller
        .watch(
            Kind::<ConfigMap>::new(cache.clone()),
            logging_handler(&log),
            vec![],
        )
        .await
        .unwrap();
    (controller, log)
}

/// Runs `informer` until `ctx` is cancelled.
fn spawn_informer<K>(
    informer: &controller_runtime::cache::Informer<K>,
    ctx: &CancellationToken,
) -> tokio::task::JoinHandle<()>
where
    K: kube_core::Resource + Clone + Send + Sync + 'static,
{
    let (informer, ctx) = (informer.clone(), ctx.clone());
    tokio::spawn(async move { informer.run(ctx).await })
}

fn has(log: &Log, line: &str) -> bool {
    log.lock().iter().any(|l| l == line)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kind_source_sees_every_change_through_watch_closes_and_compaction() {
    let (server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    create_cm(&client, "default", "before", &[]).await;

    let cache = Cache::new(client.clone(), CacheOptions::default());
    let (controller, log) = logging_configmap_controller("configmaps", &cache).await;
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    let running = tokio::spawn({
        let (c, ctx) = (controller.clone(), ctx.clone());
        async move { c.start(ctx).await }
    });
    eventually("the initial list is seen", || has(&log, "create before")).await;

    create_cm(&client, "default", "a", &[]).await;
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    api.delete("before", &DeleteParams::default())
        .await
        .unwrap();
    eventually("create, update and delete are seen", || {
        has(&log, "create a") && has(&log, "update a") && has(&log, "delete before")
    })
    .await;

    // Every watch closed by the server: the informer resumes from its last resourceVersion.
    server.faults().close_watches();
    create_cm(&client, "default", "after-close", &[]).await;
    eventually("a change after the watch was closed is seen", || {
        has(&log, "create after-close")
    })
    .await;

    // A deletion the informer cannot see (listener down), then compaction: resuming gets 410,
    // the informer lists again and reports the vanished object with delete_state_unknown.
    server.stop_listener().await;
    let res = server.storage().resolve("", "v1", "configmaps").unwrap();
    server
        .storage()
        .delete(&res, Some("default"), "a", &Default::default())
        .unwrap();
    server.faults().compact();
    server.restart_listener().await.unwrap();
    create_cm(&client, "default", "after-compaction", &[]).await;
    eventually("the vanished object arrives as an unknown delete", || {
        has(&log, "delete a unknown") && has(&log, "create after-compaction")
    })
    .await;
    // Nothing was seen twice as created.
    let creates = log
        .lock()
        .iter()
        .filter(|l| l.as_str() == "create a")
        .count();
    assert_eq!(creates, 1, "{:?}", log.lock());

    ctx.cancel();
    running.await.unwrap().unwrap();
}

fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                }}}
            }]
        }
    }))
    .unwrap()
}

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kind_source_waits_for_a_crd_installed_later() {
    let (_server, client) = server().await;
    let cache = Cache::new(client.clone(), CacheOptions::default());
    let log: Log = Default::default();
    let controller = noop_controller("widgets", ControllerOptions::default());
    let source = Kind::<DynamicObject>::new_with(cache.clone(), widget_resource())
        .with_retry_period(Duration::from_millis(100));
    controller
        .watch(source, logging_handler(&log), vec![])
        .await
        .unwrap();
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    let running = tokio::spawn({
        let (c, ctx) = (controller.clone(), ctx.clone());
        async move { c.start(ctx).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        cache.informer_count(),
        0,
        "no informer while the type is not served"
    );

    let widget_gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let not_yet = cache.resolve_gvk(&widget_gvk).await.unwrap_err();
    assert!(
        matches!(not_yet, controller_runtime::cache::Error::NotServed { .. }),
        "{not_yet}"
    );
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &widget_crd())
        .await
        .unwrap();
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widget_resource());
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"}, "spec": {"size": 3}
    }))
    .unwrap();
    // The CRD may take a moment to be served by the source's retry; create once it is.
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    eventually("the widget is seen once the CRD is served", || {
        has(&log, "create w1")
    })
    .await;
    assert_eq!(cache.informer_count(), 1);
    // Dynamic informers by group/version/kind: discovery finds the plural.
    assert_eq!(
        cache.resolve_gvk(&widget_gvk).await.unwrap(),
        widget_resource()
    );
    ctx.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kind_source_for_a_type_never_served_fails_after_cache_sync_timeout() {
    let (_server, client) = server().await;
    let cache = Cache::new(client, CacheOptions::default());
    let options = ControllerOptions::default().with_cache_sync_timeout(Duration::from_millis(500));
    let controller = noop_controller("widgets", options);
    let source = Kind::<DynamicObject>::new_with(cache.clone(), widget_resource())
        .with_retry_period(Duration::from_millis(100));
    controller
        .watch(source, Funcs::new(), vec![])
        .await
        .unwrap();
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    let err = controller
        .start(ctx.clone())
        .await
        .expect_err("the source never syncs");
    assert!(
        matches!(err, controller::Error::SyncTimeout { .. }),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains("Widget") && message.contains("widgets"),
        "{message}"
    );
    // Why it did not sync: the type is not served.
    assert!(
        message.contains(": last error: no resource for Widget"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_controllers_on_one_type_share_one_informer() {
    let (server, client) = server().await;
    let cache = Cache::new(client.clone(), CacheOptions::default());
    let (log1, log2): (Log, Log) = Default::default();
    let c1 = noop_controller("one", ControllerOptions::default());
    let c2 = noop_controller("two", ControllerOptions::default());
    c1.watch(
        Kind::<ConfigMap>::new(cache.clone()),
        logging_handler(&log1),
        vec![],
    )
    .await
    .unwrap();
    c2.watch(
        Kind::<ConfigMap>::new(cache.clone()),
        logging_handler(&log2),
        vec![],
    )
    .await
    .unwrap();
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    let r1 = tokio::spawn({
        let (c, ctx) = (c1.clone(), ctx.clone());
        async move { c.start(ctx).await }
    });
    let r2 = tokio::spawn({
        let (c, ctx) = (c2.clone(), ctx.clone());
        async move { c.start(ctx).await }
    });
    create_cm(&client, "default", "shared", &[]).await;
    eventually("both controllers see the object", || {
        has(&log1, "create shared") && has(&log2, "create shared")
    })
    .await;
    assert_eq!(cache.informer_count(), 1);
    assert_eq!(
        server.storage().watch_count(),
        1,
        "one watch connection on the server"
    );
    ctx.cancel();
    r1.await.unwrap().unwrap();
    r2.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reader_field_indexes_scoped_caches_metadata_only_and_transforms() {
    let (_server, client) = server().await;
    let kube = client.clone();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for (name, node) in [("p1", "n1"), ("p2", "n2"), ("p3", "n1")] {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    create_cm(&client, "kube-system", "sys", &[("team", "a")]).await;
    create_cm(&client, "default", "mine", &[("team", "a")]).await;
    create_cm(&client, "default", "theirs", &[("team", "b")]).await;

    // ConfigMaps cached from "default" only, with a transform; everything else unscoped.
    let transform: controller_runtime::cache::MetaTransform =
        Arc::new(|meta: &mut kube_core::ObjectMeta| {
            meta.annotations
                .get_or_insert_default()
                .insert("cached".into(), "yes".into());
        });
    let options = CacheOptions::default().by_object::<ConfigMap>(
        &(),
        ByObject::default()
            .with_namespaces(namespaces(["default"]))
            .with_transform(transform),
    );
    let cache = Cache::new(client.clone(), options);
    cache
        .index_field::<Pod>(&(), "spec.nodeName", |p: &Pod| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .into_iter()
                .collect()
        })
        .await
        .unwrap();
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    let client = Client::new(cache.clone());

    let on_n1 = client
        .objects::<Pod>()
        .list(&ListOptions::default().fields("spec.nodeName=n1").unwrap())
        .await
        .unwrap();
    assert_eq!(sorted_names(&on_n1), ["p1", "p3"]);
    // An indexed field together with metadata.* requirements: every requirement holds.
    let pod_names = |selector: &'static str| {
        let client = client.clone();
        async move {
            let options = ListOptions::default().fields(selector).unwrap();
            sorted_names(&client.objects::<Pod>().list(&options).await.unwrap())
        }
    };
    assert_eq!(
        pod_names("spec.nodeName=n1,metadata.namespace=default").await,
        ["p1", "p3"]
    );
    assert_eq!(
        pod_names("metadata.namespace=default,spec.nodeName=n1").await,
        ["p1", "p3"]
    );
    assert!(
        pod_names("spec.nodeName=n1,metadata.namespace=kube-system")
            .await
            .is_empty()
    );
    assert_eq!(pod_names("spec.nodeName=n1,metadata.name=p3").await, ["p3"]);
    let unindexed = client
        .objects::<Pod>()
        .list(
            &ListOptions::default()
                .fields("spec.schedulerName=x")
                .unwrap(),
        )
        .await;
    assert!(
        unindexed.is_err(),
        "a field without an index is an error, not a silent full list"
    );

    let cms = client
        .objects::<ConfigMap>()
        .list(&ListOptions::default())
        .await
        .unwrap();
    assert_eq!(
        sorted_names(&cms),
        ["mine", "theirs"],
        "only the default namespace is cached"
    );
    assert!(
        cms.iter()
            .all(|c| c.metadata.annotations.as_ref().unwrap()["cached"] == "yes")
    );
    let team_a = client
        .objects::<ConfigMap>()
        .list(&ListOptions::default().labels("team=a").unwrap())
        .await
        .unwrap();
    assert_eq!(team_a.len(), 1);
    let missing = client
        .objects::<ConfigMap>()
        .get(&ObjectKey::new("kube-system", "sys"))
        .await;
    // Not "not found": the cache does not hold kube-system at all (controller-runtime's
    // "unknown namespace for the cache").
    let err = missing.unwrap_err();
    assert!(
        matches!(
            err,
            controller_runtime::client::Error::Cache(
                controller_runtime::cache::Error::UnknownNamespace { .. }
            )
        ),
        "{err:?}"
    );

    // Metadata only: its own informer, with the ConfigMap options (they are keyed by
    // group/version/kind, as controller-runtime's ByObject).
    let meta = client
        .objects::<PartialObjectMeta<ConfigMap>>()
        .get(&ObjectKey::new("default", "mine"))
        .await
        .unwrap();
    assert_eq!(meta.metadata.labels.as_ref().unwrap()["team"], "a");
    assert_eq!(meta.metadata.annotations.as_ref().unwrap()["cached"], "yes");
    assert_eq!(
        cache.informer_count(),
        3,
        "pods, configmaps, configmap metadata"
    );
    let meta_missing = client
        .objects::<PartialObjectMeta<ConfigMap>>()
        .get(&ObjectKey::new("default", "nothing"))
        .await;
    assert!(meta_missing.unwrap_err().is_not_found());

    // Reads decode the compact default: equal objects, equal to the server's (managedFields
    // included) but for what the transform added; read again before it changes, an object
    // comes from the store's memo, shared.
    let read = || async {
        client
            .objects::<ConfigMap>()
            .get(&ObjectKey::new("default", "mine"))
            .await
            .unwrap()
    };
    let (a, b, c) = (read().await, read().await, read().await);
    assert_eq!(a, b);
    assert!(Arc::ptr_eq(&b, &c));
    let mut held = Api::<ConfigMap>::namespaced(kube.clone(), "default")
        .get("mine")
        .await
        .unwrap();
    held.metadata
        .annotations
        .get_or_insert_default()
        .insert("cached".into(), "yes".into());
    assert_eq!(*a, held);
    // Shared typed storage, on request: reads share the cached allocation.
    let shared = Cache::new(kube, CacheOptions::default().with_default_compact(false));
    shared.start(ctx.clone());
    let key = ObjectKey::new("default", "mine");
    let (a, b) = (
        shared.get::<ConfigMap>(&key).await.unwrap(),
        shared.get::<ConfigMap>(&key).await.unwrap(),
    );
    assert!(Arc::ptr_eq(&a, &b));
    ctx.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_writes_and_errors() {
    let (_server, client) = server().await;
    let cache = Cache::new(client.clone(), CacheOptions::default());
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    let client = Client::new(cache);
    let cms = client.objects::<ConfigMap>();
    let created = cms.create(&cm("default", "w", &[])).await.unwrap();
    assert!(
        cms.create(&cm("default", "w", &[]))
            .await
            .unwrap_err()
            .is_already_exists()
    );
    let mut stale = created.clone();
    let mut fresh = created.clone();
    fresh.data = Some([("a".to_string(), "1".to_string())].into());
    cms.update(&fresh).await.unwrap();
    stale.data = Some([("a".to_string(), "2".to_string())].into());
    assert!(cms.update(&stale).await.unwrap_err().is_conflict());
    let key = ObjectKey::new("default", "w");
    cms.patch(
        &key,
        &Patch::Merge(json!({"data": {"b": "2"}})),
        &PatchParams::default(),
    )
    .await
    .unwrap();
    let read = cms.get_uncached(&key).await.unwrap();
    assert_eq!(read.data.unwrap().len(), 2);
    let bad = cm("default", "Not_A_Name", &[]);
    assert!(cms.create(&bad).await.unwrap_err().is_invalid());
    cms.delete(&key, &DeleteParams::default()).await.unwrap();
    assert!(
        cms.delete(&key, &DeleteParams::default())
            .await
            .unwrap_err()
            .is_not_found()
    );
    ctx.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_scoped_cache_holds_only_the_selection_and_follows_relabels() {
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    create_cm(&client, "default", "in", &[("team", "a")]).await;
    create_cm(&client, "default", "out", &[("team", "b")]).await;
    let options = CacheOptions::default().with_default_label_selector("team=a");
    let cache = Cache::new(client.clone(), options);
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    let objects = Client::new(cache.clone()).objects::<ConfigMap>();
    let names = || async { sorted_names(&objects.list(&ListOptions::default()).await.unwrap()) };
    assert_eq!(names().await, ["in"]);
    // Relabelled into the selection: it arrives; out of it: it leaves.
    set_team(&api, "out", "a").await;
    set_team(&api, "in", "c").await;
    let informer = cache.get_informer::<ConfigMap>().await.unwrap();
    eventually("the cache follows the relabels", || {
        let store = informer.store();
        store.len() == 1 && store.get(&ObjectKey::new("default", "out")).is_some()
    })
    .await;
    assert_eq!(names().await, ["out"]);
    ctx.cancel();
}

/// Creates a namespace through the API server.
async fn create_namespace(client: &kube_client::Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// `namespace/name` of each object, sorted.
fn keys<K: kube_core::Resource>(objects: &[Arc<K>]) -> Vec<String> {
    let mut keys: Vec<String> = objects
        .iter()
        .map(|o| ObjectKey::of(o.as_ref()).to_string())
        .collect();
    keys.sort();
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_namespace_cache_watches_each_namespace_and_merges_reads() {
    let (server, client) = server().await;
    for ns in ["a", "b", "c"] {
        create_namespace(&client, ns).await;
    }
    create_cm(&client, "a", "one", &[]).await;
    create_cm(&client, "b", "two", &[]).await;
    create_cm(&client, "c", "three", &[]).await;

    let options = CacheOptions::default().with_default_namespaces(namespaces(["a", "b"]));
    let cache = Cache::new(client.clone(), options);
    // Two controllers on ConfigMaps: still one informer, one watch per namespace.
    let (log1, log2): (Log, Log) = Default::default();
    let c1 = noop_controller("one", ControllerOptions::default());
    let c2 = noop_controller("two", ControllerOptions::default());
    for (c, log) in [(&c1, &log1), (&c2, &log2)] {
        c.watch(
            Kind::<ConfigMap>::new(cache.clone()),
            logging_handler(log),
            vec![],
        )
        .await
        .unwrap();
    }
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    let running: Vec<_> = [&c1, &c2]
        .into_iter()
        .map(|c| {
            let (c, ctx) = (c.clone(), ctx.clone());
            tokio::spawn(async move { c.start(ctx).await })
        })
        .collect();
    eventually("both controllers see the initial lists of a and b", || {
        [&log1, &log2]
            .iter()
            .all(|log| has(log, "create one") && has(log, "create two"))
    })
    .await;

    // Reads merge the namespaces; c is not cached, and says so.
    let all = cache
        .list::<ConfigMap>(&ListOptions::default())
        .await
        .unwrap();
    assert_eq!(keys(&all), ["a/one", "b/two"]);
    let in_b = cache
        .list::<ConfigMap>(&ListOptions::default().in_namespace("b"))
        .await
        .unwrap();
    assert_eq!(keys(&in_b), ["b/two"]);
    let got = cache
        .get::<ConfigMap>(&ObjectKey::new("a", "one"))
        .await
        .unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("one"));
    let missing = cache
        .get::<ConfigMap>(&ObjectKey::new("a", "nothing"))
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    let err = cache
        .get::<ConfigMap>(&ObjectKey::new("c", "three"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            controller_runtime::cache::Error::UnknownNamespace { .. }
        ),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains("unable to get: c/three because of unknown namespace for the cache")
            && message.contains("a, b"),
        "{message}"
    );
    let err = cache
        .list::<ConfigMap>(&ListOptions::default().in_namespace("c"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unable to list: c"), "{err}");

    // The sources get changes from both watched namespaces, none from c.
    create_cm(&client, "c", "five", &[]).await;
    create_cm(&client, "b", "four", &[]).await;
    Api::<ConfigMap>::namespaced(client.clone(), "a")
        .delete("one", &DeleteParams::default())
        .await
        .unwrap();
    eventually("both controllers see the changes in a and b", || {
        [&log1, &log2]
            .iter()
            .all(|log| has(log, "create four") && has(log, "delete one"))
    })
    .await;
    // "five" (in c) was created before "four": had it been delivered, it would be there now.
    assert!(!has(&log1, "create five") && !has(&log2, "create five"));
    assert_eq!(cache.informer_count(), 1);
    assert_eq!(
        server.storage().watch_count(),
        2,
        "one watch connection per cached namespace, shared by both controllers"
    );

    // A cluster-scoped type ignores the namespaces: one informer, one watch, every object.
    let listed = cache
        .list::<Namespace>(&ListOptions::default())
        .await
        .unwrap();
    let names: Vec<_> = listed
        .iter()
        .filter_map(|n| n.metadata.name.as_deref())
        .collect();
    assert!(
        ["a", "b", "c"].iter().all(|n| names.contains(n)),
        "{names:?}"
    );
    assert_eq!(server.storage().watch_count(), 3);

    ctx.cancel();
    for r in running {
        r.await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_namespace_settings_and_the_all_namespaces_entry() {
    let (server, client) = server().await;
    for ns in ["a", "b"] {
        create_namespace(&client, ns).await;
    }
    create_cm(&client, "a", "a-web", &[("app", "web")]).await;
    create_cm(&client, "a", "a-db", &[("app", "db")]).await;
    create_cm(&client, "b", "b-db", &[("app", "db")]).await;
    create_cm(&client, "default", "d-db", &[("app", "db")]).await;

    // Namespace a: only app=web; every other namespace: everything.
    let mut set = namespaces([ALL_NAMESPACES, "a"]);
    set.insert(
        "a".into(),
        NamespaceConfig::default().with_label_selector("app=web"),
    );
    let options = CacheOptions::default()
        .by_object::<ConfigMap>(&(), ByObject::default().with_namespaces(set));
    let cache = Cache::new(client.clone(), options);
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    let all = cache
        .list::<ConfigMap>(&ListOptions::default())
        .await
        .unwrap();
    let mut expected = vec!["a/a-web", "b/b-db", "default/d-db"];
    let mut got = keys(&all);
    // The embedded server may hold ConfigMaps of its own (kube-root-ca.crt and the like).
    got.retain(|k| !k.ends_with("kube-root-ca.crt"));
    expected.sort();
    assert_eq!(got, expected);
    // Every namespace is covered (by the "" entry): a get in b answers.
    assert!(
        cache
            .get::<ConfigMap>(&ObjectKey::new("b", "b-db"))
            .await
            .is_ok()
    );
    assert_eq!(server.storage().watch_count(), 2);
    ctx.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_types_read_and_index_like_shared_ones() {
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    create_cm(&client, "default", "a", &[("team", "x")]).await;
    create_cm(&client, "default", "b", &[("team", "y")]).await;
    // Every type compact by default; Pods shared on their own setting.
    let options = CacheOptions::default()
        .with_default_compact(true)
        .by_object::<Pod>(&(), ByObject::default().with_compact(false));
    let cache = Cache::new(client.clone(), options);
    cache
        .index_field::<ConfigMap>(&(), "team", |c: &ConfigMap| {
            c.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("team").cloned())
                .into_iter()
                .collect()
        })
        .await
        .unwrap();
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    let informer = cache.get_informer::<ConfigMap>().await.unwrap();
    assert!(informer.store().is_compact());
    assert!(
        !cache
            .get_informer::<Pod>()
            .await
            .unwrap()
            .store()
            .is_compact()
    );
    // A controller on the compact type sees every change.
    let (controller, log) = logging_configmap_controller("compact", &cache).await;
    let run = tokio::spawn({
        let (controller, ctx) = (controller.clone(), ctx.clone());
        async move { controller.start(ctx).await }
    });
    eventually("the initial objects reach the controller", || {
        has(&log, "create a") && has(&log, "create b")
    })
    .await;

    let cr_client = Client::new(cache.clone());
    let objects = cr_client.objects::<ConfigMap>();
    let list_names = |options: ListOptions| {
        let cr_client = cr_client.clone();
        async move {
            sorted_names(
                &cr_client
                    .objects::<ConfigMap>()
                    .list(&options)
                    .await
                    .unwrap(),
            )
        }
    };
    assert_eq!(list_names(ListOptions::default()).await, ["a", "b"]);
    assert_eq!(
        list_names(ListOptions::default().labels("team=y").unwrap()).await,
        ["b"]
    );
    assert_eq!(
        list_names(ListOptions::default().fields("team=x").unwrap()).await,
        ["a"]
    );
    // Reads are decoded copies of what the server holds; read again before it changes, an
    // object comes from the store's memo, shared.
    let server_a = api.get("a").await.unwrap();
    let read = objects.get(&ObjectKey::new("default", "a")).await.unwrap();
    assert_eq!(*read, server_a);
    let again = objects.get(&ObjectKey::new("default", "a")).await.unwrap();
    assert_eq!(read, again);
    assert!(Arc::ptr_eq(
        &again,
        &objects.get(&ObjectKey::new("default", "a")).await.unwrap()
    ));
    // An update moves the object within the index; a delete leaves every read.
    set_team(&api, "a", "y").await;
    api.delete("b", &DeleteParams::default()).await.unwrap();
    eventually("the update and the delete reach the controller", || {
        has(&log, "update a") && has(&log, "delete b")
    })
    .await;
    // The memoized object is not served after the update: every read has the new labels.
    for _ in 0..3 {
        let read = objects.get(&ObjectKey::new("default", "a")).await.unwrap();
        assert_eq!(read.metadata.labels.as_ref().unwrap()["team"], "y");
    }
    assert_eq!(
        list_names(ListOptions::default().fields("team=y").unwrap()).await,
        ["a"]
    );
    assert!(
        list_names(ListOptions::default().fields("team=x").unwrap())
            .await
            .is_empty()
    );
    assert!(objects.get(&ObjectKey::new("default", "b")).await.is_err());
    ctx.cancel();
    run.await.unwrap().unwrap();
}

/// `strip_managed_fields()` drops managedFields on every storage path: cut from the JSON as
/// received (compact storage, no other transform), from typed objects (shared storage), and
/// after a type's own transform; on the initial list and on later watch events alike. Without
/// it, the same compact cache keeps them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strip_managed_fields_drops_them_on_every_storage_path() {
    use controller_runtime::cache::strip_managed_fields;
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    create_cm(&client, "default", "a", &[("team", "x")]).await;
    assert!(
        api.get("a")
            .await
            .unwrap()
            .metadata
            .managed_fields
            .is_some()
    );
    let strip = || CacheOptions::default().with_default_transform(strip_managed_fields());
    let caches = [
        ("compact, raw", strip(), true),
        ("shared", strip().with_default_compact(false), true),
        (
            "compact, with a typed transform",
            strip().by_object::<ConfigMap>(
                &(),
                ByObject::default().with_typed_transform(|cm: &mut ConfigMap| {
                    cm.data
                        .get_or_insert_default()
                        .insert("seen".into(), "yes".into());
                }),
            ),
            true,
        ),
        ("compact, no transform", CacheOptions::default(), false),
    ];
    let ctx = CancellationToken::new();
    let mut readers = Vec::new();
    for (what, options, strips) in caches {
        let cache = Cache::new(client.clone(), options);
        cache.start(ctx.clone());
        readers.push((what, Client::new(cache), strips));
    }
    let key = ObjectKey::new("default", "a");
    let expect = |what: &str, read: &ConfigMap, strips: bool, server: &ConfigMap| {
        assert_eq!(read.metadata.managed_fields.is_none(), strips, "{what}");
        let mut read = read.clone();
        let mut server = server.clone();
        read.metadata.managed_fields = None;
        server.metadata.managed_fields = None;
        if let Some(data) = read.data.as_mut() {
            data.remove("seen");
        }
        read.data = read.data.filter(|d| !d.is_empty());
        assert_eq!(read, server, "{what}: everything else as the server has it");
    };
    let server_a = api.get("a").await.unwrap();
    for (what, reader, strips) in &readers {
        let read = reader.objects::<ConfigMap>().get(&key).await.unwrap();
        expect(what, &read, *strips, &server_a);
    }
    // A watch event takes the same path.
    set_team(&api, "a", "y").await;
    let server_a = api.get("a").await.unwrap();
    for (what, reader, strips) in &readers {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let read = loop {
            let read = reader.objects::<ConfigMap>().get(&key).await.unwrap();
            if read.metadata.resource_version == server_a.metadata.resource_version {
                break read;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{what}: the update never arrived"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        expect(what, &read, *strips, &server_a);
    }
    ctx.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_informer_pages_through_raw_lists_and_metadata_only_lists() {
    use controller_runtime::cache::{ApiListWatch, Informer, InformerConfig, Storage};
    let (_server, client) = server().await;
    for i in 0..5 {
        create_cm(
            &client,
            "default",
            &format!("cm{i}"),
            &[("n", &i.to_string())],
        )
        .await;
    }
    // Paginated raw lists (two objects a page, so continue tokens are followed), then a watch.
    let config = InformerConfig::<ConfigMap>::default()
        .with_streaming_list(false)
        .with_page_size(2)
        .with_storage(Storage::compact());
    let informer = Informer::new(
        ApiListWatch::<ConfigMap>::new(client.clone(), &(), Some("default")),
        config,
    );
    let ctx = CancellationToken::new();
    let run = spawn_informer(&informer, &ctx);
    informer.wait_for_sync().await;
    let store = informer.store();
    assert_eq!(store.len(), 5);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        *store.get(&ObjectKey::new("default", "cm3")).unwrap(),
        api.get("cm3").await.unwrap()
    );
    create_cm(&client, "default", "late", &[]).await;
    eventually("a watched create reaches the compact store", || {
        store.get(&ObjectKey::new("default", "late")).is_some()
    })
    .await;
    ctx.cancel();
    run.await.unwrap();

    // Metadata-only objects, compact, streaming.
    let config =
        InformerConfig::<PartialObjectMeta<ConfigMap>>::default().with_storage(Storage::compact());
    let informer = Informer::new(
        ApiListWatch::<PartialObjectMeta<ConfigMap>>::new(client.clone(), &(), Some("default")),
        config,
    );
    let ctx = CancellationToken::new();
    let run = spawn_informer(&informer, &ctx);
    informer.wait_for_sync().await;
    let meta = informer
        .store()
        .get(&ObjectKey::new("default", "cm1"))
        .unwrap();
    assert_eq!(
        meta.metadata
            .labels
            .as_ref()
            .unwrap()
            .get("n")
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(informer.store().len(), 6);
    ctx.cancel();
    run.await.unwrap();
}

/// The process-wide count of streaming lists that fell back to a paginated list, as scraped.
fn streaming_list_fallbacks() -> u64 {
    let mut registry = prometheus_client::registry::Registry::default();
    controller_runtime::metrics::Metrics::register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("controller_runtime_informer_streaming_list_fallbacks_total "))
        .unwrap_or_else(|| panic!("no fallback counter in {text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Log lines written while the guard lives (this thread only: the test runs on one thread).
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_withheld_initial_events_end_bookmark_falls_back_to_a_list_within_the_bound() {
    use controller_runtime::cache::{ApiListWatch, Informer, InformerConfig};
    let logs = Logs::default();
    let writer = logs.clone();
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish(),
    );
    let (server, client) = server().await;
    create_cm(&client, "default", "a", &[]).await;
    create_cm(&client, "default", "b", &[]).await;
    let config =
        InformerConfig::<ConfigMap>::default().with_initial_events_timeout(Duration::from_secs(1));
    let informer_over_default = || {
        Informer::new(
            ApiListWatch::<ConfigMap>::new(client.clone(), &(), Some("default")),
            config.clone(),
        )
    };
    let generous = Duration::from_secs(30);

    // Fault off: the streaming list ends with its bookmark, no fallback.
    let before = streaming_list_fallbacks();
    let informer = informer_over_default();
    let ctx = CancellationToken::new();
    let run = spawn_informer(&informer, &ctx);
    tokio::time::timeout(generous, informer.wait_for_sync())
        .await
        .expect("synced by streaming");
    assert_eq!(informer.store().len(), 2);
    ctx.cancel();
    run.await.unwrap();
    assert_eq!(streaming_list_fallbacks(), before);
    assert!(!logs_say(&logs, "falling back"), "{}", logs_text(&logs));

    // Fault on: a quiet resource's streaming list never ends; the informer lists instead.
    server.faults().withhold_initial_events_end(true);
    let informer = informer_over_default();
    let ctx = CancellationToken::new();
    let run = spawn_informer(&informer, &ctx);
    tokio::time::timeout(generous, informer.wait_for_sync())
        .await
        .expect("synced by a paginated list after the bound");
    assert_eq!(informer.store().len(), 2);
    assert_eq!(streaming_list_fallbacks(), before + 1);
    assert!(
        logs_say(&logs, "no initial-events-end bookmark in time"),
        "{}",
        logs_text(&logs)
    );
    // And it watches on from the list.
    create_cm(&client, "default", "c", &[]).await;
    let store = informer.store();
    eventually("a create after the fallback reaches the store", || {
        store.get(&ObjectKey::new("default", "c")).is_some()
    })
    .await;
    ctx.cancel();
    run.await.unwrap();
    server.faults().withhold_initial_events_end(false);
}

fn logs_text(logs: &Logs) -> String {
    String::from_utf8_lossy(&logs.0.lock()).into_owned()
}

fn logs_say(logs: &Logs, what: &str) -> bool {
    logs_text(logs).contains(what)
}
