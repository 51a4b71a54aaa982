//! The event pipeline's own cost, and a controller's reconciles per second.
//!
//! - `dispatch/update-enqueued`: an update event through two predicates (generation changed,
//!   label selector) and `EnqueueRequestForObject` into the priority queue, then get + done: the
//!   per-event cost a Kind source adds on top of the informer.
//! - `dispatch/update-filtered`: the same event as a resync (same generation and
//!   resourceVersion): the predicates drop it, nothing is enqueued.
//! - `controller/{1,8}-workers`: distinct GenericEvents sent into a Channel source, reconciled by
//!   a no-op reconciler through the whole pipeline (Channel distributor task -> destination task
//!   -> predicates -> handler -> priority queue -> workers); time per reconcile, on a 2-thread
//!   runtime.
//!
//! Run: `cargo bench --manifest-path crates/benches/Cargo.toml --bench pipeline -- --warm-up-time 1 --measurement-time 3`
//!
//! Profiling: `CRT_BENCH_PROFILE=filtered` or `CRT_BENCH_PROFILE=enqueued` runs only that
//! dispatch loop, `CRT_BENCH_PROFILE_N` times (default 100,000), without criterion, for an
//! instruction count under `valgrind --tool=callgrind` (two runs with different N give the
//! instructions per event without the set-up).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use controller_runtime::Request;
use controller_runtime::controller::{Controller, ControllerOptions};
use controller_runtime::event::{Event, GenericEvent, UpdateEvent};
use controller_runtime::handler::EnqueueRequestForObject;
use controller_runtime::predicate;
use controller_runtime::reconcile::{self, Action};
use controller_runtime::source::{self, EventDispatcher};
use controller_runtime::workqueue::{Queue, QueueConfig, QueueOrder, Workqueue};
use criterion::{Criterion, criterion_group};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

fn deployment(generation: i64, rv: &str) -> Arc<Deployment> {
    let mut d = Deployment::default();
    d.metadata.namespace = Some("default".into());
    d.metadata.name = Some("web".into());
    d.metadata.generation = Some(generation);
    d.metadata.resource_version = Some(rv.into());
    d.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    Arc::new(d)
}

struct Dispatch {
    rt: tokio::runtime::Runtime,
    queue: Arc<dyn Queue<Request>>,
    dispatcher: EventDispatcher<Deployment>,
    changed: Event<Deployment>,
    resync: Event<Deployment>,
}

fn setup() -> Dispatch {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let queue: Arc<dyn Queue<Request>> =
        Workqueue::new(QueueConfig::default().order(QueueOrder::Priority));
    let dispatcher = EventDispatcher::new(
        Arc::new(EnqueueRequestForObject),
        queue.clone(),
        vec![
            predicate::boxed(predicate::GenerationChanged),
            predicate::boxed(
                predicate::LabelSelectorPredicate::parse("app=web,tier notin (db)").unwrap(),
            ),
        ],
    );
    let changed = Event::Update(UpdateEvent {
        old: deployment(1, "10"),
        new: deployment(2, "11"),
    });
    let resync = Event::Update(UpdateEvent {
        old: deployment(2, "11"),
        new: deployment(2, "11"),
    });
    Dispatch {
        rt,
        queue,
        dispatcher,
        changed,
        resync,
    }
}

/// One dispatch loop, `n` times, for a profiler (`CRT_BENCH_PROFILE`).
fn profile(case: &str, n: usize) {
    let d = setup();
    match case {
        "filtered" => {
            for _ in 0..n {
                assert!(!d.dispatcher.dispatch(black_box(&d.resync)));
            }
        }
        "enqueued" => d.rt.block_on(async {
            for _ in 0..n {
                assert!(d.dispatcher.dispatch(black_box(&d.changed)));
                let item = d.queue.get().await.unwrap();
                d.queue.done(&item);
            }
        }),
        other => panic!("unknown CRT_BENCH_PROFILE case {other:?}"),
    }
}

fn dispatch(c: &mut Criterion) {
    let Dispatch {
        rt,
        queue,
        dispatcher,
        changed,
        resync,
    } = setup();
    let mut group = c.benchmark_group("dispatch");
    group.bench_function("update-enqueued", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    assert!(dispatcher.dispatch(black_box(&changed)));
                    let item = queue.get().await.unwrap();
                    queue.done(&item);
                }
                start.elapsed()
            })
        })
    });
    group.bench_function("update-filtered", |b| {
        b.iter(|| assert!(!dispatcher.dispatch(black_box(&resync))))
    });
    group.finish();
}

fn controller(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("controller");
    group.sample_size(10);
    for workers in [1usize, 8] {
        group.bench_function(format!("{workers}-workers"), |b| {
            b.iter_custom(|iters| rt.block_on(run_controller(workers, iters)))
        });
    }
    group.finish();
}

/// Sends `n` distinct events and returns the time until all `n` were reconciled.
async fn run_controller(workers: usize, n: u64) -> Duration {
    let objects: Vec<Arc<ConfigMap>> = (0..n)
        .map(|i| {
            let mut cm = ConfigMap::default();
            cm.metadata.namespace = Some("default".into());
            cm.metadata.name = Some(format!("cm-{i}"));
            Arc::new(cm)
        })
        .collect();
    let count = Arc::new(AtomicU64::new(0));
    let all_done = Arc::new(Notify::new());
    let reconciler = {
        let (count, all_done) = (count.clone(), all_done.clone());
        reconcile::from_fn(move |_: Request, _ctx| {
            if count.fetch_add(1, Ordering::Relaxed) + 1 == n {
                all_done.notify_one();
            }
            async { Ok(Action::done()) }
        })
    };
    let options = ControllerOptions::default().with_max_concurrent_reconciles(workers);
    let controller = Controller::new("bench", reconciler, options).unwrap();
    let (tx, channel) = source::channel::<ConfigMap>(1024);
    controller
        .watch(channel, EnqueueRequestForObject, vec![])
        .await
        .unwrap();
    let ctx = CancellationToken::new();
    let running = tokio::spawn({
        let (c, ctx) = (controller.clone(), ctx.clone());
        async move { c.start(ctx).await }
    });

    let start = Instant::now();
    let done = all_done.notified();
    for object in objects {
        tx.send(GenericEvent { object }).await.unwrap();
    }
    done.await;
    let elapsed = start.elapsed();
    ctx.cancel();
    running.await.unwrap().unwrap();
    elapsed
}

criterion_group!(benches, dispatch, controller);

fn main() {
    if let Ok(case) = std::env::var("CRT_BENCH_PROFILE") {
        let n = std::env::var("CRT_BENCH_PROFILE_N")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(100_000);
        profile(&case, n);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
