//! The informer: keeps a [`Store`] in step with the API server and tells registered handlers
//! what changed.
//!
//! An informer lists and watches through one or more [`InformerScope`]s: one for every
//! namespace (or for a cluster-scoped type), or one per cached namespace (controller-runtime's
//! multi-namespace cache), all feeding the one store and the one handler list. Each scope runs
//! its own list+watch loop, a reflector (see the `reflector` module), which writes through the
//! informer's store writer for that scope: a streaming list (a watch with
//! `sendInitialEvents=true`) where the server offers one, else paginated lists; then a watch
//! from the list's resourceVersion; on 410 Gone a relist of that scope alone, whose vanished
//! objects reach the handlers as deletes with `delete_state_unknown`. The informer has synced
//! once every scope has.
//!
//! A scope lists and watches typed objects, or, when the store is compact
//! ([`Storage::Compact`]) and the scope has no transform, [`RawObject`]s through the
//! list-watch's raw twin ([`ListWatch::raw`]): their JSON goes into the store as received, and
//! is decoded only for handlers and indexes.
//!
//! ## Ordering
//! Store updates and handler calls happen under one lock, in the order the server sent the
//! events (per scope; scopes cover disjoint namespaces). A handler added to a running informer
//! first gets the store's content as initial-list creates, then every later change: nothing
//! is missed or seen twice. Handlers are called inline, so they must be quick and must not call
//! back into the informer; the controller's handlers only put keys on a queue.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crt_labels::LabelSelector;
use kube_core::{ObjectMeta, Resource};
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use super::backoff::{BackoffConfig, jitter, sleep_or_cancel};
use super::consistency::{Seen, Written, WrittenVersions};
use super::error::ListWatchError;
use super::list_watch::ListWatch;
use super::raw::RawObject;
use super::reflector::{Reflector, ReflectorConfig, StoreWriter};
use super::storage::{CachedObject, Encoded, Storage};
use super::store::{Entry, IndexError, IndexFn, Slot, Store};
use crate::ObjectKey;

/// The default of [`InformerConfig::with_initial_events_timeout`].
const DEFAULT_INITIAL_EVENTS_TIMEOUT: Duration = Duration::from_secs(10);

/// A function applied to every object before it is stored (e.g. to drop managedFields).
pub type TransformFn<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// Settings of one informer. Every field has a default; set the others with the `with_*`
/// setters (one per field).
#[non_exhaustive]
pub struct InformerConfig<K> {
    /// Only objects matching this label selector are cached (scopes may set their own).
    pub(crate) label_selector: Option<String>,
    /// Only objects matching this field selector are cached (scopes may set their own).
    pub(crate) field_selector: Option<String>,
    /// Objects per list page.
    pub(crate) page_size: u32,
    /// Every period (with jitter in [0.9, 1.1)) after the informer synced, every stored object
    /// is replayed to the handlers as an update with old == new. `None`: no resync.
    pub(crate) resync_period: Option<Duration>,
    /// Applied to every object before it is stored (scopes may set their own).
    pub(crate) transform: Option<TransformFn<K>>,
    /// Reconnect backoff.
    pub(crate) backoff: BackoffConfig,
    /// Watches time out after a random duration between this and twice this (client-go: 5 min).
    pub(crate) min_watch_timeout: Duration,
    /// Fill the store with a streaming list (a watch with `sendInitialEvents=true`) instead of
    /// paginated lists, where the server offers it; a server that refuses it is listed instead.
    pub(crate) streaming_list: bool,
    /// How long a streaming list waits for its initial-events-end bookmark before it falls back
    /// to a paginated list.
    pub(crate) initial_events_timeout: Duration,
    /// How the store holds objects: shared typed objects (the default), or compactly encoded
    /// ones decoded on each read (see [`Storage`]).
    pub(crate) storage: Storage<K>,
    /// Drop every object's `metadata.managedFields` before it is stored (see
    /// [`InformerConfig::with_strip_managed_fields`]).
    pub(crate) strip_managed_fields: bool,
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
            initial_events_timeout: DEFAULT_INITIAL_EVENTS_TIMEOUT,
            storage: Storage::Shared,
            strip_managed_fields: false,
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
            initial_events_timeout: self.initial_events_timeout,
            storage: self.storage.clone(),
            strip_managed_fields: self.strip_managed_fields,
        }
    }
}

