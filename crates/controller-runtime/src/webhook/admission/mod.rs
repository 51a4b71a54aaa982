//! Admission webhooks (controller-runtime's `pkg/webhook/admission`): a [`Handler`] answers an
//! `admission.k8s.io/v1` AdmissionReview (kube-core's [`AdmissionRequest`] and
//! [`AdmissionResponse`]); a [`Webhook`] is a handler bound to its path.
//!
//! Most webhooks are typed, for one kind `K`:
//!
//! - a [`Defaulter<K>`] fills in fields ([`Webhook::defaulting`], at `/mutate-...`); its answer is
//!   the JSON patch from the object received to the object it returns;
//! - a [`Validator<K>`] checks creates, updates (with the old object) and deletes
//!   ([`Webhook::validating`], at `/validate-...`), answering warnings or a [`Denial`].
//!
//! Their paths are kubebuilder's ([`mutate_path`], [`validate_path`]):
//! `/mutate-<group with dots as dashes>-<version>-<lowercase kind>`, so manifests written for a
//! Go operator keep working. The [`Builder`](crate::builder::WebhookBuilder) registers them for
//! a kind; [`Webhook::new`] binds any other [`Handler`] to any path.
//!
//! Whatever a handler does, the server answers: a body that is not an AdmissionReview gets
//! HTTP 400 with the reason; a handler that panics answers a denial (code 500, `panic: ...`),
//! and the server keeps serving.
//!
//! ```
//! use controller_runtime::webhook::admission::{Denial, Request, Validator, ValidationResult};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! struct NoSecrets;
//!
//! impl Validator<ConfigMap> for NoSecrets {
//!     async fn validate_create(&self, cm: &ConfigMap, _req: &Request) -> ValidationResult {
//!         match cm.data.as_ref().and_then(|d| d.get("password")) {
//!             Some(_) => Err(Denial::new("passwords belong in Secrets")),
//!             None => Ok(vec![]),
//!         }
//!     }
//! }
//! ```

mod defaulter;
mod validator;

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use http::StatusCode;
use kube_core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use kube_core::response::Status;
use kube_core::{DynamicObject, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use defaulter::Defaulter;
pub use validator::{ValidationResult, Validator};

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
/// [`Defaulter`] or [`Validator`] does not fit. A closure from [`Request`] to a future of
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

/// The API group, with dots as dashes, then the version and the lowercase kind:
/// `example-com-v1-foo`, `apps-v1-deployment`, `core-v1-pod` for the core group (kubebuilder
/// writes the core group as `core`).
fn path_suffix<K: Object>() -> String {
    let group = K::group(&());
    let group = if group.is_empty() {
        "core".to_string()
    } else {
        group.replace('.', "-")
    };
    format!(
        "{group}-{}-{}",
        K::version(&()),
        K::kind(&()).to_ascii_lowercase()
    )
}

/// kubebuilder's path of `K`'s defaulting webhook: `/mutate-<group>-<version>-<kind>`.
///
/// ```
/// use controller_runtime::webhook::admission::{mutate_path, validate_path};
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// assert_eq!(mutate_path::<Deployment>(), "/mutate-apps-v1-deployment");
/// assert_eq!(validate_path::<Deployment>(), "/validate-apps-v1-deployment");
/// ```
pub fn mutate_path<K: Object>() -> String {
    format!("/mutate-{}", path_suffix::<K>())
}

/// kubebuilder's path of `K`'s validating webhook: `/validate-<group>-<version>-<kind>`.
pub fn validate_path<K: Object>() -> String {
    format!("/validate-{}", path_suffix::<K>())
}

/// Whether a webhook changes objects (a mutating webhook) or only judges them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookKind {
    /// Listed in a MutatingWebhookConfiguration.
    Mutating,
    /// Listed in a ValidatingWebhookConfiguration.
    Validating,
}

/// What the generated configuration objects say about a typed webhook: which requests the API
/// server sends it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rule {
    /// Mutating or validating.
    pub kind: WebhookKind,
    /// The webhook's name in its configuration, kubebuilder style (`mfoo-v1.example.com`).
    pub name: String,
    /// The kind's API group (`""` for the core group).
    pub group: String,
    /// The kind's version.
    pub version: String,
    /// The kind's resource (plural).
    pub resource: String,
    /// `CREATE`, `UPDATE`, `DELETE`.
    pub operations: Vec<String>,
}

impl Rule {
    fn of<K: Object>(kind: WebhookKind, operations: &[&str]) -> Self {
        let group = K::group(&()).to_string();
        let prefix = match kind {
            WebhookKind::Mutating => 'm',
            WebhookKind::Validating => 'v',
        };
        // A webhook's name must be a domain of at least three segments.
        let domain = if group.contains('.') {
            group.clone()
        } else if group.is_empty() {
            "kb.io".to_string()
        } else {
            format!("{group}.kb.io")
        };
        Rule {
            kind,
            name: format!(
                "{prefix}{}-{}.{domain}",
                K::kind(&()).to_ascii_lowercase(),
                K::version(&())
            ),
            group,
            version: K::version(&()).to_string(),
            resource: K::plural(&()).to_string(),
            operations: operations.iter().map(|o| o.to_string()).collect(),
        }
    }
}

/// A [`Handler`] bound to its path, ready for [`Server::register`](super::Server::register);
/// a typed one also carries the [`Rule`] its configuration object lists.
#[derive(Clone)]
pub struct Webhook {
    path: String,
    handler: Arc<dyn Handler>,
    rule: Option<Rule>,
}

