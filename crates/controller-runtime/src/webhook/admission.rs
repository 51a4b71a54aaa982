//! Admission webhooks (controller-runtime's `pkg/webhook/admission`): a [`Handler`] answers an
//! `admission.k8s.io/v1` AdmissionReview (kube-core's [`AdmissionRequest`](kube_core::admission::AdmissionRequest) and
//! [`AdmissionResponse`](kube_core::admission::AdmissionResponse)); a [`Webhook`] is a handler bound to its path.
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
mod review;
mod validator;

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use futures::FutureExt;
use http::StatusCode;
use kube_core::DynamicObject;
use kube_core::admission::AdmissionReview;

pub use defaulter::Defaulter;
pub use review::{Denial, Handler, Object, Request, Response, Warnings, allow, deny};
pub use validator::{ValidationResult, Validator};

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
