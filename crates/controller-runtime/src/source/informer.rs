//! Sources backed by informers: [`Kind`] (gets its informer from a cache) and [`Informer`]
//! (given an informer), and the adapter that turns an informer's callbacks into events.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::EventDispatcher;
use super::dispatch::CachedEvent;
use super::interface::{Error, Source, short_type_name};
use crate::cache::{self, Cache, CacheObject, CachedObject, ResourceEventHandler};
use crate::event::{CreateEvent, DeleteEvent, Event, UpdateEvent};
use crate::workqueue::QueueItem;

/// Turns an informer's OnAdd/OnUpdate/OnDelete into events for a dispatcher (predicates, then
/// the handler). Objects are passed on as the informer's `Arc`s: no copy; objects of a compact
/// cache are decoded only for a predicate or handler that needs more than their metadata.
struct DispatchToHandler<K, T: QueueItem>(EventDispatcher<K, T>);

impl<K: kube_core::Resource + Send + Sync + 'static, T: QueueItem> ResourceEventHandler<K>
    for DispatchToHandler<K, T>
{
    fn on_add_cached(&self, object: &CachedObject<K>, is_in_initial_list: bool) {
        self.0.dispatch_cached(CachedEvent::Create {
            object,
            is_in_initial_list,
        });
    }
    fn on_add_batch_cached(&self, objects: &[CachedObject<K>], is_in_initial_list: bool) {
        self.0.dispatch_cached_creates(objects, is_in_initial_list);
    }
    fn on_update_cached(&self, old: &CachedObject<K>, new: &CachedObject<K>) {
        self.0.dispatch_cached(CachedEvent::Update { old, new });
    }
    fn on_delete_cached(&self, object: &CachedObject<K>, delete_state_unknown: bool) {
        self.0.dispatch_cached(CachedEvent::Delete {
            object,
            delete_state_unknown,
        });
    }
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        self.0.dispatch(&Event::Create(CreateEvent {
            object: obj.clone(),
            is_in_initial_list,
        }));
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        self.0.dispatch(&Event::Update(UpdateEvent {
            old: old.clone(),
            new: new.clone(),
        }));
    }
    fn on_delete(&self, obj: &Arc<K>, delete_state_unknown: bool) {
        self.0.dispatch(&Event::Delete(DeleteEvent {
            object: obj.clone(),
            delete_state_unknown,
        }));
    }
}

/// How far the starts of a [`Kind`] source have come.
#[derive(Clone, Debug, Default)]
struct Progress {
    started: usize,
    synced: usize,
}

/// Events about objects of one type from the cache's shared informer (controller-runtime's
/// `source.Kind(cache, obj)`).
///
/// `start` returns at once. A task then gets the informer from the cache, retrying every
/// 10 seconds while the API server does not serve the type (e.g. its CRD is not installed yet),
/// registers the watch's handler and waits for the informer to sync. The controller waits on
/// [`Source::wait_for_sync`], bounded by its `cache_sync_timeout`.
///
/// ```no_run
/// # use controller_runtime::{cache::Cache, source::{self, Kind}, handler::EnqueueRequestForObject};
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # fn f(cache: Cache) {
/// let watch = source::watch(Kind::<ConfigMap>::new(cache), EnqueueRequestForObject, vec![]);
/// # }
/// ```
pub struct Kind<K: CacheObject> {
    cache: Cache,
    dt: K::DynamicType,
    retry_period: Duration,
    progress: watch::Sender<Progress>,
    /// The informer once found, or why it could not be got: what [`Source::last_error`] reads.
    found: Arc<Mutex<Found<K>>>,
}

/// What the starts of a [`Kind`] source found.
enum Found<K> {
    Nothing,
    Informer(cache::Informer<K>),
    Failed(String),
}

impl<K: CacheObject + kube_core::Resource<DynamicType = ()>> Kind<K> {
    /// A source for a static type.
    pub fn new(cache: Cache) -> Self {
        Self::new_with(cache, ())
    }
}

impl<K: CacheObject> Kind<K> {
    /// A source for any type with its dynamic type (an `ApiResource` for dynamic objects).
    pub fn new_with(cache: Cache, dt: K::DynamicType) -> Self {
        Kind {
            cache,
            dt,
            retry_period: Duration::from_secs(10),
            progress: watch::channel(Progress::default()).0,
            found: Arc::new(Mutex::new(Found::Nothing)),
        }
    }

