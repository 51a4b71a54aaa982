//! Watches removed from a controller, before and after it started (controller-runtime #1884).

use super::harness::*;
use controller_runtime::handler::EnqueueRequestsFromMapFunc;

/// Lets the tasks of a stopped source notice their cancellation.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

async fn send(tx: &mpsc::Sender<GenericEvent<ConfigMap>>, ns: &str, name: &str) {
    tx.send(GenericEvent {
        object: cm(ns, name),
    })
    .await
    .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_removed_watch_stops_enqueueing_and_can_be_added_again() {
    let mut r = Running::start(ControllerOptions::default(), |_, _| ok()).await;
    let (tx, channel) = source::channel::<ConfigMap>(4);
    let handle = r
        .controller
        .watch(channel.clone(), EnqueueRequestForObject, vec![])
        .await
        .unwrap();
    send(&tx, "late", "one").await;
    assert_eq!(r.next_call().await.req, Request::new("late", "one"));

    assert!(r.controller.remove_watch(&handle).await);
    settle().await;
    send(&tx, "late", "two").await;
    r.no_call_within(Duration::from_secs(60)).await;
    // The controller's other watch still works.
    r.send("ns", "still").await;
    assert_eq!(r.next_call().await.req, Request::new("ns", "still"));

    // Added again, the channel delivers what it kept meanwhile (a Channel never drops an
    // event), then what comes next.
    let again = r
        .controller
        .watch(channel, EnqueueRequestForObject, vec![])
        .await
        .unwrap();
    assert_ne!(again, handle);
    assert_eq!(r.next_call().await.req, Request::new("late", "two"));
    send(&tx, "late", "three").await;
    assert_eq!(r.next_call().await.req, Request::new("late", "three"));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn removing_one_watch_of_a_shared_channel_keeps_the_other() {
    let mut r = Running::start(ControllerOptions::default(), |_, _| ok()).await;
    let (tx, channel) = source::channel::<ConfigMap>(4);
    let direct = r
        .controller
        .watch(channel.clone(), EnqueueRequestForObject, vec![])
        .await
        .unwrap();
    let mapped = EnqueueRequestsFromMapFunc::new(|c: &ConfigMap| {
        Some(Request::new(
            "mapped",
            c.metadata.name.as_deref().unwrap_or_default(),
        ))
    });
    r.controller.watch(channel, mapped, vec![]).await.unwrap();

    send(&tx, "ns", "a").await;
    let mut got = vec![r.next_call().await.req, r.next_call().await.req];
    got.sort_by(|x, y| x.namespace.cmp(&y.namespace));
    assert_eq!(
        got,
        vec![Request::new("mapped", "a"), Request::new("ns", "a")]
    );

    assert!(r.controller.remove_watch(&direct).await);
    settle().await;
    send(&tx, "ns", "b").await;
    assert_eq!(r.next_call().await.req, Request::new("mapped", "b"));
    r.no_call_within(Duration::from_secs(60)).await;
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn keys_already_queued_stay_after_removal() {
    // The first reconcile of each key asks to come back in 10 s.
    let mut r = Running::start(ControllerOptions::default(), |_, n| {
        Box::pin(async move {
            Ok(if n == 0 {
                Action::requeue_after(Duration::from_secs(10))
            } else {
                Action::done()
            })
        })
    })
    .await;
    let (tx, channel) = source::channel::<ConfigMap>(4);
    let handle = r
        .controller
        .watch(channel, EnqueueRequestForObject, vec![])
        .await
        .unwrap();
    send(&tx, "ns", "kept").await;
    let first = r.next_call().await;
    assert!(r.controller.remove_watch(&handle).await);
    let second = r.next_call().await;
    assert_eq!(second.req, Request::new("ns", "kept"));
    assert_eq!(second.at - first.at, Duration::from_secs(10));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_pending_watch_removed_before_start_never_starts() {
    let (tx, mut calls) = mpsc::unbounded_channel();
    let reconciler = reconcile::from_fn(move |req: Request, _ctx| {
        let _ = tx.send(req);
        async { Ok(Action::done()) }
    });
    let controller = Controller::new("pending", reconciler, ControllerOptions::default()).unwrap();
    let started = Arc::new(AtomicBool::new(false));
    let func = |name: &'static str, flag: Option<Arc<AtomicBool>>| {
        Func::new(
            move |_, queue: Arc<dyn controller_runtime::workqueue::Enqueue<Request>>| {
                if let Some(flag) = &flag {
                    flag.store(true, Ordering::SeqCst);
                }
                async move {
                    queue.add(Request::cluster_scoped(name));
                    Ok(())
                }
            },
        )
    };
    let removed = controller
        .add_watch(func("removed", Some(started.clone())))
        .await
        .unwrap();
    controller.add_watch(func("kept", None)).await.unwrap();
    assert!(controller.remove_watch(&removed).await);
    assert!(!controller.remove_watch(&removed).await, "only once");

    let ctx = CancellationToken::new();
    let running = tokio::spawn({
        let (c, ctx) = (controller.clone(), ctx.clone());
        async move { c.start(ctx).await }
    });
    let call = tokio::time::timeout(Duration::from_secs(60), calls.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(call, Request::cluster_scoped("kept"));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(calls.try_recv().is_err());
    assert!(
        !started.load(Ordering::SeqCst),
        "the removed source never started"
    );
    ctx.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_handle_removes_nothing_from_another_controller() {
    let r = Running::start(ControllerOptions::default(), |_, _| ok()).await;
    let other = Controller::new(
        "other",
        reconcile::from_fn(|_: Request, _ctx| async { Ok(Action::done()) }),
        ControllerOptions::default(),
    )
    .unwrap();
    let (_tx, channel) = source::channel::<ConfigMap>(4);
    let handle = other
        .watch(channel, EnqueueRequestForObject, vec![])
        .await
        .unwrap();
    assert!(!r.controller.remove_watch(&handle).await);
    assert!(other.remove_watch(&handle).await);
    r.stop().await;
}
