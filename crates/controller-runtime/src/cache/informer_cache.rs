//! [`Cache`]: one informer per object type, shared by every controller and reader of a
//! manager.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube_client::Client;
use kube_core::{ApiResource, GroupVersionKind, Resource};
use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::consistency::{Written, WrittenVersions};
use super::error::{Error, ListWatchError};
use super::informer::{Informer, InformerConfig, InformerScope, TransformFn};
use super::list_watch::ApiListWatch;
use super::options::{
    CacheOptions, JsonTransform, MetaTransform, gvk_key, is_strip_managed_fields,
};
use super::storage::Storage;
use crate::ObjectKey;

/// The bound on every object type a cache holds: typed (k8s-openapi,
/// `#[derive(CustomResource)]`), dynamic (`DynamicObject`) or metadata-only
/// (`PartialObjectMeta<K>`).
pub trait CacheObject:
    Resource<DynamicType: Clone + Send + Sync>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
    + Send
    + Sync
    + 'static
{
}
impl<K> CacheObject for K where
    K: Resource<DynamicType: Clone + Send + Sync>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
        + Send
        + Sync
        + 'static
{
}

/// What the cache needs of an informer without knowing its type.
trait ErasedInformer: Send + Sync {
    fn run(&self, ctx: CancellationToken) -> BoxFuture<'static, ()>;
    fn has_synced(&self) -> bool;
    fn last_error(&self) -> Option<ListWatchError>;
    fn wait_for_sync(&self) -> BoxFuture<'static, ()>;
    fn as_any(&self) -> &(dyn Any + Send + Sync);
    /// The number of objects in the store.
    fn len(&self) -> usize;
    /// The heap the store's objects take, about (see [`Store::size_bytes`]).
    fn size_bytes(&self) -> usize;
    fn awaits(
        &self,
        key: &ObjectKey,
        labels: Option<&BTreeMap<String, String>>,
        written: &Written,
    ) -> bool;
}

impl<K: CacheObject> ErasedInformer for Informer<K> {
    fn run(&self, ctx: CancellationToken) -> BoxFuture<'static, ()> {
        let informer = self.clone();
        Box::pin(async move { informer.run(ctx).await })
    }
    fn has_synced(&self) -> bool {
        Informer::has_synced(self)
    }
    fn last_error(&self) -> Option<ListWatchError> {
        Informer::last_error(self)
    }
    fn wait_for_sync(&self) -> BoxFuture<'static, ()> {
        let informer = self.clone();
        Box::pin(async move { informer.wait_for_sync().await })
    }
    fn as_any(&self) -> &(dyn Any + Send + Sync) {
        self
    }
    fn len(&self) -> usize {
        self.store().len()
    }
    fn size_bytes(&self) -> usize {
        self.store().size_bytes()
    }
    fn awaits(
        &self,
        key: &ObjectKey,
        labels: Option<&BTreeMap<String, String>>,
        written: &Written,
    ) -> bool {
        Informer::awaits(self, key, labels, written)
    }
}

/// Informers are keyed by the Rust type (full, dynamic or metadata-only objects of one kind are
/// different informers) and the group/version/kind (many kinds share `DynamicObject`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct InformerKey {
    type_id: TypeId,
    gvk: String,
}

struct Entry {
    informer: Arc<dyn ErasedInformer>,
    /// Cancels this informer alone (remove_informer).
    stop: CancellationToken,
}

struct State {
    informers: HashMap<InformerKey, Entry>,
    /// Set once the cache is started: informers created later start at once.
    started: Option<CancellationToken>,
    /// Label selectors added to a kind's own (keyed like `by_object`): a sharded controller's
    /// shard selector, set before the kind's informer exists (see [`Cache::restrict_labels`]).
    restrictions: HashMap<String, Vec<String>>,
}

struct Shared {
    client: Client,
    options: CacheOptions,
    state: Mutex<State>,
    tasks: TaskTracker,
    /// Writes of this process's clients the informers have not stored yet.
    written: Arc<WrittenVersions>,
}

