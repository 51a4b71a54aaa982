//! Informer tests against a scripted [`ListWatch`]; the tests against the embedded API server
//! live in the crate's integration tests.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{ListParams, WatchParams};
use kube_client::core::{ObjectList, WatchEvent};
use kube_core::{ObjectMeta, Status};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::ObjectKey;

type Events = mpsc::UnboundedSender<Result<WatchEvent<ConfigMap>, kube_client::Error>>;
type ListResponses = VecDeque<Result<ObjectList<ConfigMap>, kube_client::Error>>;

/// Serves scripted list responses; each watch call gets a fresh channel the test feeds.
#[derive(Clone, Default)]
struct Fake {
    lists: Arc<Mutex<ListResponses>>,
    watches: Arc<Mutex<Vec<(String, Events)>>>,
    /// Whether each watch asked for a streaming list.
    streaming: Arc<Mutex<Vec<bool>>>,
    /// An error for the next watch call instead of a stream.
    refuse_next_watch: Arc<Mutex<Option<kube_client::Error>>>,
    watch_opened: Arc<tokio::sync::Notify>,
}

impl ListWatch<ConfigMap> for Fake {
    fn list(
        &self,
        _: ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<ConfigMap>, kube_client::Error>> {
        let next = self.lists.lock().pop_front();
        Box::pin(async move { next.unwrap_or_else(|| Err(gone())) })
    }
    fn watch(
        &self,
        params: WatchParams,
        rv: String,
    ) -> BoxFuture<'static, Result<WatchStream<ConfigMap>, kube_client::Error>> {
        self.streaming.lock().push(params.send_initial_events);
        if let Some(e) = self.refuse_next_watch.lock().take() {
            return Box::pin(async move { Err(e) });
        }
        let (tx, rx) = mpsc::unbounded_channel();
        self.watches.lock().push((rv, tx));
        self.watch_opened.notify_one();
        Box::pin(async move { Ok(tokio_stream_from(rx)) })
    }
}

fn tokio_stream_from(
    mut rx: mpsc::UnboundedReceiver<Result<WatchEvent<ConfigMap>, kube_client::Error>>,
) -> WatchStream<ConfigMap> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

fn gone() -> kube_client::Error {
    kube_client::Error::Api(
        Status::failure("too old resource version", "Expired")
            .with_code(410)
            .boxed(),
    )
}

fn cm(name: &str, rv: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn list(items: Vec<ConfigMap>, rv: &str) -> ObjectList<ConfigMap> {
    let mut l: ObjectList<ConfigMap> = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": rv}, "items": []
    }))
    .unwrap();
    l.items = items;
    l
}

/// Records every call as a line, e.g. `add a 1 initial`.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Recorder {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock())
    }
}

fn name_rv(o: &ConfigMap) -> String {
    format!(
        "{} {}",
        o.metadata.name.as_deref().unwrap(),
        o.metadata.resource_version.as_deref().unwrap()
    )
}

impl ResourceEventHandler<ConfigMap> for Recorder {
    fn on_add(&self, obj: &Arc<ConfigMap>, initial: bool) {
        self.0.lock().push(format!(
            "add {}{}",
            name_rv(obj),
            if initial { " initial" } else { "" }
        ));
    }
    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        self.0
            .lock()
            .push(format!("update {} -> {}", name_rv(old), name_rv(new)));
    }
    fn on_delete(&self, obj: &Arc<ConfigMap>, unknown: bool) {
        self.0.lock().push(format!(
            "delete {}{}",
            name_rv(obj),
            if unknown { " unknown" } else { "" }
        ));
    }
}

struct Running {
    fake: Fake,
    informer: Informer<ConfigMap>,
    recorder: Arc<Recorder>,
    ctx: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn start(fake: Fake, config: InformerConfig<ConfigMap>) -> Running {
        let informer = Informer::new(fake.clone(), config);
        let recorder = Arc::new(Recorder::default());
        informer.add_event_handler(recorder.clone());
        let ctx = CancellationToken::new();
        let task = tokio::spawn({
            let (informer, ctx) = (informer.clone(), ctx.clone());
            async move { informer.run(ctx).await }
        });
        bounded("the informer opens a watch", fake.watch_opened.notified()).await;
        Running {
            fake,
            informer,
            recorder,
            ctx,
            task,
        }
    }

    /// Sends an event on the newest watch and lets the informer process it.
    async fn send(&self, event: Result<WatchEvent<ConfigMap>, kube_client::Error>) {
        self.fake.watches.lock().last().unwrap().1.send(event).ok();
        settle().await;
    }

