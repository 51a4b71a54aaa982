//! [`Error`]: why a cluster could not be engaged, found or built. A leaf of `multicluster`.

use crate::BoxError;

/// Why a multicluster operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No engaged cluster has this name (multicluster-runtime's `ErrClusterNotFound`).
    #[error("cluster {0:?} not found")]
    ClusterNotFound(String),
    /// A cluster of this name is engaged already.
    #[error("cluster {0:?} is already engaged")]
    AlreadyEngaged(String),
    /// The local cluster's name (`""`) belongs to the manager's own cluster.
    #[error("a provider cluster needs a name: the empty name is the local cluster's")]
    ReservedName,
    /// A component failed to engage a cluster (its watches could not start, say).
    #[error("engaging cluster {cluster:?}: {source}")]
    Engage {
        /// The cluster.
        cluster: String,
        /// The component's error.
        #[source]
        source: BoxError,
    },
    /// A kubeconfig could not be read or turned into a client.
    #[error("kubeconfig {origin}: {message}")]
    Kubeconfig {
        /// The file or context it came from.
        origin: String,
        /// What went wrong.
        message: String,
    },
    /// The controller could not be built.
    #[error(transparent)]
    Controller(#[from] crate::controller::Error),
    /// The local manager refused (a duplicate controller name, or it is stopping).
    #[error(transparent)]
    Manager(#[from] crate::manager::Error),
    /// A test environment of a fleet failed.
    #[cfg(feature = "envtest")]
    #[error(transparent)]
    Envtest(#[from] crate::envtest::Error),
}
