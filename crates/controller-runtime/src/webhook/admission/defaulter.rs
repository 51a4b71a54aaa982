//! [`Defaulter<K>`] (controller-runtime's `admission.CustomDefaulter`) and the handler that
//! answers with the JSON patch between the object received and the object it returns.

use std::marker::PhantomData;
use std::sync::Arc;

use futures::future::BoxFuture;
use kube_core::admission::Operation;

use super::review::{Denial, Handler, Object, Request, Response, allow, decode, deny};

/// Fills in the fields of a `K` on create and update (a mutating webhook). The answer sent to
/// the API server is the JSON patch from the object received to `obj` after `default` returns;
/// an `Err` refuses the request. Deletes and connects are allowed without a call.
///
/// The method is named after Go's `Default`; on a type that also implements [`Default`], call
/// the constructor as `<T as Default>::default()` where this trait is in scope.
///
/// ```
/// use controller_runtime::webhook::admission::{Defaulter, Denial, Request};
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// struct OneReplica;
///
/// impl Defaulter<Deployment> for OneReplica {
///     async fn default(&self, deploy: &mut Deployment, _req: &Request) -> Result<(), Denial> {
///         let spec = deploy.spec.get_or_insert_default();
///         spec.replicas.get_or_insert(1);
///         Ok(())
///     }
/// }
/// ```
pub trait Defaulter<K>: Send + Sync + 'static {
    /// Sets `obj`'s defaults; `req` tells the operation, the user and whether it is a dry run.
    fn default(
        &self,
        obj: &mut K,
        req: &Request,
    ) -> impl Future<Output = Result<(), Denial>> + Send;
}

/// A [`Defaulter`] as a [`Handler`].
pub(super) struct DefaultingHandler<K, D> {
    defaulter: Arc<D>,
    kind: PhantomData<fn() -> K>,
}

impl<K, D> DefaultingHandler<K, D> {
    pub(super) fn new(defaulter: D) -> Self {
        DefaultingHandler {
            defaulter: Arc::new(defaulter),
            kind: PhantomData,
        }
    }
}

impl<K: Object + Clone, D: Defaulter<K>> Handler for DefaultingHandler<K, D> {
    fn handle(&self, request: Request) -> BoxFuture<'static, Response> {
        let defaulter = self.defaulter.clone();
        Box::pin(async move {
            if !matches!(request.operation, Operation::Create | Operation::Update) {
                return allow(&request, Vec::new());
            }
            let Some(object) = &request.object else {
                return deny(
                    &request,
                    Denial::new("the request has no object")
                        .with_code(400)
                        .with_reason("BadRequest"),
                );
            };
            let (original, mut typed) = match decode::<K>(object) {
                Ok(decoded) => decoded,
                Err(denial) => return deny(&request, denial),
            };
            if let Err(denial) = defaulter.default(&mut typed, &request).await {
                return deny(&request, denial);
            }
            let defaulted = match serde_json::to_value(&typed) {
                Ok(value) => value,
                Err(e) => {
                    return deny(
                        &request,
                        Denial::new(format!("encoding the defaulted object: {e}"))
                            .with_code(500)
                            .with_reason("InternalError"),
                    );
                }
            };
            let patch = json_patch::diff(&original, &defaulted);
            let response = allow(&request, Vec::new());
            if patch.0.is_empty() {
                return response;
            }
            match response.with_patch(patch) {
                Ok(response) => response,
                Err(e) => deny(
                    &request,
                    Denial::new(format!("encoding the patch: {e}"))
                        .with_code(500)
                        .with_reason("InternalError"),
                ),
            }
        })
    }
}