impl<K> InformerConfig<K> {
    /// Only objects matching this label selector are cached (scopes may set their own).
    pub fn with_label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Only objects matching this field selector are cached (scopes may set their own).
    pub fn with_field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Objects per list page.
    pub fn with_page_size(mut self, page_size: u32) -> Self {
        self.page_size = page_size;
        self
    }

    /// Every period (with jitter in [0.9, 1.1)) after the informer synced, every stored object
    /// is replayed to the handlers as an update with old == new. `None`: no resync.
    pub fn with_resync_period(mut self, period: Duration) -> Self {
        self.resync_period = Some(period);
        self
    }

    /// Drops every object's `metadata.managedFields` before it is stored, after any
    /// transform: cut out of the JSON as received when the store is compact and the scope has
    /// no transform (nothing is decoded), else cleared on the typed object. What the cache
    /// does for [`strip_managed_fields`](super::strip_managed_fields); a
    /// [`with_transform`](Self::with_transform) clearing them does the same, but makes a
    /// compact store decode and re-encode every object.
    pub fn with_strip_managed_fields(mut self, strip: bool) -> Self {
        self.strip_managed_fields = strip;
        self
    }

    /// Applied to every object before it is stored (scopes may set their own).
    pub fn with_transform(mut self, transform: TransformFn<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// Reconnect backoff.
    pub fn with_backoff(mut self, backoff: BackoffConfig) -> Self {
        self.backoff = backoff;
        self
    }

    /// Watches time out after a random duration between this and twice this (client-go: 5 min).
    pub fn with_min_watch_timeout(mut self, timeout: Duration) -> Self {
        self.min_watch_timeout = timeout;
        self
    }

    /// Fill the store with a streaming list (a watch with `sendInitialEvents=true`) instead of
    /// paginated lists, where the server offers it; a server that refuses it is listed instead.
    pub fn with_streaming_list(mut self, streaming: bool) -> Self {
        self.streaming_list = streaming;
        self
    }

    /// How long a streaming list waits for the bookmark that ends its initial events
    /// (`k8s.io/initial-events-end`) before it gives up on it. Default: 10 s.
    ///
    /// When the bound passes, the informer abandons that watch, logs a warning once, counts it
    /// in `controller_runtime_informer_streaming_list_fallbacks_total` (see
    /// [`Metrics`](crate::metrics::Metrics)), and fills its store with a paginated list
    /// instead; that scope keeps to paginated lists from then on (a quiet resource would stall
    /// a second streaming list too), as it does when a server refuses streaming lists.
    ///
    /// client-go has no such bound. This one exists because a real kube-apiserver (1.28.7 with
    /// etcd 3.4 and the WatchList gate on) was seen to withhold the bookmark of a quiet resource
    /// (an empty namespace, a CRD nobody writes) for 75 s and more, until some write to that
    /// resource moved its watch cache, so an informer waiting for it never synced. 10 s is far
    /// above what a streaming list of even 100,000 objects takes, and short enough that a
    /// stalled start is a delay, not an outage.
    ///
    /// ```
    /// use std::time::Duration;
    /// use controller_runtime::cache::InformerConfig;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let config = InformerConfig::<ConfigMap>::default()
    ///     .with_initial_events_timeout(Duration::from_secs(2));
    /// # let _ = config;
    /// ```
    pub fn with_initial_events_timeout(mut self, timeout: Duration) -> Self {
        self.initial_events_timeout = timeout;
        self
    }

    /// How the store holds objects: shared typed objects (the default), or compactly encoded
    /// ones decoded on each read (see [`Storage`]).
    pub fn with_storage(mut self, storage: Storage<K>) -> Self {
        self.storage = storage;
        self
    }
}

/// One list+watch of an informer: the objects of one namespace (or of every namespace) with
/// their own selectors and transform. Unset fields fall back to the [`InformerConfig`]'s.
pub struct InformerScope<K> {
    /// The namespace `list_watch` lists and watches; `None` when it covers every namespace
    /// (less those of the informer's other scopes) or a cluster-scoped type. Reads of a
    /// namespace no scope covers are refused by the cache.
    pub namespace: Option<String>,
    /// How this scope reaches the server.
    pub list_watch: Box<dyn ListWatch<K>>,
    /// Only objects matching this label selector.
    pub label_selector: Option<String>,
    /// Only objects matching this field selector.
    pub field_selector: Option<String>,
    /// Applied to every object of this scope before it is stored.
    pub transform: Option<TransformFn<K>>,
}

impl<K: Clone> InformerScope<K> {
    /// A scope over `namespace` (`None`: every namespace) with the informer's settings.
    pub fn new(namespace: Option<String>, list_watch: impl ListWatch<K>) -> Self {
        InformerScope {
            namespace,
            list_watch: Box::new(list_watch),
            label_selector: None,
            field_selector: None,
            transform: None,
        }
    }
}

/// What an informer tells its handlers (client-go's `ResourceEventHandler`).
///
/// The informer calls the `*_cached` methods, with each object as the cache holds it
/// ([`CachedObject`]: metadata at hand, the typed object decoded on first access when the
/// store is compact). By default they decode the object and call `on_add`, `on_update` and
/// `on_delete`; a handler that can do with metadata overrides them and decodes nothing.
pub trait ResourceEventHandler<K>: Send + Sync {
    /// An object appeared; `is_in_initial_list` when it came with the first list (or the replay
    /// a late handler gets).
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool);
    /// An object changed (on resync, `old` and `new` are the same object).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>);
    /// An object went away; `delete_state_unknown` when the deletion was missed and found on a
    /// relist, so `obj` is the last state seen.
    fn on_delete(&self, obj: &Arc<K>, delete_state_unknown: bool);

