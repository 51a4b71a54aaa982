//! Errors: [`ApiError`], what a request gets back as a `metav1.Status`, and [`Error`], what
//! starting or stopping the server can fail with.

use serde_json::{Value, json};

/// An API error, answered as a Kubernetes `Status` object with the real `reason` and `code`.
///
/// Every failing request ends in one of these; no request panics the server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code, also `Status.code`.
    pub code: u16,
    /// `Status.reason`, e.g. `NotFound`, `AlreadyExists`, `Conflict`, `Invalid`.
    pub reason: String,
    /// Human-readable `Status.message`.
    pub message: String,
    /// `Status.details`, when the real server sends them (name, group, kind, causes).
    pub details: Option<Value>,
    /// `Status.metadata.continue`: the token a 410 for a compacted list's continue token
    /// offers, to list the rest at the latest resourceVersion (inconsistently).
    pub continue_token: Option<String>,
}

impl ApiError {
    /// A new error with no details.
    pub fn new(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
            continue_token: None,
        }
    }

    /// Adds `Status.metadata.continue`.
    pub fn with_continue(mut self, token: String) -> Self {
        self.continue_token = Some(token);
        self
    }

    /// Adds `Status.details`.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 404 NotFound for `resource.group "name"`, worded as the real server words it.
    pub fn not_found(group_resource: &str, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{group_resource} \"{name}\" not found"))
            .with_details(json!({ "name": name, "kind": kind_of(group_resource), "group": group_of(group_resource) }))
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group_resource: &str, name: &str) -> Self {
        Self::new(409, "AlreadyExists", format!("{group_resource} \"{name}\" already exists"))
            .with_details(json!({ "name": name, "kind": kind_of(group_resource), "group": group_of(group_resource) }))
    }

    /// 409 Conflict on a stale resourceVersion.
    pub fn conflict(group_resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {group_resource} \"{name}\": {why}"),
        )
        .with_details(json!({ "name": name, "kind": kind_of(group_resource), "group": group_of(group_resource) }))
    }

    /// 422 Invalid, with one cause per `(field, message)`.
    pub fn invalid(kind: &str, group: &str, name: &str, causes: &[(String, String)]) -> Self {
        let summary = causes
            .iter()
            .map(|(field, msg)| format!("{field}: {msg}"))
            .collect::<Vec<_>>()
            .join(", ");
        let causes: Vec<Value> = causes
            .iter()
            .map(|(field, msg)| json!({ "reason": "FieldValueInvalid", "message": msg, "field": field }))
            .collect();
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        Self::new(
            422,
            "Invalid",
            format!("{qualified} \"{name}\" is invalid: {summary}"),
        )
        .with_details(json!({ "name": name, "group": group, "kind": kind, "causes": causes }))
    }

    /// 410 Expired / Gone, as for a too old resourceVersion.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {content_type}"
            ),
        )
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// 429 TooManyRequests asking the client to retry after `retry_after_seconds`, as
    /// upstream's `NewTooManyRequests`: `details.retryAfterSeconds` in the `Status`, and the
    /// response carries a `Retry-After` header with the same seconds (see
    /// [`ApiError::retry_after_seconds`]).
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: u32) -> Self {
        Self::new(429, "TooManyRequests", message)
            .with_details(json!({ "retryAfterSeconds": retry_after_seconds }))
    }

    /// 503 ServiceUnavailable.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// `details.retryAfterSeconds` when positive: the seconds the real server also sends as a
    /// `Retry-After` header (upstream's `responsewriters.ErrorNegotiated`).
    pub fn retry_after_seconds(&self) -> Option<u32> {
        let secs = self.details.as_ref()?.get("retryAfterSeconds")?.as_u64()?;
        u32::try_from(secs).ok().filter(|s| *s > 0)
    }

    /// The `metav1.Status` object for this error.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        if let Some(token) = &self.continue_token {
            status["metadata"]["continue"] = Value::from(token.as_str());
        }
        status
    }
}

fn kind_of(group_resource: &str) -> &str {
    group_resource.split('.').next().unwrap_or(group_resource)
}

fn group_of(group_resource: &str) -> &str {
    group_resource.split_once('.').map(|(_, g)| g).unwrap_or("")
}

/// Errors starting, stopping or restarting the server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding or serving the listener failed.
    #[error("listener on {addr}: {source}")]
    Listen {
        /// The address that could not be bound.
        addr: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Generating the CA or the serving certificate failed.
    #[error("generating certificates: {0}")]
    Certificate(String),
    /// Building the TLS configuration failed.
    #[error("TLS configuration: {0}")]
    Tls(String),
    /// Writing the kubeconfig file failed.
    #[error("writing kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file that could not be written.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The data directory (`Config::data_dir`) cannot be used: it cannot be created or
    /// locked, or what it holds cannot be read back.
    #[error("data directory {path}: {message}")]
    DataDir {
        /// The directory.
        path: String,
        /// What is wrong.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_names_the_kind_as_the_real_server() {
        let causes = [(
            "metadata.name".to_string(),
            "Invalid value: \"A\"".to_string(),
        )];
        let core = ApiError::invalid("ConfigMap", "", "A", &causes);
        assert_eq!(
            core.message,
            "ConfigMap \"A\" is invalid: metadata.name: Invalid value: \"A\""
        );
        let apps = ApiError::invalid("Deployment", "apps", "A", &causes);
        assert!(apps.message.starts_with("Deployment.apps \"A\" is invalid"));
        let status = apps.to_status();
        assert_eq!(status["code"], 422);
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");
    }

    #[test]
    fn too_many_requests_carries_its_retry_after_in_the_details() {
        let e = ApiError::too_many_requests("slow down", 3);
        let status = e.to_status();
        assert_eq!(
            (status["code"].as_u64(), status["reason"].as_str()),
            (Some(429), Some("TooManyRequests"))
        );
        assert_eq!(status["details"]["retryAfterSeconds"], 3);
        assert_eq!(e.retry_after_seconds(), Some(3));
        assert_eq!(
            ApiError::too_many_requests("x", 0).retry_after_seconds(),
            None
        );
        assert_eq!(
            ApiError::service_unavailable("down").retry_after_seconds(),
            None
        );
        assert_eq!(
            ApiError::service_unavailable("down").reason,
            "ServiceUnavailable"
        );
    }
}
