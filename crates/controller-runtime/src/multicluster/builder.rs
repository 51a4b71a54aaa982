//! The cluster-aware [`ControllerBuilder`].

use std::future::Future;
use std::sync::Arc;

use kube_core::Resource;

use super::cluster::Cluster;
use super::controller::{ClusterWatch, Controller, Target, WatchFactory};
use super::engage::EngageOptions;
use super::error::Error;
use super::manager::Manager;
use super::request::ClusterRequest;
use super::watch::InCluster;
use crate::Request;
use crate::cache::CacheObject;
use crate::controller::ControllerOptions;
use crate::handler::{EnqueueRequestForObject, EnqueueRequestForOwner, EventHandler};
use crate::reconcile::{ReconcileContext, ReconcileResult, Reconciler};
use crate::source::{self, Kind, Watch};

/// The cluster-aware [`ControllerBuilder`] (multicluster-runtime's `mcbuilder`): a controller
/// declared once, watching and reconciling in every cluster it engages.
///
/// | builder call | watches, in each engaged cluster | enqueues |
/// | --- | --- | --- |
/// | [`for_::<K>()`](ControllerBuilder::for_) | `K` in the cluster's cache | the object, in its cluster |
/// | [`owns::<K>()`](ControllerBuilder::owns) | `K` | its controller owner of the `for` kind, in its cluster |
/// | [`watches(options, make)`](ControllerBuilder::watches) | `K` | what the handler `make(cluster)` adds: requests of any cluster |
/// | [`watches_raw(make)`](ControllerBuilder::watches_raw) | what `make(cluster)` returns | (bound) |
///
/// Which clusters the controller engages is its [`EngageOptions`]
/// ([`with_engage_options`](ControllerBuilder::with_engage_options)); the `_in` variants and
/// `watches` narrow one watch further (the hub only, members only). A handler given to
/// [`watches`](ControllerBuilder::watches) is made per cluster and enqueues
/// [`ClusterRequest`]s, so a watch in one cluster can request a reconcile in another: a
/// member's object reconciling its hub object (status aggregation), or a hub object
/// reconciling its copies in every member (fan-out).
///
/// The reconciler is one of: a function of the request, its [`Cluster`] and the context
/// ([`complete`](ControllerBuilder::complete)); a single-cluster [`Reconciler`] made per
/// cluster, given the request's key ([`complete_per_cluster`](ControllerBuilder::complete_per_cluster),
/// for existing reconcilers, unchanged); or a [`Reconciler`] of [`ClusterRequest`]s
/// ([`complete_reconciler`](ControllerBuilder::complete_reconciler)). Each builds the
/// controller, runs it on the local manager and adds it to the multicluster manager.
///
/// ```no_run
/// # async fn f(mgr: controller_runtime::multicluster::Manager) -> Result<(), controller_runtime::multicluster::Error> {
/// use controller_runtime::handler::EnqueueRequestsFromMapFunc;
/// use controller_runtime::multicluster::{ClusterRequest, ControllerBuilder, EngageOptions, LOCAL_CLUSTER};
/// use controller_runtime::reconcile::Action;
/// use controller_runtime::Request;
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
/// use kube_core::ResourceExt;
///
/// // ConfigMaps in the hub (the local cluster), reconciled again when a member's Secret of
/// // the same name changes.
/// ControllerBuilder::new(&mgr)
///     .with_engage_options(EngageOptions::default().with_local_cluster(true))
///     .for_in::<ConfigMap>(EngageOptions::default().with_provider_clusters(false))
///     .watches::<Secret, _>(EngageOptions::default().with_local_cluster(false), |_member| {
///         EnqueueRequestsFromMapFunc::new(|s: &Secret| {
///             Some(ClusterRequest::new(LOCAL_CLUSTER, Request::new("hub", s.name_any())))
///         })
///     })
///     .complete(|req, cluster, _ctx| async move { Ok(Action::done()) })
///     .await?;
/// # Ok(()) }
/// ```
pub struct ControllerBuilder {
    mgr: Manager,
    name: Option<String>,
    options: ControllerOptions<ClusterRequest>,
    engage: EngageOptions,
    /// Each watch with its own options, unset fields taken from the controller's.
    watches: Vec<(EngageOptions, WatchFactory)>,
    /// The owner handler of the `for` kind, for `owns`.
    owner: Option<EnqueueRequestForOwner>,
    owns: Vec<(EngageOptions, OwnsFactory)>,
}

