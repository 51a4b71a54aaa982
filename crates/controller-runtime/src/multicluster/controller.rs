//! The cluster-aware [`Controller`].

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use parking_lot::RwLock;
use tokio_util::sync::CancellationToken;

use super::aware::Aware;
use super::cluster::Cluster;
use super::engage::EngageOptions;
use super::error::Error;
use super::metrics::MulticlusterMetrics;
use super::queue::FairQueue;
use super::request::{ClusterName, ClusterRequest};
use super::watch::BoxedWatch;
use crate::Request;
use crate::controller::{self as single, WatchHandle};
use crate::reconcile::{Action, ReconcileContext, ReconcileResult, Reconciler};
use crate::source::Watch;

/// Builds a controller's watch of one cluster, or `None` when the watch does not watch that
/// cluster.
pub type WatchFactory =
    Arc<dyn Fn(&Cluster) -> Option<Box<dyn Watch<ClusterRequest>>> + Send + Sync>;

/// Builds the single-cluster reconciler of one cluster (see
/// [`ControllerBuilder::complete_per_cluster`](super::ControllerBuilder::complete_per_cluster)).
pub type ReconcilerFactory = Arc<dyn Fn(&Cluster) -> Arc<dyn Reconciler<Request>> + Send + Sync>;

type ClusterFn = Arc<
    dyn Fn(ClusterRequest, Cluster, ReconcileContext) -> BoxFuture<'static, ReconcileResult>
        + Send
        + Sync,
>;

/// What reconciles a request once its cluster is known.
#[derive(Clone)]
pub(crate) enum Target {
    /// `f(request, cluster, ctx)`.
    Fn(ClusterFn),
    /// One single-cluster reconciler per cluster, given the request's key.
    PerCluster(ReconcilerFactory),
    /// A reconciler of cluster requests, which looks clusters up itself.
    Requests(Arc<dyn Reconciler<ClusterRequest>>),
}

impl Target {
    /// The target calling `f`.
    pub(crate) fn from_fn<F, Fut>(f: F) -> Self
    where
        F: Fn(ClusterRequest, Cluster, ReconcileContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReconcileResult> + Send + 'static,
    {
        Target::Fn(Arc::new(move |req, cluster, ctx| {
            Box::pin(f(req, cluster, ctx))
        }))
    }
}

/// One engaged cluster, as the controller knows it.
struct Member {
    cluster: Cluster,
    reconciler: Option<Arc<dyn Reconciler<Request>>>,
    /// Held (shared) by each running reconcile of the cluster; disengage takes it exclusively,
    /// so it returns only once they have finished.
    running: tokio::sync::RwLock<()>,
    /// Set by disengage: a reconcile that gets `running` afterwards does not run.
    gone: AtomicBool,
}

/// The engaged clusters, read by every reconcile.
#[derive(Default)]
struct Table(RwLock<HashMap<ClusterName, Arc<Member>>>);

impl Table {
    fn get(&self, cluster: &str) -> Option<Arc<Member>> {
        self.0.read().get(cluster).cloned()
    }
}

/// The reconciler the inner controller calls: finds the request's cluster, then the target.
struct Dispatch {
    controller: Arc<str>,
    table: Arc<Table>,
    target: Target,
    metrics: MulticlusterMetrics,
}

impl Reconciler<ClusterRequest> for Dispatch {
    fn reconcile(
        &self,
        req: ClusterRequest,
        ctx: ReconcileContext,
    ) -> BoxFuture<'_, ReconcileResult> {
        Box::pin(async move {
            let Some(member) = self.table.get(&req.cluster) else {
                tracing::debug!(controller = %self.controller, request = %req, "cluster not engaged: request dropped");
                self.metrics.dropped(&self.controller, &req.cluster);
                return Ok(Action::done());
            };
            let _running = member.running.read().await;
            if member.gone.load(Ordering::Acquire) {
                self.metrics.dropped(&self.controller, &req.cluster);
                return Ok(Action::done());
            }
            let cluster = req.cluster.clone();
            let result = match (&self.target, &member.reconciler) {
                (Target::PerCluster(_), Some(reconciler)) => {
                    reconciler.reconcile(req.key, ctx).await
                }
                (Target::Fn(f), _) => f(req, member.cluster.clone(), ctx).await,
                (Target::Requests(r), _) => r.reconcile(req, ctx).await,
                (Target::PerCluster(_), None) => Ok(Action::done()),
            };
            self.metrics.observe(&self.controller, &cluster, &result);
            result
        })
    }
}

/// A watch the controller starts in the clusters its options engage.
#[derive(Clone)]
pub(crate) struct ClusterWatch {
    pub(crate) options: EngageOptions,
    pub(crate) make: WatchFactory,
}

/// The cluster-aware [`Controller`]: one controller (one queue, one set of workers) whose
/// watches run in every engaged cluster and whose requests name their cluster.
///
/// On engage it opens the cluster's lane in its [`FairQueue`], builds the cluster's watches
/// (each watch factory decides whether it watches that cluster) and starts them; on disengage
/// it forgets the cluster and waits for the cluster's running reconciles, so that none runs
/// for it once disengage returns (a request taken later is dropped, counted `dropped`), stops
/// the cluster's watches, and drops its lane with every key queued or delayed in it.
///
/// Cheap to clone; clones are the same controller. Build one with
/// the [`ControllerBuilder`](super::ControllerBuilder).
#[derive(Clone)]
pub struct Controller {
    inner: Arc<Inner>,
}

struct Inner {
    name: Arc<str>,
    controller: single::Controller<ClusterRequest>,
    queue: Arc<FairQueue>,
    options: EngageOptions,
    has_provider: bool,
    watches: Vec<ClusterWatch>,
    target: Target,
    table: Arc<Table>,
    /// The watches started per cluster.
    handles: tokio::sync::Mutex<HashMap<ClusterName, Vec<WatchHandle>>>,
}

