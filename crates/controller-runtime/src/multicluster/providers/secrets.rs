//! [`KubeconfigSecrets`]: a cluster per kubeconfig Secret in a namespace of the hub
//! (multicluster-runtime's kubeconfig provider), found by polling.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Secret;
use kube_client::Api;
use kube_client::api::ListParams;
use tokio_util::sync::CancellationToken;

use super::set::ClusterSet;
use crate::BoxError;
use crate::cache::CacheOptions;
use crate::multicluster::aware::{Aware, Provider};

/// The label marking a kubeconfig Secret (its value must be `true`), multicluster-runtime's
/// `DefaultKubeconfigSecretLabel`.
pub const KUBECONFIG_SECRET_LABEL: &str = "sigs.k8s.io/multicluster-runtime-kubeconfig";

/// The key of the kubeconfig in the Secret's data (`DefaultKubeconfigSecretKey`).
pub const KUBECONFIG_SECRET_KEY: &str = "kubeconfig";

/// A provider of one cluster per Secret labelled [`KUBECONFIG_SECRET_LABEL`]` = "true"` in a
/// namespace of the hub, named by the Secret and reached through the current context of the
/// kubeconfig under its [`KUBECONFIG_SECRET_KEY`]. Secrets are listed at start and every
/// [`interval`](Self::with_interval): a new one engages its cluster, a changed kubeconfig
/// engages it again, a deleted (or deleting) Secret disengages it. A Secret without a
/// kubeconfig, or with one that does not parse, is logged and skipped.
#[derive(Clone)]
pub struct KubeconfigSecrets {
    hub: kube_client::Client,
    namespace: String,
    label: String,
    key: String,
    interval: Duration,
    set: ClusterSet,
}

impl std::fmt::Debug for KubeconfigSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeconfigSecrets")
            .field("namespace", &self.namespace)
            .field("label", &self.label)
            .field("key", &self.key)
            .field("clusters", &self.set.names())
            .finish_non_exhaustive()
    }
}

impl KubeconfigSecrets {
    /// The kubeconfig Secrets of `namespace`, read through `hub`.
    pub fn new(hub: kube_client::Client, namespace: impl Into<String>) -> Self {
        KubeconfigSecrets {
            hub,
            namespace: namespace.into(),
            label: KUBECONFIG_SECRET_LABEL.into(),
            key: KUBECONFIG_SECRET_KEY.into(),
            interval: Duration::from_secs(5),
            set: ClusterSet::new(),
        }
    }

    /// The label marking kubeconfig Secrets (default [`KUBECONFIG_SECRET_LABEL`]).
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// The data key holding the kubeconfig (default [`KUBECONFIG_SECRET_KEY`]).
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = key.into();
        self
    }

    /// How often Secrets are listed again (default 5 s).
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

    async fn sync(&self, seen: &mut BTreeMap<String, Vec<u8>>) -> Result<(), kube_client::Error> {
        let api: Api<Secret> = Api::namespaced(self.hub.clone(), &self.namespace);
        let params = ListParams::default().labels(&format!("{}=true", self.label));
        let secrets = api.list(&params).await?;
        let mut present = BTreeMap::new();
        for secret in secrets.items {
            let Some(name) = secret.metadata.name.clone() else {
                continue;
            };
            if secret.metadata.deletion_timestamp.is_some() {
                continue;
            }
            match (secret.data.as_ref()).and_then(|d| d.get(&self.key)) {
                Some(data) if !data.0.is_empty() => {
                    present.insert(name, data.0.clone());
                }
                _ => {
                    tracing::warn!(secret = %name, key = %self.key, "secret holds no kubeconfig, skipped");
                }
            }
        }
        let present = present.into_iter().map(|(k, v)| (k, Some(v))).collect();
        self.set.sync_kubeconfigs(seen, present).await;
        Ok(())
    }
}

impl Provider for KubeconfigSecrets {
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
                            tracing::warn!(error = %e, "listing kubeconfig secrets failed");
                        }
                    })
                })
                .await
        })
    }

    fn describe(&self) -> String {
        format!("kubeconfig secret provider ({})", self.namespace)
    }
}
