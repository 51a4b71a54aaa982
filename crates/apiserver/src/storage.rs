//! Storage: the in-memory object store with one global resourceVersion counter, snapshots for
//! consistent paginated lists, a window of recent events for watches, and the per-kind rules
//! the real API server applies on writes (defaults, generation, status isolation, finalizers,
//! garbage collection, namespace deletion, CRD registration).
//!
//! The HTTP layer ([`crate::http`]) parses requests into calls on [`Storage`]; everything here is
//! plain Rust, testable without a socket.
//!
//! ## Contract with the HTTP layer
//! - Every method answers either the object(s) as the real server would return them (JSON with
//!   `apiVersion`, `kind`, full `metadata`) or an [`ApiError`].
//! - A failed call changes nothing. A `dry_run` call validates and answers as if it wrote, and
//!   changes nothing.
//! - Namespaced resources take `Some(namespace)` (`None` on list/watch/delete_collection means
//!   all namespaces); cluster-scoped ones take `None`.
//! - `create` answers the created object (the HTTP layer answers 201). `delete` answers the
//!   object while it still exists (finalizers or foreground deletion hold it: it then carries
//!   `metadata.deletionTimestamp`), else the deleted object for custom resources, pods,
//!   services, namespaces and PVCs, or a `Status` `Success` for the other built-in kinds, as
//!   the real server does. The HTTP layer answers 200 in every case, as the real server does
//!   (its 202 is only for the deprecated `orphanDependents=false`).
//!   `delete_collection` answers the `<Kind>List` of what it deleted or marked.
//! - `get`/`update`/`patch` with subresource `scale` speak `autoscaling/v1 Scale`.
//! - A `ResourceInfo` that is no longer served (its CRD was deleted) gets 404 from every call.
//!
//! ## Design
//! - One `parking_lot::Mutex` guards the whole state (`store::State`); no call holds it across
//!   an await (the only async methods, `hooked.rs`'s writes through admission webhooks, take
//!   it for each synchronous step and never across a webhook call). Objects are `Arc<Value>` in persistent `imbl` maps,
//!   so a snapshot of everything is an O(1) clone: a paginated list keeps the snapshot of its
//!   first page and serves every later page from it (the continue token names the snapshot's
//!   resourceVersion and the last key; the last `StorageConfig::list_snapshots` snapshots are
//!   kept, older tokens and tokens from before a compaction get 410 Expired, with a token
//!   for the rest of the list at the latest resourceVersion). `Storage::compactor` compacts
//!   the history on a timer, as kube-apiserver's etcd compactor does.
//! - Every write validates the whole request first and only then commits through
//!   `State::put` / `State::remove`, which bump the global resourceVersion once per stored
//!   change, record the event in the window and `try_send` it into each interested watcher's
//!   channel (a full channel closes that watcher; writers never wait).
//! - Garbage collection (ownerReferences, the `orphan` and `foregroundDeletion` finalizers),
//!   namespace finalization, CRD cleanup and ClusterRole aggregation run **synchronously
//!   inside the write that makes them due** (`gc.rs`, `aggregate.rs`): after each removal
//!   the affected dependents, owners, namespaces and CRDs are re-checked from a work list,
//!   and an object written with ownerReferences to
//!   absent owners is collected right after its commit. The real server does this in
//!   background controllers; doing it in the write path gives the same end states and event
//!   sequences while keeping tests deterministic (no sleeping until a controller catches up).
//! - All versions of a resource share one stored form (`convert.rs`): CRD versions differ in
//!   `apiVersion` only (conversion strategy `None`); core and `events.k8s.io` Events are one
//!   resource, renamed field by field. CRDs of strategy `Webhook` are stored in their storage
//!   version only: `Storage::conversion` (`webhook.rs`) tells the HTTP layer to call the
//!   storage at that version and convert through the webhook itself, outside the lock.
//! - Every write records field ownership in `metadata.managedFields` (`crate::fieldmanager`):
//!   create, update and the three patch types an `Update` entry for `WriteOptions::field_manager`,
//!   server-side apply (`PatchType::Apply`, `apply.rs`) an `Apply` entry, with conflicts, force
//!   and removal of the fields an applier stopped applying.
//!
//! ## Files
//! The verbs: `write.rs` create/update/patch · `apply.rs` server-side apply requests ·
//! `scale.rs` the Scale subresource · `read.rs` get/list/pagination · `delete.rs` delete and
//! delete collection · `watch.rs` starting a watch, bookmarks · `bind.rs` binding a pod to a node ·
//! `evict.rs` evicting a pod under its disruption budget. The verbs write through
//! `commit.rs` (checks and commits shared by every create and update) and `gc.rs` (deletion,
//! GC, namespace termination, CRD cleanup: the synchronous controllers; `aggregate.rs`, the
//! ClusterRole aggregation, is run by `Storage::with` after any write that changed a
//! ClusterRole), which store through `store.rs` (data, resourceVersion, the last change of
//! each resource, indexes, snapshots) and `events.rs` (committed events,
//! window, fan-out to watchers). Admission: `admit.rs` runs the admission chain
//! (`crate::admission::chain`: NamespaceLifecycle, ValidatingAdmissionPolicy, ResourceQuota)
//! from every commit (create, update, delete, delete collection) once the object is final,
//! with the store as its `Lookup`; the quota statuses ResourceQuota charges are stored by
//! `commit.rs` right after the object, in the same locked step; `hooked.rs` is the async write path taken when admission webhooks
//! are configured (dry run, webhooks outside the lock, exact commit with a resourceVersion
//! precondition, retried on conflict). Rules and helpers: `rules.rs` per-kind defaults and status ·
//! `status.rs` what a write to the status subresource may change, per kind ·
//! `select.rs` selectors and field labels · `crd.rs` CRD validation and serving · `convert.rs`
//! versions · `webhook.rs` which requests a CRD's conversion webhook converts · `meta.rs` JSON
//! metadata helpers · `options.rs` the types the verbs share and callers pass in (the verbs'
//! options, patch types, warnings, watch events; a leaf, re-exported here). Validation (metadata, per-kind rules, the 422
//! wording) is the `validation` module's. No two of these modules import each other,
//! directly or through others (`crates/crt/tests/module_cycles.rs` checks it).

