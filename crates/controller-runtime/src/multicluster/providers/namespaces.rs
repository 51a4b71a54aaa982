//! [`Namespaces`]: the namespaces of one cluster as virtual clusters (multicluster-runtime's
//! namespace provider), found by polling.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Namespace;
use kube_client::Api;
use kube_client::api::ListParams;
use tokio_util::sync::CancellationToken;

use super::set::ClusterSet;
use crate::BoxError;
use crate::cache::{CacheOptions, namespaces};
use crate::multicluster::aware::{Aware, Provider};

/// A provider of one virtual cluster per namespace of one cluster, named by the namespace:
/// its cache holds only that namespace's objects, its client reaches the whole cluster.
/// Namespaces are listed at start and every [`interval`](Self::with_interval): a new one is
/// engaged, one deleted or terminating is disengaged.
#[derive(Clone)]
pub struct Namespaces {
    client: kube_client::Client,
    label_selector: Option<String>,
    interval: Duration,
    cache_options: CacheOptions,
    set: ClusterSet,
}

impl std::fmt::Debug for Namespaces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Namespaces")
            .field("label_selector", &self.label_selector)
            .field("interval", &self.interval)
            .field("clusters", &self.set.names())
            .finish_non_exhaustive()
    }
}

impl Namespaces {
    /// The namespaces `client` lists.
    pub fn new(client: kube_client::Client) -> Self {
        Namespaces {
            client,
            label_selector: None,
            interval: Duration::from_secs(5),
            cache_options: CacheOptions::default(),
            set: ClusterSet::new(),
        }
    }

    /// Only the namespaces with these labels (a label selector, `team=a`). Default: all.
    pub fn with_label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// How often namespaces are listed again (default 5 s).
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// The cache options of each virtual cluster (its default namespaces are set to the one
    /// namespace).
    pub fn with_cache_options(mut self, options: CacheOptions) -> Self {
        self.cache_options = options;
        self
    }

    /// The virtual clusters found so far, sorted.
    pub fn names(&self) -> Vec<String> {
        self.set.names()
    }

    async fn sync(&self) -> Result<(), kube_client::Error> {
        let mut params = ListParams::default();
        if let Some(selector) = &self.label_selector {
            params = params.labels(selector);
        }
        let list = Api::<Namespace>::all(self.client.clone())
            .list(&params)
            .await?;
        let active: BTreeSet<String> = (list.items.iter())
            .filter(|ns| {
                ns.metadata.deletion_timestamp.is_none()
                    && ns.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Terminating")
            })
            .filter_map(|ns| ns.metadata.name.clone())
            .collect();
        let known: BTreeSet<String> = self.set.names().into_iter().collect();
        for gone in known.difference(&active) {
            self.set.remove(gone).await;
        }
        for new in active.difference(&known) {
            let options =
                (self.cache_options.clone()).with_default_namespaces(namespaces([new.clone()]));
            if let Err(e) = self
                .set
                .add_with_options(new.clone(), self.client.clone(), options)
                .await
            {
                tracing::error!(namespace = %new, error = %e, "could not engage namespace");
            }
        }
        Ok(())
    }
}

impl Provider for Namespaces {
    fn start(
        &self,
        ctx: CancellationToken,
        aware: Arc<dyn Aware>,
    ) -> BoxFuture<'_, Result<(), BoxError>> {
        Box::pin(async move {
            (self.set)
                .run_polling(ctx, aware, self.interval, (self, ()), |p, ()| {
                    Box::pin(async {
                        if let Err(e) = p.sync().await {
                            tracing::warn!(error = %e, "listing namespaces failed");
                        }
                    })
                })
                .await
        })
    }

    fn describe(&self) -> String {
        "namespace provider".into()
    }
}
