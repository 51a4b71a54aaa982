//! Cache sync time and heap per cached object, beside kube-runtime's reflector.
//!
//! The embedded API server runs in a child process (this binary, re-executed), holding N
//! ConfigMaps of about 1 KB of JSON each, so the counting allocator of this process sees only
//! the client side. For each N, the contenders sync against the same server in turns, several
//! rounds, and the median is reported:
//!
//! - controller-runtime's informer (streaming list, and paginated list+watch),
//! - kube-runtime's reflector (its default ListWatch strategy, and its StreamingList).
//!
//! Heap is the allocator's live bytes after the sync minus before it, divided by N: the store,
//! its indexes, and whatever else the contender keeps. Run:
//!
//! ```sh
//! cargo bench -p controller-runtime --bench cache_sync            # 10,000 and 100,000
//! CRT_BENCH_SIZES=10000 CRT_BENCH_ROUNDS=3 cargo bench -p controller-runtime --bench cache_sync
//! ```

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cap::Cap;
use controller_runtime::cache::{ApiListWatch, Informer, InformerConfig};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_runtime::watcher;
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOCATOR: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

const SERVER_ENV: &str = "CRT_BENCH_SERVER_OBJECTS";

fn main() {
    if let Ok(n) = std::env::var(SERVER_ENV) {
        serve(n.parse().expect("object count"));
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run tiny then.
    let benching = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = match std::env::var("CRT_BENCH_SIZES") {
        Ok(s) => s
            .split(',')
            .map(|n| n.trim().parse().expect("sizes"))
            .collect(),
        Err(_) if benching => vec![10_000, 100_000],
        Err(_) => vec![100],
    };
    let rounds: usize = std::env::var("CRT_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(if benching { 5 } else { 1 });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("| objects | contender | sync time (median) | heap per object (median) |");
    println!("| ---: | --- | ---: | ---: |");
    for n in sizes {
        let (mut child, kubeconfig) = spawn_server(n);
        let client = rt.block_on(client(&kubeconfig));
        let contenders: [(&str, Contender); 4] = [
            (
                "controller-runtime-rs informer, streaming list",
                Contender::Ours { streaming: true },
            ),
            (
                "controller-runtime-rs informer, paginated list",
                Contender::Ours { streaming: false },
            ),
            (
                "kube-runtime 5.0 reflector, ListWatch (default)",
                Contender::Kube { streaming: false },
            ),
            (
                "kube-runtime 5.0 reflector, StreamingList",
                Contender::Kube { streaming: true },
            ),
        ];
        let mut results: Vec<Vec<(Duration, f64)>> = vec![Vec::new(); contenders.len()];
        for _ in 0..rounds {
            for (i, (_, contender)) in contenders.iter().enumerate() {
                results[i].push(rt.block_on(measure(&client, *contender, n)));
            }
        }
        for ((name, _), mut runs) in contenders.iter().zip(results) {
            runs.sort_by_key(|r| r.0);
            let time = runs[runs.len() / 2].0;
            let mut heaps: Vec<f64> = runs.iter().map(|r| r.1).collect();
            heaps.sort_by(f64::total_cmp);
            let heap = heaps[heaps.len() / 2];
            println!(
                "| {n} | {name} | {:.1} ms | {:.0} B |",
                time.as_secs_f64() * 1e3,
                heap
            );
        }
        child.stdin.take().unwrap().write_all(b"stop\n").ok();
        child.wait().ok();
    }
}

#[derive(Clone, Copy)]
enum Contender {
    Ours { streaming: bool },
    Kube { streaming: bool },
}

/// Syncs once; returns the sync time and the live heap growth per object.
async fn measure(client: &kube_client::Client, contender: Contender, n: usize) -> (Duration, f64) {
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = ALLOCATOR.allocated();
    let start = Instant::now();
    let (elapsed, held) = match contender {
        Contender::Ours { streaming } => {
            let config = InformerConfig {
                streaming_list: streaming,
                ..Default::default()
            };
            let informer: Informer<ConfigMap> = Informer::new(
                ApiListWatch::new(client.clone(), &(), Some("bench")),
                config,
            );
            let ctx = CancellationToken::new();
            let task = tokio::spawn({
                let (informer, ctx) = (informer.clone(), ctx.clone());
                async move { informer.run(ctx).await }
            });
            informer.wait_for_sync().await;
            let elapsed = start.elapsed();
            assert_eq!(informer.store().len(), n);
            tokio::time::sleep(Duration::from_millis(100)).await;
            let held = ALLOCATOR.allocated().saturating_sub(before);
            ctx.cancel();
            task.await.unwrap();
            (elapsed, held)
        }
        Contender::Kube { streaming } => {
            let api: kube_client::Api<ConfigMap> =
                kube_client::Api::namespaced(client.clone(), "bench");
            let mut config = watcher::Config::default();
            if streaming {
                config = config.streaming_lists();
            }
            let (reader, writer) = kube_runtime::reflector::store();
            let stream = kube_runtime::reflector(writer, watcher(api, config));
            let task = tokio::spawn(async move {
                let mut stream = std::pin::pin!(stream);
                while stream.next().await.is_some() {}
            });
            reader.wait_until_ready().await.unwrap();
            let elapsed = start.elapsed();
            assert_eq!(reader.len(), n);
            tokio::time::sleep(Duration::from_millis(100)).await;
            let held = ALLOCATOR.allocated().saturating_sub(before);
            task.abort();
            let _ = task.await;
            drop(reader);
            (elapsed, held)
        }
    };
    (elapsed, held as f64 / n as f64)
}

async fn client(kubeconfig: &str) -> kube_client::Client {
    let kc = kube_client::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
    let config = kube_client::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    kube_client::Client::try_from(config).unwrap()
}

/// Starts this binary as the server process; returns it and its kubeconfig.
fn spawn_server(n: usize) -> (std::process::Child, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(SERVER_ENV, n.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("server process");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut kubeconfig = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line == "READY" {
            break;
        }
        kubeconfig.push_str(&line);
        kubeconfig.push('\n');
    }
    (child, kubeconfig)
}

/// The server process: N ConfigMaps of ~1 KB JSON in namespace `bench`; prints the kubeconfig,
/// then READY; stops when stdin closes.
fn serve(n: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let server = crt_apiserver::Server::start(Default::default()).await.unwrap();
        let storage = server.storage();
        let namespaces = storage.resolve("", "v1", "namespaces").unwrap();
        storage
            .create(&namespaces, None, serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}), &Default::default())
            .unwrap();
        let configmaps = storage.resolve("", "v1", "configmaps").unwrap();
        for i in 0..n {
            let data: serde_json::Map<String, serde_json::Value> =
                (0..8).map(|k| (format!("key-{k}"), serde_json::Value::String(format!("{i:08}-{}", "v".repeat(90))))).collect();
            let cm = serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i:06}"), "namespace": "bench",
                             "labels": {"app": "bench", "shard": format!("{}", i % 16)},
                             "annotations": {"bench.example.com/owner": "cache-sync-benchmark"}},
                "data": data,
            });
            storage.create(&configmaps, Some("bench"), cm, &Default::default()).unwrap();
        }
        print!("{}", server.kubeconfig());
        println!("READY");
        let _ = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
        })
        .await;
        server.stop().await;
    });
}
