//! [`Validator<K>`] (controller-runtime's `admission.CustomValidator`) and its handler.

use std::marker::PhantomData;
use std::sync::Arc;

use futures::future::BoxFuture;
use kube_core::admission::Operation;

use super::review::{Denial, Handler, Object, Request, Response, Warnings, allow, decode, deny};

/// What a validation answers: warnings (allowed), or a [`Denial`] (which carries its own
/// warnings).
pub type ValidationResult = Result<Warnings, Denial>;

/// Checks a `K` on create, update (with the object before the update) and delete (a
/// validating webhook). Each method allows with no warning unless implemented.
///
/// ```
/// use controller_runtime::webhook::admission::{Denial, Request, Validator, ValidationResult};
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// struct NoScaleDown;
///
/// fn replicas(d: &Deployment) -> i32 {
///     d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
/// }
///
/// impl Validator<Deployment> for NoScaleDown {
///     async fn validate_update(&self, old: &Deployment, new: &Deployment, _req: &Request) -> ValidationResult {
///         if replicas(new) < replicas(old) {
///             return Err(Denial::new("scaling down is not allowed").with_code(422).with_reason("Invalid"));
///         }
///         Ok(vec![])
///     }
///     async fn validate_delete(&self, _old: &Deployment, _req: &Request) -> ValidationResult {
///         Ok(vec!["deleting a deployment stops its pods".into()])
///     }
/// }
/// ```
pub trait Validator<K>: Send + Sync + 'static {
    /// Checks an object about to be created.
    fn validate_create(
        &self,
        obj: &K,
        req: &Request,
    ) -> impl Future<Output = ValidationResult> + Send {
        let _ = (obj, req);
        async { Ok(Vec::new()) }
    }

    /// Checks an update from `old` to `new`.
    fn validate_update(
        &self,
        old: &K,
        new: &K,
        req: &Request,
    ) -> impl Future<Output = ValidationResult> + Send {
        let _ = (old, new, req);
        async { Ok(Vec::new()) }
    }

    /// Checks the deletion of `old`.
    fn validate_delete(
        &self,
        old: &K,
        req: &Request,
    ) -> impl Future<Output = ValidationResult> + Send {
        let _ = (old, req);
        async { Ok(Vec::new()) }
    }
}

/// A [`Validator`] as a [`Handler`].
pub(super) struct ValidatingHandler<K, V> {
    validator: Arc<V>,
    kind: PhantomData<fn() -> K>,
}

impl<K, V> ValidatingHandler<K, V> {
    pub(super) fn new(validator: V) -> Self {
        ValidatingHandler {
            validator: Arc::new(validator),
            kind: PhantomData,
        }
    }
}

fn missing(what: &str) -> Denial {
    Denial::new(format!("the request has no {what}"))
        .with_code(400)
        .with_reason("BadRequest")
}

impl<K: Object, V: Validator<K>> Handler for ValidatingHandler<K, V> {
    fn handle(&self, request: Request) -> BoxFuture<'static, Response> {
        let validator = self.validator.clone();
        Box::pin(async move {
            let typed = |object: &Option<_>, what: &str| match object {
                Some(object) => decode::<K>(object).map(|(_, typed)| typed),
                None => Err(missing(what)),
            };
            let result = match request.operation {
                Operation::Create => match typed(&request.object, "object") {
                    Ok(obj) => validator.validate_create(&obj, &request).await,
                    Err(denial) => Err(denial),
                },
                Operation::Update => {
                    match (
                        typed(&request.old_object, "oldObject"),
                        typed(&request.object, "object"),
                    ) {
                        (Ok(old), Ok(new)) => validator.validate_update(&old, &new, &request).await,
                        (Err(denial), _) | (_, Err(denial)) => Err(denial),
                    }
                }
                Operation::Delete => match typed(&request.old_object, "oldObject") {
                    Ok(old) => validator.validate_delete(&old, &request).await,
                    Err(denial) => Err(denial),
                },
                Operation::Connect => Ok(Vec::new()),
            };
            match result {
                Ok(warnings) => allow(&request, warnings),
                Err(denial) => deny(&request, denial),
            }
        })
    }
}
