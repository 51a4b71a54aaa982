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
    /// A read of an object this process wrote gave up waiting for the informer to store the
    /// write (see [`ReadYourWrites`](super::ReadYourWrites)): the watch is behind or broken.
    /// Retry later; the read did not answer from a cache older than the write.
    #[error(
        "timed out after {timeout:?} waiting for the cache to see this process's write of {kind} {key}{}",
        resource_version.as_ref().map(|rv| format!(" (resourceVersion {rv})")).unwrap_or_default()
    )]
    ReadYourWritesTimeout {
        /// Kind.
        kind: String,
        /// `namespace/name`.
        key: String,
        /// The resourceVersion the write left, when known (a delete answered with a `Status`
        /// has none).
        resource_version: Option<String>,
        /// How long the read waited.
        timeout: std::time::Duration,
    },
    /// The wait for the informer to sync was cancelled.
    #[error("stopped before the {kind} informer synced{}", last_error_suffix(.last_error.as_ref()))]
    Cancelled {
        /// Kind.
        kind: String,
        /// Why the informer had not synced, when its list or watch failed
        /// ([`Informer::last_error`](super::Informer::last_error)).
        last_error: Option<ListWatchError>,
    },
}

/// `": last error: ..."` when there is one.
fn last_error_suffix(error: Option<&ListWatchError>) -> String {
    error
        .map(|e| format!(": last error: {e}"))
        .unwrap_or_default()
}

/// The last failure of an informer's list or watch (client-go's reflector error, which its
/// `WatchErrorHandler` logs), kept until a list or watch succeeds again: what a user needs to
/// see when an informer does not sync. For a 403 its message is the API server's, naming the
/// user, verb and resource refused, e.g. `configmaps is forbidden: User
/// "system:serviceaccount:ns:op" cannot list resource "configmaps" in API group "" at the
/// cluster scope`.
///
/// ```
/// use controller_runtime::cache::ListWatchError;
///
/// let e = ListWatchError::new("list", Some(403), "configmaps is forbidden: ...");
/// assert_eq!(e.to_string(), "list failed (403): configmaps is forbidden: ...");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListWatchError {
    /// `list` or `watch`.
    pub verb: &'static str,
    /// The namespace of the informer's scope that failed (`None`: every namespace, or a
    /// cluster-scoped type).
    pub namespace: Option<String>,
    /// The HTTP status the API server answered, when it answered (`None`: a connection or
    /// decoding failure).
    pub code: Option<u16>,
    /// The API server's message (its Status `message`), or the client's error.
    pub message: String,
    /// How long the server asked the client to wait before retrying (a 429's or 503's
    /// `details.retryAfterSeconds`, sent with the same seconds in `Retry-After`); the
    /// reflector waits at least this long, longer when its own backoff says so.
    pub retry_after: Option<std::time::Duration>,
}

impl ListWatchError {
    /// A failure of `verb` with `code` (when the server answered) and `message`.
    pub fn new(verb: &'static str, code: Option<u16>, message: impl Into<String>) -> Self {
        ListWatchError {
            verb,
            namespace: None,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// The same failure, in `namespace`'s scope.
    pub fn in_namespace(self, namespace: Option<String>) -> Self {
        ListWatchError { namespace, ..self }
    }

    /// The failure of `verb` a kube-client error tells.
    pub(crate) fn from_client(verb: &'static str, e: &kube_client::Error) -> Self {
        match e {
            kube_client::Error::Api(status) => {
                let message = if status.message.is_empty() {
                    status.reason.clone()
                } else {
                    status.message.clone()
                };
                let retry_after = status
                    .details
                    .as_ref()
                    .map(|d| d.retry_after_seconds)
                    .filter(|s| *s > 0)
                    .map(|s| std::time::Duration::from_secs(s.into()));
                ListWatchError {
                    retry_after,
                    ..ListWatchError::new(verb, Some(status.code), message)
                }
            }
            other => ListWatchError::new(verb, None, other.to_string()),
        }
    }

    /// Whether the API server refused the request as forbidden (403): a missing RBAC
    /// permission.
    pub fn is_forbidden(&self) -> bool {
        self.code == Some(403)
    }
}

impl std::fmt::Display for ListWatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed", self.verb)?;
        if let Some(code) = self.code {
            write!(f, " ({code})")?;
        }
        if let Some(namespace) = &self.namespace {
            write!(f, " in namespace {namespace}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ListWatchError {}

impl Error {
    /// Whether this is [`Error::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }

    /// Whether this is [`Error::ReadYourWritesTimeout`].
    pub fn is_read_your_writes_timeout(&self) -> bool {
        matches!(self, Error::ReadYourWritesTimeout { .. })
    }
}