impl fmt::Debug for Webhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Webhook")
            .field("path", &self.path)
            .field("rule", &self.rule)
            .finish_non_exhaustive()
    }
}

impl Webhook {
    /// `handler` at `path` (which must start with `/`). It is in no generated configuration:
    /// write its configuration yourself.
    pub fn new(path: impl Into<String>, handler: impl Handler) -> Self {
        Webhook {
            path: path.into(),
            handler: Arc::new(handler),
            rule: None,
        }
    }

    /// `defaulter` for `K` at [`mutate_path::<K>()`](mutate_path), for creates and updates.
    ///
    /// ```
    /// use controller_runtime::webhook::admission::{Defaulter, Denial, Request, Webhook};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// struct Labelled;
    /// impl Defaulter<ConfigMap> for Labelled {
    ///     async fn default(&self, cm: &mut ConfigMap, _req: &Request) -> Result<(), Denial> {
    ///         cm.metadata.labels.get_or_insert_default().entry("team".into()).or_insert("core".into());
    ///         Ok(())
    ///     }
    /// }
    /// let webhook = Webhook::defaulting::<ConfigMap, _>(Labelled);
    /// assert_eq!(webhook.path(), "/mutate-core-v1-configmap");
    /// assert_eq!(webhook.rule().unwrap().name, "mconfigmap-v1.kb.io");
    /// ```
    pub fn defaulting<K: Object + Clone, D: Defaulter<K>>(defaulter: D) -> Self {
        Webhook {
            path: mutate_path::<K>(),
            handler: Arc::new(defaulter::DefaultingHandler::<K, D>::new(defaulter)),
            rule: Some(Rule::of::<K>(WebhookKind::Mutating, &["CREATE", "UPDATE"])),
        }
    }

    /// `validator` for `K` at [`validate_path::<K>()`](validate_path), for creates, updates
    /// and deletes.
    pub fn validating<K: Object, V: Validator<K>>(validator: V) -> Self {
        Webhook {
            path: validate_path::<K>(),
            handler: Arc::new(validator::ValidatingHandler::<K, V>::new(validator)),
            rule: Some(Rule::of::<K>(
                WebhookKind::Validating,
                &["CREATE", "UPDATE", "DELETE"],
            )),
        }
    }

    /// Serves at `path` instead.
    pub fn with_path(self, path: impl Into<String>) -> Self {
        Webhook {
            path: path.into(),
            ..self
        }
    }

    /// The path it is served at.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What its configuration object lists (typed webhooks only).
    pub fn rule(&self) -> Option<&Rule> {
        self.rule.as_ref()
    }

    /// Answers one HTTP request body: `(status, JSON body)`. A body that is not an
    /// AdmissionReview with a request is 400; a panic in the handler becomes a denial.
    pub(crate) async fn serve(&self, body: Bytes) -> (StatusCode, Bytes) {
        let review: AdmissionReview<DynamicObject> = match serde_json::from_slice(&body) {
            Ok(review) => review,
            Err(e) => return bad_request(format!("decoding the AdmissionReview: {e}")),
        };
        let request: Request = match review.try_into() {
            Ok(request) => request,
            Err(_) => return bad_request("the AdmissionReview has no request".into()),
        };
        let future =
            std::panic::catch_unwind(AssertUnwindSafe(|| self.handler.handle(request.clone())));
        let result = match future {
            Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
            Err(panic) => Err(panic),
        };
        let mut response = match result {
            Ok(response) => response,
            Err(panic) => {
                let message = format!("panic: {} [recovered]", panic_text(&panic));
                tracing::error!(webhook = %self.path, uid = %request.uid, "{message}");
                deny(
                    &request,
                    Denial::new(message)
                        .with_code(500)
                        .with_reason("InternalError"),
                )
            }
        };
        response.uid = request.uid.clone();
        encode(StatusCode::OK, &response.into_review())
    }
}

/// A panic payload as text.
fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown payload".into())
}

/// HTTP 400 with an AdmissionReview whose response says why.
fn bad_request(message: String) -> (StatusCode, Bytes) {
    tracing::debug!(%message, "malformed admission review");
    let mut response = Response::invalid(&message);
    response.result = response.result.with_code(400);
    encode(StatusCode::BAD_REQUEST, &response.into_review())
}

/// The review as JSON, its patch in base64 as Go encodes `[]byte` (what kube-apiserver and
/// every Go client expect; kube-core writes the bytes as an array of numbers).
fn encode(status: StatusCode, review: &AdmissionReview<DynamicObject>) -> (StatusCode, Bytes) {
    use base64::Engine;
    let encoded = serde_json::to_value(review).map(|mut value| {
        let patch = review.response.as_ref().and_then(|r| r.patch.as_ref());
        if let (Some(patch), Some(response)) = (patch, value.get_mut("response")) {
            response["patch"] = base64::engine::general_purpose::STANDARD
                .encode(patch)
                .into();
        }
        value
    });
    match encoded.and_then(|value| serde_json::to_vec(&value)) {
        Ok(body) => (status, Bytes::from(body)),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Bytes::from(format!("{{\"error\":\"encoding the response: {e}\"}}")),
        ),
    }
}

/// Decodes a request's object as `K`; the error is a 400 denial.
fn decode<K: Object>(object: &DynamicObject) -> Result<(serde_json::Value, K), Denial> {
    let bad = |e: serde_json::Error| {
        Denial::new(format!("decoding the {}: {e}", K::kind(&())))
            .with_code(400)
            .with_reason("BadRequest")
    };
    let value = serde_json::to_value(object).map_err(bad)?;
    let typed = serde_json::from_value(value.clone()).map_err(bad)?;
    Ok((value, typed))
}
