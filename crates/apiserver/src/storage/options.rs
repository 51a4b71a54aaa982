//! The types the verbs share and the HTTP layer passes in: the store's tunables
//! ([`StorageConfig`]), the options of each verb, the patch types, the warnings and body
//! findings a write collects, and what a watch yields. A leaf: it imports none of the other
//! storage modules, which import these from here ([`super`] re-exports them for callers
//! outside storage).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::patch::{MergeKeys, PatchKind};
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
    /// How many snapshots are kept for paginated lists; a continue token whose snapshot is
    /// gone gets 410 Expired.
    pub list_snapshots: usize,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            watch_window: 10_000,
            watcher_buffer: 10_000,
            bookmark_interval: Duration::from_secs(60),
            list_snapshots: 64,
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

/// Applies a patch document to `base` (`crate::patch`); strategic merge patches use the merge
/// keys of the built-in kind.
pub(crate) fn apply_patch(
    res: &ResourceInfo,
    base: &Value,
    patch_type: PatchType,
    body: &[u8],
) -> Result<Value, ApiError> {
    let keys = (!res.custom).then(|| MergeKeys::builtin(&res.group, &res.kind));
    let kind = match patch_type {
        PatchType::Merge => PatchKind::Merge,
        // Server-side apply is not a patch document: `apply` handles it.
        PatchType::Apply => return Err(ApiError::internal("apply is not a patch document")),
        PatchType::Json => PatchKind::Json,
        PatchType::Strategic => PatchKind::StrategicMerge,
    };
    Ok(crate::patch::apply_patch(kind, base, body, keys.as_ref())?)
}

/// Options of create, update and patch.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and answer, store nothing.
    pub dry_run: bool,
    /// `fieldManager`: the manager whose `managedFields` entry the write updates (required by
    /// server-side apply). `None` (direct storage use; the HTTP layer always names one, from
    /// the user agent when the request does not) records nothing and keeps the object's
    /// managed fields, or the ones the body carries.
    pub field_manager: Option<String>,
    /// `force` (server-side apply).
    pub force: bool,
    /// `fieldValidation`: what an object's unknown fields do to the write.
    pub field_validation: FieldValidation,
    /// Where [`FieldValidation::Warn`] reports the fields it dropped (the HTTP layer sends
    /// each as a `Warning` header). Clones of these options share it.
    pub warnings: Warnings,
    /// Who writes: the `userInfo` admission (policies' `request.userInfo`, webhooks'
    /// AdmissionReview) sees. `None` is the server's admin ([`crate::user::UserInfo::admin`]).
    pub user: Option<Arc<crate::user::UserInfo>>,
    /// What the request's body itself breaks of strict decoding (repeated fields, unknown
    /// fields of JSON patch operations), found while the HTTP layer parsed it; reported under
    /// `fieldValidation` together with the object's unknown fields. Clones share it.
    pub body_findings: BodyFindings,
}

/// The strict-decoding findings of a request body, reported once per write by the check of
/// the object's unknown fields, in the order upstream's decoder reports them (see
/// [`BodyFindings::set`]).
#[derive(Clone, Debug, Default)]
pub struct BodyFindings(Arc<Mutex<Option<Findings>>>);

/// See [`BodyFindings`].
#[derive(Clone, Debug, Default)]
pub struct Findings {
    /// Errors about a patch document (`duplicate field "spec.a"` of a merge patch,
    /// `json patch unknown field "[0].foo"`): reported before anything about the patched
    /// object.
    pub patch: Vec<String>,
    /// Fields an object body repeats: each field's path with the position of its repetition
    /// among the body's fields in document order.
    pub duplicates: Vec<(usize, String)>,
    /// The position of each field path's first occurrence in the object body, to interleave
    /// the duplicates with the unknown fields in document order (as a built-in kind's decoder
    /// meets them).
    pub positions: std::collections::HashMap<String, usize>,
}

impl BodyFindings {
    /// Records a body's findings (replacing earlier ones).
    pub fn set(&self, findings: Findings) {
        *self.0.lock() = Some(findings);
    }

    /// Takes the findings, so that a write checked twice reports them once.
    pub(crate) fn take(&self) -> Option<Findings> {
        self.0.lock().take()
    }
}

/// The `fieldValidation` directive of a write: what unknown fields (those a custom
/// resource's structural schema prunes, or a built-in kind's Go types do not declare) do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop unknown fields and warn about each (the real server's default when the request
    /// names no directive).
    #[default]
    Warn,
    /// Refuse the write with a 400 naming the unknown fields (kubectl's default).
    Strict,
}

impl FieldValidation {
    /// Parses the query value: `Ignore`, `Warn`, `Strict`, or empty (`Warn`); `None` for any
    /// other value, which the real server refuses.
    ///
    /// ```
    /// use crt_apiserver::storage::FieldValidation;
    /// assert_eq!(FieldValidation::parse("Strict"), Some(FieldValidation::Strict));
    /// assert_eq!(FieldValidation::parse(""), Some(FieldValidation::Warn));
    /// assert_eq!(FieldValidation::parse("strict"), None);
    /// ```
    pub fn parse(v: &str) -> Option<Self> {
        match v {
            "Ignore" => Some(Self::Ignore),
            "" | "Warn" => Some(Self::Warn),
            "Strict" => Some(Self::Strict),
            _ => None,
        }
    }
}

/// Warnings a write collects for its response (`Warning: 299 - "..."` headers).
#[derive(Clone, Debug, Default)]
pub struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    /// Adds a warning.
    pub fn push(&self, warning: String) {
        self.0.lock().push(warning);
    }

    /// Takes the warnings collected so far.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock())
    }
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
    /// Where a delete's warnings go (an admission policy's `Warn`; the HTTP layer sends each
    /// as a `Warning` header). Clones of these options share it.
    pub warnings: Warnings,
    /// Who deletes, as admission sees it; `None` is the server's admin.
    pub user: Option<Arc<crate::user::UserInfo>>,
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

/// The 404 for a resource that is not served (any more).
pub(crate) fn not_served() -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}
