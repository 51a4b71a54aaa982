//! Cluster-aware controllers on fleets of embedded API servers (`multicluster`): a member
//! engaged at run time is reconciled; a removed member's in-flight reconcile is waited for, its
//! queued keys are dropped, its cache stops and nothing of it is reconciled afterwards; a watch
//! in a member enqueues a reconcile in the hub; an existing single-cluster reconciler runs per
//! cluster unchanged; the directory, kubeconfig Secret and namespace providers engage and
//! disengage as files, Secrets and namespaces come and go.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use controller_runtime::ObjectKey;
use controller_runtime::controller::ControllerOptions;
use controller_runtime::envtest::Environment;
use controller_runtime::handler::EnqueueRequestsFromMapFunc;
use controller_runtime::manager::{BindAddress, Manager as LocalManager, ManagerOptions};
use controller_runtime::multicluster::providers::{
    CLUSTER_ANNOTATION, CLUSTER_LEASE_LABEL, CLUSTER_PROFILE_KUBECONFIG_KEY, CLUSTER_PROFILE_LABEL,
    CONSUMER_LABEL, CONTROL_PLANE_HEALTHY, ClusterProfiles, ClusterSet, Directory, Fleet,
    KUBECONFIG_SECRET_LABEL, KubeconfigSecrets, Namespaces, Sharded,
};
use controller_runtime::multicluster::{
    Aware, Cluster, ClusterRequest, ControllerBuilder, EngageOptions, LOCAL_CLUSTER, Manager,
    Provider,
};
use controller_runtime::reconcile::{self, Action};
use controller_runtime::sharding::{ShardingOptions, assign};
use controller_runtime::{CancellationToken, Request};
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube_client::Api;
use kube_client::api::ListParams;
use kube_client::api::{DeleteParams, PostParams};
use kube_core::ResourceExt;
use parking_lot::Mutex;
use tokio::sync::Semaphore;

/// Generous: the suite runs in debug builds beside other tests; nothing here measures speed.
const WAIT: Duration = Duration::from_secs(60);

fn quiet_options() -> ManagerOptions {
    ManagerOptions::default()
        .with_metrics_bind_address(BindAddress::Disabled)
        .with_graceful_shutdown_timeout(Duration::from_secs(5))
}

async fn create_cm(client: &kube_client::Client, ns: &str, name: &str) {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    api.create(&PostParams::default(), &cm).await.unwrap();
}

/// Waits until `done` holds, checking every 10 ms, for at most [`WAIT`].
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(WAIT, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "timed out waiting for {what}");
}

type Seen = Arc<Mutex<Vec<(String, String)>>>;

