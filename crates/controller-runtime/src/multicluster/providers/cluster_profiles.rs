//! [`ClusterProfiles`]: a cluster per ClusterProfile of the Cluster Inventory API
//! (`multicluster.x-k8s.io/v1alpha1`) in the hub, reached through the kubeconfig Secret its
//! inventory writes for this consumer (multicluster-runtime's cluster-inventory-api provider
//! with its Secret strategy), found by polling.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Secret;
use kube_client::Api;
use kube_client::api::{ApiResource, DynamicObject, ListParams};
use tokio_util::sync::CancellationToken;

use super::set::ClusterSet;
use crate::BoxError;
use crate::cache::CacheOptions;
use crate::multicluster::aware::{Aware, Provider};

/// The Secret label naming the consumer the kubeconfig is for (the Cluster Inventory API's
/// `x-k8s.io/cluster-inventory-consumer`).
pub const CONSUMER_LABEL: &str = "x-k8s.io/cluster-inventory-consumer";
/// The Secret label naming the ClusterProfile the kubeconfig reaches
/// (`x-k8s.io/cluster-profile`).
pub const CLUSTER_PROFILE_LABEL: &str = "x-k8s.io/cluster-profile";
/// The key of the kubeconfig in the Secret's data.
pub const CLUSTER_PROFILE_KUBECONFIG_KEY: &str = "Config";
/// The condition a ClusterProfile must have `True` before its cluster is engaged.
pub const CONTROL_PLANE_HEALTHY: &str = "ControlPlaneHealthy";

/// A provider of one cluster per ClusterProfile (`multicluster.x-k8s.io/v1alpha1`) in the hub,
/// named `<namespace>/<name>`, as multicluster-runtime's cluster-inventory-api provider names
/// them.
///
/// A profile's cluster is engaged once its [`CONTROL_PLANE_HEALTHY`] condition is `True` and
/// its namespace holds exactly one Secret labelled [`CONSUMER_LABEL`]` = <consumer>` and
/// [`CLUSTER_PROFILE_LABEL`]` = <profile>` with a kubeconfig under
/// [`CLUSTER_PROFILE_KUBECONFIG_KEY`] (the inventory's Secret strategy). A changed kubeconfig
/// engages it again; a deleted (or deleting) profile disengages it; a profile that turns
/// unhealthy stays engaged, as upstream leaves it. Profiles and Secrets are listed at start and
/// every [`interval`](Self::with_interval); without the ClusterProfile CRD nothing is engaged
/// and the listing is retried.
#[derive(Clone)]
pub struct ClusterProfiles {
    hub: kube_client::Client,
    consumer: String,
    namespace: Option<String>,
    interval: Duration,
    set: ClusterSet,
}

impl std::fmt::Debug for ClusterProfiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterProfiles")
            .field("consumer", &self.consumer)
            .field("namespace", &self.namespace)
            .field("clusters", &self.set.names())
            .finish_non_exhaustive()
    }
}

/// The ClusterProfile resource.
fn resource() -> ApiResource {
    ApiResource {
        group: "multicluster.x-k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "multicluster.x-k8s.io/v1alpha1".into(),
        kind: "ClusterProfile".into(),
        plural: "clusterprofiles".into(),
    }
}

impl ClusterProfiles {
    /// The ClusterProfiles of every namespace of `hub`, reached through the kubeconfig Secrets
    /// written for `consumer`.
    pub fn new(hub: kube_client::Client, consumer: impl Into<String>) -> Self {
        ClusterProfiles {
            hub,
            consumer: consumer.into(),
            namespace: None,
            interval: Duration::from_secs(5),
            set: ClusterSet::new(),
        }
    }

    /// Only the ClusterProfiles of `namespace` (default: every namespace).
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// How often profiles and Secrets are listed again (default 5 s).
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// The cache options of its clusters.
    pub fn with_cache_options(mut self, options: CacheOptions) -> Self {
        self.set = self.set.with_cache_options(options);
        self
    }

    /// The clusters found so far, sorted.
    pub fn names(&self) -> Vec<String> {
        self.set.names()
    }

