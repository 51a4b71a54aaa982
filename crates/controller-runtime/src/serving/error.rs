//! Why serving could not be set up ([`Error`]). A leaf of `serving`, which re-exports it.

/// Why a serving certificate or TLS configuration could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The serving certificate or key could not be read, made or used.
    #[error("serving certificate: {0}")]
    Certificate(String),
    /// The TLS configuration could not be built.
    #[error("TLS configuration: {0}")]
    Tls(String),
}