    fn watch_rvs(&self) -> Vec<String> {
        self.fake
            .watches
            .lock()
            .iter()
            .map(|(rv, _)| rv.clone())
            .collect()
    }

    async fn stop(self) {
        self.ctx.cancel();
        self.task.await.unwrap();
    }
}

/// Awaits `f`, failing the test instead of hanging if it never completes. Under the paused
/// clock the timeout fires as soon as nothing else can make progress.
async fn bounded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(3600), f).await {
        Ok(out) => out,
        Err(_) => panic!("timed out waiting until {what}"),
    }
}

async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

/// A config that lists (no streaming list), as the scripted tests below expect.
fn listing() -> InformerConfig<ConfigMap> {
    InformerConfig {
        streaming_list: false,
        ..Default::default()
    }
}

fn bookmark(rv: &str, initial_end: bool) -> WatchEvent<ConfigMap> {
    let annotations = if initial_end {
        serde_json::json!({"k8s.io/initial-events-end": "true"})
    } else {
        serde_json::json!({})
    };
    WatchEvent::Bookmark(
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"resourceVersion": rv, "annotations": annotations}
        }))
        .unwrap(),
    )
}

#[tokio::test(start_paused = true)]
async fn streaming_list_fills_the_store_from_the_initial_events_then_watches_on() {
    let fake = Fake::default();
    let r = Running::start(fake, InformerConfig::default()).await;
    assert_eq!(*r.fake.streaming.lock(), [true]);
    r.send(Ok(WatchEvent::Added(cm("a", "1")))).await;
    r.send(Ok(WatchEvent::Added(cm("b", "2")))).await;
    r.send(Ok(WatchEvent::Added(cm("a", "3")))).await;
    assert!(
        !r.informer.has_synced(),
        "not synced before the initial-events-end bookmark"
    );
    assert!(
        r.recorder.take().is_empty(),
        "nothing delivered during the initial phase"
    );
    r.send(Ok(bookmark("4", true))).await;
    assert!(r.informer.has_synced());
    assert_eq!(r.recorder.take(), ["add a 3 initial", "add b 2 initial"]);
    // The same stream goes on as the watch.
    r.send(Ok(WatchEvent::Deleted(cm("b", "5")))).await;
    assert_eq!(r.recorder.take(), ["delete b 5"]);
    // After the watch closes, the informer resumes with a plain watch from the last version.
    r.fake.watches.lock().last_mut().unwrap().1 = mpsc::unbounded_channel().0;
    settle().await;
    assert_eq!(r.watch_rvs(), ["", "5"]);
    assert_eq!(*r.fake.streaming.lock(), [true, false]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_refusing_streaming_lists_is_listed_instead() {
    let fake = Fake::default();
    *fake.refuse_next_watch.lock() = Some(kube_client::Error::Api(
        Status::failure(
            "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            "Invalid",
        )
        .with_code(422)
        .boxed(),
    ));
    fake.lists
        .lock()
        .push_back(Ok(list(vec![cm("a", "1")], "5")));
    let r = Running::start(fake, InformerConfig::default()).await;
    assert!(r.informer.has_synced());
    assert_eq!(r.recorder.take(), ["add a 1 initial"]);
    assert_eq!(
        *r.fake.streaming.lock(),
        [true, false],
        "one refused streaming list, then list + watch"
    );
    assert_eq!(r.watch_rvs(), ["5"]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn list_then_watch_delivers_every_change_in_order() {
    let fake = Fake::default();
    fake.lists
        .lock()
        .push_back(Ok(list(vec![cm("a", "1"), cm("b", "2")], "5")));
    let r = Running::start(fake, listing()).await;
    assert!(r.informer.has_synced());
    assert_eq!(r.watch_rvs(), ["5"]);
    assert_eq!(r.recorder.take(), ["add a 1 initial", "add b 2 initial"]);

    r.send(Ok(WatchEvent::Added(cm("c", "6")))).await;
    r.send(Ok(WatchEvent::Modified(cm("a", "7")))).await;
    r.send(Ok(WatchEvent::Deleted(cm("b", "8")))).await;
    assert_eq!(
        r.recorder.take(),
        ["add c 6", "update a 1 -> a 7", "delete b 8"]
    );
    assert_eq!(r.informer.store().len(), 2);

    // The server closes the watch: the informer watches again from the last resourceVersion.
    r.fake.watches.lock().last_mut().unwrap().1 = mpsc::unbounded_channel().0;
    settle().await;
    assert_eq!(r.watch_rvs(), ["5", "8"]);
    r.send(Ok(WatchEvent::Bookmark(
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"resourceVersion": "12"}
        }))
        .unwrap(),
    )))
    .await;
    r.fake.watches.lock().last_mut().unwrap().1 = mpsc::unbounded_channel().0;
    settle().await;
    assert_eq!(
        r.watch_rvs(),
        ["5", "8", "12"],
        "a bookmark advances the resume point"
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn gone_relists_and_reports_vanished_objects_as_unknown_deletes() {
    let fake = Fake::default();
    fake.lists
        .lock()
        .push_back(Ok(list(vec![cm("a", "1"), cm("b", "2")], "5")));
    fake.lists
        .lock()
        .push_back(Ok(list(vec![cm("a", "9"), cm("c", "10")], "11")));
    let r = Running::start(fake, listing()).await;
    r.recorder.take();
    r.send(Ok(WatchEvent::Error(
        Status::failure("too old", "Expired").with_code(410).boxed(),
    )))
    .await;
    assert_eq!(
        r.recorder.take(),
        ["update a 1 -> a 9", "add c 10", "delete b 2 unknown"]
    );
    assert_eq!(r.watch_rvs(), ["5", "11"]);
    // A 410 as a stream error (not an ERROR event) relists too.
    r.fake.lists.lock().push_back(Ok(list(vec![], "20")));
    r.send(Err(gone())).await;
    let mut deleted = r.recorder.take();
    deleted.sort();
    assert_eq!(deleted, ["delete a 9 unknown", "delete c 10 unknown"]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_compact_informer_tells_handlers_the_same_and_reads_decode_copies() {
    let fake = Fake::default();
    fake.lists
        .lock()
        .push_back(Ok(list(vec![cm("a", "1"), cm("b", "2")], "5")));
    fake.lists
        .lock()
        .push_back(Ok(list(vec![cm("a", "9"), cm("c", "10")], "11")));
    let config = InformerConfig {
        storage: Storage::compact(),
        ..listing()
    };
    let r = Running::start(fake, config).await;
    assert!(r.informer.store().is_compact());
    assert_eq!(r.recorder.take(), ["add a 1 initial", "add b 2 initial"]);
    // The replaced object of an update comes back decoded from the store.
    r.send(Ok(WatchEvent::Modified(cm("a", "7")))).await;
    r.send(Ok(WatchEvent::Deleted(cm("b", "8")))).await;
    assert_eq!(r.recorder.take(), ["update a 1 -> a 7", "delete b 8"]);
    let key = ObjectKey::new("ns", "a");
    let read = r.informer.store().get(&key).unwrap();
    assert_eq!(*read, cm("a", "7"));
    // Read again before it changes: the second read is memoized, the next ones share it.
    let again = r.informer.store().get(&key).unwrap();
    assert_eq!(read, again);
    assert!(Arc::ptr_eq(&again, &r.informer.store().get(&key).unwrap()));
    // A late handler's replay is decoded too.
    let late = Arc::new(Recorder::default());
    r.informer.add_event_handler(late.clone());
    assert_eq!(late.take(), ["add a 7 initial"]);
    // A relist after 410: updates against, and unknown deletes of, decoded stored objects.
    r.send(Ok(WatchEvent::Added(cm("d", "9")))).await;
    r.recorder.take();
    r.send(Ok(WatchEvent::Error(
        Status::failure("too old", "Expired").with_code(410).boxed(),
    )))
    .await;
    assert_eq!(
        r.recorder.take(),
        ["update a 7 -> a 9", "add c 10", "delete d 9 unknown"]
    );
    assert_eq!(r.informer.store().len(), 2);
    // The relist replaced the memoized object: a read decodes the new one.
    assert_eq!(*r.informer.store().get(&key).unwrap(), cm("a", "9"));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn late_handler_gets_the_content_as_initial_creates_then_changes() {
    let fake = Fake::default();
    fake.lists
        .lock()
        .push_back(Ok(list(vec![cm("a", "1")], "5")));
    let r = Running::start(fake, listing()).await;
    let late = Arc::new(Recorder::default());
    let reg = r.informer.add_event_handler(late.clone());
    assert!(reg.has_synced());
    r.send(Ok(WatchEvent::Added(cm("b", "6")))).await;
    assert_eq!(late.take(), ["add a 1 initial", "add b 6"]);
    r.informer.remove_event_handler(&reg);
    r.send(Ok(WatchEvent::Added(cm("c", "7")))).await;
    assert!(late.take().is_empty());
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn transform_runs_before_storing_and_resync_replays_updates() {
    let fake = Fake::default();
    fake.lists
        .lock()
        .push_back(Ok(list(vec![cm("a", "1")], "5")));
    let config = InformerConfig {
        transform: Some(Arc::new(|mut o: ConfigMap| {
            o.metadata.labels = Some([("seen".to_string(), "yes".to_string())].into());
            o
        })),
        resync_period: Some(Duration::from_secs(3600)),
        ..listing()
    };
    let r = Running::start(fake, config).await;
    let stored = r.informer.store().get(&ObjectKey::new("ns", "a")).unwrap();
    assert_eq!(stored.metadata.labels.as_ref().unwrap()["seen"], "yes");
    r.recorder.take();
    // Jitter keeps the resync within [0.9, 1.1) of the period.
    tokio::time::advance(Duration::from_secs(3239)).await;
    settle().await;
    assert!(r.recorder.take().is_empty());
    tokio::time::advance(Duration::from_secs(2 * 360 + 1)).await;
    settle().await;
    assert_eq!(r.recorder.take(), ["update a 1 -> a 1"]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn failed_list_backs_off_and_wait_for_sync_completes_after_success() {
    let fake = Fake::default();
    let conn = || {
        kube_client::Error::Api(
            Status::failure("boom", "InternalError")
                .with_code(500)
                .boxed(),
        )
    };
    fake.lists
        .lock()
        .extend([Err(conn()), Err(conn()), Ok(list(vec![], "3"))]);
    let informer = Informer::new(fake.clone(), listing());
    let ctx = CancellationToken::new();
    let task = tokio::spawn({
        let (i, c) = (informer.clone(), ctx.clone());
        async move { i.run(c).await }
    });
    let start = tokio::time::Instant::now();
    bounded("the informer syncs", informer.wait_for_sync()).await;
    // 800 ms after the first failure, 1.6 s after the second.
    assert_eq!(start.elapsed(), Duration::from_millis(2400));
    ctx.cancel();
    task.await.unwrap();
}

fn cm_in(ns: &str, name: &str, rv: &str) -> ConfigMap {
    let mut cm = cm(name, rv);
    cm.metadata.namespace = Some(ns.into());
    cm
}

/// Sends an event on `fake`'s newest watch and lets the informer process it.
async fn send_to(fake: &Fake, event: Result<WatchEvent<ConfigMap>, kube_client::Error>) {
    fake.watches.lock().last().unwrap().1.send(event).ok();
    settle().await;
}

#[tokio::test(start_paused = true)]
async fn scopes_merge_into_one_store_sync_together_and_relist_alone() {
    let (fa, fb) = (Fake::default(), Fake::default());
    fa.lists
        .lock()
        .push_back(Ok(list(vec![cm_in("a", "x", "1")], "5")));
    // b has no list scripted yet: its list fails and backs off, so b is not synced.
    let informer = Informer::with_scopes(
        vec![
            InformerScope::new(Some("a".into()), fa.clone()),
            InformerScope::new(Some("b".into()), fb.clone()),
        ],
        listing(),
    );
    assert_eq!(informer.namespaces(), Some(vec!["a".into(), "b".into()]));
    assert!(informer.covers_namespace("b") && !informer.covers_namespace("c"));
    let early = Arc::new(Recorder::default());
    let early_reg = informer.add_event_handler(early.clone());
    let ctx = CancellationToken::new();
    let task = tokio::spawn({
        let (i, c) = (informer.clone(), ctx.clone());
        async move { i.run(c).await }
    });
    bounded("a's watch opens", fa.watch_opened.notified()).await;
    assert!(!informer.has_synced() && !early_reg.has_synced());
    assert_eq!(early.take(), ["add x 1 initial"]);
    // A handler added between the two syncs gets a's content now and b's when it comes.
    let late = Arc::new(Recorder::default());
    let late_reg = informer.add_event_handler(late.clone());
    assert_eq!(late.take(), ["add x 1 initial"]);
    assert!(!late_reg.has_synced());

    fb.lists
        .lock()
        .push_back(Ok(list(vec![cm_in("b", "y", "2")], "6")));
    bounded("b's watch opens", fb.watch_opened.notified()).await;
    assert!(informer.has_synced() && early_reg.has_synced() && late_reg.has_synced());
    for r in [&early, &late] {
        assert_eq!(r.take(), ["add y 2 initial"]);
    }

    // Both watches feed the handlers.
    send_to(&fa, Ok(WatchEvent::Added(cm_in("a", "z", "7")))).await;
    send_to(&fb, Ok(WatchEvent::Modified(cm_in("b", "y", "8")))).await;
    assert_eq!(early.take(), ["add z 7", "update y 2 -> y 8"]);

    // A 410 in a relists a alone: b's object is neither deleted nor replayed.
    fa.lists
        .lock()
        .push_back(Ok(list(vec![cm_in("a", "z", "9")], "10")));
    send_to(
        &fa,
        Ok(WatchEvent::Error(
            Status::failure("too old", "Expired").with_code(410).boxed(),
        )),
    )
    .await;
    assert_eq!(early.take(), ["update z 7 -> z 9", "delete x 1 unknown"]);
    let mut stored: Vec<String> = informer
        .store()
        .keys()
        .iter()
        .map(|k| k.to_string())
        .collect();
    stored.sort();
    assert_eq!(stored, ["a/z", "b/y"]);
    assert_eq!(fb.watches.lock().len(), 1, "b kept its watch");
    ctx.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn stored_objects_keep_no_spare_room_in_their_metadata_lists() {
    let fake = Fake::default();
    let mut obj = cm("a", "1");
    // As serde leaves a one-entry array: room for four.
    let mut entries = Vec::with_capacity(4);
    entries.push(Default::default());
    obj.metadata.managed_fields = Some(entries);
    fake.lists.lock().push_back(Ok(list(vec![obj], "5")));
    let r = Running::start(fake, listing()).await;
    let stored = r.informer.store().get(&ObjectKey::new("ns", "a")).unwrap();
    assert_eq!(
        stored.metadata.managed_fields.as_ref().unwrap().capacity(),
        1
    );
    r.stop().await;
}

/// A raw twin for [`Fake`]: lists and watches [`RawObject`]s from scripted JSON.
#[derive(Clone, Default)]
struct RawFake {
    lists: Arc<Mutex<VecDeque<ObjectList<RawObject>>>>,
    watches: Arc<Mutex<Vec<mpsc::UnboundedSender<WatchEvent<RawObject>>>>>,
    used: Arc<Mutex<usize>>,
}

impl ListWatch<RawObject> for RawFake {
    fn list(
        &self,
        _: ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<RawObject>, kube_client::Error>> {
        *self.used.lock() += 1;
        let next = self.lists.lock().pop_front();
        Box::pin(async move { next.ok_or_else(gone) })
    }
    fn watch(
        &self,
        _: WatchParams,
        _: String,
    ) -> BoxFuture<'static, Result<WatchStream<RawObject>, kube_client::Error>> {
        *self.used.lock() += 1;
        let (tx, mut rx) = mpsc::unbounded_channel();
        self.watches.lock().push(tx);
        Box::pin(async move {
            Ok(futures::stream::poll_fn(move |cx| rx.poll_recv(cx).map(|e| e.map(Ok))).boxed())
        })
    }
}

/// A [`Fake`] that offers a raw twin.
#[derive(Clone, Default)]
struct FakeWithRaw {
    typed: Fake,
    raw: RawFake,
}

impl ListWatch<ConfigMap> for FakeWithRaw {
    fn list(
        &self,
        params: ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<ConfigMap>, kube_client::Error>> {
        self.typed.list(params)
    }
    fn watch(
        &self,
        params: WatchParams,
        rv: String,
    ) -> BoxFuture<'static, Result<WatchStream<ConfigMap>, kube_client::Error>> {
        self.typed.watch(params, rv)
    }
    fn raw(&self) -> Option<Box<dyn ListWatch<RawObject>>> {
        Some(Box::new(self.raw.clone()))
    }
}

fn raw(json: &str) -> RawObject {
    serde_json::from_str(json).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_compact_informer_without_transform_stores_what_the_server_sent() {
    let fake = FakeWithRaw::default();
    // A field ConfigMap does not know: the raw path stores it, reads decode without it.
    let a = r#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"1"},"extra":true}"#;
    let page = list(vec![], "5");
    fake.raw.lists.lock().push_back(ObjectList {
        types: page.types.clone(),
        metadata: page.metadata.clone(),
        items: vec![raw(a)],
    });
    let config = InformerConfig {
        storage: Storage::compact(),
        ..listing()
    };
    let informer = Informer::new(fake.clone(), config);
    let recorder = Arc::new(Recorder::default());
    informer.add_event_handler(recorder.clone());
    let ctx = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, ctx) = (informer.clone(), ctx.clone());
        async move { informer.run(ctx).await }
    });
    bounded("the informer syncs", informer.wait_for_sync()).await;
    settle().await;
    assert_eq!(recorder.take(), ["add a 1 initial"]);
    assert!(
        fake.typed.watches.lock().is_empty(),
        "the typed twin is unused"
    );
    let stored = informer.store().get(&ObjectKey::new("ns", "a")).unwrap();
    assert_eq!(*stored, cm("a", "1"));
    // Watch events: updates decode the stored object as the old one; deletes decode the event.
    let tx = fake.raw.watches.lock()[0].clone();
    tx.send(WatchEvent::Modified(raw(
        r#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"6"}}"#,
    )))
    .unwrap();
    tx.send(WatchEvent::Added(raw(
        r#"{"metadata":{"name":"b","namespace":"ns","resourceVersion":"7"}}"#,
    )))
    .unwrap();
    tx.send(WatchEvent::Deleted(raw(
        r#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"8"}}"#,
    )))
    .unwrap();
    settle().await;
    assert_eq!(
        recorder.take(),
        ["update a 1 -> a 6", "add b 7", "delete a 8"]
    );
    assert_eq!(informer.store().keys(), [ObjectKey::new("ns", "b")]);
    ctx.cancel();
    task.await.unwrap();

    // With a transform, the typed twin serves (the transform needs typed objects).
    let fake = FakeWithRaw::default();
    fake.typed
        .lists
        .lock()
        .push_back(Ok(list(vec![cm("a", "1")], "5")));
    let config = InformerConfig {
        storage: Storage::compact(),
        transform: Some(Arc::new(|o: ConfigMap| o)),
        ..listing()
    };
    let informer = Informer::new(fake.clone(), config);
    let ctx = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, ctx) = (informer.clone(), ctx.clone());
        async move { informer.run(ctx).await }
    });
    bounded("the informer syncs", informer.wait_for_sync()).await;
    assert_eq!(*fake.raw.used.lock(), 0, "the raw twin is unused");
    assert_eq!(informer.store().len(), 1);
    ctx.cancel();
    task.await.unwrap();
}

/// Decodes counted by the codec of [`counting`].
static DECODES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Compact JSON storage whose decodes are counted in [`DECODES`].
fn counting() -> Storage<ConfigMap> {
    Storage::Compact(super::storage::Codec::counted(
        serde_json::to_vec,
        |bytes| {
            DECODES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            serde_json::from_slice(bytes)
        },
    ))
}

/// Records what a metadata-only handler is told: lines as [`Recorder`]'s, read from the
/// cached metadata, and whether anything was decoded for it.
#[derive(Default)]
struct MetaRecorder(Mutex<Vec<String>>);

fn meta_line(o: &CachedObject<ConfigMap>) -> String {
    assert!(!o.is_decoded(), "a metadata handler gets undecoded objects");
    let m = o.metadata();
    assert!(m.managed_fields.is_none());
    format!(
        "{} {}{}",
        m.name.as_deref().unwrap(),
        m.resource_version.as_deref().unwrap(),
        m.labels
            .as_ref()
            .map(|l| format!(" {l:?}"))
            .unwrap_or_default()
    )
}

impl ResourceEventHandler<ConfigMap> for MetaRecorder {
    fn on_add(&self, _: &Arc<ConfigMap>, _: bool) {
        unreachable!("the informer calls the cached variants")
    }
    fn on_update(&self, _: &Arc<ConfigMap>, _: &Arc<ConfigMap>) {
        unreachable!()
    }
    fn on_delete(&self, _: &Arc<ConfigMap>, _: bool) {
        unreachable!()
    }
    fn on_add_cached(&self, obj: &CachedObject<ConfigMap>, initial: bool) {
        let line = format!(
            "add {}{}",
            meta_line(obj),
            if initial { " initial" } else { "" }
        );
        self.0.lock().push(line);
    }
    fn on_update_cached(&self, old: &CachedObject<ConfigMap>, new: &CachedObject<ConfigMap>) {
        let line = format!("update {} -> {}", meta_line(old), meta_line(new));
        self.0.lock().push(line);
    }
    fn on_delete_cached(&self, obj: &CachedObject<ConfigMap>, unknown: bool) {
        let line = format!(
            "delete {}{}",
            meta_line(obj),
            if unknown { " unknown" } else { "" }
        );
        self.0.lock().push(line);
    }
}

/// A queue that records what is added, with its priority.
#[derive(Default)]
struct Queued(Mutex<Vec<String>>);

impl crate::workqueue::Enqueue<crate::Request> for Queued {
    fn add_with_opts(&self, opts: crate::workqueue::AddOpts, item: crate::Request) {
        self.0
            .lock()
            .push(format!("{item} {}", opts.priority.unwrap_or(0)));
    }
}

#[tokio::test(start_paused = true)]
async fn compact_informers_tell_metadata_handlers_without_decoding_and_others_once() {
    use crate::event::Event;
    use crate::handler::{EnqueueRequestForObject, Funcs};
    use crate::predicate::{self, LabelSelectorPredicate, ResourceVersionChanged};
    use crate::source::{EventDispatcher, Source};

    let with_fields = r#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"1","labels":{"app":"x"},"managedFields":[{"manager":"m","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k":{}}}}]},"data":{"k":"v"}}"#;
    let fake = FakeWithRaw::default();
    let page = list(vec![], "5");
    fake.raw.lists.lock().push_back(ObjectList {
        types: page.types.clone(),
        metadata: page.metadata.clone(),
        items: vec![raw(with_fields)],
    });
    // A relist after the watch expires: a changed, b new, a gone... c vanished.
    fake.raw.lists.lock().push_back(ObjectList {
        types: page.types.clone(),
        metadata: page.metadata.clone(),
        items: vec![raw(
            r#"{"metadata":{"name":"b","namespace":"ns","resourceVersion":"20","labels":{"app":"x"}}}"#,
        )],
    });
    let config = InformerConfig {
        storage: counting(),
        ..listing()
    };
    let informer = Informer::new(fake.clone(), config);
    let meta = Arc::new(MetaRecorder::default());
    informer.add_event_handler(meta.clone());
    // The controller's usual watch: a metadata predicate and the enqueue handler.
    let queue = Arc::new(Queued::default());
    let ctx = CancellationToken::new();
    let primary = EventDispatcher::new(
        Arc::new(EnqueueRequestForObject),
        queue.clone(),
        vec![
            predicate::boxed(LabelSelectorPredicate::parse("app=x").unwrap()),
            predicate::boxed(ResourceVersionChanged),
        ],
    );
    crate::source::Informer::new(informer.clone())
        .start(ctx.clone(), primary)
        .await
        .unwrap();
    let task = tokio::spawn({
        let (informer, ctx) = (informer.clone(), ctx.clone());
        async move { informer.run(ctx).await }
    });
    bounded("the informer syncs", informer.wait_for_sync()).await;
    settle().await;
    let decodes = || DECODES.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(decodes(), 0, "nothing decoded for metadata handlers");
    assert_eq!(meta.0.lock().clone(), [r#"add a 1 {"app": "x"} initial"#]);
    // Initial-list creates go in at low priority.
    assert_eq!(queue.0.lock().clone(), ["ns/a -100"]);

    let tx = fake.raw.watches.lock()[0].clone();
    tx.send(WatchEvent::Modified(raw(
        r#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"6","labels":{"app":"x"}}}"#,
    )))
    .unwrap();
    tx.send(WatchEvent::Added(raw(
        r#"{"metadata":{"name":"c","namespace":"ns","resourceVersion":"7","labels":{"app":"y"}}}"#,
    )))
    .unwrap();
    settle().await;
    assert_eq!(decodes(), 0);
    // A handler of the typed object added late: the replay decodes each object once for it.
    let typed_queue = Arc::new(Queued::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = Funcs::<ConfigMap>::new()
        .on_create({
            let seen = seen.clone();
            move |e, _q| seen.lock().push(format!("create {}", name_rv(&e.object)))
        })
        .on_update({
            let seen = seen.clone();
            move |e, _q| {
                seen.lock()
                    .push(format!("update {} -> {}", name_rv(&e.old), name_rv(&e.new)))
            }
        })
        .on_delete({
            let seen = seen.clone();
            move |e, _q| {
                seen.lock().push(format!(
                    "delete {} {}",
                    name_rv(&e.object),
                    e.delete_state_unknown
                ))
            }
        });
    let late = EventDispatcher::new(Arc::new(handler), typed_queue, vec![]);
    crate::source::Informer::new(informer.clone())
        .start(ctx.clone(), late)
        .await
        .unwrap();
    assert_eq!(decodes(), 2);
    let mut replay = std::mem::take(&mut *seen.lock());
    replay.sort();
    assert_eq!(replay, ["create a 6", "create c 7"]);

    // Both typed and metadata handlers for one event: one decode per object.
    tx.send(WatchEvent::Modified(raw(
        r#"{"metadata":{"name":"c","namespace":"ns","resourceVersion":"8","labels":{"app":"x"}}}"#,
    )))
    .unwrap();
    settle().await;
    assert_eq!(decodes(), 4, "the old and the new object, once each");
    assert_eq!(seen.lock().clone(), ["update c 7 -> c 8"]);
    // The watch expires: the relist tells of a's and c's deletions (state unknown) and b.
    let expired = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}}"#;
    tx.send(serde_json::from_str(expired).unwrap()).unwrap();
    drop(tx);
    bounded("the relist", async {
        while meta.0.lock().len() < 7 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let mut lines = meta.0.lock().clone();
    lines[4..].sort();
    assert_eq!(
        lines,
        [
            r#"add a 1 {"app": "x"} initial"#,
            r#"update a 1 {"app": "x"} -> a 6 {"app": "x"}"#,
            r#"add c 7 {"app": "y"}"#,
            r#"update c 7 {"app": "y"} -> c 8 {"app": "x"}"#,
            r#"add b 20 {"app": "x"}"#,
            r#"delete a 6 {"app": "x"} unknown"#,
            r#"delete c 8 {"app": "x"} unknown"#,
        ]
    );
    // The enqueue handler got a's update, not c's create (filtered by label), c's update,
    // b's create and both deletions: from the metadata.
    let mut queued = queue.0.lock().clone();
    queued[3..].sort();
    assert_eq!(
        queued,
        [
            "ns/a -100",
            "ns/a 0",
            "ns/c 0",
            "ns/a 0",
            "ns/b 0",
            "ns/c 0"
        ]
    );
    // Reads decode, and return what the server sent.
    let b = informer.store().get(&ObjectKey::new("ns", "b")).unwrap();
    assert_eq!(b.metadata.resource_version.as_deref(), Some("20"));
    assert!(
        Event::<ConfigMap>::Generic(crate::event::GenericEvent { object: b })
            .object()
            .metadata
            .labels
            .is_some()
    );
    ctx.cancel();
    task.await.unwrap();
}

/// Lists nothing, then watches a burst of `n` adds that are all ready at once (a chunk of a
/// watch response, decoded without waiting for anything), then nothing more.
struct Burst(usize);

impl ListWatch<ConfigMap> for Burst {
    fn list(
        &self,
        _: ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<ConfigMap>, kube_client::Error>> {
        Box::pin(async move { Ok(list(vec![], "1")) })
    }
    fn watch(
        &self,
        _: WatchParams,
        _: String,
    ) -> BoxFuture<'static, Result<WatchStream<ConfigMap>, kube_client::Error>> {
        let events = (0..self.0).map(|i| Ok(WatchEvent::Added(cm(&format!("o{i}"), "2"))));
        Box::pin(async move {
            Ok(futures::stream::iter(events)
                .chain(futures::stream::pending())
                .boxed())
        })
    }
}

/// Counts adds, each costing 50 µs of work; the first spawns a task that notes how many adds
/// had been applied when it ran.
#[derive(Default)]
struct Busy {
    adds: Arc<AtomicUsize>,
    seen_at: Arc<AtomicUsize>,
}

impl ResourceEventHandler<ConfigMap> for Busy {
    fn on_add(&self, _: &Arc<ConfigMap>, _: bool) {
        if self.adds.load(Ordering::SeqCst) == 0 {
            let (adds, seen_at) = (self.adds.clone(), self.seen_at.clone());
            tokio::spawn(
                async move { seen_at.store(adds.load(Ordering::SeqCst), Ordering::SeqCst) },
            );
        }
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_micros(50) {
            std::hint::spin_loop();
        }
        self.adds.fetch_add(1, Ordering::SeqCst);
    }
    fn on_update(&self, _: &Arc<ConfigMap>, _: &Arc<ConfigMap>) {}
    fn on_delete(&self, _: &Arc<ConfigMap>, _: bool) {}
}

/// An informer applying a burst of events that are all ready at once lets the other tasks of
/// its (current-thread) runtime run now and then, rather than only once the burst is applied:
/// a task spawned by the first add runs long before the last.
#[tokio::test(flavor = "current_thread")]
async fn an_informer_applying_a_burst_lets_other_tasks_of_its_thread_run() {
    const BURST: usize = 2000;
    let informer = Informer::new(Burst(BURST), listing());
    let busy = Arc::new(Busy {
        seen_at: Arc::new(AtomicUsize::new(usize::MAX)),
        ..Default::default()
    });
    informer.add_event_handler(busy.clone());
    let ctx = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, ctx) = (informer.clone(), ctx.clone());
        async move { informer.run(ctx).await }
    });
    while busy.adds.load(Ordering::SeqCst) < BURST {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let seen = busy.seen_at.load(Ordering::SeqCst);
    assert!(
        seen < BURST / 4,
        "the spawned task ran after {seen} of {BURST} adds"
    );
    ctx.cancel();
    task.await.unwrap();
}
