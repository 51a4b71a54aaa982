//! The client a reconciler uses: reads come from the cache, writes go to the API server.
//!
//! ```no_run
//! # async fn f(client: controller_runtime::client::Client) -> Result<(), controller_runtime::client::Error> {
//! use controller_runtime::ObjectKey;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! let configmaps = client.objects::<ConfigMap>();
//! let cm = configmaps.get(&ObjectKey::new("default", "settings")).await?; // from the cache
//! let mut changed = (*cm).clone();
//! changed.data.get_or_insert_default().insert("mode".into(), "fast".into());
//! configmaps.update(&changed).await?; // to the API server
//! # Ok(()) }
//! ```
//!
//! Reads see this process's own writes: after a write through this client (create, update,
//! patch, apply, delete, the status subresource), a cached read of that object returns the
//! write or something newer, waiting a bounded time for the informer to store it, and a cached
//! list includes it (see [`ReadYourWrites`](crate::cache::ReadYourWrites), on by default).
//!
//! Reads return the cache's shared `Arc`s: clone an object (as above) only to change it. For a
//! read that must see the server's latest state, use the `*_uncached` reads. Server-side apply
//! (the object as a field manager's apply configuration, with [`ApplyOptions`]):
//! [`Objects::apply`], [`Objects::apply_status`], and of a partial object (only the fields
//! set): [`Objects::apply_partial`].
//!
//! Defaults for every write (field owner, field validation, dry run) are set once on the
//! client with [`Client::with_defaults`] and [`WriteDefaults`]. Subresources (`scale`,
//! `status`, `pods/eviction`, `serviceaccounts/token`, a custom resource's own) are read and
//! written through [`Objects::subresource`] and the typed helpers [`Objects::get_scale`],
//! [`Objects::update_scale`], [`Objects::patch_scale`], [`Objects::evict`] and
//! [`Objects::create_token`].

mod apply;
mod error;
mod handle;
mod options;
mod subresource;

use std::sync::Arc;

use kube_client::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_client::core::ObjectList;
use kube_core::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use apply::ApplyOptions;
pub use error::Error;
pub use handle::{Client, Objects};
pub use options::{FieldValidation, WriteDefaults};
pub use subresource::SubResource;

use crate::ObjectKey;
use crate::cache::{Cache, CacheObject, ListOptions};

impl Client {
    /// A client that reads from `cache` and writes through the cache's kube-client.
    pub fn new(cache: Cache) -> Self {
        Client {
            cache,
            defaults: Arc::default(),
        }
    }

    /// This client with `defaults` applied to every write it makes, a call's own parameters
    /// winning (controller-runtime's `client.WithFieldOwner`, `client.WithFieldValidation`,
    /// `client.WithDryRun`). The client it was made from keeps its own defaults; both share
    /// the cache.
    ///
    /// ```no_run
    /// # async fn f(client: controller_runtime::client::Client) -> Result<(), controller_runtime::client::Error> {
    /// use controller_runtime::client::{FieldValidation, WriteDefaults};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let client = client.with_defaults(
    ///     WriteDefaults::default()
    ///         .with_field_owner("my-controller")
    ///         .with_field_validation(FieldValidation::Strict),
    /// );
    /// let cm = ConfigMap {
    ///     metadata: kube_core::ObjectMeta {
    ///         name: Some("settings".into()),
    ///         namespace: Some("default".into()),
    ///         ..Default::default()
    ///     },
    ///     ..Default::default()
    /// };
    /// // managedFields: manager "my-controller", operation Update.
    /// client.objects::<ConfigMap>().create(&cm).await?;
    /// # Ok(()) }
    /// ```
    pub fn with_defaults(&self, defaults: WriteDefaults) -> Self {
        Client {
            cache: self.cache.clone(),
            defaults: Arc::new(defaults),
        }
    }

    /// The defaults applied to this client's writes.
    pub fn defaults(&self) -> &WriteDefaults {
        &self.defaults
    }

    /// The cache reads come from.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The kube-client writes go through.
    pub fn kube_client(&self) -> &kube_client::Client {
        self.cache.client()
    }

    /// Reads and writes of a static type (k8s-openapi, `#[derive(CustomResource)]`).
    pub fn objects<K>(&self) -> Objects<K>
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        self.objects_with(())
    }

    /// Reads and writes of any type with its dynamic type (an `ApiResource` for
    /// `DynamicObject`).
    pub fn objects_with<K: CacheObject>(&self, dt: K::DynamicType) -> Objects<K> {
        Objects {
            client: self.clone(),
            dt,
        }
    }
}

impl<K: CacheObject> Clone for Objects<K> {
    fn clone(&self) -> Self {
        Objects {
            client: self.client.clone(),
            dt: self.dt.clone(),
        }
    }
}

impl<K: CacheObject> Objects<K> {
    fn request(&self, namespace: Option<&str>) -> kube_core::Request {
        kube_core::Request::new(K::url_path(&self.dt, namespace))
    }

    async fn send<T: DeserializeOwned>(
        &self,
        built: Result<http::Request<Vec<u8>>, kube_core::request::Error>,
    ) -> Result<T, Error> {
        let request = built.map_err(|e| Error::Transport(kube_client::Error::BuildRequest(e)))?;
        Ok(self.client.kube_client().request::<T>(request).await?)
    }

    /// Sends a write whose answer is the object written, and records it so cached reads wait
    /// for it (see [`ReadYourWrites`](crate::cache::ReadYourWrites)), unless it was a dry run.
    async fn write(
        &self,
        built: Result<http::Request<Vec<u8>>, kube_core::request::Error>,
        dry_run: bool,
    ) -> Result<K, Error> {
        let written: K = self.send(built).await?;
        if !dry_run {
            self.client.cache.record_write(&self.dt, &written);
        }
        Ok(written)
    }

