//! [`ListWatch`]: how an informer lists and watches one resource.
//!
//! The informer's loop is written once against this trait. [`ApiListWatch`] talks to the API
//! server for full objects (typed or dynamic), [`MetadataListWatch`] for metadata only
//! (`PartialObjectMeta<K>`), and tests can script a fake.

use std::fmt::Debug;

use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use kube_client::Api;
use kube_client::api::{ListParams, WatchParams};
use kube_client::core::{ObjectList, PartialObjectMeta, WatchEvent};
use kube_core::Resource;
use serde::de::DeserializeOwned;

/// A stream of watch events.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, kube_client::Error>>;

/// Lists and watches objects of one type.
pub trait ListWatch<K: Clone>: Send + Sync + 'static {
    /// One page of a list.
    fn list(
        &self,
        params: ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<K>, kube_client::Error>>;
    /// A watch from `resource_version` (exclusive).
    fn watch(
        &self,
        params: WatchParams,
        resource_version: String,
    ) -> BoxFuture<'static, Result<WatchStream<K>, kube_client::Error>>;
}

/// Lists and watches full objects through a kube-client [`Api`].
pub struct ApiListWatch<K> {
    api: Api<K>,
}

impl<K> ApiListWatch<K> {
    /// Wraps an [`Api`] (namespaced or all-namespaces, typed or dynamic).
    pub fn new(api: Api<K>) -> Self {
        ApiListWatch { api }
    }
}

impl<K> ListWatch<K> for ApiListWatch<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn list(
        &self,
        params: ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<K>, kube_client::Error>> {
        let api = self.api.clone();
        Box::pin(async move { api.list(&params).await })
    }

    fn watch(
        &self,
        params: WatchParams,
        resource_version: String,
    ) -> BoxFuture<'static, Result<WatchStream<K>, kube_client::Error>> {
        let api = self.api.clone();
        Box::pin(async move { Ok(api.watch(&params, &resource_version).await?.boxed()) })
    }
}

/// Lists and watches only the metadata of objects (`PartialObjectMeta<K>`), which keeps a cache
/// small when a controller needs no more than names, labels and owner references.
pub struct MetadataListWatch<K> {
    api: Api<K>,
}

impl<K> MetadataListWatch<K> {
    /// Wraps an [`Api`] whose objects are read as metadata only.
    pub fn new(api: Api<K>) -> Self {
        MetadataListWatch { api }
    }
}

impl<K> ListWatch<PartialObjectMeta<K>> for MetadataListWatch<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn list(
        &self,
        params: ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<PartialObjectMeta<K>>, kube_client::Error>> {
        let api = self.api.clone();
        Box::pin(async move { api.list_metadata(&params).await })
    }

    fn watch(
        &self,
        params: WatchParams,
        resource_version: String,
    ) -> BoxFuture<'static, Result<WatchStream<PartialObjectMeta<K>>, kube_client::Error>> {
        let api = self.api.clone();
        Box::pin(async move {
            Ok(api
                .watch_metadata(&params, &resource_version)
                .await?
                .boxed())
        })
    }
}
