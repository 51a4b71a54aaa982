//! Multicluster: fairness under a flood, and the cost of an engaged cluster.
//!
//! **Fairness.** Two member clusters (embedded API servers in this process) on one manager,
//! one cluster-aware controller with one worker whose reconcile costs `CRT_BENCH_COST_US`
//! (default 100 µs of CPU). The quiet member gets a ConfigMap every 10 ms (200 of them);
//! its change-to-reconcile latency is the time from the create call to the start of the
//! reconcile of that object. Measured alone; while the noisy member takes 10,000 creates (64 in
//! flight; the API servers, informers and reconciles share the process's two runtime threads);
//! and while the noisy member joins with 10,000 objects (its initial list queues a second of
//! reconciles at once, with no write load). The fair queue serves the quiet member between two
//! noisy keys.
//!
//! **Scale.** `CRT_BENCH_CLUSTERS` (default 50) embedded servers of 100 ConfigMaps each,
//! started and filled first; then all are engaged with a manager running one controller for
//! ConfigMaps, and the time until every object was reconciled once and the live heap of the
//! process (a counting allocator) after minus before are reported, per cluster. The servers
//! live in this process, but are started before the baseline.
//!
//! ```sh
//! cargo bench --manifest-path crates/benches/Cargo.toml --bench multicluster
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cap::Cap;
use controller_runtime::CancellationToken;
use controller_runtime::controller::ControllerOptions;
use controller_runtime::manager::{BindAddress, Manager as LocalManager, ManagerOptions};
use controller_runtime::multicluster::providers::ClusterSet;
use controller_runtime::multicluster::{
    Aware, Cluster, ClusterRequest, ControllerBuilder, EngageOptions, Manager,
};
use controller_runtime::reconcile::Action;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::PostParams;
use parking_lot::Mutex;

#[global_allocator]
static ALLOCATOR: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn server() -> (crt_apiserver::Server, kube_client::Client) {
    let server = crt_apiserver::Server::start(Default::default())
        .await
        .unwrap();
    let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    (server, kube_client::Client::try_from(config).unwrap())
}

fn configmap(name: String) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name);
    cm
}

fn options() -> ManagerOptions {
    ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled)
}

fn spin(cost: Duration) {
    let start = Instant::now();
    while start.elapsed() < cost {
        std::hint::spin_loop();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

async fn create_many(client: kube_client::Client, prefix: &'static str, n: usize) {
    use futures::StreamExt;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    // 64 creates in flight at a time: as fast as the server takes them.
    futures::stream::iter(0..n)
        .for_each_concurrent(64, |i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &configmap(format!("{prefix}-{i}")))
                    .await
                    .unwrap();
            }
        })
        .await;
}

/// How the noisy member floods.
#[derive(Clone, Copy, PartialEq)]
enum Flood {
    /// Not at all.
    None,
    /// 10,000 creates while the quiet member is measured.
    Live,
    /// 10,000 objects already there, engaged when the measure starts: its initial list queues
    /// them at once, with no load on the API servers meanwhile.
    Backlog,
}

