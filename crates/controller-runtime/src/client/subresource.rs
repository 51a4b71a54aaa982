//! Subresources through [`Objects`]: [`SubResource`], a client of one named subresource
//! (`scale`, `status`, `eviction`, `token`, a custom resource's), and the typed helpers
//! [`Objects::get_scale`], [`Objects::update_scale`], [`Objects::patch_scale`],
//! [`Objects::evict`] and [`Objects::create_token`].

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube_client::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::Error;
use super::handle::Objects;
use crate::ObjectKey;
use crate::cache::CacheObject;

/// Reads and writes of one subresource of `K`'s objects (controller-runtime's
/// `client.SubResource(name)`, a `SubResourceClient`), made by [`Objects::subresource`]. The
/// body and the answer are any serde types: the subresource's own kind (`autoscaling/v1
/// Scale`, `policy/v1 Eviction`, `authentication/v1 TokenRequest`), the object itself (for
/// `status`), or `serde_json::Value`. The client's [`WriteDefaults`](super::WriteDefaults)
/// apply to every write, as to the object's.
///
/// An answer that is the object itself (`status`, a custom resource's subresource answering
/// with the object) is recorded like any write of it, so a cached read afterwards sees it.
///
/// ```no_run
/// # async fn f(client: controller_runtime::client::Client) -> Result<(), controller_runtime::client::Error> {
/// use controller_runtime::ObjectKey;
/// use k8s_openapi::api::apps::v1::Deployment;
/// use kube_client::api::{Patch, PatchParams};
///
/// let scale = client.objects::<Deployment>().subresource("scale");
/// let key = ObjectKey::new("default", "web");
/// let current: serde_json::Value = scale.get(&key).await?;
/// let patch = Patch::Merge(serde_json::json!({"spec": {"replicas": 3}}));
/// let _: serde_json::Value = scale.patch(&key, &patch, &PatchParams::default()).await?;
/// # Ok(()) }
/// ```
pub struct SubResource<K: CacheObject> {
    objects: Objects<K>,
    name: String,
}

/// kube-core's `create_subresource` or `replace_subresource`: a subresource write's request.
type BuildWrite = fn(
    &kube_core::Request,
    &str,
    &str,
    &PostParams,
    Vec<u8>,
) -> Result<http::Request<Vec<u8>>, kube_core::request::Error>;

impl<K: CacheObject> Clone for SubResource<K> {
    fn clone(&self) -> Self {
        SubResource {
            objects: self.objects.clone(),
            name: self.name.clone(),
        }
    }
}

impl<K: CacheObject> Objects<K> {
    /// A client of the subresource `name` (`"scale"`, `"status"`, `"eviction"`, `"token"`,
    /// ...) of these objects.
    pub fn subresource(&self, name: impl Into<String>) -> SubResource<K> {
        SubResource {
            objects: self.clone(),
            name: name.into(),
        }
    }

    /// Reads an object's `scale` subresource (`autoscaling/v1 Scale`) from the API server:
    /// Deployments, ReplicaSets, StatefulSets, ReplicationControllers, and custom resources
    /// whose CRD declares `subresources.scale`.
    ///
    /// kube-rs: `Api::get_scale`.
    pub async fn get_scale(&self, key: &ObjectKey) -> Result<Scale, Error> {
        self.subresource("scale").get(key).await
    }

    /// Replaces an object's `scale` subresource: sets the object's replicas to
    /// `scale.spec.replicas`, guarded by `scale.metadata.resourceVersion` when set.
    ///
    /// kube-rs: `Api::replace_scale`.
    pub async fn update_scale(&self, key: &ObjectKey, scale: &Scale) -> Result<Scale, Error> {
        self.subresource("scale").update(key, scale).await
    }

    /// Patches an object's `scale` subresource, e.g. a merge patch of `spec.replicas`.
    ///
    /// kube-rs: `Api::patch_scale`.
    pub async fn patch_scale<P: Serialize + std::fmt::Debug>(
        &self,
        key: &ObjectKey,
        patch: &Patch<P>,
        params: &PatchParams,
    ) -> Result<Scale, Error> {
        self.subresource("scale").patch(key, patch, params).await
    }
}

