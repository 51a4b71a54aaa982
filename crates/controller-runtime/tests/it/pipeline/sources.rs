//! The dispatcher, the Channel and Func sources, and events.

use super::support::*;

#[test]
fn dispatcher_asks_every_predicate_before_the_handler() {
    let q = Arc::new(RecordingQueue::default());
    let d = EventDispatcher::new(
        Arc::new(EnqueueRequestForObject),
        q.clone(),
        vec![
            predicate::boxed(predicate::LabelSelectorPredicate::parse("app").unwrap()),
            predicate::boxed(predicate::ResourceVersionChanged),
        ],
    );
    let mut labelled = with_rv(cm("ns", "a"), "1");
    labelled.metadata.labels = labels(&[("app", "x")]);
    let mut labelled2 = labelled.clone();
    labelled2.metadata.resource_version = Some("2".into());

    assert!(!d.dispatch(&Event::Create(create(cm("ns", "unlabelled"), false))));
    assert!(d.dispatch(&Event::Create(create(labelled.clone(), false))));
    assert!(
        !d.dispatch(&Event::Update(update(labelled.clone(), labelled.clone()))),
        "resync filtered"
    );
    assert!(d.dispatch(&Event::Update(update(labelled.clone(), labelled2))));
    assert!(d.dispatch(&Event::Delete(delete(labelled))));
    assert_eq!(
        q.take(),
        vec![plain("ns", "a"), plain("ns", "a"), plain("ns", "a")]
    );
}

/// Waits (virtual time) until `q` recorded `n` items.
async fn wait_for(q: &RecordingQueue, n: usize) {
    for _ in 0..1000 {
        if q.len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("expected {n} items, have {}", q.len());
}

#[tokio::test(start_paused = true)]
async fn channel_source_fans_out_to_every_watch() {
    let (tx, channel) = source::channel::<ConfigMap>(4);
    let ctx = CancellationToken::new();
    let q1 = Arc::new(RecordingQueue::default());
    let q2 = Arc::new(RecordingQueue::default());

    // Events sent before any watch started wait in the channel.
    tx.send(generic(cm("ns", "early"))).await.unwrap();

    // Two watches on one channel: one sees everything, one only names starting with "b".
    let all = source::watch(channel.clone(), EnqueueRequestForObject, vec![]);
    let only_b = source::watch(
        channel.clone().buffer_size(1),
        EnqueueRequestForObject,
        vec![Arc::new(|e: &Event<ConfigMap>| {
            e.object()
                .metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with('b'))
        }) as predicate::BoxPredicate<ConfigMap>],
    );
    all.start(ctx.clone(), q1.clone()).await.unwrap();
    only_b.start(ctx.clone(), q2.clone()).await.unwrap();
    assert!(all.describe().contains("ConfigMap"), "{}", all.describe());

    for name in ["a1", "b1", "a2", "b2", "b3"] {
        tx.send(generic(cm("ns", name))).await.unwrap();
    }
    wait_for(&q1, 6).await;
    wait_for(&q2, 3).await;
    let names = |q: &RecordingQueue| {
        q.take()
            .into_iter()
            .map(|a| a.item.name)
            .collect::<Vec<_>>()
    };
    let got1 = names(&q1);
    // The early event reached the first watch started; order is kept per watch.
    assert_eq!(got1, ["early", "a1", "b1", "a2", "b2", "b3"]);
    assert_eq!(names(&q2), ["b1", "b2", "b3"]);

    // A watch whose controller stopped no longer receives; the others still do.
    let ctx2 = CancellationToken::new();
    let q3 = Arc::new(RecordingQueue::default());
    let third = source::watch(channel.clone(), EnqueueRequestForObject, vec![]);
    third.start(ctx2.clone(), q3.clone()).await.unwrap();
    ctx2.cancel();
    tokio::time::sleep(Duration::from_millis(1)).await;
    tx.send(generic(cm("ns", "late"))).await.unwrap();
    wait_for(&q1, 1).await;
    assert_eq!(names(&q1), ["late"]);
    assert_eq!(q3.len(), 0);
    ctx.cancel();
}