    /// How often to ask the cache again while the type is not served (default 10 s).
    pub fn with_retry_period(mut self, period: Duration) -> Self {
        self.retry_period = period;
        self
    }

    fn kind_name(&self) -> String {
        K::kind(&self.dt).into_owned()
    }
}

impl<K: CacheObject, T: QueueItem> Source<K, T> for Kind<K> {
    fn start(
        &self,
        ctx: CancellationToken,
        dispatcher: EventDispatcher<K, T>,
    ) -> BoxFuture<'_, Result<(), Error>> {
        self.progress.send_modify(|p| p.started += 1);
        let (cache, dt, retry, progress) = (
            self.cache.clone(),
            self.dt.clone(),
            self.retry_period,
            self.progress.clone(),
        );
        let kind = self.kind_name();
        let handler = Arc::new(DispatchToHandler(dispatcher));
        let found = self.found.clone();
        // Start returns at once; a task finds the informer, even while the type is not served.
        tokio::spawn(async move {
            let informer = loop {
                let error = match cache.get_informer_with::<K>(&dt).await {
                    Ok(informer) => break informer,
                    Err(e @ cache::Error::NotServed { .. }) => {
                        tracing::info!(%kind, error = %e, "kind source: type not served yet; retrying");
                        e
                    }
                    Err(e) => {
                        tracing::warn!(%kind, error = %e, "kind source: getting the informer failed; retrying");
                        e
                    }
                };
                *found.lock() = Found::Failed(with_sources(&error));
                tokio::select! {
                    _ = ctx.cancelled() => return,
                    _ = tokio::time::sleep(retry) => {}
                }
            };
            *found.lock() = Found::Informer(informer.clone());
            let registration = informer.add_event_handler(handler);
            tokio::select! {
                _ = ctx.cancelled() => {}
                _ = informer.wait_for_sync() => {
                    progress.send_modify(|p| p.synced += 1);
                    ctx.cancelled().await;
                }
            }
            // The watch is over (controller stopped or watch removed): stop calling its handler.
            informer.remove_event_handler(&registration);
        });
        Box::pin(async { Ok(()) })
    }

    fn wait_for_sync(&self, ctx: CancellationToken) -> BoxFuture<'_, Result<(), Error>> {
        let mut rx = self.progress.subscribe();
        Box::pin(async move {
            tokio::select! {
                _ = rx.wait_for(|p| p.started > 0 && p.synced == p.started) => Ok(()),
                _ = ctx.cancelled() => Err(Error::Cancelled { source_name: Source::<K, T>::describe(self) }),
            }
        })
    }

    fn describe(&self) -> String {
        format!("kind source: {}", self.kind_name())
    }

    fn last_error(&self) -> Option<String> {
        match &*self.found.lock() {
            Found::Nothing => None,
            Found::Informer(informer) => informer.last_error().map(|e| e.to_string()),
            Found::Failed(why) => Some(why.clone()),
        }
    }
}

/// An error and its causes, `: `-separated.
fn with_sources(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}

/// Events from an informer you hold (controller-runtime's `source.Informer`). Unlike [`Kind`],
/// it does not wait for the informer to sync: starting and syncing the informer is up to you.
pub struct Informer<K> {
    informer: cache::Informer<K>,
}

impl<K> Informer<K> {
    /// A source for `informer`.
    pub fn new(informer: cache::Informer<K>) -> Self {
        Informer { informer }
    }
}

