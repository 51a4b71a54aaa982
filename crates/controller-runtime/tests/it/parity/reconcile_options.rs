//! What a reconcile result and the controller's options do to the next reconcile: a result's
//! priority (`Action::with_priority`, controller-runtime's `Result.Priority`) and debouncing
//! (`ControllerOptions::with_debounce`, kube-rs' `Config::debounce`).
//!
//! The priority and paused-clock debounce tests run a controller in process (keys added to its
//! queue or sent through a channel source); the burst test updates a ConfigMap on the embedded
//! API server through kube-client and counts the reconciles the informer's events cause.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use controller_runtime::builder::{ControllerBuilder, Input};
use controller_runtime::controller::{Controller, ControllerOptions, NewQueueFn};
use controller_runtime::event::GenericEvent;
use controller_runtime::handler::EnqueueRequestForObject;
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::reconcile::{self, Action, ReconcileError};
use controller_runtime::workqueue::{
    AddOpts, Enqueue, LOW_PRIORITY, Queue, QueueConfig, QueueOrder, RateLimiter, Workqueue,
};
use controller_runtime::{Request, source};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------------------------------------
// Fixtures

/// A priority queue that records each key a worker takes, with the priority it was handed out
/// at (what the controller learns through `get_with_priority`).
struct Recording {
    inner: Arc<dyn Queue<Request>>,
    taken: Arc<Mutex<Vec<(String, i32)>>>,
}

impl Enqueue<Request> for Recording {
    fn add_with_opts(&self, opts: AddOpts, item: Request) {
        self.inner.add_with_opts(opts, item)
    }
}

impl Queue<Request> for Recording {
    fn get_with_priority(&self) -> BoxFuture<'_, Option<(Request, i32)>> {
        Box::pin(async move {
            let got = self.inner.get_with_priority().await;
            if let Some((item, priority)) = &got {
                self.taken.lock().push((item.name.clone(), *priority));
            }
            got
        })
    }
    fn done(&self, item: &Request) {
        self.inner.done(item)
    }
    fn forget(&self, item: &Request) {
        self.inner.forget(item)
    }
    fn num_requeues(&self, item: &Request) -> u32 {
        self.inner.num_requeues(item)
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn shut_down(&self) {
        self.inner.shut_down()
    }
    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()> {
        self.inner.shut_down_with_drain()
    }
    fn is_shutting_down(&self) -> bool {
        self.inner.is_shutting_down()
    }
}

/// A `new_queue` building a [`Recording`] priority queue that writes to `taken`.
fn recording(taken: &Arc<Mutex<Vec<(String, i32)>>>) -> NewQueueFn<Request> {
    let taken = taken.clone();
    Arc::new(
        move |name: &str, rate_limiter: Arc<dyn RateLimiter<Request>>| {
            let inner = Workqueue::new(
                QueueConfig::default()
                    .name(name)
                    .rate_limiter(rate_limiter)
                    .order(QueueOrder::Priority),
            );
            let queue: Arc<dyn Queue<Request>> = Arc::new(Recording {
                inner,
                taken: taken.clone(),
            });
            queue
        },
    )
}

/// Runs `controller` until the returned token is cancelled.
fn run(controller: &Controller) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let ctx = CancellationToken::new();
    let handle = tokio::spawn({
        let (c, ctx) = (controller.clone(), ctx.clone());
        async move { c.start(ctx).await.expect("controller runs") }
    });
    (ctx, handle)
}

async fn stop(ctx: CancellationToken, handle: tokio::task::JoinHandle<()>) {
    ctx.cancel();
    handle.await.unwrap();
}

fn cm(name: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.name = Some(name.into());
    Arc::new(cm)
}

// ---------------------------------------------------------------------------------------------
// Result priority

