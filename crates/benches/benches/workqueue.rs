//! Workqueue cost per item: add + get + done.
//!
//! - `cycle/1-worker`: one task adds an item, gets it and marks it done, in a loop (queue depth
//!   1), the figure client-go's plain queue is quoted with (650-700 ns on this kind of machine).
//! - `drain/8-workers`: one producer adds distinct items while 8 worker tasks on a 2-thread
//!   runtime get and mark them done; time per item.
//!
//! Items are `Request`s (`namespace/name`, cloned from a pool: the clone is part of the cost, as
//! a handler creates the request) and, to show the queue's own cost, `u64`s.
//!
//! Run: `cargo bench --manifest-path crates/benches/Cargo.toml --bench workqueue -- --warm-up-time 1 --measurement-time 3`
//!
//! Profiling: `CRT_BENCH_PROFILE=<case>` (`plain/u64`, `plain/request`, `priority/u64`,
//! `priority/request`) runs only that case's add+get+done cycle, `CRT_BENCH_PROFILE_N` times
//! (default 100,000), without criterion, for an instruction count that load does not change:
//!
//! ```text
//! CRT_BENCH_PROFILE=plain/u64 CRT_BENCH_PROFILE_N=100000 valgrind --tool=callgrind \
//!     crates/benches/target/release/deps/workqueue-<hash>
//! ```
//!
//! Two runs with different N give the instructions per cycle without the set-up:
//! `(Ir(N2) - Ir(N1)) / (N2 - N1)`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use controller_runtime::Request;
use controller_runtime::workqueue::{
    Queue, QueueConfig, QueueItem, QueueOrder, Workqueue, WorkqueueMetrics,
};
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group};

const POOL: usize = 4096;

fn requests() -> Vec<Request> {
    (0..POOL)
        .map(|i| Request::new("default", format!("object-{i:05}")))
        .collect()
}

fn numbers() -> Vec<u64> {
    (0..POOL as u64).collect()
}

type MakeQueue<T> = fn() -> Arc<dyn Queue<T>>;

fn plain<T: QueueItem>() -> Arc<dyn Queue<T>> {
    Workqueue::new(QueueConfig::default())
}

fn priority<T: QueueItem>() -> Arc<dyn Queue<T>> {
    Workqueue::new(QueueConfig::default().order(QueueOrder::Priority))
}

/// With metrics: the series are resolved at construction; the hot path adds a counter, a gauge,
/// two clock reads and two histogram observations per cycle.
fn with_metrics(cfg: QueueConfig<Request>) -> QueueConfig<Request> {
    let mut registry = prometheus_client::registry::Registry::default();
    cfg.name("bench")
        .metrics(WorkqueueMetrics::register(&mut registry))
}

fn plain_metrics() -> Arc<dyn Queue<Request>> {
    Workqueue::new(with_metrics(QueueConfig::default()))
}

fn priority_metrics() -> Arc<dyn Queue<Request>> {
    Workqueue::new(with_metrics(
        QueueConfig::default().order(QueueOrder::Priority),
    ))
}

/// One worker: add, get, done, repeated.
fn cycle<T: QueueItem, M: criterion::measurement::Measurement<Value = Duration>>(
    group: &mut BenchmarkGroup<'_, M>,
    id: &str,
    make: MakeQueue<T>,
    pool: &[T],
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    group.bench_function(id, |b| {
        let queue = make();
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for i in 0..iters as usize {
                    queue.add(pool[i % POOL].clone());
                    let item = queue.get().await.unwrap();
                    queue.done(black_box(&item));
                }
                start.elapsed()
            })
        })
    });
}

/// One producer, eight workers on a two-thread runtime; time per item.
fn drain<T: QueueItem, M: criterion::measurement::Measurement<Value = Duration>>(
    group: &mut BenchmarkGroup<'_, M>,
    id: &str,
    make: MakeQueue<T>,
    pool: &[T],
) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let queue = make();
            let pool = pool.to_vec();
            rt.block_on(async move {
                let start = Instant::now();
                let workers: Vec<_> = (0..8)
                    .map(|_| {
                        let queue = queue.clone();
                        tokio::spawn(async move {
                            while let Some(item) = queue.get().await {
                                queue.done(black_box(&item));
                            }
                        })
                    })
                    .collect();
                for i in 0..iters as usize {
                    queue.add(pool[i % POOL].clone());
                    if i % 256 == 255 {
                        tokio::task::yield_now().await;
                    }
                }
                queue.shut_down();
                for w in workers {
                    w.await.unwrap();
                }
                start.elapsed()
            })
        })
    });
}