    /// [`on_add`](Self::on_add), with the object as cached.
    fn on_add_cached(&self, obj: &CachedObject<K>, is_in_initial_list: bool) {
        if let Some(obj) = obj.object() {
            self.on_add(&obj, is_in_initial_list);
        }
    }
    /// [`on_add_cached`](Self::on_add_cached) of each object, in order: the informer's first
    /// list (and the replay a late handler gets) arrives this way, so that a handler can hand
    /// its whole result on at once (the Kind source adds the keys to its queue in one batch).
    fn on_add_batch_cached(&self, objs: &[CachedObject<K>], is_in_initial_list: bool) {
        for obj in objs {
            self.on_add_cached(obj, is_in_initial_list);
        }
    }
    /// [`on_update`](Self::on_update), with the objects as cached.
    fn on_update_cached(&self, old: &CachedObject<K>, new: &CachedObject<K>) {
        if let (Some(old), Some(new)) = (old.object(), new.object()) {
            self.on_update(&old, &new);
        }
    }
    /// [`on_delete`](Self::on_delete), with the object as cached.
    fn on_delete_cached(&self, obj: &CachedObject<K>, delete_state_unknown: bool) {
        if let Some(obj) = obj.object() {
            self.on_delete(&obj, delete_state_unknown);
        }
    }
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

/// A scope as the informer runs it.
struct Scope<K> {
    namespace: Option<String>,
    list_watch: Box<dyn ListWatch<K>>,
    /// The raw twin of `list_watch`, used instead when the store is compact and the scope has
    /// no transform: objects are stored as received, never decoded to be stored.
    raw: Option<Box<dyn ListWatch<RawObject>>>,
    transform: Option<TransformFn<K>>,
    /// The scope's list+watch loop.
    reflector: Reflector,
    /// Its label selector, parsed (`None`: none; `Some(None)`: one that does not parse), to
    /// tell whether a written object will reach the store.
    label_selector: Option<Option<LabelSelector>>,
    /// Whether it has a field selector (which the client cannot evaluate).
    field_selector: bool,
    /// The resourceVersion up to which the store holds this scope's objects (0: unknown):
    /// watch events come in resourceVersion order, so every write at or below it is stored.
    caught_up: AtomicU64,
    /// Set once this scope's first list has been stored and delivered.
    synced: AtomicBool,
}

struct Shared<K> {
    scopes: Vec<Scope<K>>,
    config: InformerConfig<K>,
    store: Store<K>,
    /// Guards the handler list and serialises store updates with handler calls.
    handlers: Mutex<Vec<Registered<K>>>,
    next_id: AtomicU64,
    synced: watch::Sender<bool>,
    running: AtomicBool,
    /// Told after every change to the store (reads waiting for a write wait on it).
    store_changed: Notify,
    /// The cache's table of writes not stored yet, and this informer's `apiVersion/Kind` in
    /// it: settled on every change to the store.
    written: OnceLock<(Arc<WrittenVersions>, String)>,
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

impl<K> Informer<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// An informer that lists and watches through `list_watch` (one scope, with the config's
    /// selectors and transform). It does nothing until [`Informer::run`].
    pub fn new(list_watch: impl ListWatch<K>, config: InformerConfig<K>) -> Self {
        Self::with_scopes(vec![InformerScope::new(None, list_watch)], config)
    }