/// A shared cache of informers: whatever the number of controllers and readers, one informer
/// per type, with one list and one watch connection per cached namespace (one in all for
/// every namespace, and for cluster-scoped types).
///
/// With several namespaces (controller-runtime's multi-namespace cache, see
/// [`CacheOptions::with_default_namespaces`]) the informer merges them into one store: a list
/// without a namespace returns the objects of every cached namespace, a get or list in a
/// namespace the cache does not hold fails with [`Error::UnknownNamespace`], and sources get
/// the events of every namespace.
///
/// Cheap to clone; clones share the informers.
#[derive(Clone)]
pub struct Cache {
    shared: Arc<Shared>,
}

impl Cache {
    /// A cache reading through `client`. Nothing is listed or watched until informers are
    /// requested and the cache is started.
    pub fn new(client: Client, options: CacheOptions) -> Self {
        Cache {
            shared: Arc::new(Shared {
                client,
                options,
                state: Mutex::new(State {
                    informers: HashMap::new(),
                    started: None,
                    restrictions: HashMap::new(),
                }),
                tasks: TaskTracker::new(),
                written: Arc::default(),
            }),
        }
    }

    /// The client the cache lists and watches with.
    pub fn client(&self) -> &Client {
        &self.shared.client
    }

    /// The cache's options.
    pub(crate) fn options(&self) -> &CacheOptions {
        &self.shared.options
    }