// `ApiError` (the contract's error, ~128 bytes) is returned by value everywhere, as the HTTP
// layer consumes it; boxing it would change the shared contract for no measurable gain.
#![allow(clippy::result_large_err)]

mod admit;
mod aggregate;
mod apply;
mod bind;
mod commit;
mod convert;
mod crd;
mod delete;
mod durable;
mod events;
mod evict;
mod gc;
mod handle;
mod hooked;
mod meta;
mod options;
mod read;
mod rules;
mod scale;
mod select;
mod shared;
mod status;
mod store;
mod watch;
mod webhook;
mod write;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use crate::error::ApiError;
use crate::resource::{ResourceInfo, names};
pub use handle::Storage;
pub(crate) use hooked::Write;
pub(crate) use options::apply_patch;
use options::not_served;
pub use options::{
    BodyFindings, DeleteOptions, FieldValidation, Findings, ListOptions, PatchType, StorageConfig,
    Warnings, Watch, WatchEvent, WatchOptions, WriteOptions,
};
pub(crate) use shared::Frame;
pub use shared::{SharedEvent, SharedWatch};
use store::State;
pub(crate) use webhook::Conversion;

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("resource_version", &self.resource_version())
            .finish()
    }
}

impl Default for Storage {
    fn default() -> Self {
        Storage::new(StorageConfig::default())
    }
}

impl Storage {
    /// A new store holding the namespaces `default`, `kube-system`, `kube-public` and
    /// `kube-node-lease`, serving the built-in resources.
    ///
    /// ```
    /// use crt_apiserver::storage::{ListOptions, Storage, StorageConfig};
    /// let store = Storage::new(StorageConfig::default());
    /// let ns = store.resolve("", "v1", "namespaces").unwrap();
    /// let list = store.list(&ns, None, &ListOptions::default()).unwrap();
    /// assert_eq!(list["items"].as_array().unwrap().len(), 4);
    /// ```
    pub fn new(config: StorageConfig) -> Self {
        let mut state = State::new(config);
        write::create_system_namespaces(&mut state);
        Storage {
            state: Arc::new(Mutex::new(state)),
            sync: None,
        }
    }

