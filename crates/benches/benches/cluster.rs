//! The cluster simulation at scale: 1,000 Deployments of 3 replicas created through
//! kube-client (8 clients at once) on an embedded API server running the simulation
//! (`crt_cluster`: scheduler, kubelets, ReplicaSet and Deployment controllers, endpoints), until
//! every Deployment is available; then every Deployment's image changed, until every rollout
//! is complete (a new ReplicaSet with 3 available pods, the old one at 0, observedGeneration
//! current). Prints the time of each phase and the process's CPU time (server, simulation and
//! the clients, all in this process); asserts nothing.
//!
//! Run: `cargo bench --manifest-path crates/benches/Cargo.toml --bench cluster`
//! (`CRT_BENCH_DEPLOYMENTS` changes the count).

use std::time::{Duration, Instant};

use crt_apiserver::{Config, Server};
use crt_cluster::{Cluster, ClusterConfig};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube_client::Client;
use kube_client::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube_client::config::{KubeConfigOptions, Kubeconfig};

/// The allocator `crt serve` runs with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CLIENTS: usize = 8;
const REPLICAS: i32 = 3;

async fn client(server: &Server) -> Client {
    let kc = Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube_client::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

/// User plus system CPU time of this process, from `/proc/self/stat` (clock ticks of 10 ms).
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn deployment(i: usize, image: &str) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": format!("web-{i}")},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": format!("web-{i}")}},
            "template": {
                "metadata": {"labels": {"app": format!("web-{i}")}},
                "spec": {"containers": [{"name": "web", "image": image,
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]},
            },
        },
    }))
    .unwrap()
}

/// Waits until every Deployment has rolled out `image`: all replicas updated and available,
/// the status of the current generation. Returns the time it took from `start`.
async fn rolled_out(api: &Api<Deployment>, n: usize, image: &str, start: Instant) -> Duration {
    loop {
        let list = api.list(&ListParams::default()).await.unwrap();
        let done = list
            .items
            .iter()
            .filter(|d| {
                let spec_image = d
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.spec.as_ref()?.containers.first()?.image.clone());
                let status = d.status.clone().unwrap_or_default();
                spec_image.as_deref() == Some(image)
                    && status.observed_generation == d.metadata.generation
                    && status.updated_replicas == Some(REPLICAS)
                    && status.available_replicas == Some(REPLICAS)
                    && status.replicas == Some(REPLICAS)
            })
            .count();
        if done == n {
            return start.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::var("CRT_BENCH_DEPLOYMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let server = Server::start(Config::default()).await.unwrap();
    // Room for every pod: 3,000 pods (6,000 during the rolling update) on 20 nodes.
    let config = ClusterConfig::default()
        .with_nodes(20)
        .with_node_capacity("64", "256Gi", 500);
    let cluster = Cluster::start(server.storage(), config);
    let api: Api<Deployment> = Api::namespaced(client(&server).await, "default");

    let cpu0 = cpu();
    let start = Instant::now();
    futures::stream::iter(0..n)
        .for_each_concurrent(CLIENTS, |i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &deployment(i, "nginx:1.27"))
                    .await
                    .unwrap();
            }
        })
        .await;
    let created = start.elapsed();
    let available = rolled_out(&api, n, "nginx:1.27", start).await;
    let cpu_rollout = cpu() - cpu0;
    println!(
        "{n} Deployments x {REPLICAS}: created in {created:.2?}, all available after {available:.2?}; \
         CPU {cpu_rollout:.2?} ({:.2} ms per Deployment)",
        cpu_rollout.as_secs_f64() * 1e3 / n as f64
    );

    let cpu1 = cpu();
    let start = Instant::now();
    let patch = serde_json::json!({"spec": {"template": {"spec": {"containers": [
        {"name": "web", "image": "nginx:1.28"}]}}}});
    futures::stream::iter(0..n)
        .for_each_concurrent(CLIENTS, |i| {
            let (api, patch) = (api.clone(), &patch);
            async move {
                api.patch(
                    &format!("web-{i}"),
                    &PatchParams::default(),
                    &Patch::Strategic(patch),
                )
                .await
                .unwrap();
            }
        })
        .await;
    let patched = start.elapsed();
    let updated = rolled_out(&api, n, "nginx:1.28", start).await;
    let cpu_update = cpu() - cpu1;
    println!(
        "{n} rolling updates: patched in {patched:.2?}, all rolled out after {updated:.2?}; \
         CPU {cpu_update:.2?} ({:.2} ms per Deployment)",
        cpu_update.as_secs_f64() * 1e3 / n as f64
    );
    cluster.stop();
}
