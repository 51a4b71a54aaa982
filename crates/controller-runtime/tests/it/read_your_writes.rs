//! Reads that see your own writes, and expectations, against the embedded API server: cached
//! gets and lists after the client's writes, with the server holding watch events back
//! (`Faults::hold_watch_events`) so that the informer is behind deterministically, never by
//! timing; a controller writing status twice per reconcile without a conflict; and the
//! duplicate-create race, shown with expectations off and fixed with them on.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use controller_runtime::ObjectKey;
use controller_runtime::builder::{ControllerBuilder, Input};
use controller_runtime::cache::{Cache, CacheOptions, ListOptions, ReadYourWrites};
use controller_runtime::client::{Client, Error};
use controller_runtime::controllerutil::{Expectations, set_controller_reference};
use controller_runtime::handler::EnqueueRequestForOwner;
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::reconcile::{Action, ReconcileContext, ReconcileError};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_client::api::{DeleteParams, ListParams};
use kube_client::core::ObjectMeta;
use support::server;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

/// A client on a started cache with these read-your-writes options, its ConfigMap informer
/// synced (so writes are recorded: a cache without an informer for a kind lists after them).
async fn client(kube: &kube_client::Client, ryow: ReadYourWrites) -> (Client, CancellationToken) {
    let cache = Cache::new(
        kube.clone(),
        CacheOptions::default().with_read_your_writes(ryow),
    );
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    let client = Client::new(cache);
    client
        .objects::<ConfigMap>()
        .list(&ListOptions::default())
        .await
        .unwrap();
    (client, ctx)
}

fn child(name: &str, owner: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(NS.into()),
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("owner".into(), owner.into())])),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn children_of(owner: &str) -> ListOptions {
    ListOptions::default()
        .in_namespace(NS)
        .labels(&format!("owner={owner}"))
        .unwrap()
}

#[tokio::test]
async fn children_created_then_listed_at_once_are_all_seen() {
    let (_server, kube) = server().await;
    let (client, ctx) = client(&kube, ReadYourWrites::default()).await;
    let cms = client.objects::<ConfigMap>();
    for i in 0..20 {
        cms.create(&child(&format!("a-{i}"), "a")).await.unwrap();
    }
    // No sleep, no poll: the list right after the creates has them all.
    assert_eq!(cms.list(&children_of("a")).await.unwrap().len(), 20);
    ctx.cancel();
}

#[tokio::test]
async fn a_list_waits_for_writes_the_informer_has_not_seen() {
    let (server, kube) = server().await;
    let (client, ctx) = client(&kube, ReadYourWrites::default()).await;
    let cms = client.objects::<ConfigMap>();
    let faults = server.faults();
    faults.hold_watch_events(true);
    for i in 0..5 {
        cms.create(&child(&format!("b-{i}"), "b")).await.unwrap();
    }
    // The informer has none of them: the list waits instead of answering from it.
    let list = tokio::spawn({
        let cms = client.objects::<ConfigMap>();
        async move { cms.list(&children_of("b")).await }
    });
    let mut list = list;
    assert!(
        tokio::time::timeout(Duration::from_millis(200), &mut list)
            .await
            .is_err(),
        "the list answered before the informer had the writes"
    );
    faults.hold_watch_events(false);
    assert_eq!(list.await.unwrap().unwrap().len(), 5);
    ctx.cancel();
}

#[tokio::test]
async fn without_read_your_writes_the_same_list_is_stale() {
    let (server, kube) = server().await;
    let (client, ctx) = client(&kube, ReadYourWrites::disabled()).await;
    let cms = client.objects::<ConfigMap>();
    server.faults().hold_watch_events(true);
    cms.create(&child("c-0", "c")).await.unwrap();
    assert!(cms.list(&children_of("c")).await.unwrap().is_empty());
    assert!(
        cms.get(&ObjectKey::new(NS, "c-0"))
            .await
            .unwrap_err()
            .is_not_found()
    );
    ctx.cancel();
}

#[tokio::test]
async fn gets_see_updates_and_deletes_or_time_out() {
    let (server, kube) = server().await;
    let bound = Duration::from_millis(300);
    let (client, ctx) = client(&kube, ReadYourWrites::default().with_timeout(bound)).await;
    let cms = client.objects::<ConfigMap>();
    let key = ObjectKey::new(NS, "d");
    let created = cms.create(&child("d", "d")).await.unwrap();
    assert_eq!(
        cms.get(&key).await.unwrap().metadata.uid,
        created.metadata.uid
    );

    // An update the informer does not get: the read fails after the bound, it does not
    // return the older object.
    let faults = server.faults();
    faults.hold_watch_events(true);
    let mut changed = created.clone();
    changed.data = Some(BTreeMap::from([("k".into(), "v".into())]));
    let updated = cms.update(&changed).await.unwrap();
    let err = cms.get(&key).await.unwrap_err();
    assert!(
        matches!(&err, Error::Cache(e) if e.is_read_your_writes_timeout()),
        "{err:?}"
    );
    let message = std::error::Error::source(&err).unwrap().to_string();
    let rv = updated.metadata.resource_version.clone().unwrap();
    assert!(
        message.contains(&format!("ConfigMap default/d (resourceVersion {rv})")),
        "{message}"
    );
    faults.hold_watch_events(false);
    let read = cms.get(&key).await.unwrap();
    assert_eq!(read.metadata.resource_version, Some(rv));

    // A delete: the read waits until the object is gone from the cache.
    faults.hold_watch_events(true);
    cms.delete(&key, &DeleteParams::default()).await.unwrap();
    let get = tokio::spawn({
        let cms = client.objects::<ConfigMap>();
        let key = key.clone();
        async move { cms.get(&key).await }
    });
    let mut get = get;
    assert!(
        tokio::time::timeout(Duration::from_millis(200), &mut get)
            .await
            .is_err(),
        "the get answered before the informer had the delete"
    );
    faults.hold_watch_events(false);
    assert!(get.await.unwrap().unwrap_err().is_not_found());
    ctx.cancel();
}

