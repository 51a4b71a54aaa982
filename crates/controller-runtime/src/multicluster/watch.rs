//! Watches of one cluster feeding a cluster-aware queue: [`InCluster`] tags the keys a
//! single-cluster [`Watch`] enqueues with the cluster's name, and [`BoxedWatch`] erases a watch's
//! type.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::request::{ClusterName, ClusterRequest};
use crate::Request;
use crate::source::{Error, Watch};
use crate::workqueue::{AddOpts, Enqueue};

/// A single-cluster [`Watch`] whose keys become requests of one cluster: every existing source,
/// handler and predicate works unchanged inside a cluster-aware controller.
pub struct InCluster<W> {
    cluster: ClusterName,
    watch: W,
}

impl<W: Watch<Request>> InCluster<W> {
    /// `watch`, its keys tagged with `cluster`.
    pub fn new(cluster: impl Into<ClusterName>, watch: W) -> Self {
        InCluster {
            cluster: cluster.into(),
            watch,
        }
    }
}

/// The queue a tagged watch sees: adds a key as a request of the cluster.
struct Tagged {
    cluster: ClusterName,
    queue: Arc<dyn Enqueue<ClusterRequest>>,
}

impl Enqueue<Request> for Tagged {
    fn add_with_opts(&self, opts: AddOpts, item: Request) {
        self.queue
            .add_with_opts(opts, ClusterRequest::new(self.cluster.clone(), item));
    }
}

impl<W: Watch<Request>> Watch<ClusterRequest> for InCluster<W> {
    fn start(
        &self,
        ctx: CancellationToken,
        queue: Arc<dyn Enqueue<ClusterRequest>>,
    ) -> BoxFuture<'_, Result<(), Error>> {
        let tagged = Arc::new(Tagged {
            cluster: self.cluster.clone(),
            queue,
        });
        self.watch.start(ctx, tagged)
    }

    fn wait_for_sync(&self, ctx: CancellationToken) -> BoxFuture<'_, Result<(), Error>> {
        self.watch.wait_for_sync(ctx)
    }

    fn describe(&self) -> String {
        format!("{} in cluster {:?}", self.watch.describe(), self.cluster)
    }

    fn last_error(&self) -> Option<String> {
        self.watch.last_error()
    }
}

/// A boxed watch of cluster requests, as a controller's watch factories make them.
pub struct BoxedWatch(pub Box<dyn Watch<ClusterRequest>>);

impl Watch<ClusterRequest> for BoxedWatch {
    fn start(
        &self,
        ctx: CancellationToken,
        queue: Arc<dyn Enqueue<ClusterRequest>>,
    ) -> BoxFuture<'_, Result<(), Error>> {
        self.0.start(ctx, queue)
    }

    fn wait_for_sync(&self, ctx: CancellationToken) -> BoxFuture<'_, Result<(), Error>> {
        self.0.wait_for_sync(ctx)
    }

    fn describe(&self) -> String {
        self.0.describe()
    }

    fn last_error(&self) -> Option<String> {
        self.0.last_error()
    }
}
