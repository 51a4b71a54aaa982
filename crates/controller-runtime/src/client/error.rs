//! [`Error`]: what a client call can fail with, sorted so a reconciler can `match` on it.

use kube_client::core::Status;

/// Why a client call failed.
///
/// API errors are sorted by their `Status.reason`, so a reconciler can match on what it
/// handles (`Error::NotFound` after a delete, `Error::Conflict` to retry) and return the rest.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 404: the object (or its namespace) does not exist.
    #[error("not found: {}", .0.message)]
    NotFound(Box<Status>),
    /// 409 AlreadyExists: create of an existing object.
    #[error("already exists: {}", .0.message)]
    AlreadyExists(Box<Status>),
    /// 409 Conflict: a stale resourceVersion; read again and retry.
    #[error("conflict: {}", .0.message)]
    Conflict(Box<Status>),
    /// 422 Invalid: the object failed validation; `Status.details.causes` says where.
    #[error("invalid: {}", .0.message)]
    Invalid(Box<Status>),
    /// 401 or 403.
    #[error("not allowed: {}", .0.message)]
    Forbidden(Box<Status>),
    /// Any other API error.
    #[error("API error {}: {}", .0.code, .0.message)]
    Api(Box<Status>),
    /// A cache read failed (other than not found).
    #[error("cache read failed")]
    Cache(#[source] crate::cache::Error),
    /// The request could not be built or sent, or the answer not read.
    #[error("request failed")]
    Transport(#[source] kube_client::Error),
    /// The object could not be serialized.
    #[error("serializing the object")]
    Serialize(#[source] serde_json::Error),
    /// The object has no name.
    #[error("the object has no metadata.name")]
    MissingName,
}

impl Error {
    /// Whether the object was not found (in the cache or on the server).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound(_))
    }

    /// Whether this is a conflict on a stale resourceVersion.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict(_))
    }

    /// Whether the object already exists.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, Error::AlreadyExists(_))
    }

    /// Whether the object was rejected as invalid.
    pub fn is_invalid(&self) -> bool {
        matches!(self, Error::Invalid(_))
    }

    /// The API server's `Status`, for API errors.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::NotFound(s)
            | Error::AlreadyExists(s)
            | Error::Conflict(s)
            | Error::Invalid(s)
            | Error::Forbidden(s)
            | Error::Api(s) => Some(s),
            _ => None,
        }
    }
}

impl From<kube_client::Error> for Error {
    fn from(e: kube_client::Error) -> Self {
        match e {
            kube_client::Error::Api(status) => match (status.code, status.reason.as_str()) {
                (404, _) => Error::NotFound(status),
                (409, "AlreadyExists") => Error::AlreadyExists(status),
                (409, _) => Error::Conflict(status),
                (422, _) => Error::Invalid(status),
                (401 | 403, _) => Error::Forbidden(status),
                _ => Error::Api(status),
            },
            other => Error::Transport(other),
        }
    }
}

impl From<crate::cache::Error> for Error {
    fn from(e: crate::cache::Error) -> Self {
        match e {
            crate::cache::Error::NotFound { kind, key } => Error::NotFound(Box::new(
                Status::failure(
                    &format!("{kind} {key:?} not found in the cache"),
                    "NotFound",
                )
                .with_code(404),
            )),
            other => Error::Cache(other),
        }
    }
}