fn deployment(name: &str) -> Deployment {
    let labels = BTreeMap::from([("app".to_string(), name.to_string())]);
    Deployment {
        metadata: ObjectMeta {
            namespace: Some(NS.into()),
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app".into(),
                        image: Some("nginx".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn manager(kube: &kube_client::Client, ryow: ReadYourWrites) -> Manager {
    Manager::new(
        kube.clone(),
        ManagerOptions::default()
            .with_metrics_bind_address(BindAddress::Disabled)
            .with_cache(CacheOptions::default().with_read_your_writes(ryow)),
    )
    .unwrap()
}

/// The counter a status reconcile advances: `status.observedGeneration`.
fn counter(d: &Deployment) -> i64 {
    d.status
        .as_ref()
        .and_then(|s| s.observed_generation)
        .unwrap_or(0)
}

struct StatusCtx {
    client: Client,
    conflicts: AtomicUsize,
    /// The Deployments that reached the last round.
    done: watch::Sender<BTreeSet<String>>,
}

const ROUNDS: i64 = 6;

/// Two status writes in a row, each from a cached read, until the counter reaches `ROUNDS`.
async fn bump_status_twice(
    d: Arc<Deployment>,
    ctx: ReconcileContext<StatusCtx>,
) -> Result<Action, ReconcileError> {
    let deployments = ctx.client.objects::<Deployment>();
    let key = ObjectKey::of(&*d);
    for _ in 0..2 {
        let current = deployments.get(&key).await.map_err(ReconcileError::new)?;
        if counter(&current) >= ROUNDS {
            ctx.done.send_modify(|done| {
                done.insert(key.name.clone());
            });
            return Ok(Action::done());
        }
        let mut next = (*current).clone();
        next.status = Some(DeploymentStatus {
            observed_generation: Some(counter(&current) + 1),
            ..Default::default()
        });
        match deployments.update_status(&next).await {
            Ok(_) => {}
            Err(e) if e.is_conflict() => {
                ctx.conflicts.fetch_add(1, Ordering::Relaxed);
                return Err(ReconcileError::new(e));
            }
            Err(e) => return Err(ReconcileError::new(e)),
        }
    }
    Ok(Action::done())
}

#[tokio::test]
async fn a_controller_writing_status_twice_in_a_row_never_conflicts() {
    let (_server, kube) = server().await;
    let mgr = manager(&kube, ReadYourWrites::default());
    let (done, mut finished) = watch::channel(BTreeSet::new());
    let ctx = Arc::new(StatusCtx {
        client: mgr.client().clone(),
        conflicts: AtomicUsize::new(0),
        done,
    });
    ControllerBuilder::new(&mgr)
        .for_(Input::<Deployment>::new())
        .named("status-twice")
        .complete(ctx.clone(), bump_status_twice)
        .await
        .unwrap();
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    let deployments = mgr.client().objects::<Deployment>();
    const N: usize = 10;
    for i in 0..N {
        deployments
            .create(&deployment(&format!("web-{i}")))
            .await
            .unwrap();
    }
    tokio::time::timeout(
        Duration::from_secs(60),
        finished.wait_for(|done| done.len() >= N),
    )
    .await
    .expect("every Deployment reached the last round")
    .unwrap();
    for d in deployments
        .list_uncached(Some(NS), &ListParams::default())
        .await
        .unwrap()
    {
        assert_eq!(counter(&d), ROUNDS, "{:?}", d.metadata.name);
    }
    assert_eq!(
        ctx.conflicts.load(Ordering::Relaxed),
        0,
        "a status write came from a stale read"
    );
    stop.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test]
async fn without_read_your_writes_the_second_status_write_conflicts() {
    // The same two writes in a row, with the informer held behind and read-your-writes off:
    // the second write comes from a stale read and conflicts. What the test above counts is
    // real.
    let (server, kube) = server().await;
    let cache = Cache::new(
        kube.clone(),
        CacheOptions::default().with_read_your_writes(ReadYourWrites::disabled()),
    );
    let stop = CancellationToken::new();
    cache.start(stop.clone());
    let deployments = Client::new(cache).objects::<Deployment>();
    // Created before the cache has a Deployment informer: the first read lists it.
    let created = deployments.create(&deployment("stale")).await.unwrap();
    let key = ObjectKey::of(&created);
    server.faults().hold_watch_events(true);
    let mut results = Vec::new();
    for _ in 0..2 {
        let mut next = (*deployments.get(&key).await.unwrap()).clone();
        next.status = Some(DeploymentStatus {
            observed_generation: Some(counter(&next) + 1),
            ..Default::default()
        });
        results.push(deployments.update_status(&next).await);
    }
    assert!(results[0].is_ok(), "{:?}", results[0]);
    assert!(
        results[1].as_ref().is_err_and(Error::is_conflict),
        "{:?}",
        results[1]
    );
    stop.cancel();
}

struct ChildrenCtx {
    client: Client,
    /// `None`: the reconcile counts the cache without expectations.
    expectations: Option<Expectations>,
    /// Reconciles so far.
    reconciles: watch::Sender<usize>,
    /// Children the last reconcile counted in the cache.
    seen: watch::Sender<usize>,
}

/// Keeps one child ConfigMap per Deployment, created with `generateName` (so a second create
/// is a second child, not a conflict), and runs again every few milliseconds, as a busy
/// controller does.
async fn one_child(
    web: Arc<Deployment>,
    ctx: ReconcileContext<ChildrenCtx>,
) -> Result<Action, ReconcileError> {
    ctx.reconciles.send_modify(|n| *n += 1);
    let again = Action::requeue_after(Duration::from_millis(5));
    let owner = ObjectKey::of(&*web);
    if let Some(expectations) = &ctx.expectations
        && !expectations.satisfied(&owner)
    {
        return Ok(again);
    }
    let cms = ctx.client.objects::<ConfigMap>();
    let have = cms
        .list(&children_of(&owner.name))
        .await
        .map_err(ReconcileError::new)?
        .len();
    ctx.seen.send_replace(have);
    if have == 0 {
        if let Some(expectations) = &ctx.expectations {
            expectations.expect_creations(&owner, 1);
        }
        let mut cm = child("", &owner.name);
        cm.metadata.name = None;
        cm.metadata.generate_name = Some(format!("{}-", owner.name));
        set_controller_reference(&*web, &mut cm).map_err(ReconcileError::new)?;
        cms.create(&cm).await.map_err(ReconcileError::new)?;
    }
    Ok(again)
}

/// Runs [`one_child`] for one Deployment while the server holds watch events back for four
/// reconciles, then lets them through; answers how many children exist in the end.
async fn children_after_a_lagging_informer(expectations: Option<Expectations>) -> usize {
    let (server, kube) = server().await;
    // Reads do not wait for writes here: this is the race expectations close on their own.
    let mgr = manager(&kube, ReadYourWrites::disabled());
    let (reconciles, mut reconciled) = watch::channel(0);
    let (seen, mut counted) = watch::channel(0);
    let observe = expectations.clone();
    let ctx = Arc::new(ChildrenCtx {
        client: mgr.client().clone(),
        expectations,
        reconciles,
        seen,
    });
    let owners = EnqueueRequestForOwner::of::<Deployment>();
    let builder = ControllerBuilder::new(&mgr).for_(Input::<Deployment>::new());
    let builder = match &observe {
        Some(expectations) => {
            builder.watches(Input::<ConfigMap>::new(), expectations.observe(owners))
        }
        None => builder.watches(Input::<ConfigMap>::new(), owners),
    };
    builder
        .named("one-child")
        .complete(ctx, one_child)
        .await
        .unwrap();
    // The Deployment exists before the controller starts (its informer lists it); from then on
    // the informers hear of no write until the hold is lifted.
    mgr.client()
        .objects::<Deployment>()
        .create(&deployment("web"))
        .await
        .unwrap();
    let faults = server.faults();
    faults.hold_watch_events(true);
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    let bound = Duration::from_secs(60);
    tokio::time::timeout(bound, reconciled.wait_for(|n| *n >= 4))
        .await
        .expect("four reconciles")
        .unwrap();
    faults.hold_watch_events(false);
    // Once a reconcile counts a child in the cache, it creates no more.
    tokio::time::timeout(bound, counted.wait_for(|n| *n >= 1))
        .await
        .expect("a reconcile saw the child")
        .unwrap();
    stop.cancel();
    running.await.unwrap().unwrap();
    mgr.client()
        .objects::<ConfigMap>()
        .list_uncached(Some(NS), &ListParams::default().labels("owner=web"))
        .await
        .unwrap()
        .len()
}

#[tokio::test]
async fn without_expectations_a_lagging_informer_means_duplicate_children() {
    // Every reconcile while the informer is behind counts no child and creates one.
    let children = children_after_a_lagging_informer(None).await;
    assert!(children >= 4, "{children} children");
}

#[tokio::test]
async fn with_expectations_each_child_is_created_once() {
    let children = children_after_a_lagging_informer(Some(Expectations::new())).await;
    assert_eq!(children, 1);
}
