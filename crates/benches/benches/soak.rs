//! Soak: the embedded API server under 8 writers (kube-client over TLS, each its own
//! connection) updating, deleting and re-creating ConfigMaps for 10 minutes, with two watchers
//! following every change. Every 10 s it samples the process's RSS and live heap (a counting
//! allocator around mimalloc, the allocator `crt serve` runs with), the writes and their
//! non-2xx answers, and how far each watcher is behind the writes; it prints one table row per
//! minute and a verdict at the end: whether the live heap stayed bounded (the last tenth's
//! peak against the peak of the tenth before half-time: the watch window and list snapshots
//! are trimmed, so once the window has filled the heap must not keep growing), whether any
//! write failed, and whether the watchers kept up.
//!
//! Run: `cargo bench --manifest-path crates/benches/Cargo.toml --bench soak`. `CRT_SOAK_SECS` sets the duration
//! (default 600 under `cargo bench`; `cargo test --benches` runs it for 2 s as a smoke test).
//! It measures and prints; it asserts only that the run did what it claims (writes happened,
//! watchers saw events).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cap::Cap;
use crt_apiserver::{Config, Server};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::Client;
use kube_client::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use kube_client::config::{KubeConfigOptions, Kubeconfig};

#[global_allocator]
static ALLOCATOR: Cap<mimalloc::MiMalloc> = Cap::new(mimalloc::MiMalloc, usize::MAX);

const WRITERS: usize = 8;
const WATCHERS: usize = 2;
/// ConfigMaps each writer cycles through.
const OBJECTS_PER_WRITER: usize = 500;

async fn client(server: &Server) -> Client {
    let kc = Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube_client::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

/// A ConfigMap of about 1 KB whose data changes with `round`.
fn cm(name: &str, round: u64) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("app".to_string(), "soak".to_string())].into()),
            ..Default::default()
        },
        data: Some(
            [
                ("round".to_string(), round.to_string()),
                ("payload".to_string(), format!("{round:0>1000}")),
            ]
            .into(),
        ),
        ..Default::default()
    }
}

/// Counters the writers and watchers share.
#[derive(Default)]
struct Counters {
    writes: AtomicU64,
    errors: AtomicU64,
    /// Events each watcher received.
    seen: [AtomicU64; WATCHERS],
    /// Times a watcher had to list again (410 on resume).
    relists: [AtomicU64; WATCHERS],
}

/// One writer: round after round, updates each of its objects (a replace with new data);
/// every tenth round deletes and re-creates them instead, so that deletions go through the
/// window too.
async fn writer(api: Api<ConfigMap>, w: usize, counters: Arc<Counters>, until: Instant) {
    let names: Vec<String> = (0..OBJECTS_PER_WRITER)
        .map(|i| format!("soak-{w}-{i}"))
        .collect();
    for name in &names {
        let ok = api
            .create(&PostParams::default(), &cm(name, 0))
            .await
            .is_ok();
        count(&counters, ok);
    }
    let mut round = 1u64;
    while Instant::now() < until {
        for name in &names {
            if Instant::now() >= until {
                return;
            }
            let ok = if round.is_multiple_of(10) {
                let deleted = api.delete(name, &DeleteParams::default()).await.is_ok();
                count(&counters, deleted);
                api.create(&PostParams::default(), &cm(name, round))
                    .await
                    .is_ok()
            } else {
                // A replace without resourceVersion: unconditional, as `kubectl replace
                // --force` is not; no conflicts by design.
                api.replace(name, &PostParams::default(), &cm(name, round))
                    .await
                    .is_ok()
            };
            count(&counters, ok);
        }
        round += 1;
    }
}

fn count(counters: &Counters, ok: bool) {
    counters.writes.fetch_add(1, Ordering::Relaxed);
    if !ok {
        counters.errors.fetch_add(1, Ordering::Relaxed);
    }
}

/// One watcher: watches from the start, resumes from the last resourceVersion it saw when the
/// stream ends, and starts over from "now" (counting a relist) on 410 Gone.
async fn watcher(api: Api<ConfigMap>, i: usize, counters: Arc<Counters>, until: Instant) {
    let mut rv = "0".to_string();
    while Instant::now() < until {
        let params = WatchParams::default().timeout(60);
        let Ok(stream) = api.watch(&params, &rv).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let mut stream = std::pin::pin!(stream);
        let deadline = tokio::time::sleep_until(until.into());
        tokio::pin!(deadline);
        loop {
            let event = tokio::select! {
                _ = &mut deadline => return,
                event = stream.next() => event,
            };
            match event {
                Some(Ok(
                    WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o),
                )) => {
                    counters.seen[i].fetch_add(1, Ordering::Relaxed);
                    if let Some(v) = o.metadata.resource_version {
                        rv = v;
                    }
                }
                Some(Ok(WatchEvent::Bookmark(b))) => rv = b.metadata.resource_version,
                Some(Ok(WatchEvent::Error(e))) if e.code == 410 => {
                    counters.relists[i].fetch_add(1, Ordering::Relaxed);
                    rv = "0".into();
                    break;
                }
                Some(Ok(WatchEvent::Error(_)) | Err(_)) | None => break,
            }
        }
    }
}