    /// The client's defaults.
    fn defaults(&self) -> &WriteDefaults {
        &self.client.defaults
    }

    /// Reads an object from the cache.
    pub async fn get(&self, key: &ObjectKey) -> Result<Arc<K>, Error> {
        Ok(self.client.cache.get_with::<K>(&self.dt, key).await?)
    }

    /// Lists objects from the cache.
    pub async fn list(&self, options: &ListOptions) -> Result<Vec<Arc<K>>, Error> {
        Ok(self.client.cache.list_with::<K>(&self.dt, options).await?)
    }

    /// Reads an object from the API server, bypassing the cache.
    pub async fn get_uncached(&self, key: &ObjectKey) -> Result<K, Error> {
        let request = self.request(key.namespace.as_deref());
        self.send(request.get(&key.name, &Default::default())).await
    }

    /// Lists objects from the API server, bypassing the cache.
    pub async fn list_uncached(
        &self,
        namespace: Option<&str>,
        params: &ListParams,
    ) -> Result<Vec<K>, Error> {
        let list: ObjectList<K> = self.send(self.request(namespace).list(params)).await?;
        Ok(list.items)
    }

    /// Creates an object.
    pub async fn create(&self, obj: &K) -> Result<K, Error>
    where
        K: Serialize,
    {
        let body = serde_json::to_vec(obj).map_err(Error::Serialize)?;
        let params = self.defaults().post_params(&PostParams::default());
        let request = self.request(obj.meta().namespace.as_deref());
        let built = self.defaults().validate_post(request.create(&params, body));
        self.write(built, params.dry_run).await
    }

    /// Replaces an object (its `metadata.resourceVersion` guards against lost updates).
    pub async fn update(&self, obj: &K) -> Result<K, Error>
    where
        K: Serialize,
    {
        let (key, body) = key_and_body(obj)?;
        let params = self.defaults().post_params(&PostParams::default());
        let request = self.request(key.namespace.as_deref());
        let built = self
            .defaults()
            .validate_post(request.replace(&key.name, &params, body));
        self.write(built, params.dry_run).await
    }

    /// Replaces an object's status subresource.
    pub async fn update_status(&self, obj: &K) -> Result<K, Error>
    where
        K: Serialize,
    {
        let (key, body) = key_and_body(obj)?;
        let params = self.defaults().post_params(&PostParams::default());
        let request = self.request(key.namespace.as_deref());
        let built = self
            .defaults()
            .validate_post(request.replace_subresource("status", &key.name, &params, body));
        self.write(built, params.dry_run).await
    }

    /// Patches an object (merge, JSON, strategic merge or server-side apply). What `params`
    /// leaves unset comes from the client's [`WriteDefaults`].
    pub async fn patch<P: Serialize + std::fmt::Debug>(
        &self,
        key: &ObjectKey,
        patch: &Patch<P>,
        params: &PatchParams,
    ) -> Result<K, Error> {
        let params = self.defaults().patch_params(params);
        let request = self.request(key.namespace.as_deref());
        self.write(request.patch(&key.name, &params, patch), params.dry_run)
            .await
    }

    /// Patches an object's status subresource.
    pub async fn patch_status<P: Serialize + std::fmt::Debug>(
        &self,
        key: &ObjectKey,
        patch: &Patch<P>,
        params: &PatchParams,
    ) -> Result<K, Error> {
        let params = self.defaults().patch_params(params);
        let request = self.request(key.namespace.as_deref());
        self.write(
            request.patch_subresource("status", &key.name, &params, patch),
            params.dry_run,
        )
        .await
    }

    /// Deletes an object. With finalizers it is only marked for deletion. A dry run (the
    /// client's default or `params`') deletes nothing.
    pub async fn delete(&self, key: &ObjectKey, params: &DeleteParams) -> Result<(), Error> {
        let params = self.defaults().delete_params(params);
        let answer: serde_json::Value = self
            .send(
                self.request(key.namespace.as_deref())
                    .delete(&key.name, &params),
            )
            .await?;
        if !params.dry_run {
            self.client.cache.record_delete::<K>(&self.dt, key, &answer);
        }
        Ok(())
    }

    /// Deletes every object in `namespace` (or cluster-wide) that `list` selects.
    pub async fn delete_all_of(
        &self,
        namespace: Option<&str>,
        list: &ListParams,
        params: &DeleteParams,
    ) -> Result<(), Error> {
        let params = self.defaults().delete_params(params);
        let answer: serde_json::Value = self
            .send(self.request(namespace).delete_collection(&params, list))
            .await?;
        if params.dry_run {
            return Ok(());
        }
        // The answer lists what was deleted (or marked for deletion).
        let items = answer.get("items").and_then(serde_json::Value::as_array);
        for item in items.into_iter().flatten() {
            let text = |field: &str| {
                item.pointer(&format!("/metadata/{field}"))
                    .and_then(serde_json::Value::as_str)
            };
            if let Some(name) = text("name") {
                let key = ObjectKey {
                    namespace: text("namespace").map(String::from),
                    name: name.to_string(),
                };
                self.client.cache.record_delete::<K>(&self.dt, &key, item);
            }
        }
        Ok(())
    }
}

fn key_and_body<K: Resource + Serialize>(obj: &K) -> Result<(ObjectKey, Vec<u8>), Error> {
    let key = ObjectKey::of(obj);
    if key.name.is_empty() {
        return Err(Error::MissingName);
    }
    Ok((key, serde_json::to_vec(obj).map_err(Error::Serialize)?))
}