fn seen_in(seen: &Seen, cluster: &str, name: &str) -> bool {
    seen.lock().iter().any(|(c, n)| c == cluster && n == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_engage_at_run_time_and_leave_without_a_trace() {
    let hub = Environment::new().start().await.unwrap();
    let fleet = Fleet::new();
    fleet.add_member("member-1").await.unwrap();
    let local = LocalManager::new(hub.client(), quiet_options()).unwrap();
    let mgr = Manager::new(local, Some(Arc::new(fleet.clone()))).unwrap();

    // One worker: a blocked reconcile holds every other key in the queue.
    let seen: Seen = Arc::default();
    let gate = Arc::new(Semaphore::new(0));
    // Set once the reconcile of `slow` holds the one worker.
    let blocked = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let controller = ControllerBuilder::new(&mgr)
        .with_options(ControllerOptions::default().with_max_concurrent_reconciles(1))
        .for_::<ConfigMap>()
        .complete({
            let (seen, gate, blocked) = (seen.clone(), gate.clone(), blocked.clone());
            move |req: ClusterRequest, cluster, _ctx| {
                let (seen, gate, blocked) = (seen.clone(), gate.clone(), blocked.clone());
                async move {
                    assert_eq!(cluster.name(), &req.cluster);
                    // the reconciler reads through the request's cluster
                    let cm = cluster.client().objects::<ConfigMap>().get(&req.key).await;
                    if cm.is_ok() && req.key.name.starts_with("slow") {
                        blocked.store(true, std::sync::atomic::Ordering::SeqCst);
                        let _ = gate.acquire().await.unwrap();
                    }
                    seen.lock()
                        .push((req.cluster.to_string(), req.key.name.clone()));
                    Ok(Action::done())
                }
            }
        })
        .await
        .unwrap();

    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });

    let m1 = fleet.client("member-1").unwrap();
    create_cm(&m1, "default", "one").await;
    until("member-1's reconcile", || seen_in(&seen, "member-1", "one")).await;
    assert_eq!(mgr.clusters(), ["member-1".into()]);

    // A member joining at run time is engaged and reconciled.
    let m2 = fleet.add_member("member-2").await.unwrap();
    create_cm(&m2, "default", "two").await;
    until("member-2's reconcile", || seen_in(&seen, "member-2", "two")).await;
    assert_eq!(
        controller.clusters(),
        ["member-1".into(), "member-2".into()]
    );
    let member_2 = mgr.get_cluster("member-2").unwrap();
    assert!(member_2.cache().informer_count() > 0);

    // A reconcile of member-2 blocks the one worker; more of its keys wait in its lane.
    create_cm(&m2, "default", "slow").await;
    for i in 0..5 {
        create_cm(&m2, "default", &format!("queued-{i}")).await;
    }
    until(
        "slow's reconcile running, member-2's other keys queued",
        || {
            blocked.load(std::sync::atomic::Ordering::SeqCst)
                && controller.queue().len_of("member-2") == Some(5)
        },
    )
    .await;

    // Removing member-2 waits for its running reconcile...
    let removing = tokio::spawn({
        let fleet = fleet.clone();
        async move { fleet.remove_member("member-2").await }
    });
    until("member-2 forgotten by the manager", || {
        mgr.get_cluster("member-2").is_err()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !removing.is_finished(),
        "disengage waits for the running reconcile"
    );
    gate.add_permits(1);
    assert!(removing.await.unwrap().unwrap());

    // ...then nothing of member-2 is left: no lane, no engagement, a stopped cache.
    assert_eq!(controller.queue().len_of("member-2"), None);
    assert_eq!(controller.clusters(), ["member-1".into()]);
    assert_eq!(mgr.clusters(), ["member-1".into()]);
    assert_eq!(mgr.metrics().engaged_clusters(), 1);
    tokio::time::timeout(WAIT, member_2.cache().stopped())
        .await
        .expect("member-2's informers stopped");

    // The queue goes on with member-1; member-2's queued keys never ran.
    create_cm(&m1, "default", "after").await;
    until("member-1's reconcile after the removal", || {
        seen_in(&seen, "member-1", "after")
    })
    .await;
    assert!(seen_in(&seen, "member-2", "slow"));
    let late: Vec<_> = (seen.lock().iter())
        .filter(|(c, n)| c == "member-2" && n.starts_with("queued"))
        .cloned()
        .collect();
    assert_eq!(late, Vec::<(String, String)>::new());
    assert!(mgr.metrics().reconciles("configmap", "member-1", "success") >= 2);

    stop.cancel();
    run.await.unwrap().unwrap();
    fleet.stop().await.unwrap();
    hub.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_watch_reconciles_the_hub_and_single_cluster_reconcilers_run_per_cluster() {
    let hub = Environment::new().start().await.unwrap();
    let fleet = Fleet::new();
    fleet.add_members(2).await.unwrap();
    let local = LocalManager::new(hub.client(), quiet_options()).unwrap();
    let mgr = Manager::new(local, Some(Arc::new(fleet.clone()))).unwrap();

    // The hub's ConfigMaps, reconciled again when a member's labelled Secret changes: the
    // reconcile counts the Secrets of every member into the hub's ConfigMap.
    let hub_seen: Seen = Arc::default();
    ControllerBuilder::new(&mgr)
        .named("aggregate")
        .with_engage_options(EngageOptions::default().with_local_cluster(true))
        .for_in::<ConfigMap>(EngageOptions::default().with_provider_clusters(false))
        .watches::<Secret, _>(
            EngageOptions::default().with_local_cluster(false),
            |_member| {
                EnqueueRequestsFromMapFunc::new(|s: &Secret| {
                    let summary = s.labels().get("summary")?;
                    Some(ClusterRequest::new(
                        LOCAL_CLUSTER,
                        Request::new("default", summary),
                    ))
                })
            },
        )
        .complete({
            let (mgr, hub_seen) = (mgr.clone(), hub_seen.clone());
            move |req: ClusterRequest, cluster, _ctx| {
                let (mgr, hub_seen) = (mgr.clone(), hub_seen.clone());
                async move {
                    assert!(cluster.is_local());
                    let mut count = 0;
                    for member in mgr.clusters() {
                        let secrets = mgr.get_cluster(&member)?.client().objects::<Secret>();
                        count += secrets
                            .list(&Default::default())
                            .await?
                            .iter()
                            .filter(|s| s.labels().contains_key("summary"))
                            .count();
                    }
                    hub_seen
                        .lock()
                        .push((req.key.name.clone(), count.to_string()));
                    Ok(Action::done())
                }
            }
        })
        .await
        .unwrap();

    // An existing single-cluster reconciler, made once per member with its client.
    let per_cluster: Seen = Arc::default();
    ControllerBuilder::new(&mgr)
        .named("existing")
        .for_::<ConfigMap>()
        .complete_per_cluster({
            let per_cluster = per_cluster.clone();
            move |cluster| {
                let (name, per_cluster) = (cluster.name().to_string(), per_cluster.clone());
                reconcile::from_fn(move |req: Request, _ctx| {
                    per_cluster.lock().push((name.clone(), req.name));
                    async { Ok(Action::done()) }
                })
            }
        })
        .await
        .unwrap();

    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });

    for member in ["member-1", "member-2"] {
        let mut secret = Secret::default();
        secret.metadata.name = Some(format!("status-of-{member}"));
        secret.metadata.labels = Some(BTreeMap::from([("summary".into(), "fleet".into())]));
        let api: Api<Secret> = Api::namespaced(fleet.client(member).unwrap(), "default");
        api.create(&PostParams::default(), &secret).await.unwrap();
    }
    until("the hub's reconcile seeing both members", || {
        seen_in(&hub_seen, "fleet", "2")
    })
    .await;

    create_cm(&fleet.client("member-2").unwrap(), "default", "plain").await;
    until("the per-cluster reconciler in member-2", || {
        seen_in(&per_cluster, "member-2", "plain")
    })
    .await;
    // without a provider cluster filter and no local engagement, the hub is not watched
    assert!(!per_cluster.lock().iter().any(|(c, _)| c.is_empty()));

    stop.cancel();
    run.await.unwrap().unwrap();
    fleet.stop().await.unwrap();
    hub.stop().await.unwrap();
}

