//! The client's write defaults (`Client::with_defaults`: field owner, field validation, dry
//! run) on every kind of write, and server-side apply of a partial object
//! (`Objects::apply_partial`), against the embedded API server.

use crate::support;

use std::collections::BTreeMap;

use controller_runtime::ObjectKey;
use controller_runtime::cache::{Cache, CacheOptions};
use controller_runtime::client::{ApplyOptions, Client, Error, FieldValidation, WriteDefaults};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use kube_client::core::GroupVersionKind;
use serde::Serialize;
use serde_json::json;

fn client(kube: kube_client::Client) -> Client {
    Client::new(Cache::new(kube, CacheOptions::default()))
}

fn configmap(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "data": data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
    }))
    .unwrap()
}

/// The managers of an object's managedFields, with their operation and fields, in order.
fn managers(cm: &ConfigMap) -> Vec<(String, String, serde_json::Value)> {
    cm.metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|entry| {
            (
                entry.manager.clone().unwrap_or_default(),
                entry.operation.clone().unwrap_or_default(),
                serde_json::to_value(&entry.fields_v1).unwrap(),
            )
        })
        .collect()
}

/// The managers of an object's managedFields, sorted (the server orders entries of one second
/// by name).
fn manager_names(cm: &ConfigMap) -> Vec<String> {
    let mut names: Vec<String> = managers(cm).into_iter().map(|m| m.0).collect();
    names.sort();
    names
}

#[tokio::test]
async fn dry_run_default_persists_nothing() {
    let (_server, kube) = support::server().await;
    let real = client(kube);
    let dry = real.with_defaults(WriteDefaults::default().with_dry_run(true));
    let cms = dry.objects::<ConfigMap>();
    let key = ObjectKey::new("default", "dry");

    // A dry-run create answers the object as it would be stored, and stores nothing.
    let answered = cms.create(&configmap("dry", &[("a", "1")])).await.unwrap();
    assert_eq!(answered.data.unwrap()["a"], "1");
    let err = real
        .objects::<ConfigMap>()
        .get_uncached(&key)
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err:?}");

    // Update, patch, apply and delete of a real object change nothing either.
    let stored = real
        .objects::<ConfigMap>()
        .create(&configmap("dry", &[("a", "1")]))
        .await
        .unwrap();
    let mut changed = stored.clone();
    changed.data = Some([("a".to_string(), "2".to_string())].into());
    assert_eq!(cms.update(&changed).await.unwrap().data.unwrap()["a"], "2");
    let patch = Patch::Merge(json!({"data": {"a": "3"}}));
    let patched = cms
        .patch(&key, &patch, &PatchParams::default())
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["a"], "3");
    let config = json!({"metadata": {"name": "dry", "namespace": "default"}, "data": {"a": "4"}});
    let applied = cms
        .apply(&config, &ApplyOptions::new("dry").force())
        .await
        .unwrap();
    assert_eq!(applied.data.unwrap()["a"], "4");
    cms.delete(&key, &DeleteParams::default()).await.unwrap();

    let now = real
        .objects::<ConfigMap>()
        .get_uncached(&key)
        .await
        .unwrap();
    assert_eq!(now.data.unwrap()["a"], "1");
    assert_eq!(
        now.metadata.resource_version,
        stored.metadata.resource_version
    );
}

#[tokio::test]
async fn default_field_owner_on_create_update_and_patch() {
    let (_server, kube) = support::server().await;
    let base = client(kube);
    let owned = |owner: &str| base.with_defaults(WriteDefaults::default().with_field_owner(owner));
    let key = ObjectKey::new("default", "owned");

    let created = owned("creator")
        .objects::<ConfigMap>()
        .create(&configmap("owned", &[("a", "1")]))
        .await
        .unwrap();
    assert_eq!(
        managers(&created),
        [(
            "creator".to_string(),
            "Update".to_string(),
            json!({"f:data": {".": {}, "f:a": {}}})
        )]
    );

    let mut changed = created.clone();
    changed
        .data
        .as_mut()
        .unwrap()
        .insert("b".into(), "2".into());
    let updated = owned("updater")
        .objects::<ConfigMap>()
        .update(&changed)
        .await
        .unwrap();
    let names = manager_names(&updated);
    assert_eq!(names, ["creator", "updater"]);
    let updater = managers(&updated).into_iter().find(|m| m.0 == "updater");
    assert_eq!(updater.unwrap().2, json!({"f:data": {"f:b": {}}}));

    let patcher = owned("patcher");
    let patch = Patch::Merge(json!({"data": {"c": "3"}}));
    let patched = patcher
        .objects::<ConfigMap>()
        .patch(&key, &patch, &PatchParams::default())
        .await
        .unwrap();
    let names = manager_names(&patched);
    assert_eq!(names, ["creator", "patcher", "updater"]);

    // The call's own field manager wins over the default.
    let patch = Patch::Merge(json!({"data": {"d": "4"}}));
    let params = PatchParams {
        field_manager: Some("explicit".into()),
        ..Default::default()
    };
    let patched = patcher
        .objects::<ConfigMap>()
        .patch(&key, &patch, &params)
        .await
        .unwrap();
    let names = manager_names(&patched);
    assert_eq!(names, ["creator", "explicit", "patcher", "updater"]);

    // An apply without a field manager of its own applies as the default owner.
    let config = json!({"metadata": {"name": "owned", "namespace": "default"}, "data": {"e": "5"}});
    let applied = patcher
        .objects::<ConfigMap>()
        .apply(&config, &ApplyOptions::default())
        .await
        .unwrap();
    assert!(
        managers(&applied)
            .iter()
            .any(|(name, op, _)| name == "patcher" && op == "Apply"),
        "{:?}",
        managers(&applied)
    );
}