/// All keys wait at low priority, `a` first. `a`'s first reconcile asks to come back in 1 ms;
/// the others take 10 ms each. With `with_priority(10)` the requeued `a` overtakes the low keys
/// still waiting; without, it keeps its low priority and queues behind them.
#[tokio::test(start_paused = true)]
async fn a_requeue_with_a_higher_priority_overtakes_waiting_low_priority_keys() {
    let cases: [(Option<i32>, &[&str]); 2] = [
        (Some(10), &["a", "b1", "a", "b2", "b3", "b4"]),
        (None, &["a", "b1", "b2", "b3", "b4", "a"]),
    ];
    for (priority, want) in cases {
        let order = Arc::new(Mutex::new(Vec::<String>::new()));
        let reconciler = reconcile::from_fn({
            let order = order.clone();
            move |req: Request, _ctx| {
                let order = order.clone();
                async move {
                    let first = {
                        let mut order = order.lock();
                        order.push(req.name.clone());
                        order.iter().filter(|n| **n == req.name).count() == 1
                    };
                    if req.name == "a" {
                        if !first {
                            return Ok(Action::done());
                        }
                        let again = Action::requeue_after(Duration::from_millis(1));
                        return Ok(match priority {
                            Some(p) => again.with_priority(p),
                            None => again,
                        });
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    Ok::<_, ReconcileError>(Action::done())
                }
            }
        });
        let controller =
            Controller::new("priority", reconciler, ControllerOptions::default()).unwrap();
        for name in ["a", "b1", "b2", "b3", "b4"] {
            controller.queue().add_with_opts(
                AddOpts::default().priority(LOW_PRIORITY),
                Request::new("ns", name),
            );
        }
        let (ctx, handle) = run(&controller);
        while order.lock().len() < want.len() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Nothing more comes.
        tokio::time::sleep(Duration::from_secs(1)).await;
        stop(ctx, handle).await;
        assert_eq!(*order.lock(), want, "priority {priority:?}");
    }
}

/// An error's retry keeps the priority the key was handed out at; a result's priority replaces
/// it for the requeue and the retries after it; `done` with a priority queues nothing.
#[tokio::test(start_paused = true)]
async fn error_retries_keep_the_priority_and_a_result_priority_changes_it() {
    let taken = Arc::new(Mutex::new(Vec::new()));
    let calls = Arc::new(AtomicUsize::new(0));
    let reconciler = reconcile::from_fn({
        let calls = calls.clone();
        move |_: Request, _ctx| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                match n {
                    0 => Err(ReconcileError::msg("first try fails")),
                    1 => Ok(Action::requeue_after(Duration::from_millis(1)).with_priority(-3)),
                    2 => Err(ReconcileError::msg("fails again")),
                    _ => Ok(Action::done().with_priority(50)),
                }
            }
        }
    });
    let options = ControllerOptions::default().with_new_queue(recording(&taken));
    let controller = Controller::new("retries", reconciler, options).unwrap();
    controller
        .queue()
        .add_with_opts(AddOpts::default().priority(5), Request::new("ns", "a"));
    let (ctx, handle) = run(&controller);
    while calls.load(Ordering::SeqCst) < 4 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop(ctx, handle).await;
    let a = |p| ("a".to_string(), p);
    assert_eq!(*taken.lock(), [a(5), a(5), a(-3), a(-3)]);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        4,
        "done with a priority requeues nothing"
    );
}

// ---------------------------------------------------------------------------------------------
// Debounce

