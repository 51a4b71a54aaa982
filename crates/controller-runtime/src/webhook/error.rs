//! The errors of the webhook server ([`Error`], [`BoxError`]). A leaf of `webhook`, which
//! re-exports it.

use std::net::SocketAddr;

/// A boxed error, as converters return.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a webhook server could not start, or a registration was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The serving certificate or key could not be read or used.
    #[error("webhook serving certificate: {0}")]
    Certificate(String),
    /// The TLS configuration could not be built.
    #[error("webhook TLS configuration: {0}")]
    Tls(String),
    /// The address could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// `start` was called a second time.
    #[error("the webhook server was started more than once")]
    AlreadyStarted,
    /// A webhook is already registered at this path.
    #[error("a webhook is already registered at {0}")]
    DuplicatePath(String),
    /// The path does not start with `/`, or is `/convert` (the conversions' path).
    #[error("{0:?} cannot be a webhook path: it must start with `/` and not be /convert")]
    InvalidPath(String),
    /// A conversion is already registered for this kind.
    #[error("a conversion is already registered for {kind}.{group}")]
    DuplicateConversion {
        /// The kind's group.
        group: String,
        /// The kind.
        kind: String,
    },
}

impl From<crate::serving::Error> for Error {
    fn from(e: crate::serving::Error) -> Self {
        match e {
            crate::serving::Error::Certificate(e) => Error::Certificate(e),
            crate::serving::Error::Tls(e) => Error::Tls(e),
        }
    }
}
