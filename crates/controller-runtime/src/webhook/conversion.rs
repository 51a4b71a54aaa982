//! CRD conversion webhooks (controller-runtime's `pkg/webhook/conversion`): hub and spoke.
//!
//! One version of a kind is the [`Hub`]; every other version is a [`Convertible`] spoke that
//! converts itself to the hub and back. Any version then converts to any other through the
//! hub, so `n` versions need `n - 1` pairs of functions rather than `n²`. A [`Conversion<H>`]
//! lists a hub and its spokes; [`Server::register_conversion`](super::Server::register_conversion)
//! serves every registered kind at [`CONVERT_PATH`] (`/convert`), answering
//! `apiextensions.k8s.io/v1` ConversionReviews (kube-core's [`ConversionReview`]).
//!
//! A review naming a kind or a version that was not registered is a failed review (result
//! status `Failure`) whose message names what is missing and what is served; a converter's
//! error fails the review with its message. A body that is not a ConversionReview gets HTTP
//! 400.
//!
//! ```
//! use controller_runtime::webhook::conversion::{Conversion, Convertible, Hub};
//!
//! mod v1 {
//!     # use kube_derive::CustomResource; use schemars::JsonSchema; use serde::{Deserialize, Serialize};
//!     #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//!     #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced, crates(kube_core = "::kube_core"))]
//!     pub struct GreetingSpec { pub text: String }
//! }
//! mod v2 {
//!     # use kube_derive::CustomResource; use schemars::JsonSchema; use serde::{Deserialize, Serialize};
//!     #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//!     #[kube(group = "example.com", version = "v2", kind = "Greeting", namespaced, crates(kube_core = "::kube_core"))]
//!     pub struct GreetingSpec { pub greeting: String, pub name: String }
//! }
//!
//! impl Hub for v2::Greeting {}
//!
//! impl Convertible<v2::Greeting> for v1::Greeting {
//!     fn convert_to(&self) -> Result<v2::Greeting, controller_runtime::webhook::BoxError> {
//!         let (greeting, name) = self.spec.text.split_once(' ').ok_or("text needs two words")?;
//!         let spec = v2::GreetingSpec { greeting: greeting.into(), name: name.into() };
//!         Ok(v2::Greeting { metadata: self.metadata.clone(), spec })
//!     }
//!     fn convert_from(hub: &v2::Greeting) -> Result<Self, controller_runtime::webhook::BoxError> {
//!         let text = format!("{} {}", hub.spec.greeting, hub.spec.name);
//!         Ok(v1::Greeting { metadata: hub.metadata.clone(), spec: v1::GreetingSpec { text } })
//!     }
//! }
//!
//! let conversion = Conversion::<v2::Greeting>::new().with_spoke::<v1::Greeting>();
//! assert_eq!(conversion.versions(), ["v1", "v2"]);
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use kube_core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube_core::response::Status;
use serde_json::Value;

use super::admission::Object;
use super::error::BoxError;

/// The path conversion reviews are served at.
pub const CONVERT_PATH: &str = "/convert";

/// The version of a kind every other version converts through (controller-runtime's
/// `conversion.Hub`); usually the storage version.
pub trait Hub: Object {}

/// A version of the kind of hub `H` (controller-runtime's `conversion.Convertible`). Both
/// functions must carry `metadata` over unchanged.
pub trait Convertible<H: Hub>: Object + Sized {
    /// This object at the hub's version.
    fn convert_to(&self) -> Result<H, BoxError>;
    /// The hub object at this version.
    fn convert_from(hub: &H) -> Result<Self, BoxError>;
}

type ToHub<H> = Arc<dyn Fn(Value) -> Result<H, String> + Send + Sync>;
type FromHub<H> = Arc<dyn Fn(&H) -> Result<Value, String> + Send + Sync>;

/// A hub and its spokes: every version of one kind. See the [module docs](self).
pub struct Conversion<H: Hub> {
    versions: BTreeMap<String, (ToHub<H>, FromHub<H>)>,
    hub: PhantomData<fn() -> H>,
}

impl<H: Hub> fmt::Debug for Conversion<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conversion")
            .field("kind", &H::kind(&()))
            .field("hub", &H::version(&()))
            .field("versions", &self.versions())
            .finish()
    }
}

impl<H: Hub> Default for Conversion<H> {
    fn default() -> Self {
        Self::new()
    }
}

/// `obj` as JSON with `K`'s apiVersion and kind.
fn encode<K: Object>(obj: &K) -> Result<Value, String> {
    let mut value = serde_json::to_value(obj).map_err(|e| e.to_string())?;
    if let Value::Object(map) = &mut value {
        map.insert("apiVersion".into(), K::api_version(&()).into());
        map.insert("kind".into(), K::kind(&()).into());
    }
    Ok(value)
}

fn decode<K: Object>(value: Value) -> Result<K, String> {
    serde_json::from_value(value)
        .map_err(|e| format!("decoding {} {}: {e}", K::api_version(&()), K::kind(&())))
}

impl<H: Hub> Conversion<H> {
    /// The hub alone (one version: nothing to convert yet).
    pub fn new() -> Self {
        let to_hub: ToHub<H> = Arc::new(decode::<H>);
        let from_hub: FromHub<H> = Arc::new(encode::<H>);
        let mut versions = BTreeMap::new();
        versions.insert(H::version(&()).to_string(), (to_hub, from_hub));
        Conversion {
            versions,
            hub: PhantomData,
        }
    }