    /// A durable store kept in the directory `dir` (created when missing): every change is
    /// logged there, and what a previous store left there is restored (objects with their
    /// resourceVersions, uids, timestamps, generations and managed fields; CRDs, and the
    /// resources they serve). A new directory starts as [`Storage::new`] does. A restored store
    /// continues some resourceVersions above the highest restored one, with the history
    /// before compacted (410 Gone for watches from older resourceVersions). Writes made through
    /// the HTTP layer are answered only once they are on disk; see [`Storage::synced`].
    ///
    /// Fails when the directory cannot be created or locked (another store uses it), or its
    /// contents cannot be read back (a corrupt record before the end of the log, or no
    /// readable snapshot where one is needed); a torn last record is dropped.
    pub fn open(config: StorageConfig, dir: &std::path::Path) -> Result<Self, crate::Error> {
        let (log, recovered, start) =
            durable::open(dir).map_err(|message| crate::Error::DataDir {
                path: dir.display().to_string(),
                message,
            })?;
        let mut state = State::new(config);
        let sync = log.sync();
        match recovered {
            None => {
                state.log = Some(log);
                write::create_system_namespaces(&mut state);
            }
            Some(recovered) => {
                state.restore(recovered.objects, start);
                let crds: Vec<Arc<Value>> = state
                    .data
                    .get(gc::CRD_KEY)
                    .map(|m| m.values().cloned().collect())
                    .unwrap_or_default();
                for crd in crds {
                    crd::register(&mut state, &crd);
                }
                state.log = Some(log);
            }
        }
        Ok(Storage {
            state: Arc::new(Mutex::new(state)),
            sync: Some(sync),
        })
    }

    /// Waits until every write committed so far is on disk (immediately when the store is not
    /// durable). The HTTP layer awaits it before answering a write; 500 when the log cannot be
    /// written.
    pub async fn synced(&self) -> Result<(), ApiError> {
        match &self.sync {
            None => Ok(()),
            Some(sync) => sync.wait().await.map_err(ApiError::internal),
        }
    }

    /// Whether this store keeps its data in a directory ([`Storage::open`]).
    pub fn is_durable(&self) -> bool {
        self.sync.is_some()
    }

    /// Creates the `default/kubernetes` Service, its Endpoints and EndpointSlice for a server
    /// listening on `addr`, as kube-apiserver's bootstrap controller does at start, and the
    /// default ServiceCIDR `kubernetes` the Service's address comes from.
    pub fn install_kubernetes_service(&self, addr: std::net::SocketAddr) {
        let mut st = self.state.lock();
        write::create_default_service_cidr(&mut st);
        write::create_kubernetes_service(&mut st, addr);
    }

    /// Runs `f` on the state, first checking that `res` is still served.
    fn with<T>(
        &self,
        res: &ResourceInfo,
        f: impl FnOnce(&mut State, &ResourceInfo) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let mut st = self.state.lock();
        // Shared, not copied.
        let current = st
            .registry
            .resolve(&res.group, &res.version, &res.plural)
            .cloned()
            .ok_or_else(not_served)?;
        let roles_before = st.last_change(aggregate::CLUSTER_ROLES);
        let out = f(&mut st, &current);
        if st.last_change(aggregate::CLUSTER_ROLES) != roles_before {
            // The ClusterRole aggregation controller, run synchronously as the others are.
            aggregate::run(&mut st);
        }
        out
    }

    /// The objects of the resources stored under `keys` (storage keys, `plural.group`), when
    /// any of them changed after resourceVersion `since`: the resourceVersion of their latest
    /// change and, per key, its objects in key order. `None` when nothing changed, so that a
    /// reader keeping something derived from them (the RBAC authorizer's index) asks on every
    /// request at the cost of one lock and a few lookups.
    pub(crate) fn objects_changed_since(
        &self,
        keys: &[&str],
        since: Option<u64>,
    ) -> Option<(u64, Vec<Vec<Arc<Value>>>)> {
        let st = self.state.lock();
        let latest = keys.iter().map(|k| st.last_change(k)).max().unwrap_or(0);
        if since.is_some_and(|s| s >= latest) {
            return None;
        }
        let objects = keys
            .iter()
            .map(|k| {
                st.data
                    .get(*k)
                    .map(|m| m.values().cloned().collect())
                    .unwrap_or_default()
            })
            .collect();
        Some((latest, objects))
    }

    /// The resource served at `group/version/plural`, if any (built-in or from a CRD).
    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> Option<ResourceInfo> {
        self.resolve_inner(group, version, plural)
    }