/// The quiet member's latencies, sorted, with or without the noisy member's flood.
async fn fairness_run(flood: Flood, cost: Duration) -> Vec<Duration> {
    let (_hub_server, hub) = server().await;
    let (_noisy_server, noisy) = server().await;
    let (_quiet_server, quiet) = server().await;
    let set = ClusterSet::new();
    if flood == Flood::Backlog {
        create_many(noisy.clone(), "noisy", 10_000).await;
    } else {
        set.add("noisy", noisy.clone()).await.unwrap();
    }
    set.add("quiet", quiet.clone()).await.unwrap();
    let mgr = Manager::new(
        LocalManager::new(hub, options()).unwrap(),
        Some(Arc::new(set.clone())),
    )
    .unwrap();
    let started: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let reconciled = Arc::new(AtomicUsize::new(0));
    ControllerBuilder::new(&mgr)
        .with_options(ControllerOptions::default().with_max_concurrent_reconciles(1))
        .for_::<ConfigMap>()
        .complete({
            let (started, reconciled) = (started.clone(), reconciled.clone());
            move |req: ClusterRequest, _cluster, _ctx| {
                if &*req.cluster == "quiet" {
                    started
                        .lock()
                        .entry(req.key.name.clone())
                        .or_insert_with(Instant::now);
                }
                spin(cost);
                reconciled.fetch_add(1, Ordering::Relaxed);
                async { Ok(Action::done()) }
            }
        })
        .await
        .unwrap();
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    let want = if flood == Flood::Backlog { 1 } else { 2 };
    while mgr.clusters().len() < want {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;

    let flooding = tokio::spawn(async move {
        match flood {
            Flood::None => {}
            Flood::Live => create_many(noisy, "noisy", 10_000).await,
            Flood::Backlog => set.add("noisy", noisy).await.unwrap(),
        }
    });
    let api: Api<ConfigMap> = Api::namespaced(quiet, "default");
    let mut created = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    for i in 0..200 {
        tick.tick().await;
        let name = format!("quiet-{i}");
        let at = Instant::now();
        api.create(&PostParams::default(), &configmap(name.clone()))
            .await
            .unwrap();
        created.push((name, at));
    }
    flooding.await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while started.lock().len() < created.len() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = started.lock().clone();
    let mut latencies: Vec<Duration> = (created.iter())
        .filter_map(|(name, at)| started.get(name).map(|s| s.saturating_duration_since(*at)))
        .collect();
    latencies.sort();
    println!(
        "  {}: {} quiet reconciles seen, {} reconciles in all",
        match flood {
            Flood::None => "alone",
            Flood::Live => "live flood",
            Flood::Backlog => "backlog",
        },
        latencies.len(),
        reconciled.load(Ordering::Relaxed)
    );
    stop.cancel();
    running.await.unwrap().unwrap();
    latencies
}

async fn fairness() {
    let cost = Duration::from_micros(env("CRT_BENCH_COST_US", 100) as u64);
    println!("fairness: reconcile cost {cost:?}, 1 worker, quiet member every 10 ms");
    let alone = fairness_run(Flood::None, cost).await;
    let flooded = fairness_run(Flood::Live, cost).await;
    let backlog = fairness_run(Flood::Backlog, cost).await;
    println!("| quiet member's change-to-reconcile | p50 | p90 | p99 | max |");
    println!("| --- | --- | --- | --- | --- |");
    for (label, l) in [
        ("alone", &alone),
        ("noisy member creates 10,000 meanwhile", &flooded),
        ("noisy member joins with 10,000 queued", &backlog),
    ] {
        println!(
            "| {label} | {:?} | {:?} | {:?} | {:?} |",
            percentile(l, 0.5),
            percentile(l, 0.9),
            percentile(l, 0.99),
            l.last().copied().unwrap_or_default()
        );
    }
    let p99 = |l: &[Duration]| percentile(l, 0.99).as_secs_f64();
    println!(
        "p99 / alone: live flood {:.2}x, backlog {:.2}x",
        p99(&flooded) / p99(&alone),
        p99(&backlog) / p99(&alone)
    );
}

async fn scale() {
    let clusters = env("CRT_BENCH_CLUSTERS", 50);
    let objects = 100;
    println!("scale: {clusters} clusters of {objects} ConfigMaps");
    let (_hub_server, hub) = server().await;
    let mut servers = Vec::new();
    for _ in 0..clusters {
        let (s, client) = server().await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        for i in 0..objects {
            api.create(&PostParams::default(), &configmap(format!("cm-{i}")))
                .await
                .unwrap();
        }
        servers.push((s, client));
    }
    let mgr = Manager::new(LocalManager::new(hub, options()).unwrap(), None).unwrap();
    let reconciled = Arc::new(AtomicUsize::new(0));
    ControllerBuilder::new(&mgr)
        .with_options(ControllerOptions::default().with_max_concurrent_reconciles(4))
        .with_engage_options(EngageOptions::default().with_local_cluster(false))
        .for_::<ConfigMap>()
        .complete({
            let reconciled = reconciled.clone();
            move |_req: ClusterRequest, _cluster, _ctx| {
                reconciled.fetch_add(1, Ordering::Relaxed);
                async { Ok(Action::done()) }
            }
        })
        .await
        .unwrap();
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = ALLOCATOR.allocated();
    let start = Instant::now();
    // The clusters are engaged by hand (as a provider would), all at once.
    let ctx = CancellationToken::new();
    for (i, (_, client)) in servers.iter().enumerate() {
        let cluster = Cluster::new(format!("member-{i}"), client.clone(), Default::default());
        mgr.engage(ctx.child_token(), cluster).await.unwrap();
    }
    let engaged = start.elapsed();
    let want = clusters * objects;
    while reconciled.load(Ordering::Relaxed) < want {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let all = start.elapsed();
    let heap = ALLOCATOR.allocated().saturating_sub(before);
    println!("| figure | all {clusters} clusters | per cluster |");
    println!("| --- | --- | --- |");
    println!(
        "| engage (caches started, watches added) | {engaged:?} | {:?} |",
        engaged / clusters as u32
    );
    println!(
        "| engage to every object reconciled once | {all:?} | {:?} |",
        all / clusters as u32
    );
    println!(
        "| live heap after minus before | {:.1} MiB | {:.0} KiB |",
        heap as f64 / (1 << 20) as f64,
        heap as f64 / 1024.0 / clusters as f64
    );
    ctx.cancel();
    stop.cancel();
    running.await.unwrap().unwrap();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        fairness().await;
        scale().await;
    });
}
