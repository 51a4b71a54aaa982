//! The shard's side of the handover: a reconcile of an object marked for draining lets go of
//! it instead of reconciling it, and a replica whose Lease is stale reconciles nothing.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube_core::params::{Patch, PatchParams};

use super::labels::{drain_label, shard_label};
use super::ring::Membership;
use crate::ObjectKey;
use crate::cache::CacheObject;
use crate::reconcile::{Action, ReconcileContext, ReconcileError};

/// Wraps a typed reconcile function: it runs only for objects of this replica's shard, not
/// being drained, while the replica's Lease is fresh. A draining object is acknowledged (its
/// shard and drain labels removed) and not reconciled; the workqueue runs this after any
/// reconcile of the object in flight, so the object is released only once this replica has
/// stopped working on it.
pub(crate) fn guard<K, C, F, Fut>(
    shard: Arc<Membership>,
    kube: kube_client::Client,
    dt: K::DynamicType,
    f: F,
) -> impl Fn(Arc<K>, ReconcileContext<C>) -> BoxFuture<'static, Result<Action, ReconcileError>>
+ Send
+ Sync
+ 'static
where
    K: CacheObject,
    C: Send + Sync + 'static,
    F: Fn(Arc<K>, ReconcileContext<C>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    let (shard_key, drain_key) = (
        shard_label(shard.controller()),
        drain_label(shard.controller()),
    );
    move |obj: Arc<K>, ctx: ReconcileContext<C>| {
        let labels = obj.meta().labels.as_ref();
        let mine =
            labels.and_then(|l| l.get(&shard_key)).map(String::as_str) == Some(shard.replica());
        let draining = labels.is_some_and(|l| l.contains_key(&drain_key));
        if !mine {
            // Not this shard's (a cache not restricted to it): another replica reconciles it.
            return futures::future::ready(Ok(Action::done())).boxed();
        }
        if draining {
            let key = ObjectKey::of(obj.as_ref());
            let (kube, dt) = (kube.clone(), dt.clone());
            // Conditional on the version read: a stale cache (the object already released and
            // assigned elsewhere) must not take the new shard's label away. A conflict means a
            // newer version is on its way to the cache, whose event brings the object back here.
            let patch = serde_json::json!({
                "metadata": {
                    "resourceVersion": obj.meta().resource_version,
                    "labels": { shard_key.clone(): null, drain_key.clone(): null },
                }
            });
            tracing::debug!(controller = %shard.controller(), replica = %shard.replica(), %key, "releasing a drained object");
            return async move {
                match patch_object::<K>(&kube, &dt, &key, &patch).await {
                    Ok(()) => Ok(Action::done()),
                    Err(kube_client::Error::Api(status))
                        if status.code == 404 || status.code == 409 =>
                    {
                        Ok(Action::done())
                    }
                    Err(e) => Err(ReconcileError::new(e)),
                }
            }
            .boxed();
        }
        if !shard.fresh() {
            // Fenced: the ring may already count this replica dead; try again once renewed.
            let later = shard.options().renew_period;
            return futures::future::ready(Ok(Action::requeue_after(later))).boxed();
        }
        f(obj, ctx).boxed()
    }
}

/// A merge patch of the object `key` of `K`, straight to the API server (not through the
/// crate's client, whose writes are the reconciler's).
pub(crate) async fn patch_object<K: CacheObject>(
    kube: &kube_client::Client,
    dt: &K::DynamicType,
    key: &ObjectKey,
    patch: &serde_json::Value,
) -> Result<(), kube_client::Error> {
    let request = kube_core::Request::new(K::url_path(dt, key.namespace.as_deref()))
        .patch(&key.name, &PatchParams::default(), &Patch::Merge(patch))
        .map_err(kube_client::Error::BuildRequest)?;
    let _: serde_json::Value = kube.request(request).await?;
    Ok(())
}