/// Through a controller, on both queue kinds: triggers for one key at 0, 0.5 d and 0.9 d are
/// one reconcile at 1.9 d; another key's single trigger is reconciled d after it.
#[tokio::test(start_paused = true)]
async fn debounced_triggers_are_one_reconcile_a_window_after_the_last() {
    const D: Duration = Duration::from_secs(10);
    for use_priority_queue in [true, false] {
        let calls = Arc::new(Mutex::new(Vec::<(String, Duration)>::new()));
        let start = Instant::now();
        let reconciler = reconcile::from_fn({
            let calls = calls.clone();
            move |req: Request, _ctx| {
                calls.lock().push((req.name.clone(), start.elapsed()));
                async { Ok::<_, ReconcileError>(Action::done()) }
            }
        });
        let options = ControllerOptions::default()
            .with_use_priority_queue(use_priority_queue)
            .with_debounce(D);
        let controller = Controller::new("debounce", reconciler, options).unwrap();
        let (tx, channel) = source::channel::<ConfigMap>(16);
        controller
            .watch(channel, EnqueueRequestForObject, vec![])
            .await
            .unwrap();
        let (ctx, handle) = run(&controller);
        let send = |name| {
            let tx = tx.clone();
            async move { tx.send(GenericEvent { object: cm(name) }).await.unwrap() }
        };
        send("a").await;
        tokio::time::sleep(D / 2).await;
        send("a").await;
        send("b").await;
        tokio::time::sleep(D * 4 / 10).await;
        send("a").await;
        tokio::time::sleep(D * 5).await;
        stop(ctx, handle).await;
        let calls = calls.lock();
        // The channel delivers through a task, a few scheduler turns after each send: no
        // clock time passes in between on a paused clock.
        assert_eq!(
            *calls,
            [
                ("b".to_string(), D * 15 / 10),
                ("a".to_string(), D * 19 / 10)
            ],
            "use_priority_queue {use_priority_queue}"
        );
    }
}

/// 20 rapid updates of one ConfigMap through kube-client: with a debounce window, the informer's
/// events are one reconcile (at most two), which sees the last update; without, more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_updates_is_one_reconcile_with_debounce() {
    let (_server, client) = support::server().await;
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let mut counts = Vec::new();
    for (name, debounce) in [("on", Duration::from_secs(1)), ("off", Duration::ZERO)] {
        let options = ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled);
        let mgr = Manager::new(client.clone(), options).unwrap();
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        ControllerBuilder::new(&mgr)
            .named(format!("burst-{name}"))
            .for_(Input::<ConfigMap>::new())
            .with_options(
                ControllerOptions::default()
                    .with_need_leader_election(false)
                    .with_debounce(debounce),
            )
            .complete(seen.clone(), move |cm: Arc<ConfigMap>, ctx| async move {
                if cm.metadata.name.as_deref() == Some(name) {
                    let n = cm.data.as_ref().and_then(|d| d.get("n")).cloned();
                    ctx.lock().push(n.unwrap_or_default());
                }
                Ok(Action::done())
            })
            .await
            .unwrap();
        let ctx = CancellationToken::new();
        let handle = tokio::spawn({
            let (mgr, ctx) = (mgr.clone(), ctx.clone());
            async move { mgr.start(ctx).await.expect("manager runs") }
        });
        let object: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"}, "data": {"n": "0"}
        }))
        .unwrap();
        // Created before the cache has synced, or after: either way one more trigger.
        cms.create(&PostParams::default(), &object).await.unwrap();
        for n in 1..=20 {
            let patch = json!({"data": {"n": n.to_string()}});
            cms.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        }
        // Wait for a reconcile of the last update, then a window and more for any other.
        let deadline = Instant::now() + Duration::from_secs(30);
        while seen.lock().last().map(String::as_str) != Some("20") {
            assert!(Instant::now() < deadline, "{name}: never reconciled n=20");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(debounce * 2 + Duration::from_millis(500)).await;
        ctx.cancel();
        handle.await.unwrap();
        let seen = seen.lock().clone();
        assert_eq!(
            seen.last().map(String::as_str),
            Some("20"),
            "{name}: {seen:?}"
        );
        counts.push((name, seen.len()));
    }
    eprintln!("reconciles of the burst: {counts:?}");
    let (on, off) = (counts[0].1, counts[1].1);
    assert!(
        on <= 2,
        "debounced: {on} reconciles of a burst of 21 triggers"
    );
    assert!(off > on, "without debounce {off} reconciles, with {on}");
}