impl Objects<Pod> {
    /// Evicts a pod: posts a `policy/v1 Eviction` to its `eviction` subresource, which
    /// deletes it with `params` (grace period, preconditions, dry run) unless a
    /// PodDisruptionBudget forbids it (429 `TooManyRequests`, an [`Error::Api`]).
    ///
    /// kube-rs: `Api::<Pod>::evict`.
    pub async fn evict(&self, key: &ObjectKey, params: &DeleteParams) -> Result<(), Error> {
        let params = self.defaults().delete_params(params);
        let mut eviction = serde_json::json!({
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": key.name},
            "deleteOptions": params,
        });
        if let Some(ns) = &key.namespace {
            eviction["metadata"]["namespace"] = Value::from(ns.clone());
        }
        let _: Value = self.subresource("eviction").create(key, &eviction).await?;
        Ok(())
    }
}

impl Objects<ServiceAccount> {
    /// Asks for a token of a ServiceAccount through its `token` subresource (an
    /// `authentication/v1 TokenRequest`: audiences, expiration, a bound object); the answer's
    /// `status.token` is the token (`kubectl create token`).
    ///
    /// kube-rs: `Api::<ServiceAccount>::create_token_request`.
    pub async fn create_token(
        &self,
        key: &ObjectKey,
        request: &TokenRequest,
    ) -> Result<TokenRequest, Error> {
        self.subresource("token").create(key, request).await
    }
}

impl<K: CacheObject> SubResource<K> {
    /// The subresource's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads the subresource of the object of `key` from the API server.
    pub async fn get<T: DeserializeOwned>(&self, key: &ObjectKey) -> Result<T, Error> {
        let request = self.objects.request(key.namespace.as_deref());
        self.objects
            .send(request.get_subresource(&self.name, &key.name))
            .await
    }

    /// Creates the subresource of the object of `key` (a `POST`: an eviction, a token
    /// request, a binding).
    pub async fn create<B: Serialize, T: DeserializeOwned>(
        &self,
        key: &ObjectKey,
        body: &B,
    ) -> Result<T, Error> {
        self.post_or_put(key, body, kube_core::Request::create_subresource)
            .await
    }

    /// Replaces the subresource of the object of `key` (a `PUT`).
    pub async fn update<B: Serialize, T: DeserializeOwned>(
        &self,
        key: &ObjectKey,
        body: &B,
    ) -> Result<T, Error> {
        self.post_or_put(key, body, kube_core::Request::replace_subresource)
            .await
    }

    /// Patches the subresource of the object of `key`; what `params` leaves unset comes from
    /// the client's defaults.
    pub async fn patch<P: Serialize + std::fmt::Debug, T: DeserializeOwned>(
        &self,
        key: &ObjectKey,
        patch: &Patch<P>,
        params: &PatchParams,
    ) -> Result<T, Error> {
        let params = self.objects.defaults().patch_params(params);
        let request = self.objects.request(key.namespace.as_deref());
        let built = request.patch_subresource(&self.name, &key.name, &params, patch);
        self.answer(built, params.dry_run).await
    }

    /// Sends a write; an answer that is a `K` (not a dry run) is recorded as a write of the
    /// object.
    /// A `POST` or `PUT` of the subresource (`build` is kube-core's `create_subresource` or
    /// `replace_subresource`), with the client's write defaults.
    async fn post_or_put<B: Serialize, T: DeserializeOwned>(
        &self,
        key: &ObjectKey,
        body: &B,
        build: BuildWrite,
    ) -> Result<T, Error> {
        let body = serde_json::to_vec(body).map_err(Error::Serialize)?;
        let defaults = self.objects.defaults();
        let params = defaults.post_params(&PostParams::default());
        let request = self.objects.request(key.namespace.as_deref());
        let built = defaults.validate_post(build(&request, &self.name, &key.name, &params, body));
        self.answer(built, params.dry_run).await
    }

    async fn answer<T: DeserializeOwned>(
        &self,
        built: Result<http::Request<Vec<u8>>, kube_core::request::Error>,
        dry_run: bool,
    ) -> Result<T, Error> {
        let answer: Value = self.objects.send(built).await?;
        if !dry_run
            && self.is_object(&answer)
            && let Ok(object) = serde_json::from_value::<K>(answer.clone())
        {
            let objects = &self.objects;
            objects.client.cache.record_write(&objects.dt, &object);
        }
        serde_json::from_value(answer)
            .map_err(|e| Error::Transport(kube_client::Error::SerdeError(e)))
    }

    /// Whether an answer is an object of `K` (its apiVersion and kind).
    fn is_object(&self, answer: &Value) -> bool {
        let text = |field: &str| answer.get(field).and_then(Value::as_str);
        text("kind") == Some(&*K::kind(&self.objects.dt))
            && text("apiVersion") == Some(&*K::api_version(&self.objects.dt))
    }
}
