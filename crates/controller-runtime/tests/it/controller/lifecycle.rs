//! Workers, start, sync, warm-up, watches and stop.

use super::harness::*;

#[tokio::test(start_paused = true)]
async fn concurrency_limit_is_never_exceeded_and_keys_never_overlap() {
    const WORKERS: usize = 3;
    let in_flight = Arc::new(AtomicUsize::new(0));
    let max_seen = Arc::new(AtomicUsize::new(0));
    let per_key: Arc<parking_lot::Mutex<std::collections::HashSet<String>>> = Default::default();
    let overlap = Arc::new(AtomicBool::new(false));
    let (flight, max, keys, twice) = (
        in_flight.clone(),
        max_seen.clone(),
        per_key.clone(),
        overlap.clone(),
    );
    let options = ControllerOptions::default().with_max_concurrent_reconciles(WORKERS);
    let mut r = Running::start(options, move |req, _| {
        let (flight, max, keys, twice) = (flight.clone(), max.clone(), keys.clone(), twice.clone());
        Box::pin(async move {
            if !keys.lock().insert(req.name.clone()) {
                twice.store(true, Ordering::SeqCst); // one key reconciled by two workers at once
            }
            let now = flight.fetch_add(1, Ordering::SeqCst) + 1;
            max.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(10)).await;
            flight.fetch_sub(1, Ordering::SeqCst);
            keys.lock().remove(&req.name);
            Ok(Action::done())
        })
    })
    .await;
    r.assert_metric(r#"controller_runtime_max_concurrent_reconciles{controller="test"} 3"#);
    // 20 keys, each sent twice (the second send of a key may land while it is processing).
    for round in 0..2 {
        for i in 0..20 {
            r.send("ns", &format!("k{i}")).await;
        }
        if round == 0 {
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
    }
    let mut calls = 0;
    while tokio::time::timeout(Duration::from_secs(1), r.calls.recv())
        .await
        .is_ok()
    {
        calls += 1;
    }
    assert!((20..=40).contains(&calls), "{calls} reconciles");
    assert_eq!(
        max_seen.load(Ordering::SeqCst),
        WORKERS,
        "all workers used, never more"
    );
    assert_eq!(in_flight.load(Ordering::SeqCst), 0);
    assert!(
        !overlap.load(Ordering::SeqCst),
        "a key was reconciled by two workers at once"
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn stop_lets_the_running_reconcile_finish() {
    let finished = Arc::new(AtomicBool::new(false));
    let done = finished.clone();
    let mut r = Running::start(ControllerOptions::default(), move |_, _| {
        let done = done.clone();
        Box::pin(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            done.store(true, Ordering::SeqCst);
            Ok(Action::done())
        })
    })
    .await;
    r.send("ns", "slow").await;
    r.send("ns", "queued").await;
    let started = r.next_call().await;
    assert_eq!(started.req.name, "slow");
    let queue = r.controller.queue().clone();
    tokio::time::sleep(Duration::from_secs(1)).await;
    r.ctx.cancel();
    r.handle.await.unwrap().unwrap();
    assert!(
        finished.load(Ordering::SeqCst),
        "start returned before the reconcile finished"
    );
    assert_eq!(started.at.elapsed(), Duration::from_secs(5));
    // The queued key was not taken after the stop, and the queue is shut down.
    assert!(r.calls.try_recv().is_err());
    assert!(queue.is_shutting_down());
}

#[tokio::test(start_paused = true)]
async fn watch_added_after_start_is_started_at_once() {
    let mut r = Running::start(ControllerOptions::default(), |_, _| ok()).await;
    r.send("ns", "first").await;
    assert_eq!(r.next_call().await.req.name, "first");

    let (tx, channel) = source::channel::<ConfigMap>(4);
    r.controller
        .watch(channel, EnqueueRequestForObject, vec![])
        .await
        .unwrap();
    tx.send(GenericEvent {
        object: cm("other", "late"),
    })
    .await
    .unwrap();
    assert_eq!(r.next_call().await.req, Request::new("other", "late"));

    // A Func source added late is given the queue at once, too.
    let func = Func::new(
        |_, queue: Arc<dyn controller_runtime::workqueue::Enqueue<Request>>| async move {
            queue.add(Request::cluster_scoped("from-func"));
            Ok(())
        },
    );
    r.controller.add_watch(func).await.unwrap();
    assert_eq!(
        r.next_call().await.req,
        Request::cluster_scoped("from-func")
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn start_waits_for_syncing_sources_before_running_workers() {
    let (tx, mut calls) = mpsc::unbounded_channel();
    let reconciler = reconcile::from_fn(move |req: Request, _ctx| {
        let _ = tx.send((req, Instant::now()));
        async { Ok(Action::done()) }
    });
    let controller = Controller::new("sync", reconciler, ControllerOptions::default()).unwrap();
    controller
        .watch(
            SlowSync {
                sync_after: Some(Duration::from_secs(3)),
            },
            EnqueueRequestForObject,
            vec![],
        )
        .await
        .unwrap();
    let begin = Instant::now();
    let ctx = CancellationToken::new();
    let handle = tokio::spawn({
        let (c, ctx) = (controller.clone(), ctx.clone());
        async move { c.start(ctx).await }
    });
    let (req, at) = calls.recv().await.unwrap();
    assert_eq!(req, Request::new("ns", "listed"));
    assert_eq!(
        at - begin,
        Duration::from_secs(3),
        "no reconcile before the source synced"
    );
    ctx.cancel();
    handle.await.unwrap().unwrap();

    // Starting twice is an error.
    let err = controller
        .start(CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::AlreadyStarted(_)), "{err}");
}

#[tokio::test(start_paused = true)]
async fn sync_timeout_is_an_error_naming_the_source() {
    let reconciler = reconcile::from_fn(|_: Request, _ctx| async { Ok(Action::done()) });
    let options = ControllerOptions::default().with_cache_sync_timeout(Duration::from_secs(10));
    let controller = Controller::new("never-synced", reconciler, options).unwrap();
    controller
        .watch(
            SlowSync { sync_after: None },
            EnqueueRequestForObject,
            vec![],
        )
        .await
        .unwrap();
    let begin = Instant::now();
    let err = controller
        .start(CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(begin.elapsed(), Duration::from_secs(10));
    match &err {
        Error::SyncTimeout {
            source_name,
            controller,
            ..
        } => {
            assert_eq!(source_name, "slow source");
            assert_eq!(controller, "never-synced");
        }
        other => panic!("unexpected {other}"),
    }
    assert!(err.to_string().contains("slow source"), "{err}");
    assert!(controller.queue().is_shutting_down());

    // Cancelled while waiting for sync: start returns Ok, not an error.
    let reconciler = reconcile::from_fn(|_: Request, _ctx| async { Ok(Action::done()) });
    let controller =
        Controller::new("cancelled", reconciler, ControllerOptions::default()).unwrap();
    controller
        .watch(
            SlowSync { sync_after: None },
            EnqueueRequestForObject,
            vec![],
        )
        .await
        .unwrap();
    let ctx = CancellationToken::new();
    let cancel = ctx.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel.cancel();
    });
    controller.start(ctx).await.unwrap();
}

/// A list-watch the API server refuses as it refuses a ServiceAccount without the RBAC.
struct Forbidden;

const FORBIDDEN: &str = "configmaps is forbidden: User \"system:serviceaccount:ns:op\" cannot list resource \"configmaps\" in API group \"\" at the cluster scope";

impl controller_runtime::cache::ListWatch<ConfigMap> for Forbidden {
    fn list(
        &self,
        _: kube_client::api::ListParams,
    ) -> BoxFuture<'static, Result<kube_client::core::ObjectList<ConfigMap>, kube_client::Error>>
    {
        Box::pin(async {
            Err(kube_client::Error::Api(
                kube_core::Status::failure(FORBIDDEN, "Forbidden")
                    .with_code(403)
                    .boxed(),
            ))
        })
    }
    fn watch(
        &self,
        _: kube_client::api::WatchParams,
        _: String,
    ) -> BoxFuture<
        'static,
        Result<controller_runtime::cache::WatchStream<ConfigMap>, kube_client::Error>,
    > {
        Box::pin(async {
            Err(kube_client::Error::Api(
                kube_core::Status::failure("watch refused", "Forbidden")
                    .with_code(403)
                    .boxed(),
            ))
        })
    }
}

/// A syncing source over an informer of its own (as `Kind` is over the cache's).
struct OwnInformer(controller_runtime::cache::Informer<ConfigMap>);

impl Source<ConfigMap> for OwnInformer {
    fn start(
        &self,
        ctx: CancellationToken,
        _: EventDispatcher<ConfigMap>,
    ) -> BoxFuture<'_, Result<(), source::Error>> {
        let informer = self.0.clone();
        tokio::spawn(async move { informer.run(ctx).await });
        Box::pin(async { Ok(()) })
    }
    fn wait_for_sync(&self, ctx: CancellationToken) -> BoxFuture<'_, Result<(), source::Error>> {
        Box::pin(async move {
            tokio::select! {
                _ = self.0.wait_for_sync() => Ok(()),
                _ = ctx.cancelled() => Err(source::Error::Cancelled { source_name: self.describe() }),
            }
        })
    }
    fn describe(&self) -> String {
        "informer of configmaps".into()
    }
    fn last_error(&self) -> Option<String> {
        self.0.last_error().map(|e| e.to_string())
    }
}