    /// The informer for a static type (`K::DynamicType = ()`), created on first use.
    ///
    /// Fails with [`Error::NotServed`] while the API server does not serve the type (e.g. its
    /// CRD is not installed yet).
    pub async fn get_informer<K>(&self) -> Result<Informer<K>, Error>
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        self.get_informer_with::<K>(&()).await
    }

    /// The informer for any type with its dynamic type: `&()` for static types, an
    /// [`ApiResource`] for `DynamicObject` and `PartialObjectMeta<DynamicObject>`.
    pub async fn get_informer_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
    ) -> Result<Informer<K>, Error> {
        let key = InformerKey {
            type_id: TypeId::of::<K>(),
            gvk: gvk_key::<K>(dt),
        };
        if let Some(found) = self.lookup::<K>(&key) {
            return Ok(found);
        }
        let resource = ApiResource::erase::<K>(dt);
        let namespaced = self.served(&resource).await?;
        let mut settings = self.shared.options.resolve::<K>(dt, namespaced);
        let restrictions = (self.shared.state.lock().restrictions)
            .get(&key.gvk)
            .cloned()
            .unwrap_or_default();
        for scope in &mut settings.scopes {
            let own = scope.label_selector.take();
            let all: Vec<&str> = own
                .iter()
                .chain(&restrictions)
                .map(String::as_str)
                .collect();
            scope.label_selector = (!all.is_empty()).then(|| all.join(","));
        }
        // The type's whole-object transform (its own, else the cache's JSON default), then
        // each scope's metadata transform.
        let object_transform = settings
            .typed_transform
            .as_ref()
            .and_then(|typed| typed.of::<K>())
            .or_else(|| settings.json_transform.clone().map(json_transform::<K>));
        // `strip_managed_fields()` as every scope's metadata transform is the informer's to
        // apply: on the JSON as received, for a compact store without another transform.
        let strip_managed_fields = (settings.scopes.iter()).all(|scope| {
            scope
                .transform
                .as_ref()
                .is_some_and(is_strip_managed_fields)
        });
        if strip_managed_fields {
            for scope in &mut settings.scopes {
                scope.transform = None;
            }
        }
        // One list+watch per cached namespace (or one for all), merged into one store.
        let scopes = settings
            .scopes
            .into_iter()
            .map(|scope| InformerScope {
                list_watch: Box::new(ApiListWatch::<K>::new(
                    self.shared.client.clone(),
                    dt,
                    scope.namespace.as_deref(),
                )),
                namespace: scope.namespace,
                label_selector: scope.label_selector,
                field_selector: scope.field_selector,
                transform: compose(object_transform.clone(), scope.transform),
            })
            .collect();
        let config = InformerConfig {
            resync_period: settings.sync_period,
            storage: if settings.compact {
                Storage::compact().with_read_memo(settings.read_memo)
            } else {
                Storage::Shared
            },
            strip_managed_fields,
            ..InformerConfig::default()
        };
        let informer = Informer::with_scopes(scopes, config);
        informer.settle_writes_in(self.shared.written.clone(), key.gvk.clone());

        let mut state = self.shared.state.lock();
        // Another caller may have created it while we asked the server: keep the first.
        if let Some(entry) = state.informers.get(&key) {
            return Ok(downcast::<K>(entry));
        }
        let stop = match &state.started {
            Some(ctx) => {
                let stop = ctx.child_token();
                self.spawn(&informer, stop.clone());
                stop
            }
            None => CancellationToken::new(),
        };
        state.informers.insert(
            key,
            Entry {
                informer: Arc::new(informer.clone()),
                stop,
            },
        );
        Ok(informer)
    }

    /// Adds `selector` to the label selector of every informer of `K`'s kind created from now
    /// on (ANDed with the cache options' own): a sharded controller's cache holds only its
    /// shard. Fails (returning `false`) when an informer of that kind exists already, which
    /// would hold every object.
    pub(crate) fn restrict_labels<K: Resource>(
        &self,
        dt: &K::DynamicType,
        selector: String,
    ) -> bool {
        let gvk = gvk_key::<K>(dt);
        let mut state = self.shared.state.lock();
        if state.informers.keys().any(|key| key.gvk == gvk) {
            return false;
        }
        state.restrictions.entry(gvk).or_default().push(selector);
        true
    }

    /// The informer for type `K` if one exists; never creates one.
    pub fn peek_informer_with<K: CacheObject>(&self, dt: &K::DynamicType) -> Option<Informer<K>> {
        self.lookup::<K>(&InformerKey {
            type_id: TypeId::of::<K>(),
            gvk: gvk_key::<K>(dt),
        })
    }

    /// Stops and forgets the informer of type `K`; readers and sources holding it keep a stopped
    /// informer. Returns whether there was one.
    pub fn remove_informer_with<K: CacheObject>(&self, dt: &K::DynamicType) -> bool {
        let key = InformerKey {
            type_id: TypeId::of::<K>(),
            gvk: gvk_key::<K>(dt),
        };
        match self.shared.state.lock().informers.remove(&key) {
            Some(entry) => {
                entry.stop.cancel();
                true
            }
            None => false,
        }
    }

    /// Registers with `registry` the gauge of the objects this cache holds,
    /// `controller_runtime_cache_resources{group,version,kind}` (the name controller-runtime's
    /// pull request #3184 gives it, for issue #3182), one series per cached kind (`group` is
    /// empty for the core group). The series are read from the informers' stores at each
    /// scrape, so they follow every change to a store and cost nothing between scrapes; the
    /// objects of one kind cached through several Rust types (e.g. full and metadata-only)
    /// are added up. The registry holds no reference that keeps the cache alive. A
    /// [`Manager`](crate::manager::Manager) registers its cache's.
    ///
    /// Beside it, per kind and with the same labels: `controller_runtime_cache_objects` (the
    /// same count) and `controller_runtime_cache_bytes`, the heap its informers hold: for a
    /// compact store (the default) the JSON kept per object, within a few
    /// percent of what the allocator holds for them; for typed shared storage only the objects'
    /// inline size, a lower bound.
    ///
    /// # Sizing a pod's memory limit
    /// The cache is most of a controller's memory. Read `controller_runtime_cache_bytes` on a
    /// cluster of the size the operator must handle (or multiply the bytes per object it shows
    /// by the objects expected). With compact storage, the process retained 1.25x the gauge's
    /// bytes and peaked at 1.7x during its initial list (100,000 ConfigMaps of 1.5 KB: 163 MB
    /// on the gauge, 203 MB retained, 275 MB peak RSS; see BENCHMARKS.md). The gauge counts
    /// each object's own bytes, but the objects of an initial list are slices of the buffers
    /// the list arrived in, and a buffer is freed only once every object in it has been
    /// replaced or deleted: after heavy churn a kind can hold up to one more list's worth
    /// beyond its gauge. A relist holds its new list beside the cache until it replaces it,
    /// one more of that kind's bytes again. A limit of
    /// `2.5 x sum(controller_runtime_cache_bytes) + max(per-kind bytes) + 50 MB` leaves room
    /// for all of it, plus what the reconcilers themselves allocate.
    pub fn register_metrics(&self, registry: &mut Registry) {
        registry.register_collector(Box::new(CacheResources {
            cache: Arc::downgrade(&self.shared),
        }));
    }

    /// The number of informers.
    pub fn informer_count(&self) -> usize {
        self.shared.state.lock().informers.len()
    }

    /// Starts every informer, and every informer created from now on, until `ctx` is cancelled.
    /// Returns at once; see [`Cache::wait_for_cache_sync`].
    pub fn start(&self, ctx: CancellationToken) {
        let mut state = self.shared.state.lock();
        if state.started.is_some() {
            tracing::warn!("cache already started");
            return;
        }
        for entry in state.informers.values_mut() {
            // Nothing ran under the old token: replace it with one tied to the cache's context.
            entry.stop = ctx.child_token();
            self.shared
                .tasks
                .spawn(entry.informer.run(entry.stop.clone()));
        }
        state.started = Some(ctx);
    }

    /// Waits until every informer created so far has synced, or `ctx` is cancelled. Returns
    /// whether they all synced.
    pub async fn wait_for_cache_sync(&self, ctx: &CancellationToken) -> bool {
        let pending: Vec<_> = {
            let state = self.shared.state.lock();
            state
                .informers
                .values()
                .filter(|e| !e.informer.has_synced())
                .map(|e| e.informer.wait_for_sync())
                .collect()
        };
        tokio::select! {
            _ = futures::future::join_all(pending) => true,
            _ = ctx.cancelled() => false,
        }
    }

    /// Why informers have not synced: the last list or watch failure of each informer that
    /// has one and has not synced yet, by `apiVersion/Kind` (e.g. `v1/ConfigMap`), sorted. What
    /// to report when [`wait_for_cache_sync`](Self::wait_for_cache_sync) gives up, e.g. the API
    /// server's 403 naming a missing RBAC permission.
    pub fn sync_errors(&self) -> Vec<(String, ListWatchError)> {
        let state = self.shared.state.lock();
        let mut errors: Vec<(String, ListWatchError)> = state
            .informers
            .iter()
            .filter(|(_, e)| !e.informer.has_synced())
            .filter_map(|(key, e)| e.informer.last_error().map(|err| (key.gvk.clone(), err)))
            .collect();
        errors.sort_by(|a, b| a.0.cmp(&b.0));
        errors
    }

    /// Waits until every informer's task has ended (after the start context was cancelled).
    pub async fn stopped(&self) {
        self.shared.tasks.close();
        self.shared.tasks.wait().await;
    }

    /// The context the cache was started with.
    pub(crate) fn started(&self) -> Option<CancellationToken> {
        self.shared.state.lock().started.clone()
    }

    /// The table of writes not stored yet.
    pub(crate) fn written(&self) -> &WrittenVersions {
        &self.shared.written
    }

    /// Records that this process wrote `obj` (the API server's answer to a create, update,
    /// patch or apply), so cached reads of it wait until an informer stores it (see
    /// [`ReadYourWrites`](super::ReadYourWrites)). Nothing is recorded when read-your-writes is
    /// off, when no informer caches the kind (a later one lists after the write), or when none
    /// will hold the object or all hold it already.
    pub(crate) fn record_write<K: CacheObject>(&self, dt: &K::DynamicType, obj: &K) {
        if !self.shared.options.read_your_writes.enabled {
            return;
        }
        let meta = obj.meta();
        let Some(written) = Written::object(meta.resource_version.as_deref(), meta.uid.as_deref())
        else {
            return;
        };
        self.record::<K>(dt, &ObjectKey::of(obj), meta.labels.as_ref(), written);
    }

    /// Records that this process deleted the object of `key`; `answer` is the API server's
    /// (the object, deleted or marked for deletion, or a `Status` naming its uid).
    pub(crate) fn record_delete<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        key: &ObjectKey,
        answer: &serde_json::Value,
    ) {
        if !self.shared.options.read_your_writes.enabled {
            return;
        }
        let text = |pointer: &str| answer.pointer(pointer).and_then(serde_json::Value::as_str);
        let written = if text("/kind") == Some("Status") {
            Written::deleted(None, text("/details/uid"))
        } else {
            Written::deleted(text("/metadata/resourceVersion"), text("/metadata/uid"))
        };
        if let Some(written) = written {
            self.record::<K>(dt, key, None, written);
        }
    }

    fn record<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        key: &ObjectKey,
        labels: Option<&BTreeMap<String, String>>,
        written: Written,
    ) {
        let gvk = gvk_key::<K>(dt);
        let informers: Vec<Arc<dyn ErasedInformer>> = {
            let state = self.shared.state.lock();
            state
                .informers
                .iter()
                .filter(|(k, _)| k.gvk == gvk)
                .map(|(_, e)| e.informer.clone())
                .collect()
        };
        if informers.is_empty() {
            return;
        }
        self.shared.written.record(&gvk, key, written, |written| {
            informers.iter().any(|i| i.awaits(key, labels, written))
        });
    }

    fn lookup<K: CacheObject>(&self, key: &InformerKey) -> Option<Informer<K>> {
        self.shared
            .state
            .lock()
            .informers
            .get(key)
            .map(downcast::<K>)
    }

    fn spawn<K: CacheObject>(&self, informer: &Informer<K>, stop: CancellationToken) {
        let informer = informer.clone();
        self.shared
            .tasks
            .spawn(async move { informer.run(stop).await });
    }

    /// The [`ApiResource`] of a group/version/kind, as the API server's discovery names it
    /// (for `DynamicObject` informers when only the kind is known).
    pub async fn resolve_gvk(&self, gvk: &GroupVersionKind) -> Result<ApiResource, Error> {
        let probe = ApiResource::from_gvk(gvk);
        let list = self.discover(&probe).await?;
        list.resources
            .iter()
            .find(|r| r.kind == gvk.kind && !r.name.contains('/'))
            .map(|r| ApiResource::from_gvk_with_plural(gvk, &r.name))
            .ok_or_else(|| not_served(&probe))
    }

    /// Asks the API server's discovery whether it serves `resource`; answers whether the
    /// resource is namespaced.
    async fn served(&self, resource: &ApiResource) -> Result<bool, Error> {
        self.discover(resource)
            .await?
            .resources
            .iter()
            .find(|r| r.name == resource.plural)
            .map(|r| r.namespaced)
            .ok_or_else(|| not_served(resource))
    }

    /// The resource list of `resource`'s group/version.
    async fn discover(&self, resource: &ApiResource) -> Result<APIResourceList, Error> {
        let client = &self.shared.client;
        let listed = if resource.group.is_empty() {
            client.list_core_api_resources(&resource.version).await
        } else {
            client.list_api_group_resources(&resource.api_version).await
        };
        match listed {
            Ok(list) => Ok(list),
            Err(kube_client::Error::Api(status)) if status.code == 404 => Err(not_served(resource)),
            Err(source) => Err(Error::Discovery {
                api_version: resource.api_version.clone(),
                source,
            }),
        }
    }
}

