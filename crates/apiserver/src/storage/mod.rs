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

use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// Tunables of the store.
#[derive(Clone, Debug)]
pub struct StorageConfig {
    /// How many recent events are kept for watches to resume from; older resourceVersions get
    /// 410 Gone.
    pub watch_window: usize,
    /// How many events may wait for one watcher before it is closed as too slow.
    pub watcher_buffer: usize,
    /// How often a watch that allows bookmarks gets a BOOKMARK.
    pub bookmark_interval: Duration,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            watch_window: 10_000,
            watcher_buffer: 10_000,
            bookmark_interval: Duration::from_secs(60),
        }
    }
}

/// The patch media types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/strategic-merge-patch+json` (built-in kinds only; 415 for custom resources).
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

/// Options of create, update and patch.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and answer, store nothing.
    pub dry_run: bool,
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `force` (server-side apply).
    pub force: bool,
}

/// Options of list (and of delete_collection's selection).
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `limit`: page size; `None` or 0 for everything.
    pub limit: Option<usize>,
    /// `continue`: the token of the previous page.
    pub continue_token: Option<String>,
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch` (`NotOlderThan` or `Exact`).
    pub resource_version_match: Option<String>,
}

/// Options of watch.
#[derive(Clone, Debug, Default)]
pub struct WatchOptions {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `resourceVersion`: events after it; unset or `"0"`: the current state first, as ADDED.
    pub resource_version: Option<String>,
    /// `sendInitialEvents=true`: the current state as ADDED, then a BOOKMARK annotated
    /// `k8s.io/initial-events-end: "true"`.
    pub send_initial_events: bool,
    /// `allowWatchBookmarks=true`.
    pub allow_bookmarks: bool,
}

/// Options of delete and delete_collection.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// `propagationPolicy`: `Background` (default for most kinds), `Foreground` or `Orphan`.
    pub propagation_policy: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_resource_version: Option<String>,
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
}

/// One event on a watch, as sent on the wire (`{"type": ..., "object": ...}`).
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent {
    /// An object was added (or is part of the initial state).
    Added(Value),
    /// An object changed.
    Modified(Value),
    /// An object was deleted, or left the watch's selection.
    Deleted(Value),
    /// A bookmark: an object with only `apiVersion`, `kind` and `metadata.resourceVersion`
    /// (and annotations for the initial-events-end bookmark).
    Bookmark(Value),
    /// An error (a `Status` object), after which the watch ends.
    Error(Value),
}

/// A running watch: events arrive on `events`; the stream ends (the sender is dropped) when the
/// watch is closed by the server (slow watcher, fault injection, resource removed).
#[derive(Debug)]
pub struct Watch {
    /// The events.
    pub events: mpsc::Receiver<WatchEvent>,
}

/// The object store. Cheap to clone; clones share the same data.
#[derive(Clone)]
pub struct Storage {}

impl Storage {
    /// A new store holding the namespaces `default`, `kube-system`, `kube-public` and
    /// `kube-node-lease`, serving the built-in resources.
    pub fn new(_config: StorageConfig) -> Self {
        todo!()
    }

    /// The resource served at `group/version/plural`, if any (built-in or from a CRD).
    pub fn resolve(&self, _group: &str, _version: &str, _plural: &str) -> Option<ResourceInfo> {
        todo!()
    }

    /// Every resource served now, for discovery (built-in ones, then CRD-defined ones).
    pub fn served_resources(&self) -> Vec<ResourceInfo> {
        todo!()
    }

    /// The current (latest) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        todo!()
    }

    /// Creates an object (POST).
    pub fn create(
        &self,
        _res: &ResourceInfo,
        _namespace: Option<&str>,
        _body: Value,
        _opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        todo!()
    }

    /// Reads an object (GET), or its `status` or `scale` subresource.
    pub fn get(
        &self,
        _res: &ResourceInfo,
        _namespace: Option<&str>,
        _name: &str,
        _subresource: Option<&str>,
    ) -> Result<Value, ApiError> {
        todo!()
    }

    /// Lists objects (GET on the collection): a `<Kind>List` with `metadata.resourceVersion` and,
    /// when paginated, `metadata.continue` and `metadata.remainingItemCount`.
    pub fn list(
        &self,
        _res: &ResourceInfo,
        _namespace: Option<&str>,
        _opts: &ListOptions,
    ) -> Result<Value, ApiError> {
        todo!()
    }

    /// Replaces an object (PUT), or its `status` or `scale` subresource.
    pub fn update(
        &self,
        _res: &ResourceInfo,
        _namespace: Option<&str>,
        _name: &str,
        _subresource: Option<&str>,
        _body: Value,
        _opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        todo!()
    }

    /// Patches an object (PATCH), or its `status` or `scale` subresource.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &self,
        _res: &ResourceInfo,
        _namespace: Option<&str>,
        _name: &str,
        _subresource: Option<&str>,
        _patch_type: PatchType,
        _body: &[u8],
        _opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        todo!()
    }

    /// Deletes an object (DELETE). Answers the object when it still exists afterwards (it has
    /// finalizers, or foreground deletion waits for dependents), else the deleted object as the
    /// real server does.
    pub fn delete(
        &self,
        _res: &ResourceInfo,
        _namespace: Option<&str>,
        _name: &str,
        _opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        todo!()
    }

    /// Deletes every selected object of a collection (DELETE on the collection).
    pub fn delete_collection(
        &self,
        _res: &ResourceInfo,
        _namespace: Option<&str>,
        _list: &ListOptions,
        _opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        todo!()
    }

    /// Starts a watch.
    pub fn watch(
        &self,
        _res: &ResourceInfo,
        _namespace: Option<&str>,
        _opts: &WatchOptions,
    ) -> Result<Watch, ApiError> {
        todo!()
    }

    /// Fault injection: forgets the watch window, so that resuming from any older
    /// resourceVersion (and continuing an older list) gets 410 Gone.
    pub fn compact(&self) {
        todo!()
    }

    /// Fault injection: ends every running watch.
    pub fn close_watches(&self) {
        todo!()
    }
}
