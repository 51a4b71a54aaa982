//! Patching: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and Kubernetes strategic
//! merge patch, applied to an object as the real API server applies them.
//!
//! # The API the storage layer calls
//!
//! ```text
//! pub enum PatchKind { Json, Merge, StrategicMerge }
//! impl PatchKind { pub fn from_content_type(content_type: &str) -> Option<PatchKind> }
//!
//! pub fn apply_patch(kind: PatchKind, original: &Value, patch: &[u8],
//!                    schema: Option<&MergeKeys>) -> Result<Value, PatchError>
//!
//! pub struct MergeKeys;   // Copy; the patchMergeKey/patchStrategy table of one kind
//! impl MergeKeys { pub fn builtin(group: &str, kind: &str) -> MergeKeys }
//!
//! pub enum PatchError { .. }
//! impl PatchError { pub fn code(&self) -> u16; pub fn reason(&self) -> &'static str }
//! impl From<PatchError> for ApiError
//! ```
//!
//! * `original` is the stored object; it is never modified. The result is the whole patched
//!   object; the caller then runs its usual update path (validation, resourceVersion checks,
//!   status/spec isolation) on it.
//! * `schema` matters only for [`PatchKind::StrategicMerge`]: pass
//!   `Some(&MergeKeys::builtin(group, kind))` for built-in kinds. For custom resources the
//!   real server answers `415 UnsupportedMediaType` to a strategic merge patch: pass `None`
//!   and [`apply_patch`] returns [`PatchError::StrategicMergeUnsupported`] (code 415).
//! * Every error maps to the `Status` the real server sends: malformed bodies are
//!   `400 BadRequest`, a JSON patch whose operation fails (a `test` that does not match, a
//!   missing path) is `422`, a JSON patch of more than 10,000 operations `413`.
//!
//! ```
//! use crt_apiserver::patch::{apply_patch, MergeKeys, PatchKind};
//! use serde_json::json;
//!
//! let pod = json!({"metadata": {"name": "p", "labels": {"a": "1"}},
//!                  "spec": {"containers": [{"name": "app", "image": "nginx:1"},
//!                                          {"name": "log", "image": "busybox"}]}});
//! let patch = br#"{"metadata": {"labels": {"a": null, "b": "2"}},
//!                  "spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}"#;
//! let keys = MergeKeys::builtin("", "Pod");
//! let out = apply_patch(PatchKind::StrategicMerge, &pod, patch, Some(&keys)).unwrap();
//! assert_eq!(out["metadata"]["labels"], json!({"b": "2"}));
//! assert_eq!(out["spec"]["containers"][0]["image"], "nginx:2");
//! assert_eq!(out["spec"]["containers"][1]["name"], "log");
//! ```

mod merge_keys;
/// The strategic-merge type at the top of a built-in kind's objects.
pub(crate) use merge_keys::Ty as MergeRoot;
mod strategic;
#[cfg(test)]
mod tests;

use serde_json::Value;

pub use merge_keys::MergeKeys;

use crate::error::ApiError;

/// The most operations a JSON patch may have, as the real server's limit.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The patch formats, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchKind {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json` (built-in kinds only).
    StrategicMerge,
}

impl PatchKind {
    /// The kind for a request's `Content-Type` (parameters such as `; charset=utf-8` are
    /// ignored); `None` for anything else, which the server answers with 415.
    ///
    /// ```
    /// use crt_apiserver::patch::PatchKind;
    /// assert_eq!(PatchKind::from_content_type("application/merge-patch+json; charset=utf-8"),
    ///            Some(PatchKind::Merge));
    /// assert_eq!(PatchKind::from_content_type("application/apply-patch+yaml"), None);
    /// ```
    pub fn from_content_type(content_type: &str) -> Option<PatchKind> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        match media.to_ascii_lowercase().as_str() {
            "application/json-patch+json" => Some(PatchKind::Json),
            "application/merge-patch+json" => Some(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Some(PatchKind::StrategicMerge),
            _ => None,
        }
    }

    /// The `Content-Type` of this kind.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchKind::Json => "application/json-patch+json",
            PatchKind::Merge => "application/merge-patch+json",
            PatchKind::StrategicMerge => "application/strategic-merge-patch+json",
        }
    }
}

