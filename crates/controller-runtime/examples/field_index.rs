//! A field index, and a cached list by that field.
//!
//! Reconcilers often need "every X whose field F is V": the Pods on a node, the Jobs of a
//! CronJob. Listing everything and filtering costs a scan of the cache per reconcile; a field
//! index (controller-runtime's `IndexField`) answers from a map instead. Register the index
//! with a function giving each object's values for the field, then list with a field selector
//! on it: `ListOptions::fields("spec.nodeName=node-a")`.
//!
//! Here a "node report" controller counts the Pods on each node. Pod events are mapped to their
//! node's name (`EnqueueRequestsFromMapFunc`), so the controller reconciles nodes, and each
//! reconcile lists that node's Pods through the index.
//!
//! ```sh
//! cargo run -p controller-runtime --example field_index
//! ```

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use controller_runtime::Request;
use controller_runtime::builder::{ControllerBuilder, Input};
use controller_runtime::cache::ListOptions;
use controller_runtime::client::Client;
use controller_runtime::handler::EnqueueRequestsFromMapFunc;
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::reconcile::{self, Action, ReconcileError};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube_client::api::{Api, DeleteParams, PostParams};
use kube_core::ResourceExt;
use tokio_util::sync::CancellationToken;

/// The last count each node's reconcile reported.
type Counts = Arc<Mutex<HashMap<String, usize>>>;

/// Reconciles a node: lists its Pods from the cache through the `spec.nodeName` index.
async fn reconcile(
    node: Request,
    client: Client,
    counts: Counts,
) -> Result<Action, ReconcileError> {
    let on_node = ListOptions::default()
        .fields(&format!("spec.nodeName={}", node.name))
        .map_err(ReconcileError::new)?;
    let pods = client
        .objects::<Pod>()
        .list(&on_node)
        .await
        .map_err(ReconcileError::new)?;
    let mut names: Vec<String> = pods.iter().map(|p| p.name_any()).collect();
    names.sort();
    println!(
        "reconcile node {}: {} Pods {names:?}",
        node.name,
        names.len()
    );
    if let Ok(mut counts) = counts.lock() {
        counts.insert(node.name, names.len());
    }
    Ok(Action::done())
}

fn pod(name: &str, node: &str) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some(name.into());
    pod.spec = Some(PodSpec {
        node_name: Some(node.into()),
        containers: vec![Container {
            name: "app".into(),
            image: Some("example.invalid/app:1".into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    pod
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (kube, server) = common::cluster().await?;
    let mgr = Manager::new(
        kube.clone(),
        ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled),
    )?;

    // 1. The index: each Pod's value for `spec.nodeName` (none while unscheduled). Register it
    //    before the controller lists by it.
    mgr.cache()
        .index_field::<Pod>(&(), "spec.nodeName", |pod: &Pod| {
            pod.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .into_iter()
                .collect()
        })
        .await?;

    // 2. The controller: Pod events become node keys (old and new node on a move).
    let counts = Counts::default();
    let (client, report) = (mgr.client().clone(), counts.clone());
    ControllerBuilder::new(&mgr)
        .named("node-report")
        .watches(
            Input::<Pod>::new(),
            EnqueueRequestsFromMapFunc::new(|pod: &Pod| {
                let node = pod.spec.as_ref()?.node_name.clone()?;
                Some(Request::cluster_scoped(node))
            }),
        )
        .complete_reconciler(reconcile::from_fn(move |node: Request, _ctx| {
            reconcile(node, client.clone(), report.clone())
        }))
        .await?;
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });

    // 3. Three Pods on two nodes, then one of node-a's goes.
    let api: Api<Pod> = Api::namespaced(kube, "default");
    for (name, node) in [("web-1", "node-a"), ("web-2", "node-a"), ("db-1", "node-b")] {
        api.create(&PostParams::default(), &pod(name, node)).await?;
    }
    let count_is = |node: &'static str, n: usize| {
        let counts = counts.clone();
        move || {
            let counts = counts.clone();
            async move { counts.lock().is_ok_and(|c| c.get(node) == Some(&n)) }
        }
    };
    let limit = Duration::from_secs(20);
    common::wait_until("node-a: 2 Pods", limit, count_is("node-a", 2)).await?;
    common::wait_until("node-b: 1 Pod", limit, count_is("node-b", 1)).await?;
    api.delete("web-1", &DeleteParams::default().grace_period(0))
        .await?;
    common::wait_until("node-a: 1 Pod", limit, count_is("node-a", 1)).await?;

    stop.cancel();
    running.await??;
    if let Some(server) = server {
        server.stop().await;
    }
    Ok(())
}
