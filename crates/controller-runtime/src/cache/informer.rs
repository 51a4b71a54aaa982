//! The informer: keeps a [`Store`] in step with the API server and tells registered handlers
//! what changed.
//!
//! It fills its store with a streaming list (a watch with `sendInitialEvents=true`, whose
//! initial events end with a bookmark) where the server offers one, else lists (500 objects a
//! page); then it watches from the list's resourceVersion with bookmarks and
//! a random 5 to 10 minute timeout, watching again from the last resourceVersion it saw whenever
//! a watch ends. On 410 Gone it lists again: objects that vanished meanwhile reach the handlers
//! as deletes with `delete_state_unknown`. Connection failures back off from 800 ms to 30 s.
//!
//! ## Ordering
//! Store updates and handler calls happen under one lock, in the order the server sent the
//! events. A handler added to a running informer first gets the store's content as
//! initial-list creates, then every later change: nothing is missed or seen twice. Handlers are
//! called inline, so they must be quick and must not call back into the informer; the
//! controller's handlers only put keys on a queue.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube_client::api::{ListParams, WatchParams};
use kube_client::core::WatchEvent;
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::backoff::{Backoff, BackoffConfig};
use super::list_watch::{ListWatch, WatchStream};
use super::store::{IndexError, IndexFn, ObjectKey, Store};

/// A function applied to every object before it is stored (e.g. to drop managedFields).
pub type TransformFn<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// Settings of one informer.
pub struct InformerConfig<K> {
    /// Only objects matching this label selector are cached.
    pub label_selector: Option<String>,
    /// Only objects matching this field selector are cached.
    pub field_selector: Option<String>,
    /// Objects per list page.
    pub page_size: u32,
    /// Every period (with jitter in [0.9, 1.1)), every stored object is replayed to the handlers
    /// as an update with old == new. `None`: no resync.
    pub resync_period: Option<Duration>,
    /// Applied to every object before it is stored.
    pub transform: Option<TransformFn<K>>,
    /// Reconnect backoff.
    pub backoff: BackoffConfig,
    /// Watches time out after a random duration between this and twice this (client-go: 5 min).
    pub min_watch_timeout: Duration,
    /// Fill the store with a streaming list (a watch with `sendInitialEvents=true`) instead of
    /// paginated lists, where the server offers it; a server that refuses it is listed instead.
    pub streaming_list: bool,
}

impl<K> Default for InformerConfig<K> {
    fn default() -> Self {
        InformerConfig {
            label_selector: None,
            field_selector: None,
            page_size: 500,
            resync_period: None,
            transform: None,
            backoff: BackoffConfig::default(),
            min_watch_timeout: Duration::from_secs(300),
            streaming_list: true,
        }
    }
}

impl<K> Clone for InformerConfig<K> {
    fn clone(&self) -> Self {
        InformerConfig {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            page_size: self.page_size,
            resync_period: self.resync_period,
            transform: self.transform.clone(),
            backoff: self.backoff.clone(),
            min_watch_timeout: self.min_watch_timeout,
            streaming_list: self.streaming_list,
        }
    }
}

/// What an informer tells its handlers (client-go's `ResourceEventHandler`).
pub trait ResourceEventHandler<K>: Send + Sync {
    /// An object appeared; `is_in_initial_list` when it came with the first list (or the replay
    /// a late handler gets).
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool);
    /// An object changed (on resync, `old` and `new` are the same object).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>);
    /// An object went away; `delete_state_unknown` when the deletion was missed and found on a
    /// relist, so `obj` is the last state seen.
    fn on_delete(&self, obj: &Arc<K>, delete_state_unknown: bool);
}

/// A handler's registration on an informer.
#[derive(Clone, Debug)]
pub struct Registration {
    id: u64,
    synced: Arc<AtomicBool>,
}

impl Registration {
    /// Whether this handler has been given the informer's initial content.
    pub fn has_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }
}

struct Registered<K> {
    id: u64,
    handler: Arc<dyn ResourceEventHandler<K>>,
    synced: Arc<AtomicBool>,
}

struct Shared<K> {
    list_watch: Box<dyn ListWatch<K>>,
    config: InformerConfig<K>,
    store: Store<K>,
    /// Guards the handler list and serialises store updates with handler calls.
    handlers: Mutex<Vec<Registered<K>>>,
    next_id: AtomicU64,
    synced: watch::Sender<bool>,
    running: AtomicBool,
    /// Set once the server refused a streaming list.
    streaming_refused: AtomicBool,
}

/// An informer for objects of type `K`. Cheap to clone; clones share everything.
pub struct Informer<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for Informer<K> {
    fn clone(&self) -> Self {
        Informer {
            shared: self.shared.clone(),
        }
    }
}

