//! The errors of a schema and of the objects it checks, and Go's quoting of values in their
//! messages. A leaf of `schema`, which re-exports them.

use std::fmt;

/// One problem with an object (or with a schema), as a `metav1.StatusCause`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field, as the real server writes it: `spec.replicas`, `spec.ports[0].name`,
    /// `spec.labels.key` (a key under `additionalProperties`), as kube-openapi names them.
    pub path: String,
    /// The cause's reason: `FieldValueInvalid`, `FieldValueRequired`,
    /// `FieldValueNotSupported`, `FieldValueDuplicate`, `FieldValueTooLong`,
    /// `FieldValueTooMany`, `FieldValueForbidden`.
    pub reason: &'static str,
    /// The message without the path, e.g. `Required value` or
    /// `Invalid value: "string": spec.replicas in body must be of type integer: "string"`.
    pub message: String,
}

impl FieldError {
    pub(crate) fn new(path: &str, reason: &'static str, message: impl Into<String>) -> Self {
        FieldError {
            path: path.to_string(),
            reason,
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    /// `path: message`, the form the real server joins into a 422's `Status.message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// A schema that cannot serve: not structural, or with an invalid keyword value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", join(.errors))]
pub struct SchemaError {
    /// Every problem found, with paths relative to `openAPIV3Schema`.
    pub errors: Vec<FieldError>,
}

fn join(errors: &[FieldError]) -> String {
    let parts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    if parts.len() == 1 {
        parts.into_iter().next().unwrap_or_default()
    } else {
        format!("[{}]", parts.join(", "))
    }
}

/// Quotes a string as Go's `%q` does for printable text.
pub(crate) fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}
