//! Why a manager fails ([`Error`]). A leaf of `manager`, which re-exports it.

use std::net::SocketAddr;
use std::time::Duration;

use crate::BoxError;

/// Why a manager could not be built, or why it stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kube-client configuration could not be loaded or a client built.
    #[error("building the kube client: {0}")]
    Client(#[source] kube_client::Error),
    /// The kubeconfig could not be read or used.
    #[error("loading the kubeconfig: {0}")]
    Kubeconfig(String),
    /// Two controllers with one name were added to the manager.
    #[error("a controller named {0:?} already exists in this manager")]
    DuplicateControllerName(String),
    /// `start` was called a second time.
    #[error("the manager was started more than once")]
    AlreadyStarted,
    /// A runnable failed; the manager stopped the others.
    #[error("runnable {name} failed: {source}")]
    Runnable {
        /// The runnable's name.
        name: String,
        /// Its error.
        #[source]
        source: BoxError,
    },
    /// The caches did not sync.
    #[error("the caches did not sync")]
    CacheSync,
    /// Leadership was lost: the manager stopped.
    #[error("leader election lost")]
    LeaderElectionLost,
    /// The leader election configuration cannot work.
    #[error("leader election: {0}")]
    LeaderElection(#[source] crate::leaderelection::Error),
    /// A runnable was added while the manager was stopping.
    #[error("the manager is stopping: no runnable can be added")]
    Stopping,
    /// Some runnables did not return within `graceful_shutdown_timeout`; they were abandoned.
    #[error("runnables did not stop within the graceful shutdown timeout of {0:?}")]
    ShutdownTimeout(Duration),
    /// The metrics server's certificate or TLS configuration could not be set up.
    #[error("setting up the metrics server")]
    MetricsServer(#[source] crate::serving::Error),
    /// The HTTP server could not bind its address.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}
