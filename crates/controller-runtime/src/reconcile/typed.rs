//! [`ObjectReconciler`]: a [`Reconciler`] that reads the request's object from the cache and
//! hands it over typed (controller-runtime's `reconcile.AsReconciler` / `ObjectReconciler`).

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::reconciler::{Action, ReconcileContext, ReconcileError, ReconcileResult, Reconciler};
use crate::Request;
use crate::cache::CacheObject;
use crate::client::Client;

/// A reconciler over objects of `K`: for each request it reads the object from the cache
/// through the client and calls `f(object, ctx)`, `ctx` being the reconcile's
/// [`ReconcileContext`] carrying the shared data. A request whose object is gone (deleted, and
/// its deletion seen by the cache) is done at once without calling `f`: there is nothing left
/// to reconcile, and objects it owned are cleaned up by the garbage collector or a finalizer.
/// Made by [`for_object`].
pub struct ObjectReconciler<K: CacheObject, C, F> {
    client: Client,
    dt: K::DynamicType,
    data: Arc<C>,
    f: F,
}

/// A typed reconciler for `K`; see [`ObjectReconciler`]. `dt` is `K`'s dynamic type: `()` for
/// the static types of k8s-openapi and `#[derive(CustomResource)]`, an `ApiResource` for
/// `DynamicObject`. `data` is shared by every call, reached through the context (put your
/// clients, settings and metrics in it).
///
/// ```no_run
/// use std::sync::Arc;
/// use controller_runtime::client::Client;
/// use controller_runtime::reconcile::{self, Action, ReconcileContext, ReconcileError};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// struct Data { client: Client }
///
/// async fn reconcile(cm: Arc<ConfigMap>, ctx: ReconcileContext<Data>) -> Result<Action, ReconcileError> {
///     let _client = &ctx.client; // the context derefs to the data
///     println!("{:?} has {} keys", cm.metadata.name, cm.data.as_ref().map_or(0, |d| d.len()));
///     Ok(Action::done())
/// }
///
/// # fn f(client: Client) {
/// let reconciler = reconcile::for_object(&client, (), Arc::new(Data { client: client.clone() }), reconcile);
/// # drop(reconciler); }
/// ```
pub fn for_object<K, C, F, Fut>(
    client: &Client,
    dt: K::DynamicType,
    data: Arc<C>,
    f: F,
) -> ObjectReconciler<K, C, F>
where
    K: CacheObject,
    C: Send + Sync + 'static,
    F: Fn(Arc<K>, ReconcileContext<C>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    ObjectReconciler {
        client: client.clone(),
        dt,
        data,
        f,
    }
}

impl<K, C, F, Fut> Reconciler for ObjectReconciler<K, C, F>
where
    K: CacheObject,
    C: Send + Sync + 'static,
    F: Fn(Arc<K>, ReconcileContext<C>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
{
    fn reconcile(&self, req: Request, ctx: ReconcileContext) -> BoxFuture<'_, ReconcileResult> {
        Box::pin(async move {
            let key = req;
            let objects = self.client.objects_with::<K>(self.dt.clone());
            match objects.get(&key).await {
                Ok(obj) => (self.f)(obj, ctx.with_data(self.data.clone())).await,
                Err(e) if e.is_not_found() => {
                    tracing::debug!(kind = %K::kind(&self.dt), %key, "object is gone; nothing to reconcile");
                    Ok(Action::done())
                }
                Err(e) => Err(ReconcileError::new(e)),
            }
        })
    }
}

impl<K: CacheObject, C, F> fmt::Debug for ObjectReconciler<K, C, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectReconciler")
            .field("kind", &K::kind(&self.dt))
            .finish_non_exhaustive()
    }
}