/// `object` then `meta`, as one transform.
fn compose<K: CacheObject>(
    object: Option<TransformFn<K>>,
    meta: Option<MetaTransform>,
) -> Option<TransformFn<K>> {
    match (object, meta) {
        (object, None) => object,
        (None, Some(meta)) => Some(Arc::new(move |mut obj: K| {
            meta(obj.meta_mut());
            obj
        })),
        (Some(object), Some(meta)) => Some(Arc::new(move |obj: K| {
            let mut obj = object(obj);
            meta(obj.meta_mut());
            obj
        })),
    }
}

/// A JSON transform as a transform of `K`: encode, transform, decode. An object whose
/// transformed JSON does not decode stays as it was.
fn json_transform<K: CacheObject>(transform: JsonTransform) -> TransformFn<K> {
    Arc::new(move |obj: K| {
        let mut value = match serde_json::to_value(&obj) {
            Ok(value) => value,
            Err(error) => {
                tracing::warn!(%error, "default JSON transform: the object does not encode; cached as is");
                return obj;
            }
        };
        transform(&mut value);
        match serde_json::from_value::<K>(value) {
            Ok(transformed) => transformed,
            Err(error) => {
                tracing::warn!(%error, "default JSON transform: the result does not decode; cached untransformed");
                obj
            }
        }
    })
}

