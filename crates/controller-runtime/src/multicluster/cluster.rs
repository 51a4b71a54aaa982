//! [`Cluster`]: one engaged cluster, with its own cache and client (controller-runtime's
//! `cluster.Cluster`).

use std::fmt;

use super::request::{ClusterName, LOCAL_CLUSTER};
use crate::cache::{Cache, CacheOptions};
use crate::client::Client;

/// One cluster: its name, a [`Cache`] of its objects and a [`Client`] that reads from that
/// cache and writes to its API server. Cheap to clone; clones share the cache.
///
/// A provider builds it ([`Cluster::new`]); the [`Manager`](super::Manager) starts its cache
/// when it engages it and stops it, every informer cancelled, when it disengages it.
#[derive(Clone)]
pub struct Cluster {
    name: ClusterName,
    client: Client,
}

impl Cluster {
    /// The cluster `name` reached through `client`, its cache built with `options`. Nothing is
    /// listed or watched until the manager engages it.
    pub fn new(
        name: impl Into<ClusterName>,
        client: kube_client::Client,
        options: CacheOptions,
    ) -> Self {
        Cluster::from_client(name, Client::new(Cache::new(client, options)))
    }

    /// The cluster `name` behind an existing [`Client`] and its cache (the manager's own
    /// cluster is one).
    pub fn from_client(name: impl Into<ClusterName>, client: Client) -> Self {
        Cluster {
            name: name.into(),
            client,
        }
    }

    /// The same cluster with a new cache of the same options, for an engagement after this
    /// one's cache was stopped.
    pub(crate) fn renewed(&self) -> Cluster {
        let cache = self.cache();
        Cluster::new(
            self.name.clone(),
            self.kube_client().clone(),
            cache.options().clone(),
        )
    }

    /// Its name; [`LOCAL_CLUSTER`] for the manager's own cluster.
    pub fn name(&self) -> &ClusterName {
        &self.name
    }

    /// Whether this is the manager's own cluster.
    pub fn is_local(&self) -> bool {
        &*self.name == LOCAL_CLUSTER
    }

    /// The client: reads from this cluster's cache, writes to its API server.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The cache of this cluster's objects.
    pub fn cache(&self) -> &Cache {
        self.client.cache()
    }

    /// The kube-client this cluster is reached with.
    pub fn kube_client(&self) -> &kube_client::Client {
        self.client.kube_client()
    }
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