    /// Its namespace's (or every namespace's) ClusterProfiles and Secrets.
    fn apis(&self) -> (Api<DynamicObject>, Api<Secret>) {
        let (hub, ar) = (self.hub.clone(), resource());
        match &self.namespace {
            Some(ns) => (
                Api::namespaced_with(hub.clone(), ns, &ar),
                Api::namespaced(hub, ns),
            ),
            None => (Api::all_with(hub.clone(), &ar), Api::all(hub)),
        }
    }

    /// The kubeconfigs of the healthy profiles, by cluster name.
    async fn kubeconfigs(
        &self,
        seen: &BTreeMap<String, Vec<u8>>,
    ) -> Result<BTreeMap<String, Option<Vec<u8>>>, kube_client::Error> {
        let (profiles, secrets) = self.apis();
        let profiles = profiles.list(&ListParams::default()).await?;
        let selector = format!("{CONSUMER_LABEL}={}", self.consumer);
        let secrets = secrets
            .list(&ListParams::default().labels(&selector))
            .await?;
        // Secrets by (namespace, profile).
        let mut by_profile: BTreeMap<(String, String), Vec<&Secret>> = BTreeMap::new();
        for secret in &secrets.items {
            let labels = secret.metadata.labels.as_ref();
            let Some(profile) = labels.and_then(|l| l.get(CLUSTER_PROFILE_LABEL)) else {
                continue;
            };
            let ns = secret.metadata.namespace.clone().unwrap_or_default();
            by_profile
                .entry((ns, profile.clone()))
                .or_default()
                .push(secret);
        }
        let mut present = BTreeMap::new();
        for profile in profiles.items {
            let (Some(ns), Some(name)) = (
                profile.metadata.namespace.clone(),
                profile.metadata.name.clone(),
            ) else {
                continue;
            };
            if profile.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let cluster = format!("{ns}/{name}");
            let healthy = profile.data["status"]["conditions"]
                .as_array()
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == CONTROL_PLANE_HEALTHY && c["status"] == "True")
                });
            if !healthy && !seen.contains_key(&cluster) {
                tracing::debug!(cluster = %cluster, "cluster profile not healthy yet");
                continue;
            }
            let found = by_profile.get(&(ns, name)).map(Vec::as_slice);
            let kubeconfig = match found {
                Some([secret]) => (secret.data.as_ref())
                    .and_then(|d| d.get(CLUSTER_PROFILE_KUBECONFIG_KEY))
                    .map(|d| d.0.clone())
                    .filter(|d| !d.is_empty()),
                Some(more) if more.len() > 1 => {
                    tracing::warn!(cluster = %cluster, secrets = more.len(), "several kubeconfig secrets for one cluster profile, expected one");
                    None
                }
                _ => None,
            };
            if kubeconfig.is_none() {
                tracing::warn!(cluster = %cluster, consumer = %self.consumer, "no kubeconfig secret for the cluster profile yet");
            }
            present.insert(cluster, kubeconfig);
        }
        Ok(present)
    }

    /// Engages, re-engages and disengages clusters as the profiles and Secrets say; a profile
    /// whose Secret went missing keeps its engagement until it comes back.
    async fn sync(&self, seen: &mut BTreeMap<String, Vec<u8>>) -> Result<(), kube_client::Error> {
        let present = self.kubeconfigs(seen).await?;
        self.set.sync_kubeconfigs(seen, present).await;
        Ok(())
    }
}

impl Provider for ClusterProfiles {
    fn start(
        &self,
        ctx: CancellationToken,
        aware: Arc<dyn Aware>,
    ) -> BoxFuture<'_, Result<(), BoxError>> {
        Box::pin(async move {
            let state = (self, BTreeMap::new());
            (self.set)
                .run_polling(ctx, aware, self.interval, state, |p, seen| {
                    Box::pin(async {
                        if let Err(e) = p.sync(seen).await {
                            tracing::warn!(error = %e, "listing cluster profiles failed");
                        }
                    })
                })
                .await
        })
    }

    fn describe(&self) -> String {
        format!("cluster profile provider (consumer {})", self.consumer)
    }
}