impl<K, T> Source<K, T> for Informer<K>
where
    K: kube_core::Resource + Clone + Send + Sync + 'static,
    T: QueueItem,
{
    fn start(
        &self,
        ctx: CancellationToken,
        dispatcher: EventDispatcher<K, T>,
    ) -> BoxFuture<'_, Result<(), Error>> {
        let registration = self
            .informer
            .add_event_handler(Arc::new(DispatchToHandler(dispatcher)));
        let informer = self.informer.clone();
        tokio::spawn(async move {
            ctx.cancelled().await;
            informer.remove_event_handler(&registration);
        });
        Box::pin(async { Ok(()) })
    }

    fn describe(&self) -> String {
        format!("informer source: {}", short_type_name::<K>())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_client::api::{ListParams, WatchParams};
    use kube_client::core::ObjectList;
    use kube_core::ObjectMeta;

    use super::*;
    use crate::Request;
    use crate::cache::{InformerConfig, ListWatch, Storage, WatchStream};
    use crate::handler::EnqueueRequestForObject;
    use crate::predicate::{self, LabelSelectorPredicate};
    use crate::workqueue::{AddOpts, Enqueue};

    /// Records how items arrive: one by one, or in batches.
    #[derive(Default)]
    struct Counting {
        single: AtomicUsize,
        batches: Mutex<Vec<usize>>,
        items: Mutex<Vec<Request>>,
    }

    impl Enqueue<Request> for Counting {
        fn add_with_opts(&self, _: AddOpts, item: Request) {
            self.single.fetch_add(1, Ordering::Relaxed);
            self.items.lock().push(item);
        }
        fn add_all(&self, items: Vec<(AddOpts, Request)>) {
            self.batches.lock().push(items.len());
            self.items
                .lock()
                .extend(items.into_iter().map(|(_, item)| item));
        }
    }

    fn cm(i: usize) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some(format!("o{i}")),
                resource_version: Some("1".into()),
                labels: Some([("even".to_string(), i.is_multiple_of(2).to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// Lists `n` objects once; its watches never send anything.
    #[derive(Clone)]
    struct ListOnce(usize);

    impl ListWatch<ConfigMap> for ListOnce {
        fn list(
            &self,
            _: ListParams,
        ) -> BoxFuture<'static, Result<ObjectList<ConfigMap>, kube_client::Error>> {
            let n = self.0;
            Box::pin(async move {
                let mut list: ObjectList<ConfigMap> = serde_json::from_value(serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMapList",
                    "metadata": {"resourceVersion": "1"}, "items": []
                }))
                .unwrap();
                list.items = (0..n).map(cm).collect();
                Ok(list)
            })
        }
        fn watch(
            &self,
            _: WatchParams,
            _: String,
        ) -> BoxFuture<'static, Result<WatchStream<ConfigMap>, kube_client::Error>> {
            Box::pin(async { Ok(futures::stream::pending().boxed()) })
        }
    }

    fn requests(queue: &Counting) -> Vec<String> {
        let mut names: Vec<String> = queue.items.lock().iter().map(|r| r.name.clone()).collect();
        names.sort();
        names
    }

    #[tokio::test(start_paused = true)]
    async fn the_initial_list_reaches_the_queue_in_one_batch() {
        for storage in [Storage::Shared, Storage::compact()] {
            let informer = cache::Informer::new(
                ListOnce(100),
                InformerConfig {
                    streaming_list: false,
                    storage,
                    ..Default::default()
                },
            );
            let queue = Arc::new(Counting::default());
            // The predicate sees every object's metadata and passes half of them.
            let even = predicate::boxed(LabelSelectorPredicate::parse("even=true").unwrap());
            let source = Informer::new(informer.clone());
            let dispatcher =
                EventDispatcher::new(Arc::new(EnqueueRequestForObject), queue.clone(), vec![even]);
            Source::<ConfigMap, Request>::start(&source, CancellationToken::new(), dispatcher)
                .await
                .unwrap();
            let ctx = CancellationToken::new();
            let run = tokio::spawn({
                let (informer, ctx) = (informer.clone(), ctx.clone());
                async move { informer.run(ctx).await }
            });
            informer.wait_for_sync().await;
            assert_eq!(queue.single.load(Ordering::Relaxed), 0);
            assert_eq!(*queue.batches.lock(), [50]);
            let expected: Vec<String> = {
                let mut v: Vec<String> = (0..100).step_by(2).map(|i| format!("o{i}")).collect();
                v.sort();
                v
            };
            assert_eq!(requests(&queue), expected);

            // A handler registered later gets the content replayed in one batch too.
            let late = Arc::new(Counting::default());
            let dispatcher =
                EventDispatcher::new(Arc::new(EnqueueRequestForObject), late.clone(), Vec::new());
            Source::<ConfigMap, Request>::start(&source, CancellationToken::new(), dispatcher)
                .await
                .unwrap();
            assert_eq!(late.single.load(Ordering::Relaxed), 0);
            assert_eq!(*late.batches.lock(), [100]);
            assert_eq!(requests(&late).len(), 100);
            ctx.cancel();
            run.await.unwrap();
        }
    }
}