/// A controller recording every ConfigMap reconcile as (cluster, namespace/name).
/// A manager on the hub with `provider`, running a controller that records every request
/// it reconciles (see [`recording`]); stopped by cancelling the token, its run awaited.
async fn run_recording(
    hub: kube_client::Client,
    provider: impl Provider,
) -> (
    Manager,
    Seen,
    CancellationToken,
    tokio::task::JoinHandle<Result<(), controller_runtime::manager::Error>>,
) {
    let local = LocalManager::new(hub, quiet_options()).unwrap();
    let mgr = Manager::new(local, Some(Arc::new(provider))).unwrap();
    let seen = recording(&mgr).await;
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    (mgr, seen, stop, run)
}

async fn recording(mgr: &Manager) -> Seen {
    let seen: Seen = Arc::default();
    ControllerBuilder::new(mgr)
        .for_::<ConfigMap>()
        .complete({
            let seen = seen.clone();
            move |req: ClusterRequest, _cluster, _ctx| {
                seen.lock()
                    .push((req.cluster.to_string(), req.key.to_string()));
                async { Ok(Action::done()) }
            }
        })
        .await
        .unwrap();
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubeconfig_file_engages_its_cluster_until_it_is_removed() {
    let hub = Environment::new().start().await.unwrap();
    let member = Environment::new().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let provider = Directory::new(dir.path()).with_interval(Duration::from_millis(20));
    let (mgr, seen, stop, run) = run_recording(hub.client(), provider).await;

    // JSON is YAML: the member's kubeconfig as a file, plus files that are no clusters.
    let file = dir.path().join("edge-1.kubeconfig");
    std::fs::write(&file, serde_json::to_vec(member.kubeconfig()).unwrap()).unwrap();
    std::fs::write(dir.path().join(".hidden"), b"not read").unwrap();
    std::fs::write(dir.path().join("broken.yaml"), b"{ not a kubeconfig").unwrap();
    until("edge-1 engaged", || mgr.clusters() == ["edge-1".into()]).await;
    create_cm(&member.client(), "default", "from-file").await;
    until("edge-1 reconciled", || {
        seen_in(&seen, "edge-1", "default/from-file")
    })
    .await;

    std::fs::remove_file(&file).unwrap();
    // The gauge drops once the disengagement has finished (the cluster's cache stopped),
    // after the manager has forgotten the cluster.
    until("edge-1 disengaged", || {
        mgr.clusters().is_empty() && mgr.metrics().engaged_clusters() == 0
    })
    .await;

    stop.cancel();
    run.await.unwrap().unwrap();
    member.stop().await.unwrap();
    hub.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_are_virtual_clusters_with_caches_of_their_own() {
    let hub = Environment::new().start().await.unwrap();
    let provider = Namespaces::new(hub.client())
        .with_label_selector("tenant")
        .with_interval(Duration::from_millis(20));
    let (mgr, seen, stop, run) = run_recording(hub.client(), provider).await;

    let namespaces: Api<Namespace> = Api::all(hub.client());
    for name in ["team-a", "team-b"] {
        let mut ns = Namespace::default();
        ns.metadata.name = Some(name.into());
        ns.metadata.labels = Some(BTreeMap::from([("tenant".into(), name.into())]));
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    until("both tenants engaged", || {
        mgr.clusters() == ["team-a".into(), "team-b".into()]
    })
    .await;
    create_cm(&hub.client(), "team-a", "config").await;
    until("team-a's reconcile", || {
        seen_in(&seen, "team-a", "team-a/config")
    })
    .await;
    // team-b's cache holds team-b only: team-a's ConfigMap is no request of team-b
    assert!(
        !seen
            .lock()
            .iter()
            .any(|(c, n)| c == "team-b" && n.starts_with("team-a/"))
    );

    namespaces
        .delete("team-b", &DeleteParams::default())
        .await
        .unwrap();
    until("team-b disengaged", || mgr.clusters() == ["team-a".into()]).await;

    stop.cancel();
    run.await.unwrap().unwrap();
    hub.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubeconfig_secret_in_the_hub_engages_its_cluster_until_deleted() {
    let hub = Environment::new().start().await.unwrap();
    let member = Environment::new().start().await.unwrap();
    let provider =
        KubeconfigSecrets::new(hub.client(), "default").with_interval(Duration::from_millis(20));
    let (mgr, seen, stop, run) = run_recording(hub.client(), provider).await;

    let secrets: Api<Secret> = Api::namespaced(hub.client(), "default");
    let kubeconfig = serde_json::to_string(member.kubeconfig()).unwrap();
    for (name, label) in [("edge-2", "true"), ("unlabelled", "false")] {
        let mut secret = Secret::default();
        secret.metadata.name = Some(name.into());
        secret.metadata.labels = Some(BTreeMap::from([(
            KUBECONFIG_SECRET_LABEL.into(),
            label.into(),
        )]));
        secret.string_data = Some(BTreeMap::from([("kubeconfig".into(), kubeconfig.clone())]));
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    until("edge-2 engaged", || mgr.clusters() == ["edge-2".into()]).await;
    create_cm(&member.client(), "default", "from-secret").await;
    until("edge-2 reconciled", || {
        seen_in(&seen, "edge-2", "default/from-secret")
    })
    .await;

    secrets
        .delete("edge-2", &DeleteParams::default())
        .await
        .unwrap();
    until("edge-2 disengaged", || mgr.clusters().is_empty()).await;

    stop.cancel();
    run.await.unwrap().unwrap();
    member.stop().await.unwrap();
    hub.stop().await.unwrap();
}

/// Records which replica engages which cluster, and every moment two engage the same one.
struct Recorder {
    replica: &'static str,
    engaged: Arc<Mutex<BTreeMap<String, &'static str>>>,
    overlaps: Arc<Mutex<Vec<String>>>,
}

impl Aware for Recorder {
    fn engage(
        &self,
        _ctx: CancellationToken,
        cluster: Cluster,
    ) -> BoxFuture<'_, Result<(), controller_runtime::multicluster::Error>> {
        Box::pin(async move {
            let name = cluster.name().to_string();
            let mut engaged = self.engaged.lock();
            if let Some(other) = engaged.get(&name).filter(|r| **r != self.replica) {
                (self.overlaps.lock()).push(format!("{name}: {other} and {}", self.replica));
            }
            engaged.insert(name, self.replica);
            Ok(())
        })
    }

    fn disengage<'a>(&'a self, cluster: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let mut engaged = self.engaged.lock();
            let mine = engaged.get(cluster) == Some(&self.replica);
            if mine {
                engaged.remove(cluster);
            }
            mine
        })
    }
}

/// Three replicas of one operator divide ten clusters through Leases in the hub: every
/// cluster is engaged by exactly one replica, each replica has a share, and when one stops (or
/// dies without releasing its Leases) its clusters move to the others, never engaged by two
/// at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_divide_the_clusters_and_take_over_a_stopped_ones() {
    let hub = Environment::new().start().await.unwrap();
    let engaged: Arc<Mutex<BTreeMap<String, &'static str>>> = Arc::default();
    let overlaps: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut replicas = Vec::new();
    for replica in ["replica-a", "replica-b", "replica-c"] {
        let set = ClusterSet::new();
        for i in 0..10 {
            set.add(format!("cluster-{i}"), hub.client()).await.unwrap();
        }
        let options = ShardingOptions::default()
            .with_replica(replica)
            .with_lease_duration(Duration::from_secs(2))
            .with_renew_period(Duration::from_millis(200))
            .with_assign_period(Duration::from_millis(200));
        let sharded = Sharded::new("fleet", set, hub.client(), options).unwrap();
        let recorder = Arc::new(Recorder {
            replica,
            engaged: engaged.clone(),
            overlaps: overlaps.clone(),
        });
        let ctx = CancellationToken::new();
        let task = tokio::spawn({
            let ctx = ctx.clone();
            async move {
                sharded
                    .start(ctx, recorder)
                    .await
                    .map_err(|e| e.to_string())
            }
        });
        replicas.push((replica, ctx, task));
    }
    // The clusters go where rendezvous hashing over the live replicas puts them.
    let assigned = |replicas: &[&'static str]| -> BTreeMap<String, &'static str> {
        (0..10)
            .map(|i| {
                let cluster = format!("cluster-{i}");
                let key = ObjectKey::new("", cluster.as_str());
                let replica = replicas
                    .iter()
                    .copied()
                    .find(|r| Some(*r) == assign(&key, replicas))
                    .unwrap();
                (cluster, replica)
            })
            .collect()
    };
    let all = assigned(&["replica-a", "replica-b", "replica-c"]);
    let shares: std::collections::BTreeSet<_> = all.values().collect();
    assert_eq!(shares.len(), 3, "each replica has a share: {all:?}");
    until("every cluster engaged by its replica", || {
        *engaged.lock() == all
    })
    .await;
    // Steady: nothing moves while the ring does not change.
    let before = engaged.lock().clone();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(*engaged.lock(), before);

    // The Leases: one per cluster, held by the replica that engages it.
    let leases: Api<Lease> = Api::namespaced(hub.client(), "default");
    let held = leases
        .list(&ListParams::default().labels(&format!("{CLUSTER_LEASE_LABEL}=fleet")))
        .await
        .unwrap();
    assert_eq!(held.items.len(), 10);
    for lease in &held.items {
        let cluster = &lease.annotations()[CLUSTER_ANNOTATION];
        let holder = lease.spec.as_ref().unwrap().holder_identity.as_deref();
        assert_eq!(holder, before.get(cluster).copied(), "{cluster}");
    }

    // replica-b stops: its clusters go to the other two once its ring Lease expires.
    let (_, ctx, task) = replicas.remove(1);
    ctx.cancel();
    task.await.unwrap().unwrap();
    // Only replica-b's clusters move.
    let two = assigned(&["replica-a", "replica-c"]);
    for (cluster, replica) in &all {
        if *replica != "replica-b" {
            assert_eq!(two[cluster], *replica, "{cluster} would move needlessly");
        }
    }
    until("replica-b's clusters taken over", || *engaged.lock() == two).await;

    // replica-c dies: no release, its Leases and its ring Lease expire, replica-a takes all.
    let (_, _, task) = replicas.remove(1);
    task.abort();
    let _ = task.await;
    engaged.lock().retain(|_, r| *r != "replica-c");
    let one = assigned(&["replica-a"]);
    until("replica-c's clusters taken over", || *engaged.lock() == one).await;
    let held = leases
        .list(&ListParams::default().labels(&format!("{CLUSTER_LEASE_LABEL}=fleet")))
        .await
        .unwrap();
    assert!(
        held.items
            .iter()
            .all(|l| { l.spec.as_ref().unwrap().holder_identity.as_deref() == Some("replica-a") })
    );
    for (_, ctx, task) in replicas {
        ctx.cancel();
        task.await.unwrap().unwrap();
    }
    assert!(engaged.lock().is_empty(), "{:?}", engaged.lock());
    assert!(overlaps.lock().is_empty(), "{:?}", overlaps.lock());
}

/// The Cluster Inventory API: a ClusterProfile in the hub engages its cluster once its control
/// plane is healthy and the kubeconfig Secret for this consumer exists, named
/// `<namespace>/<name>`, and the profile's deletion disengages it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_profile_engages_its_cluster_once_healthy_until_deleted() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube_client::api::{ApiResource, DynamicObject, Patch, PatchParams};

    let hub = Environment::new().start().await.unwrap();
    let member = Environment::new().start().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(hub.client());
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "clusterprofiles.multicluster.x-k8s.io"},
        "spec": {"group": "multicluster.x-k8s.io", "scope": "Namespaced",
            "names": {"plural": "clusterprofiles", "singular": "clusterprofile",
                "kind": "ClusterProfile", "listKind": "ClusterProfileList"},
            "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]},
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let ar = ApiResource {
        group: "multicluster.x-k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "multicluster.x-k8s.io/v1alpha1".into(),
        kind: "ClusterProfile".into(),
        plural: "clusterprofiles".into(),
    };
    let profiles: Api<DynamicObject> = Api::namespaced_with(hub.client(), "default", &ar);

    let provider =
        ClusterProfiles::new(hub.client(), "my-operator").with_interval(Duration::from_millis(20));
    let (mgr, seen, stop, run) = run_recording(hub.client(), provider).await;

    let mut profile = DynamicObject::new("member-a", &ar).within("default");
    profile.data = serde_json::json!({"spec": {"clusterManager": {"name": "test"}}});
    let created = tokio::time::timeout(WAIT, async {
        loop {
            match profiles.create(&PostParams::default(), &profile).await {
                Ok(p) => return p,
                // The CRD's resource is served a moment after it is created.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    })
    .await
    .expect("the ClusterProfile is created");
    assert_eq!(created.metadata.name.as_deref(), Some("member-a"));
    // Its kubeconfig Secret for this consumer, and another consumer's (ignored).
    let secrets: Api<Secret> = Api::namespaced(hub.client(), "default");
    let kubeconfig = serde_json::to_string(member.kubeconfig()).unwrap();
    for consumer in ["my-operator", "someone-else"] {
        let mut secret = Secret::default();
        secret.metadata.name = Some(format!("member-a-{consumer}"));
        secret.metadata.labels = Some(BTreeMap::from([
            (CONSUMER_LABEL.into(), consumer.into()),
            (CLUSTER_PROFILE_LABEL.into(), "member-a".into()),
        ]));
        secret.string_data = Some(BTreeMap::from([(
            CLUSTER_PROFILE_KUBECONFIG_KEY.into(),
            kubeconfig.clone(),
        )]));
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    // Not healthy yet: not engaged.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(mgr.clusters().is_empty(), "{:?}", mgr.clusters());

    let healthy = serde_json::json!({"status": {"conditions": [{
        "type": CONTROL_PLANE_HEALTHY, "status": "True", "reason": "Healthy",
        "message": "", "lastTransitionTime": "2026-11-28T00:00:00Z"}]}});
    profiles
        .patch_status("member-a", &PatchParams::default(), &Patch::Merge(&healthy))
        .await
        .unwrap();
    until("default/member-a engaged", || {
        mgr.clusters() == ["default/member-a".into()]
    })
    .await;
    create_cm(&member.client(), "default", "from-profile").await;
    until("default/member-a reconciled", || {
        seen_in(&seen, "default/member-a", "default/from-profile")
    })
    .await;

    profiles
        .delete("member-a", &DeleteParams::default())
        .await
        .unwrap();
    until("default/member-a disengaged", || mgr.clusters().is_empty()).await;

    stop.cancel();
    run.await.unwrap().unwrap();
    member.stop().await.unwrap();
    hub.stop().await.unwrap();
}
