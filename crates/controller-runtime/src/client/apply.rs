//! Server-side apply through [`Objects`]: the object is sent as an apply configuration
//! (`application/apply-patch+yaml`) with a field manager, so the server merges it with what other
//! managers own and records the fields it sets as this manager's. [`ApplyOptions`] names the
//! field manager and whether conflicts are forced.

use kube_client::api::{Patch, PatchParams};
use serde::Serialize;
use serde_json::Value;

use super::error::Error;
use super::handle::Objects;
use crate::ObjectKey;
use crate::cache::CacheObject;

/// How a server-side apply runs: the field manager it applies as, and whether it takes over
/// fields other managers own ([`force`](Self::force), controller-runtime's `ForceOwnership`).
/// Shaped like kube's `PatchParams::apply(manager).force()`.
///
/// An empty field manager (`ApplyOptions::default()`) applies as the client's default field
/// owner ([`WriteDefaults::with_field_owner`](super::WriteDefaults::with_field_owner)); the
/// server refuses an apply with neither. The client's default field validation and dry run
/// apply too.
///
/// ```
/// use controller_runtime::client::ApplyOptions;
///
/// let options = ApplyOptions::new("my-controller");
/// assert_eq!(options.field_manager, "my-controller");
/// assert!(!options.force);
/// assert!(ApplyOptions::new("my-controller").force().force);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApplyOptions {
    /// The field manager whose fields the configuration sets (required by the API server;
    /// empty: the client's default field owner).
    pub field_manager: String,
    /// Take over fields another manager owns with a different value instead of failing with
    /// a conflict (default `false`).
    pub force: bool,
}

impl ApplyOptions {
    /// Applies as `field_manager`, failing on conflicts.
    pub fn new(field_manager: impl Into<String>) -> Self {
        ApplyOptions {
            field_manager: field_manager.into(),
            force: false,
        }
    }

    /// The options with conflicts forced: the applied fields become this manager's.
    pub fn force(self) -> Self {
        ApplyOptions {
            force: true,
            ..self
        }
    }

    fn params(&self) -> PatchParams {
        let params = PatchParams::apply(&self.field_manager);
        if self.force { params.force() } else { params }
    }
}

