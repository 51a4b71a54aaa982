//! Many clusters, one manager: multicluster-runtime's model.
//!
//! A [`Provider`] finds clusters (a static set, kubeconfig files in a directory, the namespaces
//! of one cluster, a fleet of embedded test servers: see [`providers`]) and engages each with
//! the [`Manager`], which gives it its own cache and client (a [`Cluster`]) and engages every
//! cluster-aware [`Controller`] with it. A controller is declared once with the
//! [`ControllerBuilder`] and runs for every engaged cluster it accepts ([`EngageOptions`]:
//! the local cluster or not, the provider's clusters, a filter); its requests are
//! [`ClusterRequest`]s, naming the cluster, and its reconciler gets that cluster's client and
//! cache. A cluster that goes is disengaged: its watches stop, its queued requests are dropped,
//! no reconcile runs for it any more, and its cache stops with every informer.
//!
//! ```text
//! Provider --engage(cluster)--> Manager --start cache--> Cluster { cache, client }
//!                                  `--engage--> Controller: watches in the cluster --> FairQueue
//!                                                 --> workers --> reconcile(ClusterRequest, Cluster)
//! ```
//!
//! Each controller's queue is a [`FairQueue`]: one lane per cluster, served round-robin, so a
//! cluster flooding its lane delays another cluster's request by at most one request per
//! other busy cluster. Single-cluster controllers, sources, handlers and reconcilers keep
//! working unchanged: [`ControllerBuilder::complete_per_cluster`] runs an existing
//! [`Reconciler`](crate::reconcile::Reconciler) in every cluster, and [`InCluster`] turns an
//! existing [`Watch`](crate::source::Watch) into one of cluster requests. [`metrics`] counts
//! reconciles and queue depth by cluster.

mod aware;
mod builder;
mod cluster;
mod controller;
mod engage;
mod error;
mod manager;
pub mod metrics;
pub mod providers;
mod queue;
mod request;
mod watch;

pub use aware::{Aware, Provider};
pub use builder::ControllerBuilder;
pub use cluster::Cluster;
pub use controller::{Controller, ReconcilerFactory, WatchFactory};
pub use engage::{ClusterFilter, EngageOptions};
pub use error::Error;
pub use manager::Manager;
pub use metrics::MulticlusterMetrics;
pub use queue::FairQueue;
pub use request::{ClusterName, ClusterRequest, LOCAL_CLUSTER};
pub use watch::{BoxedWatch, InCluster};
