//! Create or update an object around a mutate function: [`create_or_update`] and
//! [`create_or_patch`], answering with an [`OperationResult`].

use std::fmt;
use std::sync::Arc;

use kube_client::api::{Patch, PatchParams};
use serde_json::{Value, json};

use super::semantic::{merge_diff, semantic_eq};
use crate::ObjectKey;
use crate::cache::CacheObject;
use crate::client::{self, Objects};

/// What a mutate function may fail with: any error, boxed (`?` converts yours).
pub type MutateError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What [`create_or_update`] or [`create_or_patch`] did. It completes the sentence "ConfigMap
/// default/settings has been ..." and displays as Go's `OperationResult` strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperationResult {
    /// Nothing was written: the object already was as the mutate function wants it
    /// (`unchanged`, Go's `OperationResultNone`).
    Unchanged,
    /// The object did not exist and was created (`created`).
    Created,
    /// The object was updated or patched; its status, if any, was not (`updated`).
    Updated,
    /// [`create_or_patch`]: the object and its status were patched (`updatedStatus`).
    UpdatedStatus,
    /// [`create_or_patch`]: only the status was patched (`updatedStatusOnly`).
    UpdatedStatusOnly,
}

impl OperationResult {
    /// Go's string for the result: `unchanged`, `created`, `updated`, `updatedStatus`,
    /// `updatedStatusOnly`.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationResult::Unchanged => "unchanged",
            OperationResult::Created => "created",
            OperationResult::Updated => "updated",
            OperationResult::UpdatedStatus => "updatedStatus",
            OperationResult::UpdatedStatusOnly => "updatedStatusOnly",
        }
    }
}

impl fmt::Display for OperationResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why [`create_or_update`] or [`create_or_patch`] failed. Each variant names the object and
/// the step; the cause is its [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The object passed in has no `metadata.name`.
    #[error("the object has no metadata.name")]
    MissingName,
    /// Reading the object from the cache failed (other than "not found", which means create).
    #[error("reading {object} from the cache")]
    Get {
        /// The object's key.
        object: ObjectKey,
        /// The client's error.
        #[source]
        source: client::Error,
    },
    /// The mutate function failed; nothing was written.
    #[error("mutating {object}")]
    Mutate {
        /// The object's key.
        object: ObjectKey,
        /// The mutate function's error.
        #[source]
        source: MutateError,
    },
    /// The mutate function changed the object's name or namespace; nothing was written.
    #[error(
        "the mutate function cannot mutate object name and/or object namespace ({before} became {after})"
    )]
    KeyChanged {
        /// The key before.
        before: ObjectKey,
        /// The key the mutate function left.
        after: ObjectKey,
    },
    /// The object could not be serialized to compare it.
    #[error("serializing {object}")]
    Serialize {
        /// The object's key.
        object: ObjectKey,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// Creating the object failed (`AlreadyExists` when the cache had not seen it yet).
    #[error("creating {object}")]
    Create {
        /// The object's key.
        object: ObjectKey,
        /// The client's error.
        #[source]
        source: client::Error,
    },
    /// Updating the object failed (`Conflict` when the cache was behind the server).
    #[error("updating {object}")]
    Update {
        /// The object's key.
        object: ObjectKey,
        /// The client's error.
        #[source]
        source: client::Error,
    },
    /// Patching the object failed.
    #[error("patching {object}")]
    Patch {
        /// The object's key.
        object: ObjectKey,
        /// The client's error.
        #[source]
        source: client::Error,
    },
    /// Patching the object's status failed. The object itself may have been patched already.
    #[error("patching the status of {object}")]
    PatchStatus {
        /// The object's key.
        object: ObjectKey,
        /// The client's error.
        #[source]
        source: client::Error,
    },
}

impl Error {
    /// The client's error, when a read or a write failed.
    pub fn client_error(&self) -> Option<&client::Error> {
        match self {
            Error::Get { source, .. }
            | Error::Create { source, .. }
            | Error::Update { source, .. }
            | Error::Patch { source, .. }
            | Error::PatchStatus { source, .. } => Some(source),
            _ => None,
        }
    }

    /// Whether a write lost a race (a `Conflict`, or `AlreadyExists` on create): the cache was
    /// behind the server. The next reconcile, on a fresher cache, will do.
    pub fn is_conflict(&self) -> bool {
        self.client_error()
            .is_some_and(|e| e.is_conflict() || e.is_already_exists())
    }
}

/// Creates `obj` or updates it towards what `mutate` wants (Go's
/// `controllerutil.CreateOrUpdate`); writes nothing when it already is.
///
/// `obj` names the object (`metadata.name`, and `metadata.namespace` when namespaced). It is
/// read **from the cache**:
///
/// - not there: `mutate` runs on `obj` as given, then it is created: [`OperationResult::Created`];
/// - there: `obj` is replaced by the cached object, `mutate` runs on it, and the result is
///   compared with the cached object. Equal: nothing is written,
///   [`OperationResult::Unchanged`]. Different: the whole object is updated (guarded by its
///   `resourceVersion`), [`OperationResult::Updated`].
///
/// Either way `mutate` runs once; it must set the fields it manages (and only those), and
/// must not change the name or namespace ([`Error::KeyChanged`]). On success `obj` holds the
/// object as written by the server (or as cached, when unchanged).
///
/// The comparison is semantic: absent, `null`, empty lists and empty maps are equal. But a
/// field the server defaults (a Deployment's `strategy`) that `mutate` clears is a
/// difference on every call: set such fields, never clear them. Status changes are discarded
/// by the server (the status is written through its subresource): use [`create_or_patch`].
///
/// A cache that lags behind a write makes the next call fail with a conflict
/// ([`Error::is_conflict`]); the controller retries, on a fresher cache.
pub async fn create_or_update<K, F>(
    objects: &Objects<K>,
    obj: &mut K,
    mutate: F,
) -> Result<OperationResult, Error>
where
    K: CacheObject,
    F: FnOnce(&mut K) -> Result<(), MutateError>,
{
    let key = ObjectKey::of(obj);
    let Some(existing) = read(objects, &key, obj, mutate).await? else {
        return Ok(OperationResult::Created);
    };
    if semantic_eq(&to_value(&*existing, &key)?, &to_value(obj, &key)?) {
        return Ok(OperationResult::Unchanged);
    }
    *obj = objects.update(obj).await.map_err(|source| Error::Update {
        object: key,
        source,
    })?;
    Ok(OperationResult::Updated)
}

