//! Errors of the cache and its reader.

use super::store::IndexError;

/// Why a cache operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server does not serve this type (yet): e.g. its CRD is not installed. The Kind
    /// source retries on this error.
    #[error("no resource for {kind} in {api_version} is served by the API server")]
    NotServed {
        /// `group/version`.
        api_version: String,
        /// Kind.
        kind: String,
    },
    /// Asking the API server's discovery failed.
    #[error("discovery of {api_version} failed")]
    Discovery {
        /// `group/version`.
        api_version: String,
        /// The client error.
        #[source]
        source: kube_client::Error,
    },
    /// A read of a type the cache has no informer for, with `reader_fail_on_missing_informer`.
    #[error("the cache has no informer for {kind} and reader_fail_on_missing_informer is set")]
    MissingInformer {
        /// Kind.
        kind: String,
    },
    /// The object is not in the cache.
    #[error("{kind} {key} not found in the cache")]
    NotFound {
        /// Kind.
        kind: String,
        /// `namespace/name`.
        key: String,
    },
    /// A get or list in a namespace the cache does not hold (it caches other namespaces
    /// only; controller-runtime: "unable to get: ns/name because of unknown namespace for the
    /// cache").
    #[error(
        "unable to {verb}: {target} because of unknown namespace for the cache (it holds {kind} in {cached})"
    )]
    UnknownNamespace {
        /// `get` or `list`.
        verb: &'static str,
        /// `namespace/name` for a get, the namespace for a list.
        target: String,
        /// Kind.
        kind: String,
        /// The namespaces the cache holds, comma-separated.
        cached: String,
    },
    /// A field index could not be added.
    #[error("adding a field index")]
    Index(#[from] IndexError),
    /// A cached list used a field selector the cache cannot answer.
    #[error("field selector {selector:?}: {reason}")]
    FieldSelector {
        /// The selector.
        selector: String,
        /// Why it cannot be answered.
        reason: String,
    },
    /// A label or field selector did not parse.
    #[error("invalid selector")]
    Selector(#[from] crt_labels::ParseError),
    /// A read before [`Cache::start`](super::Cache::start): the informer would never sync.
    #[error("the cache is not started")]
    NotStarted,
    /// The wait for the informer to sync was cancelled.
    #[error("stopped before the {kind} informer synced")]
    Cancelled {
        /// Kind.
        kind: String,
    },
}

impl Error {
    /// Whether this is [`Error::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }
}