fn benches(c: &mut Criterion) {
    let requests = requests();
    let numbers = numbers();
    let mut group = c.benchmark_group("workqueue");
    group.throughput(Throughput::Elements(1));
    cycle(&mut group, "plain/cycle/1-worker/request", plain, &requests);
    cycle(&mut group, "plain/cycle/1-worker/u64", plain, &numbers);
    cycle(
        &mut group,
        "priority/cycle/1-worker/request",
        priority,
        &requests,
    );
    cycle(
        &mut group,
        "priority/cycle/1-worker/u64",
        priority,
        &numbers,
    );
    cycle(
        &mut group,
        "plain/cycle/1-worker/request+metrics",
        plain_metrics,
        &requests,
    );
    cycle(
        &mut group,
        "priority/cycle/1-worker/request+metrics",
        priority_metrics,
        &requests,
    );
    drain(
        &mut group,
        "plain/drain/8-workers/request",
        plain,
        &requests,
    );
    drain(
        &mut group,
        "priority/drain/8-workers/request",
        priority,
        &requests,
    );
    group.finish();
}

/// Best-of-batches figures, robust against other processes on a shared machine: each case runs
/// `BATCHES` batches of `CYCLES` add+get+done cycles on one worker and reports the fastest batch.
/// Enabled with `WORKQUEUE_BEST_OF=1`.
fn best_of() {
    const BATCHES: usize = 200;
    const CYCLES: usize = 20_000;
    fn run<T: QueueItem>(name: &str, make: MakeQueue<T>, pool: &[T]) {
        if std::env::var("WORKQUEUE_CASE").is_ok_and(|c| !name.contains(&c)) {
            return;
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let queue = make();
        let batches = std::env::var("WORKQUEUE_BATCHES")
            .ok()
            .and_then(|b| b.parse().ok());
        let best = (0..batches.unwrap_or(BATCHES))
            .map(|_| {
                rt.block_on(async {
                    let start = Instant::now();
                    for i in 0..CYCLES {
                        queue.add(pool[i % POOL].clone());
                        let item = queue.get().await.unwrap();
                        queue.done(black_box(&item));
                    }
                    start.elapsed()
                })
            })
            .min()
            .unwrap();
        println!(
            "best-of {name}: {:.0} ns/cycle",
            best.as_nanos() as f64 / CYCLES as f64
        );
    }
    fn run_drain<T: QueueItem>(name: &str, make: MakeQueue<T>, pool: &[T]) {
        if std::env::var("WORKQUEUE_CASE").is_ok_and(|c| !name.contains(&c)) {
            return;
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let best = (0..20)
            .map(|_| {
                let queue = make();
                let pool = pool.to_vec();
                rt.block_on(async move {
                    let start = Instant::now();
                    let workers: Vec<_> = (0..8)
                        .map(|_| {
                            let queue = queue.clone();
                            tokio::spawn(async move {
                                while let Some(item) = queue.get().await {
                                    queue.done(black_box(&item));
                                }
                            })
                        })
                        .collect();
                    for i in 0..CYCLES {
                        queue.add(pool[i % POOL].clone());
                        if i % 256 == 255 {
                            tokio::task::yield_now().await;
                        }
                    }
                    queue.shut_down();
                    for w in workers {
                        w.await.unwrap();
                    }
                    start.elapsed()
                })
            })
            .min()
            .unwrap();
        println!(
            "best-of {name}: {:.0} ns/item",
            best.as_nanos() as f64 / CYCLES as f64
        );
    }
    let requests = requests();
    let numbers = numbers();
    run_drain("plain/drain/8-workers/request", plain, &requests);
    run_drain("priority/drain/8-workers/request", priority, &requests);
    run("plain/cycle/1-worker/request", plain, &requests);
    run("plain/cycle/1-worker/u64", plain, &numbers);
    run("priority/cycle/1-worker/request", priority, &requests);
    run("priority/cycle/1-worker/u64", priority, &numbers);
    run(
        "plain/cycle/1-worker/request+metrics",
        plain_metrics,
        &requests,
    );
    run(
        "priority/cycle/1-worker/request+metrics",
        priority_metrics,
        &requests,
    );
}

criterion_group!(workqueue, benches);

/// One case's cycle, `n` times, for a profiler (`CRT_BENCH_PROFILE`).
fn profile(case: &str, n: usize) {
    fn run<T: QueueItem>(make: MakeQueue<T>, pool: &[T], n: usize) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let queue = make();
        rt.block_on(async {
            for i in 0..n {
                queue.add(pool[i % POOL].clone());
                let item = queue.get().await.unwrap();
                queue.done(black_box(&item));
            }
        });
    }
    match case {
        "plain/u64" => run(plain, &numbers(), n),
        "plain/request" => run(plain, &requests(), n),
        "priority/u64" => run(priority, &numbers(), n),
        "priority/request" => run(priority, &requests(), n),
        other => panic!("unknown CRT_BENCH_PROFILE case {other:?}"),
    }
}

fn main() {
    if let Ok(case) = std::env::var("CRT_BENCH_PROFILE") {
        let n = std::env::var("CRT_BENCH_PROFILE_N")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(100_000);
        profile(&case, n);
        return;
    }
    if std::env::var_os("WORKQUEUE_BEST_OF").is_some() {
        best_of();
        return;
    }
    workqueue();
    Criterion::default().configure_from_args().final_summary();
}