    /// An informer over several scopes (e.g. one per namespace), merged into one store: one
    /// list and one watch per scope. Scopes must cover disjoint sets of objects.
    ///
    /// # Panics
    /// If `scopes` is empty.
    pub fn with_scopes(scopes: Vec<InformerScope<K>>, config: InformerConfig<K>) -> Self {
        assert!(!scopes.is_empty(), "an informer needs at least one scope");
        let scopes = scopes
            .into_iter()
            .map(|s| {
                let transform = s.transform.or_else(|| config.transform.clone());
                let raw = if config.storage.is_compact() && transform.is_none() {
                    s.list_watch.raw()
                } else {
                    None
                };
                let label_selector = s.label_selector.or_else(|| config.label_selector.clone());
                let field_selector = s.field_selector.or_else(|| config.field_selector.clone());
                let parsed = label_selector.as_deref().map(|sel| sel.parse().ok());
                let has_field_selector = field_selector.as_deref().is_some_and(|f| !f.is_empty());
                let reflector = Reflector::new(ReflectorConfig {
                    namespace: s.namespace.clone(),
                    label_selector,
                    field_selector,
                    page_size: config.page_size,
                    min_watch_timeout: config.min_watch_timeout,
                    streaming_list: config.streaming_list,
                    initial_events_timeout: config.initial_events_timeout,
                    backoff: config.backoff.clone(),
                });
                Scope {
                    namespace: s.namespace,
                    list_watch: s.list_watch,
                    raw,
                    transform,
                    reflector,
                    label_selector: parsed,
                    field_selector: has_field_selector,
                    caught_up: AtomicU64::new(0),
                    synced: AtomicBool::new(false),
                }
            })
            .collect();
        Informer {
            shared: Arc::new(Shared {
                scopes,
                store: Store::with_storage(config.storage.clone()),
                config,
                handlers: Mutex::new(Vec::new()),
                next_id: AtomicU64::new(0),
                synced: watch::channel(false).0,
                running: AtomicBool::new(false),
                store_changed: Notify::new(),
                written: OnceLock::new(),
            }),
        }
    }

    /// The informer's store.
    pub fn store(&self) -> &Store<K> {
        &self.shared.store
    }

    /// The namespaces the informer lists and watches one by one; `None` when one of its
    /// scopes covers every namespace (or the type is cluster-scoped).
    pub fn namespaces(&self) -> Option<Vec<String>> {
        self.shared
            .scopes
            .iter()
            .map(|s| s.namespace.clone())
            .collect()
    }

    /// Whether objects of `namespace` can be in this informer's store.
    pub fn covers_namespace(&self, namespace: &str) -> bool {
        self.shared
            .scopes
            .iter()
            .any(|s| s.namespace.as_deref().is_none_or(|ns| ns == namespace))
    }

    /// Adds a field index (see [`Store::add_index`]).
    pub fn add_index(&self, name: impl Into<String>, func: IndexFn<K>) -> Result<(), IndexError> {
        self.shared.store.add_index(name, func)
    }

    /// Whether every scope's first list has been stored and delivered.
    pub fn has_synced(&self) -> bool {
        *self.shared.synced.borrow()
    }