    /// Adds the spoke `S` (a version of the same kind).
    pub fn with_spoke<S: Convertible<H>>(mut self) -> Self {
        let to_hub: ToHub<H> = Arc::new(|value| {
            decode::<S>(value)?.convert_to().map_err(|e| {
                format!(
                    "converting {} to {}: {e}",
                    S::api_version(&()),
                    H::api_version(&())
                )
            })
        });
        let from_hub: FromHub<H> = Arc::new(|hub| {
            let spoke = S::convert_from(hub).map_err(|e| {
                format!(
                    "converting {} to {}: {e}",
                    H::api_version(&()),
                    S::api_version(&())
                )
            })?;
            encode(&spoke)
        });
        self.versions
            .insert(S::version(&()).to_string(), (to_hub, from_hub));
        self
    }

    /// The versions it converts between, sorted.
    pub fn versions(&self) -> Vec<&str> {
        self.versions.keys().map(String::as_str).collect()
    }
}

/// One registered kind, type-erased for the server.
pub(crate) trait KindConversion: Send + Sync {
    /// The kind's API group.
    fn group(&self) -> String;
    /// The kind.
    fn kind(&self) -> String;
    /// `object` (of a registered version) at version `to`.
    fn convert(&self, object: Value, from: &str, to: &str) -> Result<Value, String>;
}

impl<H: Hub> KindConversion for Conversion<H> {
    fn group(&self) -> String {
        H::group(&()).into()
    }

    fn kind(&self) -> String {
        H::kind(&()).into()
    }

    fn convert(&self, object: Value, from: &str, to: &str) -> Result<Value, String> {
        let unsupported = |version: &str| {
            format!(
                "version {version:?} of {}.{} is not served by this conversion webhook (versions: {})",
                H::kind(&()),
                H::group(&()),
                self.versions().join(", ")
            )
        };
        let (to_hub, _) = self.versions.get(from).ok_or_else(|| unsupported(from))?;
        let (_, from_hub) = self.versions.get(to).ok_or_else(|| unsupported(to))?;
        if from == to {
            return Ok(object);
        }
        from_hub(&to_hub(object)?)
    }
}

/// The registered kinds, by (group, kind).
#[derive(Clone, Default)]
pub(crate) struct Registry {
    kinds: BTreeMap<(String, String), Arc<dyn KindConversion>>,
}

impl Registry {
    /// Adds a kind; `false` when the kind was registered already.
    pub(crate) fn add(&mut self, kind: Arc<dyn KindConversion>) -> bool {
        let key = (kind.group(), kind.kind());
        if self.kinds.contains_key(&key) {
            return false;
        }
        self.kinds.insert(key, kind);
        true
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    pub(crate) fn get(&self, group: &str, kind: &str) -> Option<&Arc<dyn KindConversion>> {
        self.kinds.get(&(group.to_string(), kind.to_string()))
    }

    /// Answers one HTTP request body: `(status, JSON body)`.
    pub(crate) fn serve(&self, body: &[u8]) -> (StatusCode, Bytes) {
        let review: ConversionReview = match serde_json::from_slice(body) {
            Ok(review) => review,
            Err(e) => {
                return bad_request(format!("decoding the ConversionReview: {e}"));
            }
        };
        let mut request = match ConversionRequest::from_review(review) {
            Ok(request) => request,
            Err(_) => return bad_request("the ConversionReview has no request".into()),
        };
        let objects = std::mem::take(&mut request.objects);
        let desired = request.desired_api_version.clone();
        let response = ConversionResponse::for_request(request);
        let response = match self.convert_all(objects, &desired) {
            Ok(converted) => response.success(converted),
            Err(message) => {
                tracing::info!(%message, "conversion failed");
                response.failure(Status::failure(&message, ""))
            }
        };
        encode_review(StatusCode::OK, &response.into_review())
    }

    fn convert_all(&self, objects: Vec<Value>, desired: &str) -> Result<Vec<Value>, String> {
        let (to_group, to_version) = split_api_version(desired);
        objects
            .into_iter()
            .map(|object| {
                let api_version = object
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let kind = object
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let (group, version) = split_api_version(api_version);
                let (group, version) = (group.to_string(), version.to_string());
                if group != to_group {
                    return Err(format!(
                        "cannot convert {kind} from group {group:?} to group {to_group:?}"
                    ));
                }
                let conversion = self.get(&group, &kind).ok_or_else(|| {
                    format!("no conversion is registered for kind {kind:?} in group {group:?}")
                })?;
                conversion.convert(object, &version, to_version)
            })
            .collect()
    }
}

/// `group/version` (or `version` for the core group) as `(group, version)`.
fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

fn bad_request(message: String) -> (StatusCode, Bytes) {
    tracing::debug!(%message, "malformed conversion review");
    let response =
        ConversionResponse::invalid(Status::failure(&message, "BadRequest").with_code(400));
    encode_review(StatusCode::BAD_REQUEST, &response.into_review())
}

fn encode_review(status: StatusCode, review: &ConversionReview) -> (StatusCode, Bytes) {
    match serde_json::to_vec(review) {
        Ok(body) => (status, Bytes::from(body)),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Bytes::from(format!("{{\"error\":\"encoding the response: {e}\"}}")),
        ),
    }
}
