//! The cost of read-your-writes on a cached get (BENCHMARKS.md, "Read your own writes").
//!
//! An embedded API server in this process holds 1,000 ConfigMaps; a cache syncs them, then
//! one key is read through `Client::objects::<ConfigMap>().get` many times, in turns:
//!
//! - `off`: `ReadYourWrites::disabled()`, the cache as controller-runtime reads it;
//! - `on, nothing pending`: the default, no write in flight (one atomic load per read);
//! - `on, another write pending`: the default while a write of another object has not reached
//!   the informer (held back with `Faults::hold_watch_events`): the table's lock and a lookup
//!   on every read.
//!
//! ```sh
//! cargo bench --manifest-path crates/benches/Cargo.toml --bench read_your_writes
//! CRT_BENCH_READS=200000 cargo bench --manifest-path crates/benches/Cargo.toml --bench read_your_writes
//! ```

use std::time::Instant;

use controller_runtime::ObjectKey;
use controller_runtime::cache::{Cache, CacheOptions, ListOptions, ReadMemo, ReadYourWrites};
use controller_runtime::client::Client;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_core::ObjectMeta;
use tokio_util::sync::CancellationToken;

const OBJECTS: usize = 1_000;

async fn kube(server: &crt_apiserver::Server) -> kube_client::Client {
    let kc = kube_client::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube_client::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    kube_client::Client::try_from(config).unwrap()
}

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("k".to_string(), "v".repeat(512))].into()),
        ..Default::default()
    }
}

/// Nanoseconds per cached get of `key`, the median of 5 rounds of `reads` gets.
async fn per_get(client: &Client, key: &ObjectKey, reads: usize) -> f64 {
    let cms = client.objects::<ConfigMap>();
    let mut rounds = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        for _ in 0..reads {
            std::hint::black_box(cms.get(key).await.unwrap());
        }
        rounds.push(start.elapsed().as_nanos() as f64 / reads as f64);
    }
    rounds.sort_by(f64::total_cmp);
    rounds[2]
}

async fn synced_client(kube: &kube_client::Client, ryow: ReadYourWrites) -> Client {
    let cache = Cache::new(
        kube.clone(),
        CacheOptions::default()
            .with_read_your_writes(ryow)
            .with_default_read_memo(read_memo()),
    );
    cache.start(CancellationToken::new());
    let client = Client::new(cache);
    let all = client
        .objects::<ConfigMap>()
        .list(&ListOptions::default().in_namespace("default"))
        .await
        .unwrap();
    assert!(all.len() >= OBJECTS);
    client
}

fn main() {
    let reads: usize = std::env::var("CRT_BENCH_READS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let server = crt_apiserver::Server::start(Default::default())
            .await
            .unwrap();
        let kube = kube(&server).await;
        let writer = Client::new(Cache::new(kube.clone(), CacheOptions::default()));
        for i in 0..OBJECTS {
            writer
                .objects::<ConfigMap>()
                .create(&cm(&format!("cm-{i}")))
                .await
                .unwrap();
        }
        let key = ObjectKey::new("default", "cm-500");

        let off = synced_client(&kube, ReadYourWrites::disabled()).await;
        let on = synced_client(&kube, ReadYourWrites::default()).await;
        let off_ns = per_get(&off, &key, reads).await;
        let on_ns = per_get(&on, &key, reads).await;
        // A write of another object the informer has not stored: reads of `key` look it up.
        server.faults().hold_watch_events(true);
        on.objects::<ConfigMap>()
            .create(&cm("pending"))
            .await
            .unwrap();
        let pending_ns = per_get(&on, &key, reads).await;
        server.faults().hold_watch_events(false);

        println!("cached get of one ConfigMap, {reads} reads, median of 5 rounds:");
        println!("  read-your-writes off:                   {off_ns:8.1} ns");
        println!("  read-your-writes on, nothing pending:   {on_ns:8.1} ns");
        println!("  read-your-writes on, another pending:   {pending_ns:8.1} ns");
    });
}

/// The cache's read memo: the default, or none with `CRT_BENCH_READ_MEMO=0`.
fn read_memo() -> ReadMemo {
    match std::env::var("CRT_BENCH_READ_MEMO").as_deref() {
        Ok("0") => ReadMemo::disabled(),
        _ => ReadMemo::default(),
    }
}