    /// The last failure of a scope's list or watch, while it lasts (until that scope lists or
    /// watches successfully again): why an informer does not sync, e.g. the API server's 403
    /// naming the permission its identity lacks. Each distinct failure is also logged once as
    /// a warning, however often the informer retries.
    pub fn last_error(&self) -> Option<ListWatchError> {
        self.shared
            .scopes
            .iter()
            .find_map(|scope| scope.reflector.last_error())
    }

    /// Waits until every scope's first list has been stored and delivered.
    pub async fn wait_for_sync(&self) {
        let mut rx = self.shared.synced.subscribe();
        // The sender lives in `shared`, which `self` keeps alive: this cannot fail.
        let _ = rx.wait_for(|synced| *synced).await;
    }

    /// Registers a handler. It first gets the store's current content as initial-list
    /// creates (everything, on a synced informer), then every change.
    pub fn add_event_handler(&self, handler: Arc<dyn ResourceEventHandler<K>>) -> Registration {
        let mut handlers = self.shared.handlers.lock();
        // Scopes that synced already have stored their content: replay it. Scopes still
        // listing deliver theirs to every handler, this one included, when they store it.
        let stored = self.shared.store.list_cached();
        if !stored.is_empty() {
            handler.on_add_batch_cached(&stored, true);
        }
        let synced = Arc::new(AtomicBool::new(self.has_synced()));
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

    /// Runs the informer (every scope's list+watch loop, and the resync) until `ctx` is
    /// cancelled. Running one informer twice at once is a no-op for the second call.
    pub async fn run(&self, ctx: CancellationToken) {
        if self.shared.running.swap(true, Ordering::AcqRel) {
            tracing::warn!("informer is already running");
            return;
        }
        let scopes = (0..self.shared.scopes.len()).map(|i| self.run_scope(i, &ctx));
        futures::join!(futures::future::join_all(scopes), self.resync_loop(&ctx));
        self.shared.running.store(false, Ordering::Release);
    }

    /// Runs scope `scope`'s reflector until `ctx` is cancelled, writing through the scope's
    /// [`ScopeWriter`]: with raw objects for a compact store without a transform, else with
    /// typed ones.
    async fn run_scope(&self, scope: usize, ctx: &CancellationToken) {
        let this = &self.shared.scopes[scope];
        let writer = ScopeWriter {
            informer: self,
            scope,
        };
        match &this.raw {
            Some(raw) => this.reflector.run(raw.as_ref(), &writer, ctx).await,
            None => {
                this.reflector
                    .run(this.list_watch.as_ref(), &writer, ctx)
                    .await
            }
        }
    }

    /// Replays every stored object as an update every resync period once synced.
    async fn resync_loop(&self, ctx: &CancellationToken) {
        let Some(period) = self.shared.config.resync_period else {
            return;
        };
        tokio::select! {
            _ = ctx.cancelled() => return,
            _ = self.wait_for_sync() => {}
        }
        while sleep_or_cancel(ctx, jitter(period)).await {
            let handlers = self.shared.handlers.lock();
            for obj in self.shared.store.list_cached() {
                handlers
                    .iter()
                    .for_each(|h| h.handler.on_update_cached(&obj, &obj));
            }
        }
    }

    /// Stores a full list of scope `scope` and tells the handlers what changed: on the
    /// scope's first list everything is an initial-list create; on a relist, objects of the
    /// scope that are not in `entries` are deleted with `delete_state_unknown`.
    fn replace(&self, scope: usize, entries: Vec<Entry<K>>) {
        let handlers = self.shared.handlers.lock();
        let this = &self.shared.scopes[scope];
        let initial = !this.synced.load(Ordering::Acquire);
        let store = &self.shared.store;
        // Without handlers there is nobody to tell. Handlers get the objects as stored (a
        // compact store's are decoded only for a handler that asks), and their keys only when
        // there is an old content to compare with.
        let keyed = !store.is_empty();
        let told: Vec<(Option<ObjectKey>, CachedObject<K>)> = if handlers.is_empty() {
            Vec::new()
        } else {
            entries
                .iter()
                .map(|e| (keyed.then(|| e.key.clone()), store.cached_entry(e)))
                .collect()
        };
        let mut old = if self.shared.scopes.len() == 1 {
            store.replace_entries(entries)
        } else {
            store.replace_entries_where(|key| self.scope_of(key) == scope, entries)
        };
        if initial {
            // Everything is an initial-list create: each handler gets the list at once.
            let objs: Vec<CachedObject<K>> = told
                .into_iter()
                .map(|(key, obj)| {
                    if let Some(key) = key {
                        old.remove(&key);
                    }
                    obj
                })
                .collect();
            if !objs.is_empty() {
                handlers
                    .iter()
                    .for_each(|h| h.handler.on_add_batch_cached(&objs, true));
            }
        } else {
            self.tell_relisted(&handlers, told, &mut old);
        }
        if !handlers.is_empty() {
            for gone in old.iter().map(|(key, slot)| store.cached(key, slot)) {
                handlers
                    .iter()
                    .for_each(|h| h.handler.on_delete_cached(&gone, true));
            }
        }
        // What the store does not keep (typed objects a compact store encoded, the replaced
        // content) is freed before anyone is told the informer synced.
        drop(old);
        if let Some((table, gvk)) = self.pending_writes() {
            table.settle_all(gvk, |key, w| {
                self.scope_of(key) == scope
                    && w.seen_in(seen_cached(store.get_cached(key).as_ref()))
            });
        }
        self.shared.store_changed.notify_waiters();
        if initial {
            this.synced.store(true, Ordering::Release);
            let all = self
                .shared
                .scopes
                .iter()
                .all(|s| s.synced.load(Ordering::Acquire));
            if all && !self.has_synced() {
                handlers
                    .iter()
                    .for_each(|h| h.synced.store(true, Ordering::Release));
                self.shared.synced.send_replace(true);
            }
        }
    }

    /// Tells the handlers of a relist what changed: an update for each object that was
    /// stored already (taken out of `old`), a create for each other one.
    fn tell_relisted(
        &self,
        handlers: &[Registered<K>],
        told: Vec<(Option<ObjectKey>, CachedObject<K>)>,
        old: &mut HashMap<ObjectKey, Slot<K>>,
    ) {
        let store = &self.shared.store;
        for (key, obj) in told {
            let previous = match key {
                Some(key) if !old.is_empty() => old.remove(&key).map(|slot| (key, slot)),
                _ => None,
            };
            match previous.map(|(key, slot)| store.cached(&key, &slot)) {
                Some(previous) => handlers
                    .iter()
                    .for_each(|h| h.handler.on_update_cached(&previous, &obj)),
                None => handlers
                    .iter()
                    .for_each(|h| h.handler.on_add_cached(&obj, false)),
            }
        }
    }

    /// The scope an object of `key` belongs to: the one of its namespace, else the one that
    /// covers every other namespace.
    fn scope_of(&self, key: &ObjectKey) -> usize {
        let scopes = &self.shared.scopes;
        key.namespace
            .as_deref()
            .and_then(|ns| {
                scopes
                    .iter()
                    .position(|s| s.namespace.as_deref() == Some(ns))
            })
            .or_else(|| scopes.iter().position(|s| s.namespace.is_none()))
            .unwrap_or(usize::MAX)
    }

    /// Stores an added or modified object and tells the handlers.
    fn upsert(&self, entry: Entry<K>) {
        let handlers = self.shared.handlers.lock();
        let store = &self.shared.store;
        let pending = self.pending_writes().map(|p| (p, entry.key.clone()));
        let obj = store.cached_entry(&entry);
        let key = (!handlers.is_empty()).then(|| entry.key.clone());
        let old = store.put_entry(entry);
        if let Some(((table, gvk), key)) = pending {
            table.settle(gvk, &key, |w| w.seen_in(seen(Some(obj.metadata()))));
        }
        self.shared.store_changed.notify_waiters();
        if handlers.is_empty() {
            return;
        }
        match old.zip(key).map(|(slot, key)| store.cached(&key, &slot)) {
            Some(old) => handlers
                .iter()
                .for_each(|h| h.handler.on_update_cached(&old, &obj)),
            None => handlers
                .iter()
                .for_each(|h| h.handler.on_add_cached(&obj, false)),
        }
    }

    /// Removes a deleted object and tells the handlers.
    fn delete(&self, entry: Entry<K>) {
        let handlers = self.shared.handlers.lock();
        // Handlers get the last state the server sent; the store's copy only matters if the
        // server sent none (it always does on a real watch).
        self.shared.store.discard(&entry.key);
        let gone = self.shared.store.cached_entry(&entry);
        if let Some((table, gvk)) = self.pending_writes() {
            let meta = gone.metadata();
            table.settle(gvk, &entry.key, |w| {
                w.seen_in(Seen::Deleted {
                    resource_version: meta.resource_version.as_deref(),
                    uid: meta.uid.as_deref(),
                })
            });
        }
        self.shared.store_changed.notify_waiters();
        if handlers.is_empty() {
            return;
        }
        handlers
            .iter()
            .for_each(|h| h.handler.on_delete_cached(&gone, false));
    }

    /// Has the informer settle the writes of `table` recorded under `gvk` (its
    /// `apiVersion/Kind`) as it stores them. Set once, by the cache that made the informer.
    pub(crate) fn settle_writes_in(&self, table: Arc<WrittenVersions>, gvk: String) {
        let _ = self.shared.written.set((table, gvk));
    }

    /// The table of writes to settle, while it has any.
    fn pending_writes(&self) -> Option<&(Arc<WrittenVersions>, String)> {
        self.shared
            .written
            .get()
            .filter(|(table, _)| !table.is_empty())
    }

    /// Told after every change to the store.
    pub(crate) fn store_changed(&self) -> &Notify {
        &self.shared.store_changed
    }

    /// Whether `written`, a write of the object of `key` with `labels` (unknown for a
    /// delete), is one this informer will store and has not stored yet: the object is in a
    /// namespace it covers, matches its scope's label selector, the scope has no field
    /// selector (which the cache cannot evaluate: such writes are not waited for), and the
    /// store does not hold the write or newer already.
    pub(crate) fn awaits(
        &self,
        key: &ObjectKey,
        labels: Option<&BTreeMap<String, String>>,
        written: &Written,
    ) -> bool {
        if key
            .namespace
            .as_deref()
            .is_some_and(|ns| !self.covers_namespace(ns))
        {
            return false;
        }
        let Some(scope) = self.shared.scopes.get(self.scope_of(key)) else {
            return false;
        };
        if scope.field_selector {
            return false;
        }
        if !written.gone {
            let empty = BTreeMap::new();
            match &scope.label_selector {
                None => {}
                Some(Some(selector)) if selector.matches(labels.unwrap_or(&empty)) => {}
                Some(_) => return false,
            }
        }
        !self.caught_up_with(key, written)
            && !written.seen_in(seen_cached(self.shared.store.get_cached(key).as_ref()))
    }

    /// Scope `scope`'s store holds everything up to `resource_version`: pending writes of the
    /// scope at or below it are seen, even those whose object is gone again.
    fn caught_up(&self, scope: usize, resource_version: &str) {
        let Ok(rv) = resource_version.parse::<u64>() else {
            return;
        };
        let this = &self.shared.scopes[scope];
        if this.caught_up.fetch_max(rv, Ordering::AcqRel) >= rv {
            return;
        }
        if let Some((table, gvk)) = self.pending_writes() {
            table.settle_all(gvk, |key, w| {
                self.scope_of(key) == scope && w.resource_version.is_some_and(|at| at <= rv)
            });
            self.shared.store_changed.notify_waiters();
        }
    }

    /// Whether the store of `key`'s scope holds everything up to `written`'s resourceVersion.
    pub(crate) fn caught_up_with(&self, key: &ObjectKey, written: &Written) -> bool {
        let Some(scope) = self.shared.scopes.get(self.scope_of(key)) else {
            return false;
        };
        written
            .resource_version
            .is_some_and(|at| at <= scope.caught_up.load(Ordering::Acquire))
    }

    /// Applies scope `scope`'s transform, then trims the metadata's lists (see
    /// [`compact_meta`]): what is returned is what the store keeps.
    fn transform(&self, scope: usize, obj: K) -> K {
        let mut obj = match &self.shared.scopes[scope].transform {
            Some(f) => f(obj),
            None => obj,
        };
        if self.shared.config.strip_managed_fields {
            obj.meta_mut().managed_fields = None;
        }
        compact_meta(obj.meta_mut());
        obj
    }
}

/// The store writer the informer hands scope `scope`'s reflector: what the reflector lists
/// and watches goes into the informer's store, and to its handlers, through it.
struct ScopeWriter<'a, K> {
    informer: &'a Informer<K>,
    scope: usize,
}

impl<K, T> StoreWriter<K, T> for ScopeWriter<'_, K>
where
    K: Resource + Clone + Send + Sync + 'static,
    T: Wire<K>,
{
    fn entry(&self, obj: T) -> Entry<K> {
        obj.entry(self.informer, self.scope)
    }

    fn gone(&self, obj: T) -> Entry<K> {
        obj.gone(self.informer, self.scope)
    }

    fn replace(&self, entries: Vec<Entry<K>>) {
        self.informer.replace(self.scope, entries)
    }

    fn upsert(&self, entry: Entry<K>) {
        self.informer.upsert(entry)
    }

    fn delete(&self, entry: Entry<K>) {
        self.informer.delete(entry)
    }

    fn caught_up(&self, resource_version: &str) {
        self.informer.caught_up(self.scope, resource_version)
    }
}

/// What a scope's list or watch yields: typed objects, or, for a compact store without a
/// transform, [`RawObject`]s.
trait Wire<K>: Sized {
    /// The entry the informer stores for it (transformed, encoded if the store is compact).
    fn entry(self, informer: &Informer<K>, scope: usize) -> Entry<K>;
    /// The entry of a deleted object: only its key and, for handlers, its typed object are
    /// used, so nothing is encoded for it.
    fn gone(self, informer: &Informer<K>, scope: usize) -> Entry<K> {
        self.entry(informer, scope)
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> Wire<K> for K {
    fn entry(self, informer: &Informer<K>, scope: usize) -> Entry<K> {
        let obj = Arc::new(informer.transform(scope, self));
        informer.shared.store.entry(obj)
    }

    fn gone(self, informer: &Informer<K>, scope: usize) -> Entry<K> {
        let obj = Arc::new(informer.transform(scope, self));
        Entry {
            key: ObjectKey::of(obj.as_ref()),
            slot: Slot::Shared(obj.clone()),
            typed: Some(obj),
        }
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> Wire<K> for RawObject {
    fn entry(mut self, informer: &Informer<K>, _: usize) -> Entry<K> {
        if informer.shared.config.strip_managed_fields {
            self.strip_managed_fields();
        }
        let (key, bytes) = self.into_parts();
        Entry {
            key,
            slot: Slot::Encoded(Arc::new(Encoded { bytes })),
            typed: None,
        }
    }
}

/// Trims the metadata's lists to their length. serde decodes a JSON array of unknown length
/// into a `Vec` that grows to at least four slots, so an object with one managedFields entry
/// (about 220 bytes each in k8s-openapi) carries room for three more for as long as it is
/// cached: 660 bytes per object, a fifth of a 1 KB ConfigMap's cached size.
fn compact_meta(meta: &mut ObjectMeta) {
    if let Some(entries) = &mut meta.managed_fields {
        entries.shrink_to_fit();
    }
    if let Some(owners) = &mut meta.owner_references {
        owners.shrink_to_fit();
    }
    if let Some(finalizers) = &mut meta.finalizers {
        finalizers.shrink_to_fit();
    }
}

/// What a store holds for a key (its metadata, if it holds one), as a write is compared with
/// it.
pub(crate) fn seen(meta: Option<&ObjectMeta>) -> Seen<'_> {
    match meta {
        Some(meta) => Seen::Present {
            resource_version: meta.resource_version.as_deref(),
            uid: meta.uid.as_deref(),
        },
        None => Seen::Absent,
    }
}

/// [`seen`] of an object as cached.
pub(crate) fn seen_cached<K: Resource>(obj: Option<&CachedObject<K>>) -> Seen<'_> {
    seen(obj.map(CachedObject::metadata))
}