/// Creates `obj` or patches it towards what `mutate` wants (Go's
/// `controllerutil.CreateOrPatch`): like [`create_or_update`], but an existing object gets
/// a JSON merge patch of what `mutate` changed, without the status, then, if `mutate`
/// changed the status, a merge patch of it to the `status` subresource. Fields `mutate` left
/// alone are not sent, so other writers' changes the cache has not seen yet survive; no
/// `resourceVersion` is sent (last writer wins, field by field).
///
/// Results: [`Created`](OperationResult::Created) (the status is not written on create:
/// requeue to set it), [`Unchanged`](OperationResult::Unchanged) (nothing written),
/// [`Updated`](OperationResult::Updated), [`UpdatedStatus`](OperationResult::UpdatedStatus)
/// or [`UpdatedStatusOnly`](OperationResult::UpdatedStatusOnly). A failed status patch after
/// a successful object patch is [`Error::PatchStatus`]; the object patch stays.
pub async fn create_or_patch<K, F>(
    objects: &Objects<K>,
    obj: &mut K,
    mutate: F,
) -> Result<OperationResult, Error>
where
    K: CacheObject,
    F: FnOnce(&mut K) -> Result<(), MutateError>,
{
    let key = ObjectKey::of(obj);
    let Some(existing) = read(objects, &key, obj, mutate).await? else {
        return Ok(OperationResult::Created);
    };
    let (before, before_status) = split_status(to_value(&*existing, &key)?);
    let (after, after_status) = split_status(to_value(obj, &key)?);
    let mut result = OperationResult::Unchanged;
    if let Some(patch) = merge_diff(&before, &after) {
        *obj = objects
            .patch(&key, &Patch::Merge(patch), &PatchParams::default())
            .await
            .map_err(|source| Error::Patch {
                object: key.clone(),
                source,
            })?;
        result = OperationResult::Updated;
    }
    if let Some(patch) = merge_diff(&before_status, &after_status) {
        let patch = Patch::Merge(json!({ "status": patch }));
        *obj = objects
            .patch_status(&key, &patch, &PatchParams::default())
            .await
            .map_err(|source| Error::PatchStatus {
                object: key.clone(),
                source,
            })?;
        result = match result {
            OperationResult::Updated => OperationResult::UpdatedStatus,
            _ => OperationResult::UpdatedStatusOnly,
        };
    }
    Ok(result)
}

/// The shared first half: reads `key` from the cache. Absent: runs `mutate` on `obj` and
/// creates it, `None`. Present: replaces `obj` with a copy of it, runs `mutate`, and returns
/// the cached object, to compare with.
async fn read<K, F>(
    objects: &Objects<K>,
    key: &ObjectKey,
    obj: &mut K,
    mutate: F,
) -> Result<Option<Arc<K>>, Error>
where
    K: CacheObject,
    F: FnOnce(&mut K) -> Result<(), MutateError>,
{
    if key.name.is_empty() {
        return Err(Error::MissingName);
    }
    match objects.get(key).await {
        Ok(existing) => {
            *obj = (*existing).clone();
            run(mutate, key, obj)?;
            Ok(Some(existing))
        }
        Err(e) if e.is_not_found() => {
            run(mutate, key, obj)?;
            *obj = objects.create(obj).await.map_err(|source| Error::Create {
                object: key.clone(),
                source,
            })?;
            Ok(None)
        }
        Err(source) => Err(Error::Get {
            object: key.clone(),
            source,
        }),
    }
}

/// Runs `mutate` and checks it left the key alone (Go's `mutate`).
#[expect(
    clippy::result_large_err,
    reason = "the error the public functions return; they are async, and clippy does not ask there"
)]
fn run<K, F>(mutate: F, key: &ObjectKey, obj: &mut K) -> Result<(), Error>
where
    K: CacheObject,
    F: FnOnce(&mut K) -> Result<(), MutateError>,
{
    mutate(obj).map_err(|source| Error::Mutate {
        object: key.clone(),
        source,
    })?;
    let after = ObjectKey::of(obj);
    if &after != key {
        return Err(Error::KeyChanged {
            before: key.clone(),
            after,
        });
    }
    Ok(())
}

#[expect(
    clippy::result_large_err,
    reason = "the error the public functions return; they are async, and clippy does not ask there"
)]
fn to_value<K: CacheObject>(obj: &K, key: &ObjectKey) -> Result<Value, Error> {
    serde_json::to_value(obj).map_err(|source| Error::Serialize {
        object: key.clone(),
        source,
    })
}

/// The object without its `status`, and the status (`null` when there is none).
fn split_status(mut obj: Value) -> (Value, Value) {
    let status = obj
        .as_object_mut()
        .and_then(|o| o.remove("status"))
        .unwrap_or(Value::Null);
    (obj, status)
}
