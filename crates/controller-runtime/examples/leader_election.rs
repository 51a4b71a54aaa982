//! Leader election: three replicas of one operator, one Lease, one of them reconciling.
//!
//! Real operators run several replicas for availability, but two reconcilers acting on the same
//! objects would fight. With leader election each replica's manager competes for a
//! `coordination.k8s.io/v1` Lease; the holder runs the controllers (everything that needs
//! leader election), the others wait, caches warm, and take over when the leader goes.
//!
//! Here the three replicas are three managers in one process. The leader is stopped
//! gracefully, releasing the lease (`release_on_cancel`), so another takes over at once;
//! without the release (a crash), the others wait until the lease expires
//! (`lease_duration`, 15 s by default) before one takes it.
//!
//! ```sh
//! cargo run -p controller-runtime --example leader_election
//! ```

mod common;

use std::time::{Duration, Instant};

use controller_runtime::Request;
use controller_runtime::builder::{ControllerBuilder, Input};
use controller_runtime::leaderelection::LeaderElectionConfig;
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::reconcile::{self, Action, ReconcileError};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, PostParams};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// One replica: its manager, the token that stops it, and its run.
struct Replica {
    name: String,
    mgr: Manager,
    stop: CancellationToken,
    running: JoinHandle<Result<(), controller_runtime::manager::Error>>,
}

async fn replica(
    kube: &kube_client::Client,
    name: &str,
) -> Result<Replica, Box<dyn std::error::Error>> {
    let election = LeaderElectionConfig::default()
        .with_lease_name("example-operator")
        .with_lease_namespace("default")
        .with_identity(name)
        // Shorter than the defaults (15 s / 10 s / 2 s) so the example is quick.
        .with_lease_duration(Duration::from_secs(4))
        .with_renew_deadline(Duration::from_secs(3))
        .with_retry_period(Duration::from_millis(500))
        .with_release_on_cancel(true);
    let mgr = Manager::new(
        kube.clone(),
        ManagerOptions::default()
            .with_metrics_bind_address(BindAddress::Disabled)
            .with_leader_election(election),
    )?;
    // A controller as any: it needs leader election (the default), so it runs on the leader
    // only. Its reconciles say which replica ran them.
    let who = name.to_string();
    ControllerBuilder::new(&mgr)
        .for_(Input::<ConfigMap>::new())
        .complete_reconciler(reconcile::from_fn(move |req: Request, _ctx| {
            let who = who.clone();
            async move {
                if req.name.starts_with("job-") {
                    println!("[{who}] reconcile {req}");
                }
                Ok::<_, ReconcileError>(Action::done())
            }
        }))
        .await?;
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    Ok(Replica {
        name: name.into(),
        mgr,
        stop,
        running,
    })
}

/// The replicas that lead now.
fn leaders(replicas: &[Replica]) -> Vec<&str> {
    replicas
        .iter()
        .filter(|r| !r.stop.is_cancelled() && r.mgr.is_leader())
        .map(|r| r.name.as_str())
        .collect()
}

/// Waits until exactly one running replica leads, checking all along that never two do.
async fn one_leader(replicas: &[Replica]) -> Result<String, Box<dyn std::error::Error>> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = leaders(replicas);
        assert!(now.len() <= 1, "two leaders at once: {now:?}");
        if let [one] = now[..] {
            return Ok(one.to_string());
        }
        if Instant::now() > deadline {
            return Err("no leader elected within 20 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (kube, server) = common::cluster().await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(kube.clone(), "default");

    // 1. Three replicas compete for the lease; one wins.
    let mut replicas = Vec::new();
    for name in ["replica-1", "replica-2", "replica-3"] {
        replicas.push(replica(&kube, name).await?);
    }
    let first = one_leader(&replicas).await?;
    println!("{first} leads; the other two wait");

    // 2. Work arrives: only the leader reconciles it.
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("job-1".into());
    configmaps.create(&PostParams::default(), &cm).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;

    // 3. The leader stops (a rolling update, say). It releases the lease on the way out.
    let leader = replicas.iter().position(|r| r.name == first).unwrap_or(0);
    let stopped_at = Instant::now();
    replicas[leader].stop.cancel();
    let gone = replicas.remove(leader);
    gone.running.await??;
    println!("{first} stopped and released the lease");
    let second = one_leader(&replicas).await?;
    println!(
        "{second} leads after {:.1} s; it reconciles what it finds at once",
        stopped_at.elapsed().as_secs_f64()
    );

    // 4. New work goes to the new leader.
    cm.metadata.name = Some("job-2".into());
    configmaps.create(&PostParams::default(), &cm).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;

    // 5. Stop the rest, then the server.
    for r in &replicas {
        r.stop.cancel();
    }
    for r in replicas {
        r.running.await??;
    }
    if let Some(server) = server {
        server.stop().await;
    }
    Ok(())
}