impl fmt::Debug for Controller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("multicluster::Controller")
            .field("name", &self.inner.name)
            .field("clusters", &self.clusters())
            .finish_non_exhaustive()
    }
}

impl Controller {
    /// A controller named `name` whose `watches` run in the clusters `options` (and each watch's
    /// own options) engage, reconciling with `target`.
    pub(crate) fn new(
        name: &str,
        target: Target,
        options: single::ControllerOptions<ClusterRequest>,
        engage: EngageOptions,
        has_provider: bool,
        watches: Vec<ClusterWatch>,
        metrics: MulticlusterMetrics,
    ) -> Result<Self, Error> {
        let slot: Arc<std::sync::OnceLock<Arc<FairQueue>>> = Arc::default();
        let order = if options.priority_queue() {
            crate::workqueue::QueueOrder::Priority
        } else {
            crate::workqueue::QueueOrder::Fifo
        };
        // Its worker shares the runtime's threads with every engaged cluster's informers: a
        // short slice keeps a quiet cluster's events from waiting behind a flooding cluster's
        // run of reconciles (the `multicluster` bench's live flood).
        let options = match options.worker_slice() {
            Some(_) => options,
            None => options.with_worker_slice(crate::coop::SLICE),
        };
        let options = options.with_new_queue(Arc::new({
            let slot = slot.clone();
            move |name, rate_limiter| {
                let queue = slot
                    .get_or_init(|| FairQueue::with_config(name, order, rate_limiter))
                    .clone();
                queue as Arc<dyn crate::workqueue::Queue<ClusterRequest>>
            }
        }));
        let table = Arc::new(Table::default());
        let name: Arc<str> = name.into();
        let dispatch = Dispatch {
            controller: name.clone(),
            table: table.clone(),
            target: target.clone(),
            metrics: metrics.clone(),
        };
        let controller = single::Controller::new(&*name, dispatch, options)?;
        let queue = slot
            .get()
            .cloned()
            .expect("the controller builds its queue in new");
        metrics.track(&queue);
        Ok(Controller {
            inner: Arc::new(Inner {
                name,
                controller,
                queue,
                options: engage,
                has_provider,
                watches,
                target,
                table,
                handles: tokio::sync::Mutex::default(),
            }),
        })
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The single-cluster controller underneath: its queue, workers and watches. The manager
    /// runs it; add watches to it for sources outside any cluster.
    pub fn controller(&self) -> &single::Controller<ClusterRequest> {
        &self.inner.controller
    }

    /// The controller's fair queue.
    pub fn queue(&self) -> &Arc<FairQueue> {
        &self.inner.queue
    }

    /// The clusters this controller has engaged, sorted.
    pub fn clusters(&self) -> Vec<ClusterName> {
        let mut names: Vec<_> = self.inner.table.0.read().keys().cloned().collect();
        names.sort();
        names
    }

    async fn engage_cluster(&self, cluster: Cluster) -> Result<(), Error> {
        let inner = &self.inner;
        if !inner.options.engages(&cluster, inner.has_provider) {
            return Ok(());
        }
        let mut handles = inner.handles.lock().await;
        let name = cluster.name().clone();
        if handles.contains_key(&name) {
            return Ok(());
        }
        inner.queue.add_cluster(name.clone());
        let reconciler = match &inner.target {
            Target::PerCluster(make) => Some(make(&cluster)),
            _ => None,
        };
        let member = Arc::new(Member {
            cluster: cluster.clone(),
            reconciler,
            running: tokio::sync::RwLock::new(()),
            gone: AtomicBool::new(false),
        });
        inner.table.0.write().insert(name.clone(), member);
        let mut started = Vec::new();
        for watch in &inner.watches {
            if !watch.options.engages(&cluster, inner.has_provider) {
                continue;
            }
            let Some(w) = (watch.make)(&cluster) else {
                continue;
            };
            match inner.controller.add_watch(BoxedWatch(w)).await {
                Ok(handle) => started.push(handle),
                Err(e) => {
                    for handle in &started {
                        inner.controller.remove_watch(handle).await;
                    }
                    inner.table.0.write().remove(&name);
                    inner.queue.remove_cluster(&name);
                    return Err(Error::Engage {
                        cluster: name.to_string(),
                        source: Box::new(e),
                    });
                }
            }
        }
        tracing::info!(controller = %inner.name, cluster = %name, watches = started.len(), "engaged cluster");
        handles.insert(name, started);
        Ok(())
    }

    async fn disengage_cluster(&self, name: &str) -> bool {
        let inner = &self.inner;
        let mut handles = inner.handles.lock().await;
        let Some(started) = handles.remove(name) else {
            return false;
        };
        // Forgotten first: a request taken from now on is dropped, not reconciled; then the
        // running reconciles of the cluster are waited for.
        let member = inner.table.0.write().remove(name);
        if let Some(member) = member {
            member.gone.store(true, Ordering::Release);
            drop(member.running.write().await);
        }
        for handle in &started {
            inner.controller.remove_watch(handle).await;
        }
        let dropped = inner.queue.remove_cluster(name).unwrap_or(0);
        tracing::info!(controller = %inner.name, cluster = %name, dropped, "disengaged cluster");
        true
    }
}

impl Aware for Controller {
    fn engage(
        &self,
        _ctx: CancellationToken,
        cluster: Cluster,
    ) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(self.engage_cluster(cluster))
    }

    fn disengage<'a>(&'a self, cluster: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(self.disengage_cluster(cluster))
    }
}