#[tokio::test]
async fn strict_validation_default_refuses_unknown_fields() {
    let (_server, kube) = support::server().await;
    let base = client(kube);
    let strict =
        base.with_defaults(WriteDefaults::default().with_field_validation(FieldValidation::Strict));
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
    let unknown: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "strict", "namespace": "default"},
        "data": {"a": "1"},
        "bogus": true,
    }))
    .unwrap();

    let err = strict
        .objects_with::<DynamicObject>(ar.clone())
        .create(&unknown)
        .await
        .unwrap_err();
    let status = err.status().expect("an API error");
    assert_eq!(status.code, 400, "{err:?}");
    assert!(status.message.contains("bogus"), "{}", status.message);

    // A patch under the default is refused too, unless the call says otherwise.
    let created = base
        .objects_with::<DynamicObject>(ar.clone())
        .create(&unknown)
        .await
        .expect("the server's default (Warn) drops the unknown field");
    assert!(created.data.get("bogus").is_none());
    let key = ObjectKey::new("default", "strict");
    let patch = Patch::Merge(json!({"bogus": 1}));
    let objects = strict.objects_with::<DynamicObject>(ar);
    let err = objects
        .patch(&key, &patch, &PatchParams::default())
        .await
        .unwrap_err();
    assert_eq!(err.status().map(|s| s.code), Some(400), "{err:?}");
    let ignore = PatchParams::default().validation_ignore();
    objects.patch(&key, &patch, &ignore).await.unwrap();
}

/// What this test's controller applies to a ConfigMap: every field optional.
#[derive(Serialize, Default)]
struct ConfigMapApply {
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    immutable: Option<bool>,
}

#[tokio::test]
async fn partial_apply_owns_only_what_it_sets() {
    let (_server, kube) = support::server().await;
    let client = client(kube);
    let cms = client.objects::<ConfigMap>();
    let key = ObjectKey::new("default", "shared");

    // Another manager owns data.b and data.c.
    let theirs = json!({"metadata": {"name": "shared", "namespace": "default"},
        "data": {"b": "2", "c": "3"}});
    cms.apply(&theirs, &ApplyOptions::new("other"))
        .await
        .unwrap();

    // This manager applies only data.a, from a struct of optional fields.
    let partial = ConfigMapApply {
        data: Some([("a".to_string(), "1".to_string())].into()),
        ..Default::default()
    };
    let applied = cms
        .apply_partial(&key, &partial, &ApplyOptions::new("mine"))
        .await
        .unwrap();
    let data = applied.data.clone().unwrap();
    assert_eq!(data["a"], "1");
    assert_eq!(data["b"], "2");
    assert_eq!(data["c"], "3");
    let fields = managers(&applied);
    let mine: Vec<_> = fields.iter().filter(|m| m.0 == "mine").collect();
    assert_eq!(mine.len(), 1, "{fields:?}");
    assert_eq!(mine[0].1, "Apply");
    assert_eq!(mine[0].2, json!({"f:data": {"f:a": {}}}));
    let other: Vec<_> = fields.iter().filter(|m| m.0 == "other").collect();
    assert_eq!(other[0].2, json!({"f:data": {"f:b": {}, "f:c": {}}}));

    // k8s-openapi's types are partial objects too: a Default ConfigMap with data.a changed
    // sends only data.a, and the other manager's fields stay.
    let typed = ConfigMap {
        data: Some([("a".to_string(), "10".to_string())].into()),
        ..Default::default()
    };
    let applied = cms
        .apply_partial(&key, &typed, &ApplyOptions::new("mine"))
        .await
        .unwrap();
    let data = applied.data.unwrap();
    assert_eq!((&*data["a"], &*data["b"], &*data["c"]), ("10", "2", "3"));

    // Setting a field the other manager owns is a conflict, naming it.
    let partial = ConfigMapApply {
        data: Some([("b".to_string(), "20".to_string())].into()),
        ..Default::default()
    };
    let err = cms
        .apply_partial(&key, &partial, &ApplyOptions::new("mine"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Conflict(s) if s.message.contains(".data.b")),
        "{err:?}"
    );
}
