//! [`EngageOptions`]: which clusters a controller, or one of its watches, engages
//! (multicluster-runtime's `EngageOptions`).

use std::fmt;
use std::sync::Arc;

use super::cluster::Cluster;

/// Decides from a cluster whether to engage it; see [`EngageOptions::with_cluster_filter`].
pub type ClusterFilter = Arc<dyn Fn(&Cluster) -> bool + Send + Sync>;

/// Which clusters to engage: the local cluster (the manager's own), the provider's clusters,
/// and among those only the ones a filter accepts. `Default`, then one `with_` setter per
/// field.
///
/// ```
/// use controller_runtime::multicluster::EngageOptions;
///
/// // Members only, and only those named `member-*`.
/// let members = EngageOptions::default()
///     .with_local_cluster(false)
///     .with_cluster_filter(|c| c.name().starts_with("member-"));
/// // The hub (the local cluster) only.
/// let hub = EngageOptions::default().with_local_cluster(true).with_provider_clusters(false);
/// # let _ = (members, hub);
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct EngageOptions {
    local_cluster: Option<bool>,
    provider_clusters: Option<bool>,
    cluster_filter: Option<ClusterFilter>,
}

impl EngageOptions {
    /// Whether to engage the local cluster. Default: only when the manager has no provider
    /// (as multicluster-runtime's `WithEngageWithLocalCluster`).
    pub fn with_local_cluster(mut self, engage: bool) -> Self {
        self.local_cluster = Some(engage);
        self
    }

    /// Whether to engage the provider's clusters. Default `true`
    /// (`WithEngageWithProviderClusters`).
    pub fn with_provider_clusters(mut self, engage: bool) -> Self {
        self.provider_clusters = Some(engage);
        self
    }

    /// Engage only the provider clusters `filter` accepts (it is asked once per engagement;
    /// the local cluster is not filtered). Default: every one (`WithClusterFilter`).
    pub fn with_cluster_filter(
        mut self,
        filter: impl Fn(&Cluster) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.cluster_filter = Some(Arc::new(filter));
        self
    }

    /// These options, with what they leave unset taken from `defaults`.
    pub fn or(self, defaults: &EngageOptions) -> Self {
        EngageOptions {
            local_cluster: self.local_cluster.or(defaults.local_cluster),
            provider_clusters: self.provider_clusters.or(defaults.provider_clusters),
            cluster_filter: self
                .cluster_filter
                .or_else(|| defaults.cluster_filter.clone()),
        }
    }

    /// Whether `cluster` is engaged, on a manager that has a provider or not.
    pub fn engages(&self, cluster: &Cluster, has_provider: bool) -> bool {
        if cluster.is_local() {
            return self.local_cluster.unwrap_or(!has_provider);
        }
        self.provider_clusters.unwrap_or(true)
            && self.cluster_filter.as_ref().is_none_or(|f| f(cluster))
    }
}

impl fmt::Debug for EngageOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngageOptions")
            .field("local_cluster", &self.local_cluster)
            .field("provider_clusters", &self.provider_clusters)
            .field("cluster_filter", &self.cluster_filter.is_some())
            .finish()
    }
}