#[tokio::test(start_paused = true)]
async fn a_sync_timeout_names_the_permission_the_api_server_refused() {
    let informer = controller_runtime::cache::Informer::new(
        Forbidden,
        controller_runtime::cache::InformerConfig::default(),
    );
    let reconciler = reconcile::from_fn(|_: Request, _ctx| async { Ok(Action::done()) });
    let options = ControllerOptions::default().with_cache_sync_timeout(Duration::from_secs(30));
    let controller = Controller::new("operator", reconciler, options).unwrap();
    controller
        .watch(
            OwnInformer(informer.clone()),
            EnqueueRequestForObject,
            vec![],
        )
        .await
        .unwrap();
    let ctx = CancellationToken::new();
    let err = controller.start(ctx.clone()).await.unwrap_err();
    ctx.cancel();
    match &err {
        Error::SyncTimeout { last_error, .. } => {
            assert_eq!(
                last_error.as_deref(),
                Some(format!("list failed (403): {FORBIDDEN}").as_str())
            )
        }
        other => panic!("unexpected {other}"),
    }
    let message = err.to_string();
    assert!(
        message.ends_with(&format!(
            "waiting for informer of configmaps to sync: last error: list failed (403): {FORBIDDEN}"
        )),
        "{message}"
    );
    let kept = informer.last_error().unwrap();
    assert!(kept.is_forbidden() && kept.verb == "list", "{kept}");
}