/// Why a patch could not be applied. [`PatchError::code`] and [`PatchError::reason`] give the
/// `Status` the real server answers with; the message is the `Status.message`.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// The body is not JSON, or not the JSON shape the patch kind needs (400).
    #[error("{context}: {source}")]
    InvalidJson {
        /// What was being decoded.
        context: &'static str,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// A JSON patch has too many operations (413).
    #[error("The allowed maximum operations in a JSON patch is {max}, got {got}")]
    TooManyOperations {
        /// The limit.
        max: usize,
        /// The number in the request.
        got: usize,
    },
    /// A JSON patch operation failed: a `test` did not match, a path is missing (422).
    #[error("{0}")]
    JsonPatchFailed(#[from] json_patch::PatchError),
    /// A strategic merge patch is malformed: bad directive, missing merge key, wrong
    /// directive shape (400).
    #[error("{0}")]
    BadStrategicPatch(String),
    /// A strategic merge patch is well formed but cannot apply: lists of lists, content
    /// outside its `$retainKeys` (422).
    #[error("{0}")]
    UnprocessableStrategicPatch(String),
    /// A strategic merge patch on a kind with no merge-key table (custom resources) (415).
    #[error(
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )]
    StrategicMergeUnsupported,
    /// The patched document is not a JSON object, so not a Kubernetes object (400).
    #[error("the patch produced a {0}, not an object")]
    NotAnObject(&'static str),
}

impl PatchError {
    /// The HTTP status code (also `Status.code`) the real server answers with.
    pub fn code(&self) -> u16 {
        match self {
            PatchError::InvalidJson { .. }
            | PatchError::BadStrategicPatch(_)
            | PatchError::NotAnObject(_) => 400,
            PatchError::TooManyOperations { .. } => 413,
            PatchError::JsonPatchFailed(_) | PatchError::UnprocessableStrategicPatch(_) => 422,
            PatchError::StrategicMergeUnsupported => 415,
        }
    }

    /// The `Status.reason` the real server answers with.
    pub fn reason(&self) -> &'static str {
        match self.code() {
            400 => "BadRequest",
            413 => "RequestEntityTooLarge",
            415 => "UnsupportedMediaType",
            _ => "Invalid",
        }
    }
}

impl From<PatchError> for ApiError {
    fn from(e: PatchError) -> Self {
        ApiError::new(e.code(), e.reason(), e.to_string())
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Applies `patch` (the request body) of the given kind to `original` and returns the patched
/// object. See the module docs for the errors and for `schema`.
pub fn apply_patch(
    kind: PatchKind,
    original: &Value,
    patch: &[u8],
    schema: Option<&MergeKeys>,
) -> Result<Value, PatchError> {
    let out = match kind {
        PatchKind::Json => {
            // An operation that repeats a field keeps the last, as upstream's decoder does
            // (`fieldValidation` reports the repetition): such a patch is decoded again
            // through a `Value`, which keeps the last of each field.
            let ops: json_patch::Patch = serde_json::from_slice(patch)
                .or_else(|first| {
                    serde_json::from_slice::<Value>(patch)
                        .ok()
                        .and_then(|v| serde_json::from_value(v).ok())
                        .ok_or(first)
                })
                .map_err(|source| PatchError::InvalidJson {
                    context: "error decoding JSON patch",
                    source,
                })?;
            if ops.0.len() > MAX_JSON_PATCH_OPERATIONS {
                return Err(PatchError::TooManyOperations {
                    max: MAX_JSON_PATCH_OPERATIONS,
                    got: ops.0.len(),
                });
            }
            let mut doc = original.clone();
            json_patch::patch(&mut doc, &ops.0)?;
            doc
        }
        PatchKind::Merge => {
            let p: Value =
                serde_json::from_slice(patch).map_err(|source| PatchError::InvalidJson {
                    context: "error decoding merge patch",
                    source,
                })?;
            let mut doc = original.clone();
            json_patch::merge(&mut doc, &p);
            doc
        }
        PatchKind::StrategicMerge => {
            let keys = schema.ok_or(PatchError::StrategicMergeUnsupported)?;
            let p: serde_json::Map<String, Value> =
                serde_json::from_slice(patch).map_err(|source| PatchError::InvalidJson {
                    context: "error decoding strategic merge patch",
                    source,
                })?;
            let orig = match original {
                Value::Object(m) => m.clone(),
                other => return Err(PatchError::NotAnObject(type_name(other))),
            };
            Value::Object(strategic::merge_map(orig, p, keys.root())?)
        }
    };
    match out {
        Value::Object(_) => Ok(out),
        other => Err(PatchError::NotAnObject(type_name(&other))),
    }
}