/// Builds an `owns` watch of one cluster, given the owner handler of the `for` kind.
type OwnsFactory =
    Arc<dyn Fn(&Cluster, EnqueueRequestForOwner) -> Box<dyn Watch<ClusterRequest>> + Send + Sync>;

impl ControllerBuilder {
    /// A builder of a controller run by `mgr`.
    pub fn new(mgr: &Manager) -> Self {
        ControllerBuilder {
            mgr: mgr.clone(),
            name: None,
            options: ControllerOptions::default().with_metrics(mgr.local().metrics().clone()),
            engage: EngageOptions::default(),
            watches: Vec::new(),
            owner: None,
            owns: Vec::new(),
        }
    }

    /// The controller's name (default: the `for` kind, lowercased).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The controller's options (concurrency, rate limiter, priority queue, ...); its queue is
    /// always a [`FairQueue`](super::FairQueue), FIFO or by priority per lane as they say. The
    /// manager's metrics are used unless they name others.
    pub fn with_options(mut self, options: ControllerOptions<ClusterRequest>) -> Self {
        let metrics = options
            .metrics
            .clone()
            .unwrap_or_else(|| self.mgr.local().metrics().clone());
        self.options = options.with_metrics(metrics);
        self
    }

    /// Which clusters the controller engages (default: the provider's clusters, and the local
    /// cluster only when the manager has no provider).
    pub fn with_engage_options(mut self, options: EngageOptions) -> Self {
        self.engage = options;
        self
    }

