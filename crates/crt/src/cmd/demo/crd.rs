//! The demo's custom resource, `Greeting` (`greetings.demo.crt.dev`), written the way an
//! operator's author writes one: a spec and a status struct, and `#[derive(CustomResource)]`
//! for the rest (the `Greeting` type itself, its `Resource` impl and the CRD with its schema).

// Clippy reads the repeated `type_ = ...` of the `printcolumn(...)` entries as duplicated
// attributes; they are one attribute each.
#![allow(clippy::duplicated_attributes)]

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a user asks for: `replicas` ConfigMaps, each holding `message`.
///
/// The scale subresource points at `.spec.replicas`, so `kubectl scale greeting/x --replicas 3`
/// (and the demo's own scale step) changes it without touching the rest of the object.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "demo.crt.dev",
    version = "v1",
    kind = "Greeting",
    namespaced,
    status = "GreetingStatus",
    shortname = "gr",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas"
    ),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyReplicas"),
    printcolumn(name = "Message", type_ = "string", json_path = ".spec.message"),
    crates(
        kube_core = "::kube_client::core",
        k8s_openapi = "::k8s_openapi",
        schemars = "::schemars",
        serde = "::serde",
        serde_json = "::serde_json"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct GreetingSpec {
    /// How many ConfigMaps (`<name>-0`, `<name>-1`, ...) the operator keeps, 0 to 10: the API
    /// server refuses other values (the schema's `minimum`/`maximum`), so a typo cannot make the
    /// operator create a million objects.
    #[schemars(range(min = 0, max = 10))]
    pub replicas: i32,
    /// The text every ConfigMap carries under `data.message`. Optional in the schema: the
    /// demo's defaulting webhook fills in an empty or missing one (`hello`).
    #[serde(default)]
    pub message: String,
}

/// What the operator reports back.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GreetingStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// How many ConfigMaps exist (the scale subresource's `.status.replicas`).
    #[serde(default)]
    pub replicas: i32,
    /// How many ConfigMaps carry the current message.
    #[serde(default)]
    pub ready_replicas: i32,
    /// `Ready`: `True` once every ConfigMap exists with the current message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// A status condition, shaped as `metav1.Condition`.
///
/// Declared here rather than reusing k8s-openapi's `Condition`: that one implements
/// `JsonSchema` only with k8s-openapi's `schemars` feature, which would rebuild the whole of
/// k8s-openapi for one struct.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition's type, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A CamelCase word saying why.
    pub reason: String,
    /// A sentence for humans.
    #[serde(default)]
    pub message: String,
    /// The generation the condition was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When `status` last changed (RFC 3339).
    pub last_transition_time: String,
}
