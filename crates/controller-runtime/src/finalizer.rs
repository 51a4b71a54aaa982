//! Finalizers: clean up before an object goes away.
//!
//! A finalizer is a name in an object's `metadata.finalizers`. While the list is not empty, a
//! delete only marks the object (`metadata.deletionTimestamp`); it is removed once the last
//! finalizer is. A controller that must clean up something outside the object (a cloud
//! resource, a child in another namespace, a record elsewhere) adds its finalizer before it
//! creates anything, and removes it once the cleanup is done.
//!
//! [`finalizer`] does the bookkeeping and tells your code which of the two cases it is in
//! ([`Event`]):
//!
//! | object | has our finalizer | what happens |
//! | --- | --- | --- |
//! | not being deleted | yes | [`Event::Apply`] |
//! | not being deleted | no | the finalizer is added (a merge patch guarded by the object's `resourceVersion`), then [`Event::Apply`] with the patched object |
//! | being deleted | yes | [`Event::Cleanup`]; when it succeeds, the finalizer is removed from the object as the server has it then (guarded the same way) |
//! | being deleted | no | nothing: `Action::done()` |
//!
//! A failed patch (a `409 Conflict` when the object changed meanwhile) is an error: the
//! controller retries the key with backoff and the next reconcile sees the fresh object.
//!
//! To edit finalizers in memory instead (in the mutate function of
//! [`create_or_update`](crate::controllerutil::create_or_update), say), use
//! [`controllerutil::add_finalizer`], [`controllerutil::remove_finalizer`] and
//! [`controllerutil::contains_finalizer`]; this module builds its patches with the same
//! helpers.
//!
//! ```no_run
//! use std::sync::Arc;
//! use controller_runtime::client::Client;
//! use controller_runtime::finalizer::{self, Event};
//! use controller_runtime::reconcile::{Action, ReconcileContext, ReconcileError};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! async fn reconcile(cm: Arc<ConfigMap>, client: ReconcileContext<Client>) -> Result<Action, ReconcileError> {
//!     let configmaps = client.objects::<ConfigMap>();
//!     finalizer::finalizer(&configmaps, "example.com/cleanup", cm, |event| async move {
//!         match event {
//!             Event::Apply(cm) => { /* create or update what cm asks for */ }
//!             Event::Cleanup(cm) => { /* delete what was made for cm */ }
//!         }
//!         Ok::<_, ReconcileError>(Action::done())
//!     })
//!     .await
//!     .map_err(ReconcileError::from)
//! }
//! ```

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use kube_client::api::{Patch, PatchParams};
use serde_json::json;

use crate::ObjectKey;
use crate::cache::CacheObject;
use crate::client::{self, Objects};
use crate::controllerutil;
use crate::reconcile::{Action, ReconcileError};

/// What [`finalizer`] asks your code to do.
#[derive(Debug)]
pub enum Event<K> {
    /// The object is live and carries the finalizer: make the world match it.
    Apply(Arc<K>),
    /// The object is being deleted and still carries the finalizer: clean up what it owns
    /// outside itself. The finalizer is removed once this returns `Ok`. It may run more than
    /// once for one deletion (a failed removal is retried with the cleanup): make it
    /// idempotent.
    Cleanup(Arc<K>),
}