#[tokio::test(start_paused = true)]
async fn channel_source_keeps_events_while_nobody_listens() {
    let (tx, channel) = source::channel::<ConfigMap>(8);
    let q = Arc::new(RecordingQueue::default());

    let ctx = CancellationToken::new();
    let d = EventDispatcher::new(Arc::new(EnqueueRequestForObject), q.clone(), vec![]);
    Source::<ConfigMap>::start(&channel, ctx.clone(), d.clone())
        .await
        .unwrap();
    tx.send(generic(cm("ns", "one"))).await.unwrap();
    wait_for(&q, 1).await;
    ctx.cancel(); // the only destination goes away
    tokio::time::sleep(Duration::from_millis(1)).await;

    tx.send(generic(cm("ns", "two"))).await.unwrap();
    tx.send(generic(cm("ns", "three"))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;

    // A new destination gets what was sent meanwhile, nothing lost.
    let ctx = CancellationToken::new();
    Source::<ConfigMap>::start(&channel, ctx.clone(), d)
        .await
        .unwrap();
    wait_for(&q, 3).await;
    let names: Vec<_> = q.take().into_iter().map(|a| a.item.name).collect();
    assert_eq!(names, ["one", "two", "three"]);
    ctx.cancel();
}

#[tokio::test]
async fn func_source_is_given_the_queue() {
    let q = Arc::new(RecordingQueue::default());
    let f = Func::new(|_ctx, queue: Arc<dyn Enqueue<Request>>| async move {
        queue.add(Request::new("ns", "from-func"));
        Ok(())
    })
    .named("seed");
    f.start(CancellationToken::new(), q.clone()).await.unwrap();
    assert_eq!(q.take(), vec![plain("ns", "from-func")]);
    assert_eq!(f.describe(), "seed");
    f.wait_for_sync(CancellationToken::new()).await.unwrap();

    let failing = Func::<Request>::new(|_, _| async { Err("no backend".into()) });
    let err = failing
        .start(CancellationToken::new(), q.clone())
        .await
        .unwrap_err();
    assert!(matches!(err, source::Error::Start { .. }));
    assert_eq!(
        std::error::Error::source(&err)
            .map(|e| e.to_string())
            .as_deref(),
        Some("no backend")
    );
}

#[tokio::test(start_paused = true)]
async fn channel_source_drains_then_stops_when_every_sender_is_gone() {
    let (tx, channel) = source::channel::<ConfigMap>(8);
    let q = Arc::new(RecordingQueue::default());
    let ctx = CancellationToken::new();
    let d = EventDispatcher::new(Arc::new(EnqueueRequestForObject), q.clone(), vec![]);
    Source::<ConfigMap>::start(&channel, ctx.clone(), d.clone())
        .await
        .unwrap();
    for name in ["a", "b", "c"] {
        tx.send(generic(cm("ns", name))).await.unwrap();
    }
    drop(tx);
    wait_for(&q, 3).await;
    let names: Vec<_> = q.take().into_iter().map(|a| a.item.name).collect();
    assert_eq!(
        names,
        ["a", "b", "c"],
        "events sent before the close are delivered"
    );

    // Starting a closed channel is not an error; it just delivers nothing.
    Source::<ConfigMap>::start(&channel, ctx.clone(), d)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(q.len(), 0);
}

#[test]
fn events_expose_their_object_and_kind() {
    use controller_runtime::event::Event;
    let obj = Arc::new(cm("ns", "a"));
    let newer = Arc::new(cm("ns", "b"));
    let cases = [
        (
            Event::Create(CreateEvent {
                object: obj.clone(),
                is_in_initial_list: false,
            }),
            "create",
            &obj,
        ),
        (
            Event::Update(UpdateEvent {
                old: obj.clone(),
                new: newer.clone(),
            }),
            "update",
            &newer,
        ),
        (
            Event::Delete(DeleteEvent {
                object: obj.clone(),
                delete_state_unknown: true,
            }),
            "delete",
            &obj,
        ),
        (
            Event::Generic(GenericEvent {
                object: obj.clone(),
            }),
            "generic",
            &obj,
        ),
    ];
    for (event, kind, want) in cases {
        assert_eq!(event.kind(), kind);
        // The same allocation: events share objects, never copy them.
        assert!(Arc::ptr_eq(event.object(), want), "{kind}");
        assert!(
            Arc::ptr_eq(event.clone().object(), want),
            "{kind}: clone shares too"
        );
    }
}