/// Why one watch ended.
enum WatchEnd {
    Cancelled,
    /// The server closed it (timeout, or the server's own reasons): watch again.
    Closed,
    /// 410 Gone: list again.
    Gone,
    /// A connection or decoding failure: back off, then watch again.
    Failed(String),
    /// The server does not do streaming lists: list instead from now on.
    StreamingRefused(String),
}

impl<K> Informer<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// An informer that lists and watches through `list_watch`. It does nothing until
    /// [`Informer::run`].
    pub fn new(list_watch: impl ListWatch<K>, config: InformerConfig<K>) -> Self {
        Informer {
            shared: Arc::new(Shared {
                list_watch: Box::new(list_watch),
                config,
                store: Store::new(),
                handlers: Mutex::new(Vec::new()),
                next_id: AtomicU64::new(0),
                synced: watch::channel(false).0,
                running: AtomicBool::new(false),
                streaming_refused: AtomicBool::new(false),
            }),
        }
    }

    /// The informer's store.
    pub fn store(&self) -> &Store<K> {
        &self.shared.store
    }

    /// Adds a field index (see [`Store::add_index`]).
    pub fn add_index(&self, name: impl Into<String>, func: IndexFn<K>) -> Result<(), IndexError> {
        self.shared.store.add_index(name, func)
    }

    /// Whether the first list has been stored and delivered.
    pub fn has_synced(&self) -> bool {
        *self.shared.synced.borrow()
    }

    /// Waits until the first list has been stored and delivered.
    pub async fn wait_for_sync(&self) {
        let mut rx = self.shared.synced.subscribe();
        // The sender lives in `shared`, which `self` keeps alive: this cannot fail.
        let _ = rx.wait_for(|synced| *synced).await;
    }

    /// Registers a handler. On a synced informer it first gets the current content as
    /// initial-list creates.
    pub fn add_event_handler(&self, handler: Arc<dyn ResourceEventHandler<K>>) -> Registration {
        let mut handlers = self.shared.handlers.lock();
        let synced = Arc::new(AtomicBool::new(false));
        if self.has_synced() {
            for obj in self.shared.store.list(None) {
                handler.on_add(&obj, true);
            }
            synced.store(true, Ordering::Release);
        }
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        handlers.push(Registered {
            id,
            handler,
            synced: synced.clone(),
        });
        Registration { id, synced }
    }

    /// Unregisters a handler; it gets no further calls.
    pub fn remove_event_handler(&self, registration: &Registration) {
        self.shared
            .handlers
            .lock()
            .retain(|r| r.id != registration.id);
    }

    /// The number of registered handlers.
    pub fn handler_count(&self) -> usize {
        self.shared.handlers.lock().len()
    }

    /// Runs the informer until `ctx` is cancelled. Running one informer twice at once is a
    /// no-op for the second call.
    pub async fn run(&self, ctx: CancellationToken) {
        if self.shared.running.swap(true, Ordering::AcqRel) {
            tracing::warn!("informer is already running");
            return;
        }
        self.run_loop(&ctx).await;
        self.shared.running.store(false, Ordering::Release);
    }

    async fn run_loop(&self, ctx: &CancellationToken) {
        let config = &self.shared.config;
        let mut backoff = Backoff::new(config.backoff.clone());
        let mut resource_version: Option<String> = None;
        let mut next_resync = config.resync_period.map(|p| Instant::now() + jitter(p));
        loop {
            let streaming = resource_version.is_none() && self.streaming_enabled();
            if resource_version.is_none() && !streaming {
                let listed = tokio::select! {
                    _ = ctx.cancelled() => return,
                    listed = self.list_all() => listed,
                };
                match listed {
                    Ok(rv) => resource_version = Some(rv),
                    Err(e) => {
                        tracing::warn!(error = %e, "informer list failed");
                        if !sleep_or_cancel(ctx, backoff.next_delay()).await {
                            return;
                        }
                    }
                }
                continue;
            }
            // A streaming list is a watch from "now" whose first events are the current state.
            let params = WatchParams {
                label_selector: config.label_selector.clone(),
                field_selector: config.field_selector.clone(),
                timeout: Some(watch_timeout(config.min_watch_timeout)),
                bookmarks: true,
                send_initial_events: streaming,
            };
            let rv = resource_version.clone().unwrap_or_default();
            let started = tokio::select! {
                _ = ctx.cancelled() => return,
                started = self.shared.list_watch.watch(params, rv) => started,
            };
            let initial = streaming.then(InitialEvents::default);
            let end = match started {
                Ok(stream) => {
                    self.consume(
                        stream,
                        ctx,
                        &mut resource_version,
                        &mut next_resync,
                        initial,
                    )
                    .await
                }
                Err(kube_client::Error::Api(status))
                    if streaming && refuses_streaming(status.code) =>
                {
                    WatchEnd::StreamingRefused(status.message)
                }
                Err(e) if is_gone(&e) => WatchEnd::Gone,
                Err(e) => WatchEnd::Failed(e.to_string()),
            };
            match end {
                WatchEnd::Cancelled => return,
                WatchEnd::Closed => {}
                WatchEnd::Gone => {
                    tracing::debug!("watch history too old (410): listing again");
                    resource_version = None;
                }
                WatchEnd::StreamingRefused(why) => {
                    tracing::info!(%why, "the server refuses streaming lists; listing instead");
                    self.shared.streaming_refused.store(true, Ordering::Release);
                }
                WatchEnd::Failed(e) => {
                    tracing::warn!(error = %e, "informer watch failed");
                    if !sleep_or_cancel(ctx, backoff.next_delay()).await {
                        return;
                    }
                }
            }
        }
    }

    fn streaming_enabled(&self) -> bool {
        self.shared.config.streaming_list && !self.shared.streaming_refused.load(Ordering::Acquire)
    }

    /// Lists every page, replaces the store and tells the handlers. Returns the list's
    /// resourceVersion.
    async fn list_all(&self) -> Result<String, kube_client::Error> {
        let config = &self.shared.config;
        let mut objects = Vec::new();
        let mut continue_token: Option<String> = None;
        let resource_version = loop {
            let mut params = ListParams::default().limit(config.page_size);
            params.label_selector = config.label_selector.clone();
            params.field_selector = config.field_selector.clone();
            params.continue_token = continue_token.take();
            let page = match self.shared.list_watch.list(params).await {
                Ok(page) => page,
                // The continue token expired between pages: start over.
                Err(e) if is_gone(&e) && !objects.is_empty() => {
                    objects.clear();
                    continue;
                }
                Err(e) => return Err(e),
            };
            objects.extend(page.items.into_iter().map(|o| Arc::new(self.transform(o))));
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => continue_token = Some(token),
                None => break page.metadata.resource_version.unwrap_or_default(),
            }
        };
        self.replace(objects);
        Ok(resource_version)
    }

    /// Stores a full list and tells the handlers what changed.
    fn replace(&self, objects: Vec<Arc<K>>) {
        let handlers = self.shared.handlers.lock();
        let initial = !self.has_synced();
        let mut old = self.shared.store.replace(objects.iter().cloned());
        for obj in &objects {
            match old.remove(&ObjectKey::of(obj.as_ref())) {
                Some(previous) if !initial => handlers
                    .iter()
                    .for_each(|h| h.handler.on_update(&previous, obj)),
                _ => handlers.iter().for_each(|h| h.handler.on_add(obj, initial)),
            }
        }
        for gone in old.values() {
            handlers
                .iter()
                .for_each(|h| h.handler.on_delete(gone, true));
        }
        if initial {
            handlers
                .iter()
                .for_each(|h| h.synced.store(true, Ordering::Release));
            self.shared.synced.send_replace(true);
        }
    }

    /// Applies a watch's events until it ends. With `initial` (a streaming list), the events up
    /// to the initial-events-end bookmark are the current state: they are gathered and stored
    /// as one list, then the same stream goes on as the watch.
    async fn consume(
        &self,
        mut stream: WatchStream<K>,
        ctx: &CancellationToken,
        resource_version: &mut Option<String>,
        next_resync: &mut Option<Instant>,
        mut initial: Option<InitialEvents<K>>,
    ) -> WatchEnd {
        loop {
            let resync_at = next_resync.filter(|_| initial.is_none());
            let event = tokio::select! {
                _ = ctx.cancelled() => return WatchEnd::Cancelled,
                _ = sleep_until_opt(resync_at) => {
                    self.resync();
                    *next_resync = self.shared.config.resync_period.map(|p| Instant::now() + jitter(p));
                    continue;
                }
                event = stream.next() => event,
            };
            let event = match event {
                None if initial.is_some() => {
                    return WatchEnd::Failed(
                        "the watch ended before the initial events did".into(),
                    );
                }
                None => return WatchEnd::Closed,
                Some(Err(e)) if is_gone(&e) => return WatchEnd::Gone,
                Some(Err(e)) => return WatchEnd::Failed(e.to_string()),
                Some(Ok(event)) => event,
            };
            match event {
                WatchEvent::Added(obj) | WatchEvent::Modified(obj) => {
                    advance(resource_version, obj.meta());
                    let obj = Arc::new(self.transform(obj));
                    match &mut initial {
                        Some(buffer) => buffer.upsert(obj),
                        None => self.upsert(obj),
                    }
                }
                WatchEvent::Deleted(obj) => {
                    advance(resource_version, obj.meta());
                    let obj = Arc::new(self.transform(obj));
                    match &mut initial {
                        Some(buffer) => buffer.remove(&obj),
                        None => self.delete(obj),
                    }
                }
                WatchEvent::Bookmark(bookmark) => {
                    let end = bookmark
                        .metadata
                        .annotations
                        .get(INITIAL_EVENTS_END)
                        .is_some_and(|v| v == "true");
                    *resource_version = Some(bookmark.metadata.resource_version);
                    if end && let Some(buffer) = initial.take() {
                        self.replace(buffer.into_objects());
                    }
                }
                WatchEvent::Error(status) if status.code == 410 => return WatchEnd::Gone,
                WatchEvent::Error(status)
                    if initial.is_some() && refuses_streaming(status.code) =>
                {
                    return WatchEnd::StreamingRefused(status.message.clone());
                }
                WatchEvent::Error(status) => return WatchEnd::Failed(status.message.clone()),
            }
        }
    }

    fn upsert(&self, obj: Arc<K>) {
        let handlers = self.shared.handlers.lock();
        match self.shared.store.insert(obj.clone()) {
            Some(old) => handlers
                .iter()
                .for_each(|h| h.handler.on_update(&old, &obj)),
            None => handlers.iter().for_each(|h| h.handler.on_add(&obj, false)),
        }
    }

    fn delete(&self, obj: Arc<K>) {
        let handlers = self.shared.handlers.lock();
        // Handlers get the last state the server sent; the store's copy only matters if the
        // server sent none (it always does on a real watch).
        self.shared.store.remove(&ObjectKey::of(obj.as_ref()));
        handlers
            .iter()
            .for_each(|h| h.handler.on_delete(&obj, false));
    }

    fn resync(&self) {
        let handlers = self.shared.handlers.lock();
        for obj in self.shared.store.list(None) {
            handlers
                .iter()
                .for_each(|h| h.handler.on_update(&obj, &obj));
        }
    }

    fn transform(&self, obj: K) -> K {
        match &self.shared.config.transform {
            Some(f) => f(obj),
            None => obj,
        }
    }
}