    /// The resource `gr` names, at `version`.
    pub(crate) fn resolve_gr(
        &self,
        gr: crate::resource::GroupResource<'_>,
        version: &str,
    ) -> Option<ResourceInfo> {
        self.resolve_inner(gr.group, version, gr.resource)
    }

    fn resolve_inner(&self, group: &str, version: &str, plural: &str) -> Option<ResourceInfo> {
        self.state
            .lock()
            .registry
            .resolve(group, version, plural)
            .map(|r| ResourceInfo::clone(r))
    }

    /// [`Storage::resolve`], shared rather than copied (the HTTP layer resolves on every
    /// request).
    pub(crate) fn resolve_shared(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<Arc<ResourceInfo>> {
        self.state
            .lock()
            .registry
            .resolve(group, version, plural)
            .cloned()
    }

    /// Every resource served now, for discovery (built-in ones, then CRD-defined ones).
    pub fn served_resources(&self) -> Vec<ResourceInfo> {
        self.state.lock().registry.all().cloned().collect()
    }

    /// How requests at `res` are converted from and to the stored objects when its CRD
    /// converts through a webhook (`None` otherwise, and for built-in kinds); at the storage
    /// version itself only request bodies of another version need it. The caller converts,
    /// outside the lock: the webhook call is async.
    pub(crate) fn conversion(&self, res: &ResourceInfo) -> Result<Option<Conversion>, ApiError> {
        if !res.custom {
            // Built-in kinds: no lock taken.
            return Ok(None);
        }
        webhook::conversion(&self.state.lock(), res)
    }

    /// Whether any Mutating or ValidatingWebhookConfiguration is stored: writes then go
    /// through the async entries of `hooked.rs` (`write_hooked`, `delete_hooked`).
    pub(crate) fn has_webhooks(&self) -> bool {
        admit::has_webhooks(&self.state.lock())
    }

    /// The current (latest) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.state.lock().rv
    }

    /// How many watches are running (for tests and metrics).
    pub fn watch_count(&self) -> usize {
        self.state.lock().watchers.count()
    }

    /// Creates an object (POST).
    pub fn create(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.with(res, |st, res| write::create(st, res, namespace, body, opts))
    }

    /// Creates an object (POST), as [`Storage::create`], answering the stored object itself
    /// when the resource's version is the stored one (only a converted version is copied): what
    /// the HTTP layer encodes, without copying every object it creates.
    ///
    /// ```
    /// use crt_apiserver::storage::{Storage, WriteOptions};
    /// let store = Storage::default();
    /// let cms = store.resolve("", "v1", "configmaps").unwrap();
    /// let body = serde_json::json!({"metadata": {"name": "a"}, "data": {"k": "v"}});
    /// let created = store.create_shared(&cms, Some("default"), body, &WriteOptions::default()).unwrap();
    /// assert_eq!(created["metadata"]["namespace"], "default");
    /// assert_eq!(created["kind"], "ConfigMap");
    /// ```
    pub fn create_shared(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        if commit::prepares_without_state(res) {
            // Checked and completed before taking the lock, which is held for the commit only.
            let prepared = commit::prepare_create(None, res, namespace, body, opts, None)?;
            return self.with(res, |st, res| {
                commit::commit_create(st, res, prepared, opts)
            });
        }
        self.with(res, |st, res| {
            write::create_shared(st, res, namespace, body, opts)
        })
    }

    /// Reads an object (GET), or its `status` or `scale` subresource.
    pub fn get(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
    ) -> Result<Value, ApiError> {
        self.with(res, |st, res| {
            read::get(st, res, namespace, name, subresource)
        })
    }

    /// [`Storage::get`], answering the stored object itself (not a copy) when the resource's
    /// version is the stored one: what the HTTP layer encodes.
    pub(crate) fn get_shared(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
    ) -> Result<Arc<Value>, ApiError> {
        self.with(res, |st, res| {
            read::get_shared(st, res, namespace, name, subresource)
        })
    }