/// The `controller_runtime_cache_resources` collector (see [`Cache::register_metrics`]).
struct CacheResources {
    cache: Weak<Shared>,
}

impl Debug for CacheResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheResources").finish_non_exhaustive()
    }
}

impl Collector for CacheResources {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(shared) = self.cache.upgrade() else {
            return Ok(());
        };
        let informers: Vec<(String, Arc<dyn ErasedInformer>)> = {
            let state = shared.state.lock();
            (state.informers.iter())
                .map(|(key, entry)| (key.gvk.clone(), entry.informer.clone()))
                .collect()
        };
        // Counted outside the cache's lock: each store takes its own.
        let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for (gvk, informer) in informers {
            let (objects, bytes) = counts.entry(gvk).or_default();
            *objects += informer.len();
            *bytes += informer.size_bytes();
        }
        type Family = (&'static str, &'static str, fn(&(usize, usize)) -> usize);
        let families: [Family; 3] = [
            (
                "controller_runtime_cache_resources",
                "Number of resources cached in the controller-runtime local cache, broken down by group, version, kind",
                |c| c.0,
            ),
            (
                "controller_runtime_cache_objects",
                "Number of objects held by the cache's informers of each group, version, kind",
                |c| c.0,
            ),
            (
                "controller_runtime_cache_bytes",
                "Heap bytes held by the cache's informers of each group, version, kind: the stored encodings and their metadata (for typed shared objects, a lower bound)",
                |c| c.1,
            ),
        ];
        for (name, help, value) in families {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (gvk, count) in &counts {
                let labels = gvk_labels(gvk);
                ConstGauge::new(value(count) as i64).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// The `group`, `version` and `kind` labels of a `group/version/Kind` (`version/Kind` for the
/// core group).
fn gvk_labels(gvk: &str) -> [(&'static str, String); 3] {
    let mut parts = gvk.rsplitn(3, '/');
    let kind = parts.next().unwrap_or_default().to_string();
    let version = parts.next().unwrap_or_default().to_string();
    let group = parts.next().unwrap_or_default().to_string();
    [("group", group), ("version", version), ("kind", kind)]
}

fn not_served(resource: &ApiResource) -> Error {
    Error::NotServed {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
    }
}

fn downcast<K: CacheObject>(entry: &Entry) -> Informer<K> {
    entry
        .informer
        .as_any()
        .downcast_ref::<Informer<K>>()
        .expect("informers are keyed by their Rust type")
        .clone()
}

#[cfg(test)]
mod tests {
    use super::gvk_labels;

    #[test]
    fn gvk_labels_split_group_version_kind() {
        let values = |gvk| gvk_labels(gvk).map(|(_, value)| value);
        assert_eq!(values("v1/ConfigMap"), ["", "v1", "ConfigMap"]);
        assert_eq!(values("apps/v1/Deployment"), ["apps", "v1", "Deployment"]);
    }
}