/// Why [`finalizer`] failed. `E` is your code's error.
#[derive(Debug, thiserror::Error)]
pub enum Error<E> {
    /// Your code failed on [`Event::Apply`].
    #[error("apply failed")]
    ApplyFailed(#[source] E),
    /// Your code failed on [`Event::Cleanup`]; the finalizer stays.
    #[error("cleanup failed")]
    CleanupFailed(#[source] E),
    /// The finalizer could not be added.
    #[error("adding finalizer {finalizer:?} to {object}")]
    AddFinalizer {
        /// The finalizer.
        finalizer: String,
        /// `namespace/name` of the object.
        object: String,
        /// The client's error (a conflict when the object changed meanwhile).
        #[source]
        source: client::Error,
    },
    /// The finalizer could not be removed.
    #[error("removing finalizer {finalizer:?} from {object}")]
    RemoveFinalizer {
        /// The finalizer.
        finalizer: String,
        /// `namespace/name` of the object.
        object: String,
        /// The client's error.
        #[source]
        source: client::Error,
    },
    /// The object has no `metadata.name`.
    #[error("the object has no metadata.name")]
    UnnamedObject,
    /// The finalizer name is empty.
    #[error("a finalizer name must not be empty")]
    EmptyFinalizerName,
}

impl<E> Error<E> {
    /// The bookkeeping errors, without your code's error type; `Err((is_apply, e))` for
    /// [`Error::ApplyFailed`] and [`Error::CleanupFailed`].
    fn split(self) -> Result<Error<Infallible>, (bool, E)> {
        Ok(match self {
            Error::ApplyFailed(e) => return Err((true, e)),
            Error::CleanupFailed(e) => return Err((false, e)),
            Error::AddFinalizer {
                finalizer,
                object,
                source,
            } => Error::AddFinalizer {
                finalizer,
                object,
                source,
            },
            Error::RemoveFinalizer {
                finalizer,
                object,
                source,
            } => Error::RemoveFinalizer {
                finalizer,
                object,
                source,
            },
            Error::UnnamedObject => Error::UnnamedObject,
            Error::EmptyFinalizerName => Error::EmptyFinalizerName,
        })
    }
}

/// For reconcilers: your code's [`ReconcileError`] is returned as it was (so a
/// [`TerminalError`](crate::reconcile::TerminalError) stays terminal); a bookkeeping error is
/// wrapped with its source chain.
impl From<Error<ReconcileError>> for ReconcileError {
    fn from(e: Error<ReconcileError>) -> Self {
        match e.split() {
            Ok(bookkeeping) => ReconcileError::new(bookkeeping),
            Err((apply, e)) => {
                tracing::debug!(phase = if apply { "apply" } else { "cleanup" }, error = %e, "finalizer: reconcile failed");
                e
            }
        }
    }
}

/// Runs `reconcile` under the finalizer `name` for `obj`: adds the finalizer before any work,
/// runs [`Event::Apply`] on live objects and [`Event::Cleanup`] on objects being deleted, then
/// removes the finalizer; see the [module docs](self) for the four cases. `objects` writes
/// the patches (`client.objects::<K>()`).
///
/// Returns what `reconcile` returned, or `Action::done()` when there was nothing to do.
pub async fn finalizer<K, F, Fut, E>(
    objects: &Objects<K>,
    name: &str,
    obj: Arc<K>,
    reconcile: F,
) -> Result<Action, Error<E>>
where
    K: CacheObject,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
{
    if name.is_empty() {
        return Err(Error::EmptyFinalizerName);
    }
    let key = ObjectKey::of(&*obj);
    if key.name.is_empty() {
        return Err(Error::UnnamedObject);
    }
    let meta = obj.meta();
    let has_ours = controllerutil::contains_finalizer(&*obj, name);
    match (meta.deletion_timestamp.is_some(), has_ours) {
        (false, true) => reconcile(Event::Apply(obj))
            .await
            .map_err(Error::ApplyFailed),
        (false, false) => {
            let mut wanted = meta.finalizers.clone().unwrap_or_default();
            controllerutil::add_to(&mut wanted, name);
            let patched = patch(objects, &key, meta.resource_version.clone(), wanted)
                .await
                .map_err(|source| Error::AddFinalizer {
                    finalizer: name.to_string(),
                    object: key.to_string(),
                    source,
                })?;
            tracing::debug!(object = %key, finalizer = name, "finalizer added");
            reconcile(Event::Apply(Arc::new(patched)))
                .await
                .map_err(Error::ApplyFailed)
        }
        (true, true) => {
            let action = reconcile(Event::Cleanup(obj))
                .await
                .map_err(Error::CleanupFailed)?;
            remove(objects, &key, name)
                .await
                .map_err(|source| Error::RemoveFinalizer {
                    finalizer: name.to_string(),
                    object: key.to_string(),
                    source,
                })?;
            Ok(action)
        }
        (true, false) => Ok(Action::done()),
    }
}

/// Removes finalizer `name` from the object as the server has it now: the cleanup may have
/// changed the object, so the state read before it would only conflict. A conflict with a
/// change made meanwhile is an error (the key is retried; the cleanup runs again).
async fn remove<K: CacheObject>(
    objects: &Objects<K>,
    key: &ObjectKey,
    name: &str,
) -> Result<(), client::Error> {
    let fresh = match objects.get_uncached(key).await {
        Ok(fresh) => fresh,
        // Gone already: nothing held it but us.
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e),
    };
    let meta = fresh.meta();
    let mut remaining = meta.finalizers.clone().unwrap_or_default();
    if !controllerutil::remove_from(&mut remaining, name) {
        return Ok(());
    }
    match patch(objects, key, meta.resource_version.clone(), remaining).await {
        Ok(_) => {
            tracing::debug!(object = %key, finalizer = name, "finalizer removed");
            Ok(())
        }
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Sets `metadata.finalizers` with a JSON merge patch; the `resourceVersion` in the patch makes
/// the server refuse it (409) when the object changed since we read it, so no one else's
/// finalizer is lost.
async fn patch<K: CacheObject>(
    objects: &Objects<K>,
    key: &ObjectKey,
    resource_version: Option<String>,
    finalizers: Vec<String>,
) -> Result<K, client::Error> {
    let mut metadata = json!({ "finalizers": finalizers });
    if let Some(rv) = resource_version {
        metadata["resourceVersion"] = json!(rv);
    }
    let body = json!({ "metadata": metadata });
    objects
        .patch(key, &Patch::Merge(body), &PatchParams::default())
        .await
}
