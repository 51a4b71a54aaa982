//! The cluster-aware [`Manager`].

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::aware::{Aware, Provider};
use super::cluster::Cluster;
use super::error::Error;
use super::metrics::MulticlusterMetrics;
use super::request::{ClusterName, LOCAL_CLUSTER};
use crate::manager::{self as local, RunnableGroup};

/// The cluster-aware [`Manager`] (multicluster-runtime's `mcmanager.Manager`): the manager of
/// the local cluster, a [`Provider`] of more clusters, and the components engaged with each.
///
/// The local [`crate::manager::Manager`] runs everything (probes, metrics, leader election,
/// the controllers' workers) and the provider, as a runnable of its
/// [`Others`](crate::manager::RunnableGroup::Others) group. When the provider engages a cluster,
/// the manager starts the cluster's cache and engages every component added with
/// [`Manager::add`] (each cluster-aware [`Controller`](super::Controller) starts its watches
/// there); components added later are engaged with the clusters engaged by then. When the
/// cluster is disengaged (its context cancelled, or [`Manager::disengage`]), every component
/// disengages it first, then its cache stops, its informers cancelled.
///
/// Cheap to clone; clones are the same manager.
///
/// ```no_run
/// # async fn f(provider: controller_runtime::multicluster::providers::ClusterSet) -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use controller_runtime::manager::{Manager as LocalManager, ManagerOptions, signal_handler};
/// use controller_runtime::multicluster::{ControllerBuilder, Manager};
/// use controller_runtime::reconcile::Action;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let local = LocalManager::infer(ManagerOptions::default()).await?;
/// let mgr = Manager::new(local, Some(Arc::new(provider)))?;
/// ControllerBuilder::new(&mgr)
///     .for_::<ConfigMap>()
///     .complete(|req, cluster, _ctx| async move {
///         let cm = cluster.client().objects::<ConfigMap>().get(&req.key).await;
///         println!("{req}: {}", cm.is_ok());
///         Ok(Action::done())
///     })
///     .await?;
/// mgr.start(signal_handler()).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Manager {
    inner: Arc<Inner>,
}

struct Inner {
    local: local::Manager,
    local_cluster: Cluster,
    has_provider: bool,
    metrics: MulticlusterMetrics,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    clusters: HashMap<ClusterName, Engaged>,
    components: Vec<Arc<dyn Aware>>,
}

