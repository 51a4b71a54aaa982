//! End-to-end tests of the controller: Channel source -> predicates -> handler -> real workqueue
//! -> workers -> reconciler, on tokio's paused clock (no test depends on wall-clock speed).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use controller_runtime::Request;
use controller_runtime::controller::{Controller, ControllerOptions, Error};
use controller_runtime::event::GenericEvent;
use controller_runtime::handler::EnqueueRequestForObject;
use controller_runtime::metrics::Metrics;
use controller_runtime::predicate;
use controller_runtime::reconcile::{self, Action, ReconcileError, TerminalError};
use controller_runtime::source::{self, EventDispatcher, Func, Source};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use prometheus_client::registry::Registry;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn cm(ns: &str, name: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some(ns.into());
    cm.metadata.name = Some(name.into());
    Arc::new(cm)
}

/// One reconcile call, as the reconciler saw it.
#[derive(Debug)]
struct Call {
    req: Request,
    at: Instant,
}

/// A running controller fed by a channel, with its metrics registry.
struct Running {
    controller: Controller,
    events: mpsc::Sender<GenericEvent<ConfigMap>>,
    calls: mpsc::UnboundedReceiver<Call>,
    ctx: CancellationToken,
    handle: JoinHandle<Result<(), Error>>,
    registry: Registry,
}

impl Running {
    /// Starts a controller whose reconciler reports each call, then runs `behave(request, n)`
    /// (`n` counts calls from 0).
    async fn start<F>(options: ControllerOptions<Request>, behave: F) -> Running
    where
        F: Fn(Request, usize) -> BoxFuture<'static, Result<Action, ReconcileError>>
            + Send
            + Sync
            + 'static,
    {
        let mut registry = Registry::default();
        let options = ControllerOptions {
            metrics: Some(Metrics::register(&mut registry)),
            ..options
        };
        let (call_tx, calls) = mpsc::unbounded_channel();
        let count = Arc::new(AtomicUsize::new(0));
        let behave = Arc::new(behave);
        let reconciler = reconcile::from_fn(move |req: Request| {
            let n = count.fetch_add(1, Ordering::SeqCst);
            let _ = call_tx.send(Call {
                req: req.clone(),
                at: Instant::now(),
            });
            behave(req, n)
        });
        let controller = Controller::new("test", reconciler, options).unwrap();
        let (events, channel) = source::channel::<ConfigMap>(16);
        // Only ConfigMaps whose name does not start with "skip" get through.
        let not_skipped = Arc::new(predicate::from_fn(|c: &ConfigMap| {
            !c.metadata
                .name
                .as_deref()
                .unwrap_or_default()
                .starts_with("skip")
        }));
        controller
            .watch(channel, EnqueueRequestForObject, vec![not_skipped])
            .await
            .unwrap();
        let ctx = CancellationToken::new();
        let handle = tokio::spawn({
            let (c, ctx) = (controller.clone(), ctx.clone());
            async move { c.start(ctx).await }
        });
        Running {
            controller,
            events,
            calls,
            ctx,
            handle,
            registry,
        }
    }

    async fn send(&self, ns: &str, name: &str) {
        self.events
            .send(GenericEvent {
                object: cm(ns, name),
            })
            .await
            .unwrap();
    }

    /// The next reconcile call, waiting at most an hour of (virtual) time.
    async fn next_call(&mut self) -> Call {
        tokio::time::timeout(Duration::from_secs(3600), self.calls.recv())
            .await
            .expect("no reconcile within an hour")
            .expect("reconciler gone")
    }

    /// Asserts that no reconcile happens within `d` (virtual time).
    async fn no_call_within(&mut self, d: Duration) {
        if let Ok(Some(call)) = tokio::time::timeout(d, self.calls.recv()).await {
            panic!("unexpected reconcile {call:?}");
        }
    }

    fn metrics(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).unwrap();
        text
    }

    /// Asserts that the exposition has `line`.
    fn assert_metric(&self, line: &str) {
        let text = self.metrics();
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }

    async fn stop(self) -> Registry {
        self.ctx.cancel();
        self.handle.await.unwrap().unwrap();
        self.registry
    }
}

