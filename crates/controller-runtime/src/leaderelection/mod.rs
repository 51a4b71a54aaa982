//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection`.
//!
//! SKELETON: the API below is fixed; the bodies are being written.

use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Why leader election failed or ended.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The lease could not be renewed within `renew_deadline`: leadership is lost.
    #[error("lost the lease {namespace}/{name}")]
    LeaseLost {
        /// The lease's namespace.
        namespace: String,
        /// The lease's name.
        name: String,
    },
    /// The configuration cannot work (e.g. renew_deadline >= lease_duration).
    #[error("invalid leader election config: {0}")]
    InvalidConfig(String),
}

/// How leader election runs. Defaults: controller-runtime's (15 s / 10 s / 2 s).
#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    /// The Lease's name (controller-runtime's `LeaderElectionID`).
    pub lease_name: String,
    /// The Lease's namespace (default `default`; in-cluster, controller-runtime uses the pod's).
    pub lease_namespace: String,
    /// This candidate's identity (default: host name plus `_` and a random suffix).
    pub identity: String,
    /// How long a lease is valid without renewal (default 15 s).
    pub lease_duration: Duration,
    /// How long the leader keeps retrying to renew before giving up (default 10 s).
    pub renew_deadline: Duration,
    /// How often candidates try to acquire and the leader to renew (default 2 s).
    pub retry_period: Duration,
    /// Release the lease when cancelled, so another candidate takes over at once (default
    /// `false`, as controller-runtime's `LeaderElectionReleaseOnCancel`).
    pub release_on_cancel: bool,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        LeaderElectionConfig {
            lease_name: "controller-runtime-leader".into(),
            lease_namespace: "default".into(),
            identity: default_identity(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: false,
        }
    }
}

/// The host name plus `_` and a random suffix.
pub fn default_identity() -> String {
    todo!()
}

/// A candidate for leadership of one lease.
pub struct LeaderElector {
    _private: (),
}

impl LeaderElector {
    /// A candidate using `client` for the Lease.
    pub fn new(client: kube_client::Client, config: LeaderElectionConfig) -> Result<Self, Error> {
        let _ = (client, config);
        todo!()
    }

    /// `true` while this candidate leads; see [`run`](Self::run).
    pub fn leader_status(&self) -> watch::Receiver<bool> {
        todo!()
    }

    /// Acquires the lease (retrying every `retry_period`), then renews it until `ctx` is
    /// cancelled (`Ok`, releasing the lease if configured) or renewal fails for
    /// `renew_deadline` ([`Error::LeaseLost`]). The status turns `true` when acquired and
    /// `false` before `run` returns.
    pub async fn run(&self, ctx: CancellationToken) -> Result<(), Error> {
        let _ = ctx;
        todo!()
    }
}
