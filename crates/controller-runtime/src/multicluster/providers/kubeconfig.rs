//! Clients from kubeconfigs: one per context, for a [`ClusterSet`] of static clusters.

use kube_client::config::{KubeConfigOptions, Kubeconfig};

use super::set::ClusterSet;
use crate::multicluster::error::Error;

/// A client for `context` of `kubeconfig` (its current context when `None`).
pub async fn client(
    kubeconfig: &Kubeconfig,
    context: Option<&str>,
) -> Result<kube_client::Client, Error> {
    let origin = context.unwrap_or("current context").to_string();
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let config = kube_client::Config::from_custom_kubeconfig(kubeconfig.clone(), &options)
        .await
        .map_err(|e| Error::Kubeconfig {
            origin: origin.clone(),
            message: e.to_string(),
        })?;
    kube_client::Client::try_from(config).map_err(|e| Error::Kubeconfig {
        origin,
        message: e.to_string(),
    })
}

/// A client for the current context of the kubeconfig `data` (YAML or JSON, as a Secret holds
/// it); why not, in words.
pub(crate) async fn client_from_bytes(data: &[u8]) -> Result<kube_client::Client, String> {
    let text = std::str::from_utf8(data).map_err(|e| e.to_string())?;
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| e.to_string())?;
    client(&kubeconfig, None).await.map_err(|e| e.to_string())
}

/// The names of `kubeconfig`'s contexts, in file order.
pub fn contexts(kubeconfig: &Kubeconfig) -> Vec<String> {
    kubeconfig.contexts.iter().map(|c| c.name.clone()).collect()
}

impl ClusterSet {
    /// Brings the set to the kubeconfigs `present` (by cluster name; `None`: the cluster stays
    /// as it is, its kubeconfig missing for now) given the ones `seen` engaged before: a
    /// cluster no longer present is removed, a new or changed kubeconfig engages its cluster
    /// (again), one that does not parse is logged and skipped. `seen` is updated.
    pub(crate) async fn sync_kubeconfigs(
        &self,
        seen: &mut std::collections::BTreeMap<String, Vec<u8>>,
        present: std::collections::BTreeMap<String, Option<Vec<u8>>>,
    ) {
        let gone: Vec<String> = (seen.keys())
            .filter(|name| !present.contains_key(*name))
            .cloned()
            .collect();
        for name in gone {
            seen.remove(&name);
            self.remove(&name).await;
        }
        for (name, data) in present {
            let Some(data) = data else { continue };
            if seen.get(&name) == Some(&data) {
                continue;
            }
            match client_from_bytes(&data).await {
                Ok(client) => {
                    seen.insert(name.clone(), data);
                    if let Err(e) = self.add(name.as_str(), client).await {
                        tracing::error!(cluster = %name, error = %e, "could not engage cluster");
                    }
                }
                Err(e) => tracing::warn!(cluster = %name, error = %e, "skipping kubeconfig"),
            }
        }
    }

    /// A set of one cluster per context of `kubeconfig`, named by the context (the static
    /// kubeconfig provider).
    pub async fn from_kubeconfig(kubeconfig: &Kubeconfig) -> Result<Self, Error> {
        Self::from_contexts(kubeconfig, &contexts(kubeconfig)).await
    }

    /// A set of one cluster per context named in `contexts`, named by the context.
    pub async fn from_contexts(
        kubeconfig: &Kubeconfig,
        contexts: &[impl AsRef<str>],
    ) -> Result<Self, Error> {
        let set = ClusterSet::new();
        for context in contexts {
            let context = context.as_ref();
            set.add(context, client(kubeconfig, Some(context)).await?)
                .await?;
        }
        Ok(set)
    }
}