fn ok() -> BoxFuture<'static, Result<Action, ReconcileError>> {
    Box::pin(async { Ok(Action::done()) })
}

fn both_queues() -> [ControllerOptions<Request>; 2] {
    [
        ControllerOptions {
            use_priority_queue: false,
            ..Default::default()
        },
        ControllerOptions {
            use_priority_queue: true,
            ..Default::default()
        },
    ]
}

#[tokio::test(start_paused = true)]
async fn event_flows_through_predicates_and_handler_to_the_reconciler() {
    for options in both_queues() {
        let mut r = Running::start(options, |_, _| ok()).await;
        r.send("ns", "skip-me").await;
        r.send("ns", "a").await;
        let call = r.next_call().await;
        assert_eq!(
            call.req,
            Request::new("ns", "a"),
            "the predicate dropped skip-me"
        );
        r.no_call_within(Duration::from_secs(60)).await;
        r.assert_metric(
            r#"controller_runtime_reconcile_total{controller="test",result="success"} 1"#,
        );
        r.assert_metric(
            r#"controller_runtime_reconcile_total{controller="test",result="error"} 0"#,
        );
        r.assert_metric(r#"controller_runtime_max_concurrent_reconciles{controller="test"} 1"#);
        r.assert_metric(r#"controller_runtime_active_workers{controller="test"} 0"#);
        r.assert_metric(r#"controller_runtime_reconcile_time_seconds_count{controller="test"} 1"#);
        let text = r.metrics();
        assert!(
            text.contains("workqueue_adds_total"),
            "workqueue metrics share the registry"
        );
        r.stop().await;
    }
}

#[tokio::test(start_paused = true)]
async fn requeue_after_is_honoured() {
    for options in both_queues() {
        let mut r = Running::start(options, |_, n| {
            Box::pin(async move {
                Ok(if n < 2 {
                    Action::requeue_after(Duration::from_secs(30))
                } else {
                    Action::done()
                })
            })
        })
        .await;
        r.send("ns", "a").await;
        let first = r.next_call().await.at;
        let second = r.next_call().await.at;
        let third = r.next_call().await.at;
        assert_eq!(second - first, Duration::from_secs(30));
        assert_eq!(third - second, Duration::from_secs(30));
        r.no_call_within(Duration::from_secs(3600)).await;
        r.assert_metric(
            r#"controller_runtime_reconcile_total{controller="test",result="requeue_after"} 2"#,
        );
        r.assert_metric(
            r#"controller_runtime_reconcile_total{controller="test",result="success"} 1"#,
        );
        r.stop().await;
    }
}

#[tokio::test(start_paused = true)]
async fn error_backoff_grows_and_success_resets_it() {
    for options in both_queues() {
        // Five failures, one success, then (after a new event) one more failure.
        let mut r = Running::start(options, |_, n| {
            Box::pin(async move {
                if n < 5 || n == 6 {
                    Err(ReconcileError::msg("not yet"))
                } else {
                    Ok(Action::done())
                }
            })
        })
        .await;
        r.send("ns", "a").await;
        let mut times = Vec::new();
        for _ in 0..6 {
            times.push(r.next_call().await.at);
        }
        let gaps: Vec<_> = times.windows(2).map(|w| w[1] - w[0]).collect();
        let ms = Duration::from_millis;
        assert_eq!(
            gaps,
            [ms(5), ms(10), ms(20), ms(40), ms(80)],
            "exponential from 5 ms"
        );
        r.assert_metric(r#"controller_runtime_reconcile_errors_total{controller="test"} 5"#);
        r.assert_metric(
            r#"controller_runtime_reconcile_total{controller="test",result="error"} 5"#,
        );

        // The success forgot the key's failures: the next failure backs off 5 ms again.
        r.send("ns", "a").await;
        let failed = r.next_call().await.at;
        let retried = r.next_call().await.at;
        assert_eq!(retried - failed, ms(5));
        r.stop().await;
    }
}

#[tokio::test(start_paused = true)]
async fn requeue_uses_the_rate_limiter() {
    let mut r = Running::start(ControllerOptions::default(), |_, n| {
        Box::pin(async move {
            Ok(if n < 3 {
                Action::requeue()
            } else {
                Action::done()
            })
        })
    })
    .await;
    r.send("ns", "a").await;
    let t: Vec<_> = [
        r.next_call().await.at,
        r.next_call().await.at,
        r.next_call().await.at,
        r.next_call().await.at,
    ]
    .into();
    let ms = Duration::from_millis;
    assert_eq!(
        [t[1] - t[0], t[2] - t[1], t[3] - t[2]],
        [ms(5), ms(10), ms(20)]
    );
    r.assert_metric(r#"controller_runtime_reconcile_total{controller="test",result="requeue"} 3"#);
    r.assert_metric(r#"controller_runtime_reconcile_errors_total{controller="test"} 0"#);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn terminal_error_is_not_retried() {
    let mut r = Running::start(ControllerOptions::default(), |req, _| {
        Box::pin(async move {
            if req.name == "bad" {
                Err(TerminalError::msg("spec can never work").into())
            } else {
                Ok(Action::done())
            }
        })
    })
    .await;
    r.send("ns", "bad").await;
    assert_eq!(r.next_call().await.req.name, "bad");
    r.no_call_within(Duration::from_secs(3 * 3600)).await;
    r.assert_metric(r#"controller_runtime_terminal_reconcile_errors_total{controller="test"} 1"#);
    r.assert_metric(r#"controller_runtime_reconcile_errors_total{controller="test"} 1"#);
    r.assert_metric(r#"controller_runtime_reconcile_total{controller="test",result="error"} 1"#);
    // The key is not stuck: a new event reconciles it again.
    r.send("ns", "bad").await;
    assert_eq!(r.next_call().await.req.name, "bad");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn panic_is_recovered_counted_and_retried_with_backoff() {
    let mut r = Running::start(ControllerOptions::default(), |_, n| {
        Box::pin(async move {
            if n < 2 {
                panic!("reconciler bug #{n}");
            }
            Ok(Action::done())
        })
    })
    .await;
    r.send("ns", "a").await;
    let t0 = r.next_call().await.at;
    let t1 = r.next_call().await.at;
    let t2 = r.next_call().await.at;
    assert_eq!(t1 - t0, Duration::from_millis(5));
    assert_eq!(t2 - t1, Duration::from_millis(10));
    r.assert_metric(r#"controller_runtime_reconcile_panics_total{controller="test"} 2"#);
    r.assert_metric(r#"controller_runtime_reconcile_errors_total{controller="test"} 2"#);
    r.assert_metric(r#"controller_runtime_reconcile_total{controller="test",result="success"} 1"#);
    r.assert_metric(r#"controller_runtime_active_workers{controller="test"} 0"#);
    // The worker survived: other keys are still reconciled.
    r.send("ns", "b").await;
    assert_eq!(r.next_call().await.req.name, "b");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn panic_without_recovery_ends_start_with_the_panic() {
    let mut r = Running::start(
        ControllerOptions {
            recover_panic: false,
            ..Default::default()
        },
        |_, _| Box::pin(async { panic!("unrecovered") }),
    )
    .await;
    r.send("ns", "a").await;
    r.next_call().await;
    let joined = (&mut r.handle).await;
    assert!(
        joined.unwrap_err().is_panic(),
        "start re-raises the reconciler's panic"
    );
    r.assert_metric(r#"controller_runtime_reconcile_panics_total{controller="test"} 1"#);
}

#[tokio::test(start_paused = true)]
async fn reconciliation_timeout_counts_as_an_error() {
    let options = ControllerOptions {
        reconciliation_timeout: Some(Duration::from_secs(1)),
        ..Default::default()
    };
    let mut r = Running::start(options, |_, n| {
        Box::pin(async move {
            if n == 0 {
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
            Ok(Action::done())
        })
    })
    .await;
    r.send("ns", "a").await;
    let t0 = r.next_call().await.at;
    let t1 = r.next_call().await.at;
    // Gave up after 1 s, then retried after the first backoff step.
    assert_eq!(t1 - t0, Duration::from_secs(1) + Duration::from_millis(5));
    r.assert_metric(r#"controller_runtime_reconcile_errors_total{controller="test"} 1"#);
    r.assert_metric(r#"controller_runtime_reconcile_timeouts_total{controller="test"} 1"#);
    r.stop().await;
}

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
    let options = ControllerOptions {
        max_concurrent_reconciles: WORKERS,
        ..Default::default()
    };
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
        |_, queue: Arc<dyn controller_runtime::workqueue::Queue<Request>>| async move {
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

/// A syncing source that syncs after `sync_after`, or never.
struct SlowSync {
    sync_after: Option<Duration>,
}

impl Source<ConfigMap> for SlowSync {
    fn start(
        &self,
        _ctx: CancellationToken,
        dispatcher: EventDispatcher<ConfigMap>,
    ) -> BoxFuture<'_, Result<(), source::Error>> {
        // The initial list, delivered at once.
        dispatcher.create(&controller_runtime::event::CreateEvent {
            object: cm("ns", "listed"),
            is_in_initial_list: true,
        });
        Box::pin(async { Ok(()) })
    }

    fn wait_for_sync(&self, ctx: CancellationToken) -> BoxFuture<'_, Result<(), source::Error>> {
        let after = self.sync_after;
        Box::pin(async move {
            match after {
                Some(d) => tokio::time::sleep(d).await,
                None => ctx.cancelled().await,
            }
            Ok(())
        })
    }

    fn describe(&self) -> String {
        "slow source".into()
    }
}

#[tokio::test(start_paused = true)]
async fn start_waits_for_syncing_sources_before_running_workers() {
    let (tx, mut calls) = mpsc::unbounded_channel();
    let reconciler = reconcile::from_fn(move |req: Request| {
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
    let reconciler = reconcile::from_fn(|_: Request| async { Ok(Action::done()) });
    let options = ControllerOptions {
        cache_sync_timeout: Duration::from_secs(10),
        ..Default::default()
    };
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
    let reconciler = reconcile::from_fn(|_: Request| async { Ok(Action::done()) });
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

#[test]
fn bad_options_are_errors() {
    let r = || reconcile::from_fn(|_: Request| async { Ok(Action::done()) });
    let err = Controller::new("", r(), ControllerOptions::default()).unwrap_err();
    assert!(matches!(err, Error::MissingName));
    let zero = ControllerOptions {
        max_concurrent_reconciles: 0,
        ..Default::default()
    };
    let err = Controller::new("c", r(), zero).unwrap_err();
    assert!(
        err.to_string().contains("max_concurrent_reconciles"),
        "{err}"
    );
    let zero_timeout = ControllerOptions {
        reconciliation_timeout: Some(Duration::ZERO),
        ..Default::default()
    };
    assert!(Controller::new("c", r(), zero_timeout).is_err());
    let c = Controller::new("c", r(), ControllerOptions::default()).unwrap();
    assert!(c.need_leader_election());
    assert_eq!(c.name(), "c");
}

/// A source whose initial list is `names`, delivered as initial-list creates.
struct InitialList {
    names: Vec<&'static str>,
}

impl Source<ConfigMap> for InitialList {
    fn start(
        &self,
        _ctx: CancellationToken,
        dispatcher: EventDispatcher<ConfigMap>,
    ) -> BoxFuture<'_, Result<(), source::Error>> {
        for name in &self.names {
            dispatcher.create(&controller_runtime::event::CreateEvent {
                object: cm("ns", name),
                is_in_initial_list: true,
            });
        }
        Box::pin(async { Ok(()) })
    }

    fn describe(&self) -> String {
        "initial list".into()
    }
}

#[tokio::test(start_paused = true)]
async fn real_changes_overtake_the_initial_list_on_the_priority_queue() {
    for (use_priority_queue, want) in [(true, ["l0", "urgent", "l1"]), (false, ["l0", "l1", "l2"])]
    {
        let options = ControllerOptions {
            use_priority_queue,
            ..Default::default()
        };
        let mut r = Running::start(options, |_, _| {
            Box::pin(async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok(Action::done())
            })
        })
        .await;
        let list = InitialList {
            names: vec!["l0", "l1", "l2", "l3"],
        };
        r.controller
            .watch(list, EnqueueRequestForObject, vec![])
            .await
            .unwrap();
        // The worker is busy with l0 when the real change arrives.
        assert_eq!(r.next_call().await.req.name, "l0");
        r.send("ns", "urgent").await;
        let mut order = vec!["l0".to_string()];
        order.push(r.next_call().await.req.name);
        order.push(r.next_call().await.req.name);
        assert_eq!(order, want, "use_priority_queue = {use_priority_queue}");
        r.stop().await;
    }
}

#[tokio::test(start_paused = true)]
async fn two_controllers_share_one_channel() {
    let (tx, channel) = source::channel::<ConfigMap>(8);
    let (seen_tx, mut seen) = mpsc::unbounded_channel::<(String, Request)>();
    let ctx = CancellationToken::new();
    let mut handles = Vec::new();
    for name in ["first", "second"] {
        let seen_tx = seen_tx.clone();
        let reconciler = reconcile::from_fn(move |req: Request| {
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
    let reconciler = reconcile::from_fn(move |req: Request| {
        let _ = tx.send((req, Instant::now()));
        async { Ok(Action::done()) }
    });
    let options = ControllerOptions {
        enable_warm_up: true,
        ..Default::default()
    };
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
    let reconciler = reconcile::from_fn(|_: Request| async { Ok(Action::done()) });
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
    let options = ControllerOptions {
        new_queue: Some(Arc::new(move |name: &str, rate_limiter| {
            *seen.lock() = Some(name.to_string());
            Workqueue::new(QueueConfig {
                name: name.into(),
                rate_limiter,
                metrics: None,
            })
        })),
        ..Default::default()
    };
    let mut r = Running::start(options, |_, _| ok()).await;
    assert_eq!(built.lock().as_deref(), Some("test"));
    r.send("ns", "a").await;
    assert_eq!(r.next_call().await.req.name, "a");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn reconciles_see_their_context_and_the_stop_signal() {
    assert!(
        reconcile::context().is_none(),
        "no context outside a controller"
    );
    let (tx, mut seen) = mpsc::unbounded_channel();
    let reconciler = reconcile::from_fn(move |_: Request| {
        let tx = tx.clone();
        async move {
            let ctx = reconcile::context().expect("run by a controller");
            let _ = tx.send((ctx.controller.to_string(), ctx.reconcile_id));
            // A long reconcile that honours the stop signal.
            tokio::select! {
                _ = ctx.stopping.cancelled() => Ok(Action::requeue()),
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

#[tokio::test(start_paused = true)]
async fn a_retried_low_priority_key_stays_behind_real_changes() {
    // l0 (initial list, low priority) fails once after 10 ms and is ready again at 15 ms; n1
    // keeps the only worker busy until 30 ms; n2 arrives at 20 ms. At 30 ms the worker must pick
    // n2: the retry of l0 kept its low priority (at priority 0 it would go first, being older).
    let options = ControllerOptions {
        use_priority_queue: true,
        ..Default::default()
    };
    let mut r = Running::start(options, |req, n| {
        Box::pin(async move {
            match (req.name.as_str(), n) {
                ("l0", 0) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    Err(ReconcileError::msg("transient"))
                }
                ("n1", _) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok(Action::done())
                }
                _ => Ok(Action::done()),
            }
        })
    })
    .await;
    let list = InitialList { names: vec!["l0"] };
    r.controller
        .watch(list, EnqueueRequestForObject, vec![])
        .await
        .unwrap();
    let t0 = r.next_call().await.at;
    r.send("ns", "n1").await;
    assert_eq!(r.next_call().await.req.name, "n1");
    tokio::time::sleep_until(t0 + Duration::from_millis(20)).await;
    r.send("ns", "n2").await;
    let third = r.next_call().await;
    assert_eq!(third.req.name, "n2");
    assert_eq!(third.at - t0, Duration::from_millis(30));
    assert_eq!(r.next_call().await.req.name, "l0");
    r.stop().await;
}
