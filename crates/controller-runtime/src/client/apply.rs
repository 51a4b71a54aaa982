//! Server-side apply through [`Objects`]: the object is sent as an apply configuration
//! (`application/apply-patch+yaml`) with a field manager, so the server merges it with what other
//! managers own and records the fields it sets as this manager's.

use kube_client::api::{Patch, PatchParams};
use serde::Serialize;
use serde_json::Value;

use super::{Error, Objects};
use crate::ObjectKey;
use crate::cache::CacheObject;

impl<K: CacheObject> Objects<K> {
    /// Server-side applies `config` (a typed object, a `DynamicObject` or a
    /// `serde_json::Value`) as `field_manager`: the fields it sets become that manager's, fields
    /// the manager applied before and no longer sets are removed unless another manager owns
    /// them. A field another manager owns with a different value is a conflict
    /// ([`Error::Conflict`], the message naming the managers and fields) unless `force` takes
    /// it over. Creates the object when it does not exist.
    ///
    /// `apiVersion` and `kind` are filled in when absent; `metadata.managedFields` is dropped
    /// (the server refuses an apply configuration that carries them, and a copy of a cached
    /// object does). A `metadata.resourceVersion` left in is a precondition.
    ///
    /// ```no_run
    /// # async fn f(client: controller_runtime::client::Client) -> Result<(), controller_runtime::client::Error> {
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// let config = serde_json::json!({
    ///     "metadata": {"name": "settings", "namespace": "default"},
    ///     "data": {"mode": "fast"},
    /// });
    /// let applied: ConfigMap = client.objects::<ConfigMap>().apply(&config, "my-controller", true).await?;
    /// # Ok(()) }
    /// ```
    pub async fn apply<T: Serialize>(
        &self,
        config: &T,
        field_manager: &str,
        force: bool,
    ) -> Result<K, Error> {
        let (key, body) = self.apply_configuration(config)?;
        let params = apply_params(field_manager, force);
        let request = self.request(key.namespace.as_deref());
        self.send(request.patch(&key.name, &params, &Patch::Apply(body)))
            .await
    }

    /// Server-side applies `config`'s `status` through the status subresource, as
    /// [`apply`](Self::apply) does for the object (the managed fields are recorded with
    /// `subresource: status`).
    pub async fn apply_status<T: Serialize>(
        &self,
        config: &T,
        field_manager: &str,
        force: bool,
    ) -> Result<K, Error> {
        let (key, body) = self.apply_configuration(config)?;
        let params = apply_params(field_manager, force);
        let request = self.request(key.namespace.as_deref());
        self.send(request.patch_subresource("status", &key.name, &params, &Patch::Apply(body)))
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

fn apply_params(field_manager: &str, force: bool) -> PatchParams {
    let params = PatchParams::apply(field_manager);
    if force { params.force() } else { params }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_client::api::{ApiResource, DynamicObject, GroupVersionKind};
    use serde_json::json;

    use crate::cache::{Cache, CacheOptions};
    use crate::client::{Client, Error};

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
        let created: ConfigMap = cms.apply(&config, "one", false).await.unwrap();
        assert_eq!(created.data.as_ref().unwrap()["a"], "1");

        // A typed object read back (with managedFields) applies as is.
        let mut mine = created.clone();
        mine.data = Some([("a".to_string(), "2".to_string())].into());
        mine.metadata.resource_version = None;
        let err = cms.apply(&mine, "two", false).await.unwrap_err();
        assert!(
            matches!(&err, Error::Conflict(s) if s.message.contains(r#"conflict with "one": .data.a"#)),
            "{err:?}"
        );
        let forced = cms.apply(&mine, "two", true).await.unwrap();
        assert_eq!(forced.data.unwrap()["a"], "2");

        // Dynamic objects: apiVersion and kind come from the ApiResource.
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
        let dynamic = client.objects_with::<DynamicObject>(ar);
        let obj = json!({"metadata": {"name": "c", "namespace": "default"}, "data": {"b": "3"}});
        let out = dynamic.apply(&obj, "three", false).await.unwrap();
        assert_eq!(out.data["data"], json!({"a": "2", "b": "3"}));
    }
}
