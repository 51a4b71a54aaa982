//! Cache sync time and heap per cached object, beside kube-runtime's reflector.
//!
//! The embedded API server runs in a child process (this binary, re-executed), holding N
//! ConfigMaps of about 1 KB of JSON each, so the counting allocator of this process sees only
//! the client side. For each N, the contenders sync against the same server in turns, several
//! rounds, and the median is reported:
//!
//! - controller-runtime's informer (streaming list, and paginated list+watch; each with the
//!   default shared storage and with compact storage),
//! - kube-runtime's reflector (its default ListWatch strategy, and its StreamingList).
//!
//! Heap is the allocator's live bytes after the sync minus before it, divided by N: the store,
//! its indexes, and whatever else the contender keeps. CPU is the user + system time of this
//! process (every thread: the client) and of the server process during the sync, read from
//! `/proc`: on a loaded machine the CPU figures move much less than the wall-clock ones. Run:
//!
//! ```sh
//! cargo bench --manifest-path crates/benches/Cargo.toml --bench cache_sync            # 10,000 and 100,000
//! CRT_BENCH_SIZES=10000 CRT_BENCH_ROUNDS=3 cargo bench --manifest-path crates/benches/Cargo.toml --bench cache_sync
//! # only some contenders (substrings of their names, `|`-separated; a trailing `$` matches
//! # the end of a name), e.g. to profile one:
//! CRT_BENCH_ONLY="informer, streaming" cargo bench --manifest-path crates/benches/Cargo.toml --bench cache_sync
//! # objects carrying a managedFields entry, as a real API server records on every write
//! # (kubectl create: every field listed):
//! CRT_BENCH_MANAGED_FIELDS=1 cargo bench --manifest-path crates/benches/Cargo.toml --bench cache_sync
//! ```

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cap::Cap;
use std::sync::Arc;

use controller_runtime::cache::{
    ApiListWatch, CachedObject, Informer, InformerConfig, ReadMemo, ResourceEventHandler, Storage,
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOCATOR: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

const SERVER_ENV: &str = "CRT_BENCH_SERVER_OBJECTS";
const MANAGED_FIELDS_ENV: &str = "CRT_BENCH_MANAGED_FIELDS";

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
    let only = std::env::var("CRT_BENCH_ONLY").ok();
    let managed_fields = std::env::var(MANAGED_FIELDS_ENV).is_ok_and(|v| v == "1");
    let mut contenders: Vec<(&str, Contender)> = vec![
        (
            "controller-runtime-rs informer, streaming list",
            Contender::Ours {
                streaming: true,
                strip: false,
                compact: false,
                handler: false,
                meta_handler: false,
            },
        ),
        (
            "controller-runtime-rs informer, paginated list",
            Contender::Ours {
                streaming: false,
                strip: false,
                compact: false,
                handler: false,
                meta_handler: false,
            },
        ),
        (
            "kube-runtime 5.0 reflector, ListWatch (default)",
            Contender::Kube {
                streaming: false,
                strip: false,
            },
        ),
        (
            "kube-runtime 5.0 reflector, StreamingList",
            Contender::Kube {
                streaming: true,
                strip: false,
            },
        ),
        (
            "controller-runtime-rs informer, streaming list, compact storage",
            Contender::Ours {
                streaming: true,
                strip: false,
                compact: true,
                handler: false,
                meta_handler: false,
            },
        ),
        (
            "controller-runtime-rs informer, streaming list, compact storage, one handler",
            Contender::Ours {
                streaming: true,
                strip: false,
                compact: true,
                handler: true,
                meta_handler: false,
            },
        ),
        (
            "controller-runtime-rs informer, streaming list, compact storage, one metadata handler",
            Contender::Ours {
                streaming: true,
                strip: false,
                compact: true,
                handler: false,
                meta_handler: true,
            },
        ),
        (
            "controller-runtime-rs informer, paginated list, compact storage",
            Contender::Ours {
                streaming: false,
                strip: false,
                compact: true,
                handler: false,
                meta_handler: false,
            },
        ),
    ];
    // Dropping managedFields before caching (they matter with CRT_BENCH_MANAGED_FIELDS=1, as
    // on a real cluster): the same lever in both.
    contenders.extend([
        (
            "controller-runtime-rs informer, streaming list, strip_managed_fields",
            Contender::Ours {
                streaming: true,
                strip: true,
                compact: false,
                handler: false,
                meta_handler: false,
            },
        ),
        (
            "controller-runtime-rs informer, streaming list, compact storage, strip_managed_fields",
            Contender::Ours {
                streaming: true,
                strip: true,
                compact: true,
                handler: false,
                meta_handler: false,
            },
        ),
        (
            "kube-runtime 5.0 reflector, ListWatch, managedFields dropped in .modify()",
            Contender::Kube {
                streaming: false,
                strip: true,
            },
        ),
    ]);
    contenders.retain(|(name, _)| {
        only.as_deref().is_none_or(|o| {
            o.split('|').any(|part| match part.strip_suffix('$') {
                Some(end) => name.ends_with(end),
                None => name.contains(part),
            })
        })
    });
    println!(
        "| objects | contender | sync time (median, min-max) | client CPU (median) | server CPU (median) | heap per object (median) |"
    );
    println!("| ---: | --- | ---: | ---: | ---: | ---: |");
    for n in sizes {
        let (mut child, kubeconfig) = spawn_server(n, managed_fields);
        let client = rt.block_on(client(&kubeconfig));
        let mut results: Vec<Vec<Measured>> = vec![Vec::new(); contenders.len()];
        for _ in 0..rounds {
            for (i, (_, contender)) in contenders.iter().enumerate() {
                results[i].push(rt.block_on(measure(&client, *contender, n, child.id())));
            }
        }
        for ((name, _), runs) in contenders.iter().zip(results) {
            let median = |f: fn(&Measured) -> f64| {
                let mut v: Vec<f64> = runs.iter().map(f).collect();
                v.sort_by(f64::total_cmp);
                (v[v.len() / 2], v[0], v[v.len() - 1])
            };
            let (time, min, max) = median(|m| m.sync.as_secs_f64() * 1e3);
            println!(
                "| {n} | {name} | {time:.1} ms ({min:.0}-{max:.0}) | {:.0} ms | {:.0} ms | {:.0} B |",
                median(|m| m.client_cpu * 1e3).0,
                median(|m| m.server_cpu * 1e3).0,
                median(|m| m.heap_per_object).0,
            );
        }
        child.stdin.take().unwrap().write_all(b"stop\n").ok();
        child.wait().ok();
    }
}