/// The process's resident set, from `/proc/self/statm` (0 where there is none).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn mb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1e6)
}

struct Sample {
    at: Duration,
    rss: u64,
    heap: u64,
    writes: u64,
    errors: u64,
    behind: [u64; WATCHERS],
}

#[tokio::main]
async fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let secs: u64 = std::env::var("CRT_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if benching { 600 } else { 2 });
    let total = Duration::from_secs(secs);
    // Every 10 s, one row a minute; a short run samples ten times and prints each.
    let sample_every = (total / 10).min(Duration::from_secs(10));
    let row_every = (total / 10).min(Duration::from_secs(60));

    let server = Server::start(Config::default()).await.unwrap();
    let counters = Arc::new(Counters::default());
    let start = Instant::now();
    let until = start + total;
    let mut tasks = Vec::new();
    for i in 0..WATCHERS {
        let api = Api::<ConfigMap>::namespaced(client(&server).await, "default");
        tasks.push(tokio::spawn(watcher(api, i, counters.clone(), until)));
    }
    for w in 0..WRITERS {
        let api = Api::<ConfigMap>::namespaced(client(&server).await, "default");
        tasks.push(tokio::spawn(writer(api, w, counters.clone(), until)));
    }

    println!(
        "soak: {WRITERS} writers over {} ConfigMaps of ~1 KB, {WATCHERS} watchers, {secs} s",
        WRITERS * OBJECTS_PER_WRITER
    );
    println!(
        "{:>7} {:>9} {:>9} {:>10} {:>8} {:>7} {:>9} {:>9}",
        "time", "RSS MB", "heap MB", "writes", "writes/s", "non-2xx", "behind 1", "behind 2"
    );
    let mut samples: Vec<Sample> = Vec::new();
    let mut last_row = (Duration::ZERO, 0u64);
    let mut next = start + sample_every;
    while next <= until + Duration::from_millis(1) {
        tokio::time::sleep_until(next.into()).await;
        next += sample_every;
        let writes = counters.writes.load(Ordering::Relaxed);
        let seen = |i: usize| counters.seen[i].load(Ordering::Relaxed);
        let sample = Sample {
            at: start.elapsed(),
            rss: rss_bytes(),
            heap: ALLOCATOR.allocated() as u64,
            writes,
            errors: counters.errors.load(Ordering::Relaxed),
            // Successful writes each make one event; a watcher behind by a few hundred is
            // reading the events of the last few milliseconds.
            behind: [0, 1].map(|i| writes.saturating_sub(seen(i))),
        };
        let row_due = sample.at.as_millis() / row_every.as_millis().max(1)
            > last_row.0.as_millis() / row_every.as_millis().max(1);
        if row_due {
            let rate = (sample.writes - last_row.1) as f64 / (sample.at - last_row.0).as_secs_f64();
            println!(
                "{:>6.0}s {:>9} {:>9} {:>10} {:>8.0} {:>7} {:>9} {:>9}",
                sample.at.as_secs_f64(),
                mb(sample.rss),
                mb(sample.heap),
                sample.writes,
                rate,
                sample.errors,
                sample.behind[0],
                sample.behind[1],
            );
            last_row = (sample.at, sample.writes);
        }
        samples.push(sample);
    }
    for t in tasks {
        t.await.unwrap();
    }

    // The verdict: the heap's peak over the last tenth of the run against its peak over the
    // tenth before half-time (by then the watch window, 10,000 events, has long filled: the
    // heap climbs until it has, then must stay flat).
    let tenth = samples.len().max(10) / 10;
    let half = samples.len() / 2;
    let peak = |s: &[Sample]| s.iter().map(|s| s.heap).max().unwrap_or(0);
    let early = peak(&samples[half.saturating_sub(tenth)..half.max(1).min(samples.len())]);
    let late = peak(&samples[samples.len().saturating_sub(tenth)..]);
    let last = samples.last().expect("at least one sample");
    let relists: u64 = counters
        .relists
        .iter()
        .map(|r| r.load(Ordering::Relaxed))
        .sum();
    let max_rss = samples.iter().map(|s| s.rss).max().unwrap_or(0);
    println!(
        "writes {} ({:.0}/s), non-2xx {}, watcher relists {relists}, peak RSS {} MB, \
         live heap {} MB early -> {} MB late ({:+.1}%)",
        last.writes,
        last.writes as f64 / last.at.as_secs_f64(),
        last.errors,
        mb(max_rss),
        mb(early),
        mb(late),
        (late as f64 / early.max(1) as f64 - 1.0) * 100.0,
    );
    assert!(last.writes > 0, "the writers wrote");
    assert!(
        counters.seen.iter().all(|s| s.load(Ordering::Relaxed) > 0),
        "every watcher saw events"
    );
    server.stop().await;
}