    /// Lists objects (GET on the collection): a `<Kind>List` with `metadata.resourceVersion` and,
    /// when paginated, `metadata.continue` and `metadata.remainingItemCount`.
    pub fn list(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<Value, ApiError> {
        self.with(res, |st, res| read::list(st, res, namespace, opts))
    }

    /// The current objects of a collection (`namespace` `None`: every namespace) that the
    /// label and field selectors select, in key order, each shared with the store rather than
    /// copied (converted only when stored at another version): for in-process controllers that
    /// scan many objects often. No paging, no resourceVersion: [`Storage::list`] is the API's
    /// LIST.
    pub fn list_shared(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<Vec<Arc<Value>>, ApiError> {
        self.with(res, |st, res| {
            read::list_shared(st, res, namespace, label_selector, field_selector)
        })
    }

    /// The objects of `res` whose ownerReferences name the owner `owner_uid`, in key order,
    /// found through the store's owner index (no scan of the collection) and shared with the
    /// store: what the garbage collector sees as the owner's dependents of that resource.
    pub fn owned_shared(&self, res: &ResourceInfo, owner_uid: &str) -> Vec<Arc<Value>> {
        self.with(res, |st, res| Ok(read::owned_shared(st, res, owner_uid)))
            .unwrap_or_default()
    }

    /// Replaces an object (PUT), or its `status` or `scale` subresource.
    pub fn update(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.with(res, |st, res| match subresource {
            Some("scale") => scale::update(st, res, namespace, name, body, opts, None),
            _ => write::update(st, res, namespace, name, subresource, body, opts),
        })
    }

    /// Patches an object (PATCH), or its `status` or `scale` subresource.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        patch_type: PatchType,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        if res.custom && patch_type == PatchType::Strategic {
            return Err(ApiError::unsupported_media_type(
                "application/strategic-merge-patch+json",
            ));
        }
        self.with(res, |st, res| match (patch_type, subresource) {
            (PatchType::Apply, _) => {
                apply::apply(st, res, namespace, name, subresource, body, opts)
            }
            (_, Some("scale")) => scale::patch(st, res, namespace, name, patch_type, body, opts),
            _ => write::patch(
                st,
                res,
                namespace,
                name,
                subresource,
                patch_type,
                body,
                opts,
            ),
        })
    }