/// One sync's figures.
#[derive(Clone, Debug)]
struct Measured {
    sync: Duration,
    /// CPU seconds of this process (the client) during the sync.
    client_cpu: f64,
    /// CPU seconds of the server process during the sync.
    server_cpu: f64,
    heap_per_object: f64,
}

/// CPU seconds (user + system, all threads) a process has used, from `/proc/PID/stat`.
fn process_cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some(end) = stat.rfind(')') else {
        return 0.0;
    };
    // Fields after the command: state is field 3; utime and stime are fields 14 and 15.
    let fields: Vec<&str> = stat[end + 2..].split(' ').collect();
    let ticks: f64 =
        fields[11].parse::<f64>().unwrap_or(0.0) + fields[12].parse::<f64>().unwrap_or(0.0);
    ticks / clock_ticks_per_second()
}

fn clock_ticks_per_second() -> f64 {
    static HZ: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *HZ.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

#[derive(Clone, Copy)]
enum Contender {
    /// Our informer; `strip`: managedFields dropped (`with_strip_managed_fields`, what the
    /// cache does for its `strip_managed_fields()` transform); `compact`: with compact storage
    /// (objects held as JSON, decoded on read); `handler`: with a handler of typed objects
    /// registered before the sync, which a compact informer decodes every object for;
    /// `meta_handler`: with a handler that reads only the metadata (as a controller's Kind
    /// source with the built-in handlers and predicates), decoding nothing.
    Ours {
        streaming: bool,
        strip: bool,
        compact: bool,
        handler: bool,
        meta_handler: bool,
    },
    /// kube-runtime's reflector; `strip`: managedFields cleared in the watcher stream's
    /// `.modify()`, kube-runtime's way of transforming before the store.
    Kube { streaming: bool, strip: bool },
}

/// Syncs once and measures it.
async fn measure(
    client: &kube_client::Client,
    contender: Contender,
    n: usize,
    server_pid: u32,
) -> Measured {
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = ALLOCATOR.allocated();
    let (client_before, server_before) = (
        process_cpu_seconds(std::process::id()),
        process_cpu_seconds(server_pid),
    );
    let start = Instant::now();
    let cpu = || {
        (
            process_cpu_seconds(std::process::id()) - client_before,
            process_cpu_seconds(server_pid) - server_before,
        )
    };
    let (elapsed, (client_cpu, server_cpu), held) = match contender {
        Contender::Ours {
            streaming,
            strip,
            compact,
            handler,
            meta_handler,
        } => {
            // What the cache does for its `strip_managed_fields()` transform.
            let config = InformerConfig::default()
                .with_streaming_list(streaming)
                .with_strip_managed_fields(strip)
                .with_storage(if compact {
                    Storage::compact().with_read_memo(read_memo())
                } else {
                    Storage::Shared
                });
            let informer: Informer<ConfigMap> = Informer::new(
                ApiListWatch::new(client.clone(), &(), Some("bench")),
                config,
            );
            if handler {
                informer.add_event_handler(Arc::new(CountingHandler::default()));
            }
            if meta_handler {
                informer.add_event_handler(Arc::new(MetaHandler::default()));
            }
            let ctx = CancellationToken::new();
            let task = tokio::spawn({
                let (informer, ctx) = (informer.clone(), ctx.clone());
                async move { informer.run(ctx).await }
            });
            informer.wait_for_sync().await;
            let elapsed = start.elapsed();
            let cpu = cpu();
            assert_eq!(informer.store().len(), n);
            tokio::time::sleep(Duration::from_millis(100)).await;
            let held = ALLOCATOR.allocated().saturating_sub(before);
            report_gets(informer.store(), informer.store().size_bytes() / n.max(1));
            // What the typed reads left behind: a compact store's memo of them.
            let after_reads = ALLOCATOR.allocated().saturating_sub(before);
            eprintln!(
                "    heap per object after the typed gets: {:.0} B",
                after_reads as f64 / n.max(1) as f64
            );
            ctx.cancel();
            task.await.unwrap();
            (elapsed, cpu, held)
        }
        Contender::Kube { streaming, strip } => {
            let api: kube_client::Api<ConfigMap> =
                kube_client::Api::namespaced(client.clone(), "bench");
            let mut config = watcher::Config::default();
            if streaming {
                config = config.streaming_lists();
            }
            let (reader, writer) = kube_runtime::reflector::store();
            let events = watcher(api, config).modify(move |cm: &mut ConfigMap| {
                if strip {
                    cm.metadata.managed_fields = None;
                }
            });
            let stream = kube_runtime::reflector(writer, events);
            let task = tokio::spawn(async move {
                let mut stream = std::pin::pin!(stream);
                while stream.next().await.is_some() {}
            });
            reader.wait_until_ready().await.unwrap();
            let elapsed = start.elapsed();
            let cpu = cpu();
            assert_eq!(reader.len(), n);
            tokio::time::sleep(Duration::from_millis(100)).await;
            let held = ALLOCATOR.allocated().saturating_sub(before);
            task.abort();
            let _ = task.await;
            drop(reader);
            (elapsed, cpu, held)
        }
    };
    Measured {
        sync: elapsed,
        client_cpu,
        server_cpu,
        heap_per_object: held as f64 / n as f64,
    }
}

/// A handler that counts events, as cheap as a handler gets: what it costs is the informer
/// handing it typed objects.
#[derive(Default)]
struct CountingHandler(std::sync::atomic::AtomicUsize);

impl ResourceEventHandler<ConfigMap> for CountingHandler {
    fn on_add(&self, _: &Arc<ConfigMap>, _: bool) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn on_update(&self, _: &Arc<ConfigMap>, _: &Arc<ConfigMap>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn on_delete(&self, _: &Arc<ConfigMap>, _: bool) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A handler that counts events from the objects' metadata, never asking for a typed object:
/// what the Kind source does for the built-in handlers and metadata predicates.
#[derive(Default)]
struct MetaHandler(std::sync::atomic::AtomicUsize);

impl ResourceEventHandler<ConfigMap> for MetaHandler {
    fn on_add(&self, _: &Arc<ConfigMap>, _: bool) {}
    fn on_update(&self, _: &Arc<ConfigMap>, _: &Arc<ConfigMap>) {}
    fn on_delete(&self, _: &Arc<ConfigMap>, _: bool) {}
    fn on_add_cached(&self, obj: &CachedObject<ConfigMap>, _: bool) {
        let len = obj.metadata().name.as_ref().map_or(0, String::len);
        self.0.fetch_add(len, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The compact stores' read memo: the default, or none with `CRT_BENCH_READ_MEMO=0`.
fn read_memo() -> ReadMemo {
    match std::env::var("CRT_BENCH_READ_MEMO").as_deref() {
        Ok("0") => ReadMemo::disabled(),
        _ => ReadMemo::default(),
    }
}

/// Prints the cost of a typed cached read (a get of each of up to 20,000 objects, then 20,000
/// gets of one object: what a memo of recent reads would save) and the store's gauge of bytes
/// per object.
fn report_gets(store: &controller_runtime::cache::Store<ConfigMap>, bytes_per_object: usize) {
    let keys: Vec<_> = store.keys().into_iter().take(20_000).collect();
    let start = Instant::now();
    for key in &keys {
        std::hint::black_box(store.get(key));
    }
    let each = start.elapsed().as_secs_f64() * 1e6 / keys.len().max(1) as f64;
    let start = Instant::now();
    for _ in 0..keys.len() {
        std::hint::black_box(store.get(&keys[0]));
    }
    let same = start.elapsed().as_secs_f64() * 1e6 / keys.len().max(1) as f64;
    eprintln!(
        "    typed get: {each:.2} us (distinct objects), {same:.2} us (one object again); \
         controller_runtime_cache_bytes / object: {bytes_per_object} B"
    );
}

async fn client(kubeconfig: &str) -> kube_client::Client {
    let kc = kube_client::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
    let config = kube_client::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    kube_client::Client::try_from(config).unwrap()
}

/// Starts this binary as the server process; returns it and its kubeconfig.
fn spawn_server(n: usize, managed_fields: bool) -> (std::process::Child, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(SERVER_ENV, n.to_string())
        .env(MANAGED_FIELDS_ENV, if managed_fields { "1" } else { "0" })
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

/// The server process: N ConfigMaps of ~1.1 KB JSON in namespace `bench` (1.5 KB with
/// `CRT_BENCH_MANAGED_FIELDS=1`: a managedFields entry each); prints the kubeconfig, then READY;
/// stops when stdin closes.
fn serve(n: usize) {
    let managed_fields = std::env::var(MANAGED_FIELDS_ENV).is_ok_and(|v| v == "1");
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
            let mut cm = serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i:06}"), "namespace": "bench",
                             "labels": {"app": "bench", "shard": format!("{}", i % 16)},
                             "annotations": {"bench.example.com/owner": "cache-sync-benchmark"}},
                "data": data,
            });
            if managed_fields {
                cm["metadata"]["managedFields"] = managed_fields_entry(&cm);
            }
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

/// The managedFields a real API server records for `cm` created by `kubectl create` (the
/// embedded server keeps managedFields a create provides, and records none for the storage
/// writes that seed the benchmark): one entry naming every field set, in the `FieldsV1` format.
fn managed_fields_entry(cm: &serde_json::Value) -> serde_json::Value {
    let set = |map: &serde_json::Value| -> serde_json::Value {
        map.as_object()
            .map(|m| {
                m.keys()
                    .map(|k| (format!("f:{k}"), serde_json::json!({})))
                    .collect::<serde_json::Map<_, _>>()
            })
            .unwrap_or_default()
            .into()
    };
    let mut annotations = set(&cm["metadata"]["annotations"]);
    annotations["."] = serde_json::json!({});
    let mut labels = set(&cm["metadata"]["labels"]);
    labels["."] = serde_json::json!({});
    let mut data = set(&cm["data"]);
    data["."] = serde_json::json!({});
    serde_json::json!([{
        "manager": "kubectl-create",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-11-22T04:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:data": data,
            "f:metadata": {"f:annotations": annotations, "f:labels": labels}
        }
    }])
}
