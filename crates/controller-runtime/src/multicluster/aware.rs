//! The two traits of the model: a [`Provider`] finds clusters and engages them with an
//! [`Aware`] component (the [`Manager`](super::Manager), which engages its controllers in turn),
//! as multicluster-runtime's `multicluster.Provider` and `multicluster.Aware`.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::cluster::Cluster;
use super::error::Error;
use crate::BoxError;

/// Something that starts work for a cluster when it is engaged and stops it when it is
/// disengaged: the [`Manager`](super::Manager) (it starts the cluster's cache and engages its
/// components) and every cluster-aware [`Controller`](super::Controller) (it watches the
/// cluster and reconciles its requests).
///
/// The cluster is disengaged when `ctx` is cancelled, or at once by
/// [`disengage`](Self::disengage); both may happen, in any order.
pub trait Aware: Send + Sync {
    /// Starts work for `cluster` until `ctx` is cancelled or the cluster is disengaged. It
    /// should return quickly (start tasks, do not wait for them) and be re-entrant: engaging a
    /// cluster twice engages it once.
    fn engage(&self, ctx: CancellationToken, cluster: Cluster) -> BoxFuture<'_, Result<(), Error>>;

    /// Stops all work for the cluster named `cluster`; returns whether it was engaged. When it
    /// returns, nothing of this component runs for the cluster any more.
    fn disengage<'a>(&'a self, cluster: &'a str) -> BoxFuture<'a, bool>;
}

/// Finds clusters and engages them with `aware` (multicluster-runtime's `Provider`): at start,
/// and whenever one appears; disengages them when they go. Users write their own; the
/// [`providers`](super::providers) module has a static set, a directory of kubeconfigs,
/// namespaces as virtual clusters, and (with `envtest`) a fleet of embedded API servers.
pub trait Provider: Send + Sync + 'static {
    /// Runs the provider until `ctx` is cancelled. Clusters it engages get a child of `ctx`,
    /// so they are disengaged when it stops.
    fn start(
        &self,
        ctx: CancellationToken,
        aware: Arc<dyn Aware>,
    ) -> BoxFuture<'_, Result<(), BoxError>>;

    /// A name for logs.
    fn describe(&self) -> String {
        "cluster provider".into()
    }
}
