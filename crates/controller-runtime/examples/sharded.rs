//! Sharding: three replicas of one controller, each reconciling a third of the objects.
//!
//! Leader election makes one replica do all the work. A sharded controller
//! (`ControllerBuilder::with_sharding`) runs on every replica instead: each announces itself
//! with a Lease in the controller's ring, objects are assigned to the live replicas by
//! rendezvous hashing and labelled `shard.crt.dev/<controller>: <replica>`, and each replica's
//! cache holds only its own. Here the three replicas are three managers in one process; the
//! example prints the assignment, stops one replica (as a crash: its lease is not released)
//! and prints how its objects moved to the others once its lease expired.
//!
//! ```sh
//! cargo run -p controller-runtime --example sharded
//! ```

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use controller_runtime::builder::{ControllerBuilder, Input};
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::reconcile::Action;
use controller_runtime::sharding::{ShardingOptions, shard_label};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube_client::api::{Api, ListParams, PostParams};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const NS: &str = "sharded-example";
const CONTROLLER: &str = "configmap";
const OBJECTS: usize = 30;

/// One replica: its manager, what it reconciled, the token that stops it, and its run.
struct Replica {
    mgr: Manager,
    reconciles: Arc<AtomicUsize>,
    stop: CancellationToken,
    running: JoinHandle<Result<(), controller_runtime::manager::Error>>,
}

async fn replica(
    kube: &kube_client::Client,
    name: &str,
) -> Result<Replica, Box<dyn std::error::Error>> {
    let mgr = Manager::new(
        kube.clone(),
        ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled),
    )?;
    let sharding = ShardingOptions::default()
        .with_replica(name)
        // Shorter than the defaults (15 s, 2 s, 5 s) so the example is quick.
        .with_lease_duration(Duration::from_secs(3))
        .with_renew_period(Duration::from_millis(500))
        .with_assign_period(Duration::from_millis(500));
    let reconciles = Arc::new(AtomicUsize::new(0));
    ControllerBuilder::new(&mgr)
        .for_(Input::<ConfigMap>::new())
        .with_sharding(sharding)
        .complete(reconciles.clone(), |_cm, ctx| async move {
            ctx.fetch_add(1, Ordering::Relaxed); // only this replica's ConfigMaps come here
            Ok(Action::done())
        })
        .await?;
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    Ok(Replica {
        mgr,
        reconciles,
        stop,
        running,
    })
}

/// Replica -> its objects, from the labels on the API server.
async fn assignment(
    api: &Api<ConfigMap>,
) -> Result<BTreeMap<String, Vec<String>>, kube_client::Error> {
    let mut shards: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for cm in api.list(&ListParams::default()).await?.items {
        let shard = cm
            .metadata
            .labels
            .and_then(|mut l| l.remove(&shard_label(CONTROLLER)))
            .unwrap_or_else(|| "(unassigned)".into());
        shards
            .entry(shard)
            .or_default()
            .push(cm.metadata.name.unwrap_or_default());
    }
    Ok(shards)
}

fn print(shards: &BTreeMap<String, Vec<String>>, replicas: &[(&str, &Replica)]) {
    for (shard, names) in shards {
        let cached = replicas
            .iter()
            .find(|(n, _)| n == shard)
            .and_then(|(_, r)| r.mgr.cache().peek_informer_with::<ConfigMap>(&()))
            .map_or(0, |i| i.store().list(Some(NS)).len());
        println!(
            "  {shard:<12} {:>2} objects, {cached:>2} in its cache: {}",
            names.len(),
            names.join(" ")
        );
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (kube, server) = common::cluster().await?;
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": NS}}))?;
    let _ = Api::<Namespace>::all(kube.clone())
        .create(&PostParams::default(), &namespace)
        .await;
    let api: Api<ConfigMap> = Api::namespaced(kube.clone(), NS);

    let names = ["replica-a", "replica-b", "replica-c"];
    let mut replicas = Vec::new();
    for name in names {
        replicas.push(replica(&kube, name).await?);
    }
    for i in 0..OBJECTS {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("object-{i:02}"));
        api.create(&PostParams::default(), &cm).await?;
    }
    let all_assigned = |shards: &BTreeMap<String, Vec<String>>, to: &[&str]| {
        shards.keys().all(|s| to.contains(&s.as_str()))
            && shards.values().map(Vec::len).sum::<usize>() == OBJECTS
    };
    common::wait_until("every object assigned", Duration::from_secs(30), || async {
        assignment(&api)
            .await
            .is_ok_and(|s| all_assigned(&s, &names))
    })
    .await?;
    // Give the caches a moment to see the last labels.
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!("{OBJECTS} ConfigMaps over three replicas:");
    let all: Vec<(&str, &Replica)> = names.iter().copied().zip(replicas.iter()).collect();
    print(&assignment(&api).await?, &all);

    let c = replicas.pop().expect("three replicas");
    let stopped = Instant::now();
    c.stop.cancel();
    c.running.await??;
    println!(
        "stopped replica-c (its lease not released, as in a crash); waiting for its lease to expire"
    );
    common::wait_until(
        "replica-c's objects moved",
        Duration::from_secs(30),
        || async {
            assignment(&api)
                .await
                .is_ok_and(|s| all_assigned(&s, &names[..2]))
        },
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!(
        "after {:.1} s, over two replicas:",
        stopped.elapsed().as_secs_f64()
    );
    let two: Vec<(&str, &Replica)> = names.iter().copied().zip(replicas.iter()).collect();
    print(&assignment(&api).await?, &two);
    for (name, r) in &two {
        println!(
            "  {name} reconciled {} times; moves counted by the coordinator: {}",
            r.reconciles.load(Ordering::Relaxed),
            r.mgr.shard_metrics().moves(CONTROLLER)
        );
    }

    for r in replicas {
        r.stop.cancel();
        r.running.await??;
    }
    if let Some(server) = server {
        server.stop().await;
    }
    Ok(())
}
