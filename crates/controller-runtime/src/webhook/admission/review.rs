//! What an admission webhook reads and answers: [`Request`], [`Response`], [`Denial`], the
//! [`Handler`] trait and the [`Object`]s typed webhooks serve. A leaf of `admission`, which
//! re-exports it.

use std::fmt;
use std::future::Future;

use futures::future::BoxFuture;
use kube_core::admission::{AdmissionRequest, AdmissionResponse};
use kube_core::response::Status;
use kube_core::{DynamicObject, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The request an admission handler is given: kube-core's [`AdmissionRequest`] with the
/// objects as [`DynamicObject`]s.
pub type Request = AdmissionRequest<DynamicObject>;

/// The answer of an admission handler: kube-core's [`AdmissionResponse`] (start from
/// `AdmissionResponse::from(&request)`, which allows; see [`deny`]).
pub type Response = AdmissionResponse;

/// Warnings returned to the client (kubectl prints them); allowed or denied.
pub type Warnings = Vec<String>;

/// The kinds of objects a typed webhook serves: a kube [`Resource`] with a static type (a
/// k8s-openapi kind or a `#[derive(CustomResource)]` type) that serde reads and writes.
pub trait Object:
    Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

impl<K> Object for K where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

/// Answers admission requests (controller-runtime's `admission.Handler`): anything a typed
/// [`Defaulter`](super::Defaulter) or [`Validator`](super::Validator) does not fit. A closure from [`Request`] to a future of
/// [`Response`] is a handler.
///
/// ```
/// use controller_runtime::webhook::admission::{Request, Response, Webhook};
///
/// let audit = Webhook::new("/audit", |req: Request| async move {
///     println!("{:?} {}", req.operation, req.name);
///     Response::from(&req)
/// });
/// assert_eq!(audit.path(), "/audit");
/// ```
pub trait Handler: Send + Sync + 'static {
    /// The answer to `request`.
    fn handle(&self, request: Request) -> BoxFuture<'static, Response>;
}

impl<F, Fut> Handler for F
where
    F: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    fn handle(&self, request: Request) -> BoxFuture<'static, Response> {
        Box::pin(self(request))
    }
}

/// Why a request is refused: an HTTP code, a `metav1.Status` reason, a message the client
/// shows, and warnings. [`Denial::new`] is controller-runtime's `admission.Denied`: 403
/// `Forbidden`.
///
/// ```
/// use controller_runtime::webhook::admission::Denial;
///
/// let denial = Denial::new("spec.replicas must be odd")
///     .with_code(422)
///     .with_reason("Invalid")
///     .with_warning("replicas was 2");
/// assert_eq!(denial.to_string(), "spec.replicas must be odd");
/// assert_eq!((denial.code, denial.reason.as_str()), (422, "Invalid"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Denial {
    /// The HTTP code of the Status (default 403).
    pub code: u16,
    /// The Status reason (default `Forbidden`).
    pub reason: String,
    /// The message the client shows.
    pub message: String,
    /// Warnings returned with the denial.
    pub warnings: Warnings,
}

impl Denial {
    /// A 403 `Forbidden` denial with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Denial {
            code: 403,
            reason: "Forbidden".into(),
            message: message.into(),
            warnings: Vec::new(),
        }
    }

    /// Sets [`code`](Self::code).
    pub fn with_code(self, code: u16) -> Self {
        Denial { code, ..self }
    }

    /// Sets [`reason`](Self::reason).
    pub fn with_reason(self, reason: impl Into<String>) -> Self {
        Denial {
            reason: reason.into(),
            ..self
        }
    }

    /// Adds a warning.
    pub fn with_warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Denial {}

impl From<String> for Denial {
    fn from(message: String) -> Self {
        Denial::new(message)
    }
}

impl From<&str> for Denial {
    fn from(message: &str) -> Self {
        Denial::new(message)
    }
}

/// The response to `request` that refuses it as `denial` says.
pub fn deny(request: &Request, denial: Denial) -> Response {
    let mut response = Response::from(request);
    response.allowed = false;
    response.result = Status::failure(&denial.message, &denial.reason).with_code(denial.code);
    response.warnings = (!denial.warnings.is_empty()).then_some(denial.warnings);
    response
}

/// The response to `request` that allows it, with `warnings` (none when empty).
pub fn allow(request: &Request, warnings: Warnings) -> Response {
    let mut response = Response::from(request);
    response.warnings = (!warnings.is_empty()).then_some(warnings);
    response
}

/// Decodes a request's object as `K`; the error is a 400 denial.
pub(super) fn decode<K: Object>(object: &DynamicObject) -> Result<(serde_json::Value, K), Denial> {
    let bad = |e: serde_json::Error| {
        Denial::new(format!("decoding the {}: {e}", K::kind(&())))
            .with_code(400)
            .with_reason("BadRequest")
    };
    let value = serde_json::to_value(object).map_err(bad)?;
    let typed = serde_json::from_value(value.clone()).map_err(bad)?;
    Ok((value, typed))
}