#[test]
fn bad_options_are_errors() {
    let r = || reconcile::from_fn(|_: Request, _ctx| async { Ok(Action::done()) });
    let err = Controller::new("", r(), ControllerOptions::default()).unwrap_err();
    assert!(matches!(err, Error::MissingName));
    let zero = ControllerOptions::default().with_max_concurrent_reconciles(0);
    let err = Controller::new("c", r(), zero).unwrap_err();
    assert!(
        err.to_string().contains("max_concurrent_reconciles"),
        "{err}"
    );
    let zero_timeout = ControllerOptions::default().with_reconciliation_timeout(Duration::ZERO);
    assert!(Controller::new("c", r(), zero_timeout).is_err());
    let c = Controller::new("c", r(), ControllerOptions::default()).unwrap();
    assert!(c.need_leader_election());
    assert_eq!(c.name(), "c");
}

#[tokio::test(start_paused = true)]
async fn two_controllers_share_one_channel() {
    let (tx, channel) = source::channel::<ConfigMap>(8);
    let (seen_tx, mut seen) = mpsc::unbounded_channel::<(String, Request)>();
    let ctx = CancellationToken::new();
    let mut handles = Vec::new();
    for name in ["first", "second"] {
        let seen_tx = seen_tx.clone();
        let reconciler = reconcile::from_fn(move |req: Request, _ctx| {
            let _ = seen_tx.send((name.to_string(), req));
            async { Ok(Action::done()) }
        });
        let c = Controller::new(name, reconciler, ControllerOptions::default()).unwrap();
        c.watch(channel.clone(), EnqueueRequestForObject, vec![])
            .await
            .unwrap();
        let ctx = ctx.clone();
        handles.push(tokio::spawn(async move { c.start(ctx).await }));
    }
    tx.send(GenericEvent {
        object: cm("ns", "shared"),
    })
    .await
    .unwrap();
    let mut got = vec![seen.recv().await.unwrap(), seen.recv().await.unwrap()];
    got.sort_by(|a, b| a.0.cmp(&b.0));
    let want = Request::new("ns", "shared");
    assert_eq!(
        got,
        [
            ("first".to_string(), want.clone()),
            ("second".to_string(), want)
        ]
    );
    ctx.cancel();
    for h in handles {
        h.await.unwrap().unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn warm_up_starts_sources_before_start_runs_workers() {
    let (tx, mut calls) = mpsc::unbounded_channel();
    let reconciler = reconcile::from_fn(move |req: Request, _ctx| {
        let _ = tx.send((req, Instant::now()));
        async { Ok(Action::done()) }
    });
    let options = ControllerOptions::default().with_enable_warm_up(true);
    let controller = Controller::new("warm", reconciler, options).unwrap();
    let sync = SlowSync {
        sync_after: Some(Duration::from_secs(3)),
    };
    controller
        .watch(sync, EnqueueRequestForObject, vec![])
        .await
        .unwrap();

    let ctx = CancellationToken::new();
    let begin = Instant::now();
    controller.warm_up(ctx.clone()).await.unwrap();
    assert_eq!(
        begin.elapsed(),
        Duration::from_secs(3),
        "warm-up waits for the sync"
    );
    assert_eq!(controller.queue().len(), 1, "the initial list is queued");
    controller.warm_up(ctx.clone()).await.unwrap(); // again: nothing
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        calls.try_recv().is_err(),
        "no reconcile before start (not the leader yet)"
    );

    // Leadership: start only runs the workers, no second sync wait.
    let started = Instant::now();
    let handle = tokio::spawn({
        let (c, ctx) = (controller.clone(), ctx.clone());
        async move { c.start(ctx).await }
    });
    let (req, at) = calls.recv().await.unwrap();
    assert_eq!(req, Request::new("ns", "listed"));
    assert_eq!(at, started, "reconciles at once");
    ctx.cancel();
    handle.await.unwrap().unwrap();

    // Without enable_warm_up, warm_up does nothing: the sources start with start.
    let reconciler = reconcile::from_fn(|_: Request, _ctx| async { Ok(Action::done()) });
    let cold = Controller::new("cold", reconciler, ControllerOptions::default()).unwrap();
    cold.watch(
        SlowSync { sync_after: None },
        EnqueueRequestForObject,
        vec![],
    )
    .await
    .unwrap();
    cold.warm_up(CancellationToken::new()).await.unwrap();
    assert_eq!(cold.queue().len(), 0);
}

#[tokio::test(start_paused = true)]
async fn new_queue_option_builds_the_queue() {
    use controller_runtime::workqueue::{QueueConfig, Workqueue};
    let built = Arc::new(parking_lot::Mutex::new(None::<String>));
    let seen = built.clone();
    let options =
        ControllerOptions::default().with_new_queue(Arc::new(move |name: &str, rate_limiter| {
            *seen.lock() = Some(name.to_string());
            Workqueue::new(QueueConfig::default().name(name).rate_limiter(rate_limiter))
        }));
    let mut r = Running::start(options, |_, _| ok()).await;
    assert_eq!(built.lock().as_deref(), Some("test"));
    r.send("ns", "a").await;
    assert_eq!(r.next_call().await.req.name, "a");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn reconciles_see_their_context_and_the_stop_signal() {
    let (tx, mut seen) = mpsc::unbounded_channel();
    let reconciler = reconcile::from_fn(move |_: Request, ctx| {
        let tx = tx.clone();
        async move {
            let _ = tx.send((ctx.controller().to_string(), ctx.reconcile_id()));
            // A long reconcile that honours the stop signal.
            tokio::select! {
                _ = ctx.stopping().cancelled() => Ok(Action::requeue_after(Duration::from_secs(1))),
                _ = tokio::time::sleep(Duration::from_secs(3600)) => Ok(Action::done()),
            }
        }
    });
    let controller = Controller::new("ctx", reconciler, ControllerOptions::default()).unwrap();
    let (events, channel) = source::channel::<ConfigMap>(4);
    controller
        .watch(channel, EnqueueRequestForObject, vec![])
        .await
        .unwrap();
    let ctx = CancellationToken::new();
    let handle = tokio::spawn({
        let (c, ctx) = (controller.clone(), ctx.clone());
        async move { c.start(ctx).await }
    });
    events
        .send(GenericEvent {
            object: cm("ns", "a"),
        })
        .await
        .unwrap();
    let (name, id) = seen.recv().await.unwrap();
    assert_eq!(name, "ctx");
    assert!(id > 0);
    let begin = Instant::now();
    tokio::time::sleep(Duration::from_secs(1)).await;
    ctx.cancel();
    handle.await.unwrap().unwrap();
    assert_eq!(
        begin.elapsed(),
        Duration::from_secs(1),
        "the reconcile stopped early"
    );
}

/// A worker whose reconciles finish without awaiting anything, with a backlog in its queue,
/// still lets the other tasks of a current-thread runtime run (informers, probes, timers):
/// it yields now and then instead of holding the thread until its queue is empty. A task
/// spawned by the first reconcile runs long before the last one.
#[tokio::test(flavor = "current_thread")]
async fn a_busy_worker_lets_other_tasks_of_its_thread_run() {
    let seen = spawned_task_seen_after(ControllerOptions::default()).await;
    assert!(
        seen < BUSY_BACKLOG / 4,
        "the spawned task ran after {seen} of {BUSY_BACKLOG} reconciles"
    );
}

/// `with_worker_slice` sets how long the worker holds its thread: with a zero slice on a
/// multi-threaded runtime (whose default is 5 ms, 50 of these reconciles), it yields after
/// every reconcile, and a task spawned on its thread runs after the first one or two.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_worker_slice_option_sets_when_a_busy_worker_yields() {
    let options = ControllerOptions::default().with_worker_slice(Duration::ZERO);
    let seen = spawned_task_seen_after(options).await;
    assert!(seen <= 2, "the spawned task ran after {seen} reconciles");
}

/// How many reconciles of 100 µs each, nothing awaited, of a backlog of [`BUSY_BACKLOG`] had
/// finished when a task spawned by the first of them ran.
async fn spawned_task_seen_after(options: ControllerOptions) -> usize {
    let done = Arc::new(AtomicUsize::new(0));
    let seen_at = Arc::new(AtomicUsize::new(usize::MAX));
    let reconciler = reconcile::from_fn({
        let (done, seen_at) = (done.clone(), seen_at.clone());
        move |_req: Request, _ctx| {
            if done.load(Ordering::SeqCst) == 0 {
                let (done, seen_at) = (done.clone(), seen_at.clone());
                tokio::spawn(async move {
                    seen_at.store(done.load(Ordering::SeqCst), Ordering::SeqCst)
                });
            }
            let started = std::time::Instant::now();
            while started.elapsed() < Duration::from_micros(100) {
                std::hint::spin_loop();
            }
            done.fetch_add(1, Ordering::SeqCst);
            async { Ok(Action::done()) }
        }
    });
    let controller = Controller::new("busy", reconciler, options).unwrap();
    for i in 0..BUSY_BACKLOG {
        controller.queue().add(Request::new("ns", format!("k{i}")));
    }
    let ctx = CancellationToken::new();
    let handle = tokio::spawn({
        let (c, ctx) = (controller.clone(), ctx.clone());
        async move { c.start(ctx).await }
    });
    while done.load(Ordering::SeqCst) < BUSY_BACKLOG {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    ctx.cancel();
    handle.await.unwrap().unwrap();
    seen_at.load(Ordering::SeqCst)
}

/// The backlog of [`spawned_task_seen_after`].
const BUSY_BACKLOG: usize = 400;