struct Engaged {
    cluster: Cluster,
    token: CancellationToken,
    /// Tells this engagement from a later one of the same name.
    id: u64,
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("multicluster::Manager")
            .field("clusters", &self.clusters())
            .field("has_provider", &self.inner.has_provider)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A manager around `local` (the manager of the cluster this process runs against, whose
    /// client, cache, metrics and runnables it uses) engaging the clusters of `provider` once
    /// `local` starts. Without a provider, controllers engage the local cluster only (unless
    /// clusters are engaged by hand with [`Aware::engage`]).
    pub fn new(local: local::Manager, provider: Option<Arc<dyn Provider>>) -> Result<Self, Error> {
        let metrics = MulticlusterMetrics::register(&mut local.registry().lock());
        let local_cluster = Cluster::from_client(LOCAL_CLUSTER, local.client().clone());
        let inner = Arc::new(Inner {
            local: local.clone(),
            local_cluster,
            has_provider: provider.is_some(),
            metrics,
            state: Mutex::default(),
        });
        if let Some(provider) = provider {
            let weak = Arc::downgrade(&inner);
            let name = provider.describe();
            local.add(local::from_fn(name, RunnableGroup::Others, move |ctx| {
                let provider = provider.clone();
                let aware: Arc<dyn Aware> = Arc::new(Engager(weak.clone()));
                async move { provider.start(ctx, aware).await }
            }))?;
        }
        Ok(Manager { inner })
    }

    /// The manager of the local cluster (multicluster-runtime's `GetLocalManager`).
    pub fn local(&self) -> &local::Manager {
        &self.inner.local
    }

    /// The local cluster, named [`LOCAL_CLUSTER`].
    pub fn local_cluster(&self) -> &Cluster {
        &self.inner.local_cluster
    }

    /// Whether the manager has a provider.
    pub fn has_provider(&self) -> bool {
        self.inner.has_provider
    }

    /// The multicluster metric families, registered in the local manager's registry.
    pub fn metrics(&self) -> &MulticlusterMetrics {
        &self.inner.metrics
    }

    /// The engaged cluster named `name` ([`LOCAL_CLUSTER`] is the local cluster), as
    /// multicluster-runtime's `GetCluster`; [`Error::ClusterNotFound`] when none is.
    pub fn get_cluster(&self, name: &str) -> Result<Cluster, Error> {
        if name == LOCAL_CLUSTER {
            return Ok(self.inner.local_cluster.clone());
        }
        self.inner
            .state
            .lock()
            .clusters
            .get(name)
            .map(|e| e.cluster.clone())
            .ok_or_else(|| Error::ClusterNotFound(name.to_string()))
    }

    /// The names of the engaged provider clusters, sorted.
    pub fn clusters(&self) -> Vec<ClusterName> {
        let mut names: Vec<_> = self.inner.state.lock().clusters.keys().cloned().collect();
        names.sort();
        names
    }

    /// Adds a cluster-aware component and engages it with the local cluster and every cluster
    /// engaged now; later clusters are engaged with it as they come. (The
    /// [`ControllerBuilder`](super::ControllerBuilder) adds its controllers.)
    pub async fn add(&self, component: Arc<dyn Aware>) -> Result<(), Error> {
        let engaged: Vec<(Cluster, CancellationToken)> = {
            let mut state = self.inner.state.lock();
            state.components.push(component.clone());
            (state.clusters.values())
                .map(|e| (e.cluster.clone(), e.token.clone()))
                .collect()
        };
        component
            .engage(CancellationToken::new(), self.inner.local_cluster.clone())
            .await?;
        for (cluster, token) in engaged {
            match component.engage(token, cluster.clone()).await {
                Ok(()) => {}
                // disengaged meanwhile
                Err(_) if self.get_cluster(cluster.name()).is_err() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Disengages the cluster named `name` now (as cancelling the context it was engaged with
    /// does, but waited for): every component disengages it, then its cache stops. Returns
    /// whether it was engaged.
    pub async fn disengage(&self, name: &str) -> bool {
        disengage(&self.inner, name, None).await
    }

    /// Runs the local manager (and so the provider and every controller) until `ctx` is
    /// cancelled; see [`crate::manager::Manager::start`].
    pub async fn start(&self, ctx: CancellationToken) -> Result<(), local::Error> {
        self.inner.local.start(ctx).await
    }
}

impl Aware for Manager {
    fn engage(&self, ctx: CancellationToken, cluster: Cluster) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(engage(self.inner.clone(), ctx, cluster))
    }

    fn disengage<'a>(&'a self, cluster: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(disengage(&self.inner, cluster, None))
    }
}

/// What a provider engages: the manager, held weakly so that the provider's runnable inside
/// the local manager does not keep the manager alive.
struct Engager(Weak<Inner>);

impl Aware for Engager {
    fn engage(&self, ctx: CancellationToken, cluster: Cluster) -> BoxFuture<'_, Result<(), Error>> {
        let inner = self.0.upgrade();
        Box::pin(async move {
            match inner {
                Some(inner) => engage(inner, ctx, cluster).await,
                None => Ok(()),
            }
        })
    }

    fn disengage<'a>(&'a self, cluster: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            match self.0.upgrade() {
                Some(inner) => disengage(&inner, cluster, None).await,
                None => false,
            }
        })
    }
}

async fn engage(inner: Arc<Inner>, ctx: CancellationToken, cluster: Cluster) -> Result<(), Error> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    if cluster.is_local() {
        return Err(Error::ReservedName);
    }
    let name = cluster.name().clone();
    let token = ctx.child_token();
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let components = {
        let mut state = inner.state.lock();
        if state.clusters.contains_key(&name) {
            return Err(Error::AlreadyEngaged(name.to_string()));
        }
        state.clusters.insert(
            name.clone(),
            Engaged {
                cluster: cluster.clone(),
                token: token.clone(),
                id,
            },
        );
        state.components.clone()
    };
    inner.metrics.engaged().inc();
    cluster.cache().start(token.clone());
    tracing::info!(cluster = %name, "engaging cluster");
    // Disengaged when its context is cancelled, unless disengaged (and maybe engaged again)
    // before.
    tokio::spawn({
        let weak = Arc::downgrade(&inner);
        let (token, name) = (token.clone(), name.clone());
        async move {
            token.cancelled().await;
            if let Some(inner) = weak.upgrade() {
                disengage(&inner, &name, Some(id)).await;
            }
        }
    });
    for component in components {
        if let Err(e) = component.engage(token.clone(), cluster.clone()).await {
            tracing::error!(cluster = %name, error = %e, "engaging cluster failed");
            disengage(&inner, &name, Some(id)).await;
            return Err(e);
        }
    }
    Ok(())
}

/// Disengages `name` (only the engagement `id`, when given).
async fn disengage(inner: &Inner, name: &str, id: Option<u64>) -> bool {
    let (engaged, components) = {
        let mut state = inner.state.lock();
        let this_one = (state.clusters.get(name)).is_some_and(|e| id.is_none_or(|id| id == e.id));
        if !this_one {
            return false;
        }
        let engaged = state.clusters.remove(name);
        (engaged, state.components.clone())
    };
    let Some(engaged) = engaged else {
        return false;
    };
    for component in components {
        component.disengage(name).await;
    }
    engaged.token.cancel();
    engaged.cluster.cache().stopped().await;
    inner.metrics.engaged().dec();
    tracing::info!(cluster = %name, "disengaged cluster");
    true
}