    /// Reconciles objects of type `K` in every engaged cluster.
    pub fn for_<K>(self) -> Self
    where
        K: CacheObject + Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        self.for_in::<K>(EngageOptions::default())
    }

    /// [`for_`](Self::for_), watching only in the clusters `options` engage.
    pub fn for_in<K>(mut self, options: EngageOptions) -> Self
    where
        K: CacheObject + Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        if self.name.is_none() {
            self.name = Some(K::kind(&()).to_lowercase());
        }
        self.owner = Some(EnqueueRequestForOwner::of::<K>());
        self.watches.push((
            options,
            Arc::new(|cluster: &Cluster| {
                let watch = source::watch(
                    Kind::<K>::new(cluster.cache().clone()),
                    EnqueueRequestForObject,
                    vec![],
                );
                Some(Box::new(InCluster::new(cluster.name().clone(), watch))
                    as Box<dyn Watch<ClusterRequest>>)
            }),
        ));
        self
    }

    /// Watches objects of type `K` and reconciles their controller owner of the `for` kind, in
    /// the object's cluster.
    pub fn owns<K>(self) -> Self
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        self.owns_in::<K>(EngageOptions::default())
    }

    /// [`owns`](Self::owns), watching only in the clusters `options` engage.
    pub fn owns_in<K>(mut self, options: EngageOptions) -> Self
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        self.owns.push((
            options,
            Arc::new(|cluster: &Cluster, owner: EnqueueRequestForOwner| {
                let watch = source::watch(Kind::<K>::new(cluster.cache().clone()), owner, vec![]);
                Box::new(InCluster::new(cluster.name().clone(), watch))
                    as Box<dyn Watch<ClusterRequest>>
            }),
        ));
        self
    }

    /// Watches objects of type `K` in the clusters `options` engage, with the handler
    /// `make_handler` makes for each cluster; the handler adds [`ClusterRequest`]s, for objects
    /// of any cluster.
    pub fn watches<K, H>(
        mut self,
        options: EngageOptions,
        make_handler: impl Fn(&Cluster) -> H + Send + Sync + 'static,
    ) -> Self
    where
        K: CacheObject + Resource<DynamicType = ()>,
        H: EventHandler<K, ClusterRequest> + 'static,
    {
        self.watches.push((
            options,
            Arc::new(move |cluster: &Cluster| {
                let watch = source::watch(
                    Kind::<K>::new(cluster.cache().clone()),
                    make_handler(cluster),
                    vec![],
                );
                Some(Box::new(watch) as Box<dyn Watch<ClusterRequest>>)
            }),
        ));
        self
    }

    /// Watches what `make` builds for each engaged cluster (`None`: nothing there), as Go's
    /// `WatchesRawSource` per cluster. A single-cluster watch is wrapped in
    /// [`InCluster`] to tag its keys with the cluster.
    pub fn watches_raw(
        mut self,
        make: impl Fn(&Cluster) -> Option<Box<dyn Watch<ClusterRequest>>> + Send + Sync + 'static,
    ) -> Self {
        self.watches
            .push((EngageOptions::default(), Arc::new(make)));
        self
    }

    /// Builds the controller, reconciling with `reconcile(request, cluster, ctx)`, and adds it
    /// to the manager.
    pub async fn complete<F, Fut>(self, reconcile: F) -> Result<Controller, Error>
    where
        F: Fn(ClusterRequest, Cluster, ReconcileContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReconcileResult> + Send + 'static,
    {
        self.build(Target::from_fn(reconcile)).await
    }

    /// Builds the controller with one single-cluster reconciler per engaged cluster, made by
    /// `make` (with that cluster's client and cache), called with the request's key: an
    /// existing [`Reconciler`] runs in every cluster unchanged.
    pub async fn complete_per_cluster<R>(
        self,
        make: impl Fn(&Cluster) -> R + Send + Sync + 'static,
    ) -> Result<Controller, Error>
    where
        R: Reconciler<Request> + 'static,
    {
        let make = Arc::new(move |cluster: &Cluster| {
            Arc::new(make(cluster)) as Arc<dyn Reconciler<Request>>
        });
        self.build(Target::PerCluster(make)).await
    }

    /// Builds the controller with a reconciler of [`ClusterRequest`]s (it finds clusters with
    /// [`Manager::get_cluster`]).
    pub async fn complete_reconciler(
        self,
        reconciler: impl Reconciler<ClusterRequest> + 'static,
    ) -> Result<Controller, Error> {
        self.build(Target::Requests(Arc::new(reconciler))).await
    }

    async fn build(self, target: Target) -> Result<Controller, Error> {
        let name = self.name.unwrap_or_default();
        if name.is_empty() {
            return Err(crate::controller::Error::MissingName.into());
        }
        let mut watches: Vec<ClusterWatch> = (self.watches.into_iter())
            .map(|(options, make)| ClusterWatch {
                options: options.or(&self.engage),
                make,
            })
            .collect();
        if let Some(owner) = &self.owner {
            for (options, make) in self.owns {
                let owner = owner.clone();
                watches.push(ClusterWatch {
                    options: options.or(&self.engage),
                    make: Arc::new(move |cluster: &Cluster| Some(make(cluster, owner.clone()))),
                });
            }
        }
        if !self.options.skip_name_validation.unwrap_or(false) {
            self.mgr.local().register_controller_name(&name)?;
        }
        let controller = Controller::new(
            &name,
            target,
            self.options,
            self.engage,
            self.mgr.has_provider(),
            watches,
            self.mgr.metrics().clone(),
        )?;
        self.mgr.local().add(controller.controller().clone())?;
        self.mgr.add(Arc::new(controller.clone())).await?;
        Ok(controller)
    }
}
