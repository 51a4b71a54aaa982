//! The contender role's common part: what every reconcile records (the [`Tally`]), and the
//! conversation with the driver over stdin/stdout, the same for both runtimes.
//!
//! Lines the contender prints:
//! - `SYNCED cpu heap rss`: every object was reconciled once; the CPU seconds the process used
//!   until then, the heap it retains (live bytes after the sync minus before the runtime
//!   started) and its peak RSS in bytes.
//! - `MARKED`: answer to `mark` (start of a measured window: latencies cleared, counters read).
//! - `DONE secs reconciles cpu p50 p99 max latencies matched allocs bytes`: answer to `await v0
//!   v1 ...`, once every object's recorded version reached the driver's (or after 60 s):
//!   seconds, reconciles and CPU seconds since the mark, change-to-reconcile latency
//!   percentiles in microseconds, how many latencies, how many objects' last reconciled version
//!   equals the driver's, and the allocator calls (alloc + realloc) and bytes allocated since
//!   the mark, by the whole process.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use controller_runtime::parking_lot::Mutex;
use k8s_openapi::api::core::v1::ConfigMap;

use super::procfs::{cpu_seconds, epoch_nanos, peak_rss_bytes};

/// What the reconciles of one contender have seen, indexed by object (`cm-N` or parent `p-N`).
pub struct Tally {
    /// Per object, the highest version reconciled: a resourceVersion (`bench`), or the latest
    /// child stamp read, at least 1 (`owners`). 0: not reconciled yet.
    seen: Vec<AtomicU64>,
    /// Objects reconciled at least once.
    first: AtomicUsize,
    reconciles: AtomicU64,
    measuring: AtomicBool,
    /// Change-to-reconcile latencies (ns) in the measured window; allocated up front.
    latencies: Mutex<Vec<u64>>,
    synced: tokio::sync::Notify,
}

impl Tally {
    /// A tally of `objects` objects.
    pub fn new(objects: usize) -> Self {
        Tally {
            seen: (0..objects).map(|_| AtomicU64::new(0)).collect(),
            first: AtomicUsize::new(0),
            reconciles: AtomicU64::new(0),
            measuring: AtomicBool::new(false),
            latencies: Mutex::new(Vec::with_capacity(objects.max(1024) * 2)),
            synced: tokio::sync::Notify::new(),
        }
    }

    /// One reconcile of object `index` at `version`; `stamp`: the write stamp (epoch ns) of
    /// the change it sees, 0 if none.
    pub fn record(&self, index: usize, version: u64, stamp: u64) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = self.seen.get(index) else {
            return;
        };
        let previous = slot.fetch_max(version, Ordering::AcqRel);
        if previous == 0
            && version > 0
            && self.first.fetch_add(1, Ordering::AcqRel) + 1 == self.seen.len()
        {
            self.synced.notify_one();
        }
        if version > previous && stamp > 0 && self.measuring.load(Ordering::Relaxed) {
            let latency = epoch_nanos().saturating_sub(stamp);
            let mut latencies = self.latencies.lock();
            if latencies.len() < latencies.capacity() {
                latencies.push(latency);
            }
        }
    }
}

/// The number in an object's name: `cm-000042` and `p-000042` give 42.
pub fn index(name: &str) -> usize {
    name.split('-')
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX)
}

/// A ConfigMap's resourceVersion as a number.
pub fn version(cm: &ConfigMap) -> u64 {
    cm.metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

/// The write stamp the server's churn put in annotation `e2e/w`, 0 if none.
pub fn stamp(cm: &ConfigMap) -> u64 {
    cm.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("e2e/w"))
        .and_then(|w| w.parse().ok())
        .unwrap_or(0)
}

/// The counting allocator's figures at one moment.
#[derive(Clone, Copy, Debug, Default)]
pub struct Allocations {
    /// Live bytes (allocated minus freed).
    pub live: usize,
    /// Allocator calls that returned memory so far (alloc, alloc_zeroed, realloc).
    pub calls: usize,
    /// Bytes requested so far (a realloc counts its growth).
    pub bytes: usize,
}

/// Talks with the driver until `stop`; `heap_before`: the allocator's live bytes before the
/// runtime started; `allocations`: reads the allocator's counters now.
pub async fn converse(tally: Arc<Tally>, heap_before: usize, allocations: fn() -> Allocations) {
    let pid = std::process::id();
    if tokio::time::timeout(Duration::from_secs(300), tally.synced.notified())
        .await
        .is_err()
    {
        let first = tally.first.load(Ordering::Relaxed);
        println!(
            "FAILED {first} of {} objects reconciled in 300 s",
            tally.seen.len()
        );
        std::process::exit(1);
    }
    let cpu = cpu_seconds(pid);
    // Let the list's buffers go before reading what the process keeps.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let heap = allocations().live.saturating_sub(heap_before);
    println!("SYNCED {cpu} {heap} {}", peak_rss_bytes(pid));

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut mark = (Instant::now(), 0u64, 0.0f64, Allocations::default());
    while let Some(line) = rx.recv().await {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("mark") => {
                tally.latencies.lock().clear();
                tally.measuring.store(true, Ordering::Relaxed);
                mark = (
                    Instant::now(),
                    tally.reconciles.load(Ordering::Relaxed),
                    cpu_seconds(pid),
                    allocations(),
                );
                println!("MARKED");
            }
            Some("await") => {
                let target: Vec<u64> = words.filter_map(|w| w.parse().ok()).collect();
                let reached = || {
                    target
                        .iter()
                        .zip(&tally.seen)
                        .all(|(t, s)| s.load(Ordering::Acquire) >= *t)
                };
                let deadline = Instant::now() + Duration::from_secs(60);
                while !reached() && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                let secs = mark.0.elapsed().as_secs_f64();
                let reconciles = tally.reconciles.load(Ordering::Relaxed) - mark.1;
                let cpu = cpu_seconds(pid) - mark.2;
                let allocated = allocations();
                let calls = allocated.calls - mark.3.calls;
                let bytes = allocated.bytes - mark.3.bytes;
                let matched = target
                    .iter()
                    .zip(&tally.seen)
                    .filter(|(t, s)| s.load(Ordering::Acquire) == **t)
                    .count();
                let mut latencies = std::mem::take(&mut *tally.latencies.lock());
                latencies.sort_unstable();
                let pick = |q: f64| {
                    latencies
                        .get(
                            ((latencies.len() as f64 * q) as usize).min(latencies.len().max(1) - 1),
                        )
                        .map_or(0.0, |ns| *ns as f64 / 1e3)
                };
                println!(
                    "DONE {secs} {reconciles} {cpu} {} {} {} {} {matched} {calls} {bytes}",
                    pick(0.5),
                    pick(0.99),
                    pick(1.0),
                    latencies.len()
                );
                latencies.clear();
                *tally.latencies.lock() = latencies;
            }
            _ => std::process::exit(0),
        }
    }
    std::process::exit(0);
}