/// A streaming list's initial events, in arrival order; a later event for a key replaces the
/// earlier one in place.
struct InitialEvents<K> {
    objects: Vec<Option<Arc<K>>>,
    positions: std::collections::HashMap<ObjectKey, usize>,
}

impl<K> Default for InitialEvents<K> {
    fn default() -> Self {
        InitialEvents {
            objects: Vec::new(),
            positions: Default::default(),
        }
    }
}

impl<K: Resource> InitialEvents<K> {
    fn upsert(&mut self, obj: Arc<K>) {
        match self.positions.entry(ObjectKey::of(obj.as_ref())) {
            std::collections::hash_map::Entry::Occupied(at) => self.objects[*at.get()] = Some(obj),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(self.objects.len());
                self.objects.push(Some(obj));
            }
        }
    }

    fn remove(&mut self, obj: &K) {
        if let Some(at) = self.positions.remove(&ObjectKey::of(obj)) {
            self.objects[at] = None;
        }
    }

    fn into_objects(self) -> Vec<Arc<K>> {
        self.objects.into_iter().flatten().collect()
    }
}

/// The annotation on the bookmark that ends a streaming list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Whether a watch with `sendInitialEvents` failed because the server does not support it
/// (400 BadRequest, 403, or 422 Invalid "... forbidden ... unless the WatchList feature gate is
/// enabled").
fn refuses_streaming(code: u16) -> bool {
    matches!(code, 400 | 403 | 422)
}

/// Moves the resume point to an event's object's resourceVersion.
fn advance(resource_version: &mut Option<String>, meta: &kube_core::ObjectMeta) {
    if let Some(rv) = &meta.resource_version {
        *resource_version = Some(rv.clone());
    }
}

/// Whether a kube-client error is a 410 Gone (expired resourceVersion or continue token).
fn is_gone(e: &kube_client::Error) -> bool {
    matches!(e, kube_client::Error::Api(status) if status.code == 410)
}

fn jitter(period: Duration) -> Duration {
    period.mul_f64(0.9 + 0.2 * rand_unit())
}

fn watch_timeout(min: Duration) -> u32 {
    (min.as_secs_f64() * (1.0 + rand_unit())) as u32
}

/// A number in [0, 1) without a dependency on a random number crate: the low bits of a hash
/// of the current time and a counter are random enough for jitter.
fn rand_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Sleeps for `d`; false when `ctx` was cancelled first.
async fn sleep_or_cancel(ctx: &CancellationToken, d: Duration) -> bool {
    tokio::select! {
        _ = ctx.cancelled() => false,
        _ = tokio::time::sleep(d) => true,
    }
}
