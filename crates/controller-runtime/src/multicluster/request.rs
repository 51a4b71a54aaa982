//! [`ClusterRequest`]: the key of one object in one cluster, what a cluster-aware controller's
//! queue holds (multicluster-runtime's `mcreconcile.Request`). A leaf of `multicluster`.

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;

use crate::ObjectKey;

/// The name of the manager's own cluster, the one its [`crate::manager::Manager`] runs on
/// (multicluster-runtime's empty cluster name).
pub const LOCAL_CLUSTER: &str = "";

/// A cluster's name, cheap to clone: every queued request carries one.
pub type ClusterName = Arc<str>;

/// The object to reconcile and the cluster it lives in (multicluster-runtime's
/// `mcreconcile.Request{ClusterName, Request}`). The reconciler reads it through that cluster's
/// cache and writes it with that cluster's client (see
/// [`Manager::get_cluster`](super::Manager::get_cluster)).
///
/// ```
/// use controller_runtime::multicluster::ClusterRequest;
/// use controller_runtime::Request;
///
/// let req = ClusterRequest::new("member-1", Request::new("default", "web"));
/// assert_eq!(req.to_string(), "member-1/default/web");
/// assert_eq!(&*req.cluster, "member-1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterRequest {
    /// The cluster's name; [`LOCAL_CLUSTER`] for the manager's own.
    pub cluster: ClusterName,
    /// The object in that cluster.
    pub key: ObjectKey,
}

impl ClusterRequest {
    /// The request for `key` in `cluster`.
    pub fn new(cluster: impl Into<ClusterName>, key: ObjectKey) -> Self {
        ClusterRequest {
            cluster: cluster.into(),
            key,
        }
    }

    /// The request for `obj` in `cluster`.
    pub fn of<K: Resource>(cluster: impl Into<ClusterName>, obj: &K) -> Self {
        ClusterRequest::new(cluster, ObjectKey::of(obj))
    }
}

impl fmt::Display for ClusterRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.cluster.is_empty() {
            write!(f, "{}", self.key)
        } else {
            write!(f, "{}/{}", self.cluster, self.key)
        }
    }
}