    /// Replaces an object (or its `status`) with `patched`, the result of a patch the caller
    /// applied itself (to an object it converted): an update whose errors are worded as a
    /// patch's.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn update_patched(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        patched: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.update(res, namespace, name, subresource, patched, opts)
            .map_err(write::strict_patch_error)
    }

    /// Deletes an object (DELETE). Answers the object when it still exists afterwards (it has
    /// finalizers, or foreground deletion waits for dependents), else the deleted object as the
    /// real server does.
    pub fn delete(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        self.with(res, |st, res| {
            delete::delete(st, res, namespace, name, opts)
        })
    }

    /// Binds a pod to a node (`POST` of a `Binding` to `bindings`, or to `pods/NAME/binding`
    /// with `pod` the name in the URL): sets the pod's `spec.nodeName`. Answers a `Status` of
    /// `Success` (201); the Binding is not stored.
    pub fn bind(
        &self,
        namespace: &str,
        pod: Option<&str>,
        binding: &Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let pods = self.resolve_gr(names::PODS, "v1").ok_or_else(not_served)?;
        self.with(&pods, |st, pods| {
            bind::bind(st, pods, namespace, pod, binding, opts)
        })
    }

    /// Evicts a pod (`POST` of a `policy/v1 Eviction` to `pods/NAME/eviction`): deletes it
    /// unless its PodDisruptionBudget allows no disruption (429). Answers a `Status` of
    /// `Success` (201).
    pub fn evict(
        &self,
        namespace: &str,
        pod: &str,
        eviction: &Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let pods = self.resolve_gr(names::PODS, "v1").ok_or_else(not_served)?;
        self.with(&pods, |st, pods| {
            evict::evict(st, pods, namespace, pod, eviction, opts)
        })
    }

    /// Deletes every selected object of a collection (DELETE on the collection).
    pub fn delete_collection(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        self.with(res, |st, res| {
            delete::delete_collection(st, res, namespace, list, opts)
        })
    }

    /// Starts a watch. Events arrive on the returned channel as writes commit; with
    /// `allow_bookmarks` a task (on the current tokio runtime) adds the BOOKMARKs.
    pub fn watch(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        opts: &WatchOptions,
    ) -> Result<Watch, ApiError> {
        let state = Arc::downgrade(&self.state);
        match self.with(res, |st, res| {
            watch::start(st, state, res, namespace, opts, false)
        })? {
            shared::Receiver::Owned(events) => Ok(Watch { events }),
            shared::Receiver::Shared(_) => Err(ApiError::internal("watch: wrong channel kind")),
        }
    }

    /// Starts a watch whose events are shared with the other shared watchers of the same
    /// change: the object is copied and (with [`SharedEvent::to_json_line`]) encoded once per
    /// change, not once per watcher. Same semantics as [`Storage::watch`].
    pub fn watch_shared(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        opts: &WatchOptions,
    ) -> Result<SharedWatch, ApiError> {
        let state = Arc::downgrade(&self.state);
        match self.with(res, |st, res| {
            watch::start(st, state, res, namespace, opts, true)
        })? {
            shared::Receiver::Shared(events) => Ok(SharedWatch { events }),
            shared::Receiver::Owned(_) => Err(ApiError::internal("watch: wrong channel kind")),
        }
    }

    /// Fault injection: forgets the watch window, so that resuming from any older
    /// resourceVersion (and continuing an older list) gets 410 Gone.
    pub fn compact(&self) {
        self.state.lock().compact();
    }

    /// Compacts the history up to `rv` (at most the current resourceVersion), as etcd's
    /// compaction does: a watch from an older resourceVersion, a list at one, and the continue
    /// token of an older list get 410 Gone; `rv` and newer still work.
    pub fn compact_to(&self, rv: u64) {
        self.state.lock().compact_to(rv);
    }

    /// Compacts the history every `interval`, as kube-apiserver's etcd compactor does
    /// (`--etcd-compaction-interval`, 5 minutes by default): each tick compacts up to the
    /// resourceVersion the previous tick saw, so a continue token or a watch position stays
    /// good for at least one interval and at most two. The future ends once the storage is
    /// dropped; `Server::start` spawns it.
    pub fn compactor(
        &self,
        interval: std::time::Duration,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let state = Arc::downgrade(&self.state);
        async move {
            let mut previous: Option<u64> = None;
            loop {
                tokio::time::sleep(interval).await;
                let Some(state) = state.upgrade() else {
                    return;
                };
                let mut st = state.lock();
                if let Some(rv) = previous {
                    st.compact_to(rv);
                }
                previous = Some(st.rv);
            }
        }
    }

    /// Fault injection: ends every running watch.
    pub fn close_watches(&self) {
        self.state.lock().watchers.close_all();
    }

    /// Fault injection: while `on`, streaming lists (watches with `sendInitialEvents=true`)
    /// get their initial-events-end bookmark only after the next write to their resource.
    /// Turning it off sends every withheld one.
    pub fn withhold_initial_events_end(&self, on: bool) {
        let mut st = self.state.lock();
        st.withhold_initial_events_end = on;
        if !on {
            let rv = st.rv;
            st.watchers.release_initial_ends(rv);
        }
    }

    /// While `on`, deleting a pod that is bound to a node and has not ended marks it instead
    /// of removing it, as kube-apiserver does: `deletionTimestamp` is now plus the grace period
    /// (the request's `gracePeriodSeconds`, else the pod's `terminationGracePeriodSeconds`),
    /// and `deletionGracePeriodSeconds` says it; a later delete may only shorten it. The node's
    /// kubelet then deletes the pod with a grace period of 0. A simulated cluster, whose
    /// kubelets do that, turns it on; off (the default) a pod goes at once, as nothing would
    /// ever finish its deletion.
    pub fn set_graceful_pod_deletion(&self, on: bool) {
        self.state.lock().graceful_pods = on;
    }

    /// Fault injection: while `on`, committed events do not reach the running watches (a
    /// watch behind, as a slow watch cache or network makes one); turning it off hands them
    /// the held events in order. Watches started meanwhile get the events committed before
    /// their start from the history, and the held ones again when released.
    pub fn hold_watch_events(&self, on: bool) {
        let mut st = self.state.lock();
        if on {
            st.held_events.get_or_insert_default();
        } else if let Some(held) = st.held_events.take() {
            for event in held {
                st.watchers.dispatch(&event);
            }
        }
    }

    /// Writes a snapshot of a durable store now, and waits until it is written.
    #[cfg(test)]
    pub(crate) fn snapshot_now(&self) {
        self.state.lock().start_snapshot();
        while self
            .state
            .lock()
            .log
            .as_ref()
            .is_some_and(|l| l.snapshot_running())
        {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// A full copy of every object and the resourceVersion (tests compare before and after).
    #[cfg(test)]
    pub(crate) fn dump(&self) -> (u64, Vec<(String, store::ObjKey, Value)>) {
        self.state.lock().dump()
    }
}