impl<K: CacheObject> Objects<K> {
    /// Server-side applies `config` (a typed object, a `DynamicObject` or a
    /// `serde_json::Value`) as `options.field_manager`: the fields it sets become that manager's,
    /// fields the manager applied before and no longer sets are removed unless another manager
    /// owns them. A field another manager owns with a different value is a conflict
    /// ([`Error::Conflict`], the message naming the managers and fields) unless
    /// [`ApplyOptions::force`] takes it over. Creates the object when it does not exist.
    ///
    /// `apiVersion` and `kind` are filled in when absent; `metadata.managedFields` is dropped
    /// (the server refuses an apply configuration that carries them, and a copy of a cached
    /// object does). A `metadata.resourceVersion` left in is a precondition.
    ///
    /// ```no_run
    /// # async fn f(client: controller_runtime::client::Client) -> Result<(), controller_runtime::client::Error> {
    /// use controller_runtime::client::ApplyOptions;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let config = serde_json::json!({
    ///     "metadata": {"name": "settings", "namespace": "default"},
    ///     "data": {"mode": "fast"},
    /// });
    /// let options = ApplyOptions::new("my-controller").force();
    /// let applied: ConfigMap = client.objects::<ConfigMap>().apply(&config, &options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn apply<T: Serialize>(
        &self,
        config: &T,
        options: &ApplyOptions,
    ) -> Result<K, Error> {
        let (key, body) = self.apply_configuration(config)?;
        self.apply_body(&key, body, options).await
    }

    /// Server-side applies a partial object: only the fields `partial` serializes are sent, so
    /// only those become `options.field_manager`'s and the fields of other managers stay as
    /// they are (client-go's apply configurations, controller-runtime's `client.Apply` with an
    /// `ApplyConfiguration`). `partial` is any `Serialize` value whose fields are all optional
    /// and skipped when unset; the object is named by `key`, and `apiVersion` and `kind` are
    /// `K`'s, so `partial` needs neither, nor any `metadata` (labels or annotations it sets are
    /// applied). Otherwise as [`apply`](Self::apply).
    ///
    /// A struct of your own, with only what this manager owns:
    ///
    /// ```no_run
    /// # async fn f(client: controller_runtime::client::Client) -> Result<(), controller_runtime::client::Error> {
    /// use std::collections::BTreeMap;
    /// use controller_runtime::ObjectKey;
    /// use controller_runtime::client::ApplyOptions;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use serde::Serialize;
    ///
    /// /// What the controller sets on a ConfigMap: every field optional, skipped when `None`.
    /// #[derive(Serialize, Default)]
    /// struct ConfigMapApply {
    ///     #[serde(skip_serializing_if = "Option::is_none")]
    ///     data: Option<BTreeMap<String, String>>,
    ///     #[serde(skip_serializing_if = "Option::is_none", rename = "binaryData")]
    ///     binary_data: Option<BTreeMap<String, String>>,
    /// }
    ///
    /// let partial = ConfigMapApply {
    ///     data: Some([("a".to_string(), "1".to_string())].into()),
    ///     ..Default::default()
    /// };
    /// let key = ObjectKey::new("default", "settings");
    /// let options = ApplyOptions::new("my-controller");
    /// // Sends {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings",
    /// // "namespace":"default"},"data":{"a":"1"}}: `my-controller` owns `data.a` only.
    /// let applied: ConfigMap = client.objects::<ConfigMap>().apply_partial(&key, &partial, &options).await?;
    ///
    /// // k8s-openapi's own types are partial objects already: their fields are `Option`s
    /// // skipped when `None`, so a `Default` object with one field set sends that field.
    /// let partial = ConfigMap {
    ///     data: Some([("b".to_string(), "2".to_string())].into()),
    ///     ..Default::default()
    /// };
    /// client.objects::<ConfigMap>().apply_partial(&key, &partial, &options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn apply_partial<T: Serialize>(
        &self,
        key: &ObjectKey,
        partial: &T,
        options: &ApplyOptions,
    ) -> Result<K, Error> {
        let mut config = serde_json::to_value(partial).map_err(Error::Serialize)?;
        let Some(map) = config.as_object_mut() else {
            return Err(Error::Serialize(serde::ser::Error::custom(
                "a partial object must serialize to a JSON object",
            )));
        };
        let meta = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if !meta.is_object() {
            *meta = Value::Object(Default::default());
        }
        let meta = meta.as_object_mut().expect("an object");
        meta.insert("name".into(), Value::from(key.name.clone()));
        match &key.namespace {
            Some(ns) => meta.insert("namespace".into(), Value::from(ns.clone())),
            None => meta.remove("namespace"),
        };
        let (key, body) = self.apply_configuration(&config)?;
        self.apply_body(&key, body, options).await
    }

    /// Sends an apply configuration with the options and the client's defaults.
    async fn apply_body(
        &self,
        key: &ObjectKey,
        body: Value,
        options: &ApplyOptions,
    ) -> Result<K, Error> {
        let params = self.client.defaults.patch_params(&options.params());
        let request = self.request(key.namespace.as_deref());
        self.write(
            request.patch(&key.name, &params, &Patch::Apply(body)),
            params.dry_run,
        )
        .await
    }

    /// Server-side applies `config`'s `status` through the status subresource, as
    /// [`apply`](Self::apply) does for the object (the managed fields are recorded with
    /// `subresource: status`).
    pub async fn apply_status<T: Serialize>(
        &self,
        config: &T,
        options: &ApplyOptions,
    ) -> Result<K, Error> {
        let (key, body) = self.apply_configuration(config)?;
        let params = self.client.defaults.patch_params(&options.params());
        let request = self.request(key.namespace.as_deref());
        self.write(
            request.patch_subresource("status", &key.name, &params, &Patch::Apply(body)),
            params.dry_run,
        )
        .await
    }

    /// The configuration as JSON with `apiVersion` and `kind`, without `managedFields`, and
    /// the object's key.
    fn apply_configuration<T: Serialize>(&self, config: &T) -> Result<(ObjectKey, Value), Error> {
        let mut body = serde_json::to_value(config).map_err(Error::Serialize)?;
        let Some(map) = body.as_object_mut() else {
            return Err(Error::MissingName);
        };
        for (field, value) in [
            ("apiVersion", K::api_version(&self.dt)),
            ("kind", K::kind(&self.dt)),
        ] {
            if map
                .get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                map.insert(field.into(), Value::from(value.into_owned()));
            }
        }
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        let meta_str = |field: &str| {
            body.pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(String::from)
        };
        let Some(name) = meta_str("name") else {
            return Err(Error::MissingName);
        };
        let key = ObjectKey {
            namespace: meta_str("namespace"),
            name,
        };
        Ok((key, body))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_client::api::{ApiResource, DynamicObject, GroupVersionKind};
    use serde_json::json;

    use crate::cache::{Cache, CacheOptions};
    use crate::client::{ApplyOptions, Client, Error};

    async fn client(server: &crt_apiserver::Server) -> Client {
        let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
        let config = kube_client::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube_client::config::KubeConfigOptions::default(),
        )
        .await
        .unwrap();
        let kube = kube_client::Client::try_from(config).unwrap();
        Client::new(Cache::new(kube, CacheOptions::default()))
    }

    #[tokio::test]
    async fn apply_typed_and_dynamic_with_conflicts_and_force() {
        let server = crt_apiserver::Server::start(Default::default())
            .await
            .unwrap();
        let client = client(&server).await;
        let cms = client.objects::<ConfigMap>();
        let config = json!({"metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}});
        let created: ConfigMap = cms.apply(&config, &ApplyOptions::new("one")).await.unwrap();
        assert_eq!(created.data.as_ref().unwrap()["a"], "1");

        // A typed object read back (with managedFields) applies as is.
        let mut mine = created.clone();
        mine.data = Some([("a".to_string(), "2".to_string())].into());
        mine.metadata.resource_version = None;
        let err = cms
            .apply(&mine, &ApplyOptions::new("two"))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Conflict(s) if s.message.contains(r#"conflict with "one": .data.a"#)),
            "{err:?}"
        );
        let forced = cms
            .apply(&mine, &ApplyOptions::new("two").force())
            .await
            .unwrap();
        assert_eq!(forced.data.unwrap()["a"], "2");

        // Dynamic objects: apiVersion and kind come from the ApiResource.
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
        let dynamic = client.objects_with::<DynamicObject>(ar);
        let obj = json!({"metadata": {"name": "c", "namespace": "default"}, "data": {"b": "3"}});
        let out = dynamic
            .apply(&obj, &ApplyOptions::new("three"))
            .await
            .unwrap();
        assert_eq!(out.data["data"], json!({"a": "2", "b": "3"}));
    }
}
