//! controllerutil against the embedded API server: create-or-update and create-or-patch
//! (what they write, and that they write nothing when nothing changed), owner references
//! (one controller, garbage collection) and finalizers.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;
use support::server;

use controller_runtime::ObjectKey;
use controller_runtime::cache::{Cache, CacheObject, CacheOptions};
use controller_runtime::client::{Client, Objects};
use controller_runtime::controllerutil::{
    self, Error, OperationResult, OwnerReferenceError, add_finalizer, contains_finalizer,
    create_or_patch, create_or_update, has_controller_reference, remove_finalizer,
    set_controller_reference, set_owner_reference,
};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, Namespace, PodSpec, PodTemplateSpec, Secret,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_client::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_client::core::ObjectMeta;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A started server, a kube-client for it, and the controller-runtime client (cache reads,
/// API writes) on a started cache. Cancel the token at the end.
async fn setup() -> (
    crt_apiserver::Server,
    kube_client::Client,
    Client,
    CancellationToken,
) {
    let (server, kube) = server().await;
    let cache = Cache::new(kube.clone(), CacheOptions::default());
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    (server, kube, Client::new(cache), ctx)
}

fn meta(namespace: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: Some(namespace.into()),
        name: Some(name.into()),
        ..Default::default()
    }
}

/// A ConfigMap named `default/name`, nothing else: what a reconciler passes in.
fn named_cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: meta("default", name),
        ..Default::default()
    }
}

/// Waits (at most 20 s, polling) until the cache holds `key` at `resource_version`.
async fn cached_at<K: CacheObject>(objects: &Objects<K>, key: &ObjectKey, resource_version: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(obj) = objects.get(key).await
            && obj.meta().resource_version.as_deref() == Some(resource_version)
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for the cache to hold {key} at {resource_version}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn rv<K: kube_client::core::Resource>(obj: &K) -> String {
    obj.meta()
        .resource_version
        .clone()
        .expect("a resourceVersion")
}

/// The server's current resourceVersion: one global counter every write bumps.
async fn server_rv(kube: &kube_client::Client) -> String {
    Api::<Namespace>::all(kube.clone())
        .list_metadata(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
}

fn settings(
    mode: &'static str,
) -> impl FnOnce(&mut ConfigMap) -> Result<(), controllerutil::MutateError> {
    move |cm| {
        cm.data
            .get_or_insert_default()
            .insert("mode".into(), mode.into());
        cm.metadata
            .labels
            .get_or_insert_default()
            .insert("app".into(), "web".into());
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_or_update_writes_nothing_when_the_object_already_matches() {
    let (_server, kube, client, ctx) = setup().await;
    let cms = client.objects::<ConfigMap>();
    let key = ObjectKey::new("default", "settings");

    let mut cm = named_cm("settings");
    let result = create_or_update(&cms, &mut cm, settings("fast"))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Created);
    assert_eq!(result.to_string(), "created");
    let created_rv = rv(&cm);
    assert!(cm.metadata.uid.is_some(), "obj holds the object as created");
    let on_server = cms.get_uncached(&key).await.unwrap();
    assert_eq!(on_server.data.as_ref().unwrap()["mode"], "fast");
    cached_at(&cms, &key, &created_rv).await;

    // The same desired state again: nothing reaches the server.
    let before = server_rv(&kube).await;
    let mut cm = named_cm("settings");
    let result = create_or_update(&cms, &mut cm, settings("fast"))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Unchanged);
    assert_eq!(result.to_string(), "unchanged");
    assert_eq!(rv(&cm), created_rv);
    let after = cms.get_uncached(&key).await.unwrap();
    assert_eq!(rv(&after), created_rv, "the object was not written");
    assert_eq!(
        after.metadata.managed_fields, on_server.metadata.managed_fields,
        "no write recorded a field manager"
    );
    assert_eq!(
        server_rv(&kube).await,
        before,
        "no write at all reached the server"
    );

    // Spellings of "unset" the server stores alike are no change either.
    let mut cm = named_cm("settings");
    let result = create_or_update(&cms, &mut cm, |cm| {
        settings("fast")(cm)?;
        cm.metadata.finalizers = Some(vec![]);
        cm.binary_data = Some(BTreeMap::new());
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(result, OperationResult::Unchanged);
    assert_eq!(server_rv(&kube).await, before);

    // A change is written, over the object as cached: other fields stay.
    let mut cm = named_cm("settings");
    let result = create_or_update(&cms, &mut cm, settings("slow"))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Updated);
    assert_ne!(rv(&cm), created_rv);
    let updated = cms.get_uncached(&key).await.unwrap();
    assert_eq!(updated.data.unwrap()["mode"], "slow");
    assert_eq!(updated.metadata.labels.unwrap()["app"], "web");
    assert_eq!(updated.metadata.uid, on_server.metadata.uid);
    assert_ne!(
        server_rv(&kube).await,
        before,
        "a write does move the server's resourceVersion"
    );
    ctx.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_or_update_refuses_renames_and_reports_mutate_errors() {
    let (_server, kube, client, ctx) = setup().await;
    let cms = client.objects::<ConfigMap>();
    let before = server_rv(&kube).await;

    let mut cm = named_cm("renamed");
    let err = create_or_update(&cms, &mut cm, |cm| {
        cm.metadata.name = Some("other".into());
        Ok(())
    })
    .await
    .unwrap_err();
    assert!(matches!(err, Error::KeyChanged { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "the mutate function cannot mutate object name and/or object namespace \
         (default/renamed became default/other)"
    );

    let mut cm = named_cm("failing");
    let err = create_or_update(&cms, &mut cm, |_| Err("no settings for this one".into()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Mutate { .. }), "{err:?}");
    assert_eq!(err.to_string(), "mutating default/failing");
    assert_eq!(
        std::error::Error::source(&err).unwrap().to_string(),
        "no settings for this one"
    );

    let mut unnamed = ConfigMap::default();
    let err = create_or_patch(&cms, &mut unnamed, |_| Ok(()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::MissingName), "{err:?}");
    assert_eq!(server_rv(&kube).await, before, "nothing was written");

    ctx.cancel();
}

fn web_spec() -> DeploymentSpec {
    let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
    DeploymentSpec {
        selector: LabelSelector {
            match_labels: Some(labels.clone()),
            ..Default::default()
        },
        template: PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(labels),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "web".into(),
                    image: Some("nginx".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
        },
        ..Default::default()
    }
}

/// A mutate function for the Deployment `web`: its replicas and, when given, its
/// `status.observedGeneration`.
fn web(
    replicas: i32,
    observed: Option<i64>,
) -> impl FnOnce(&mut Deployment) -> Result<(), controllerutil::MutateError> {
    move |d| {
        // Set what is managed here; keep what the server defaulted.
        d.spec.get_or_insert_with(web_spec).replicas = Some(replicas);
        if let Some(generation) = observed {
            d.status.get_or_insert_default().observed_generation = Some(generation);
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_or_patch_patches_the_object_and_its_status_apart() {
    let (_server, kube, client, ctx) = setup().await;
    let deployments = client.objects::<Deployment>();
    let key = ObjectKey::new("default", "web");
    let named = || Deployment {
        metadata: meta("default", "web"),
        ..Default::default()
    };
    let server_side = || async { deployments.get_uncached(&key).await.unwrap() };

    let mut d = named();
    let result = create_or_patch(&deployments, &mut d, web(1, Some(1)))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Created);
    let created = server_side().await;
    assert_eq!(created.spec.as_ref().unwrap().replicas, Some(1));
    let status = created.status.as_ref().and_then(|s| s.observed_generation);
    assert_eq!(status, None, "a create writes no status");
    cached_at(&deployments, &key, &rv(&created)).await;

    // The same again: nothing written.
    let before = server_rv(&kube).await;
    let mut d = named();
    let result = create_or_patch(&deployments, &mut d, web(1, None))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Unchanged);
    assert_eq!(server_rv(&kube).await, before);
    assert_eq!(rv(&server_side().await), rv(&created));

    // Only the status differs: one status patch.
    let mut d = named();
    let result = create_or_patch(&deployments, &mut d, web(1, Some(1)))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::UpdatedStatusOnly);
    assert_eq!(result.to_string(), "updatedStatusOnly");
    let patched = server_side().await;
    assert_eq!(
        patched.status.as_ref().unwrap().observed_generation,
        Some(1)
    );
    assert_eq!(patched.metadata.generation, created.metadata.generation);
    assert_eq!(rv(&d), rv(&patched), "obj holds the status patch's answer");
    cached_at(&deployments, &key, &rv(&patched)).await;

    // Only the object differs: one patch, the status as it was.
    let mut d = named();
    let result = create_or_patch(&deployments, &mut d, web(2, Some(1)))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Updated);
    let patched = server_side().await;
    assert_eq!(patched.spec.as_ref().unwrap().replicas, Some(2));
    assert_eq!(
        patched.status.as_ref().unwrap().observed_generation,
        Some(1)
    );
    cached_at(&deployments, &key, &rv(&patched)).await;

    // Both.
    let mut d = named();
    let result = create_or_patch(&deployments, &mut d, web(3, Some(3)))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::UpdatedStatus);
    assert_eq!(result.to_string(), "updatedStatus");
    let patched = server_side().await;
    assert_eq!(patched.spec.as_ref().unwrap().replicas, Some(3));
    assert_eq!(
        patched.status.as_ref().unwrap().observed_generation,
        Some(3)
    );
    cached_at(&deployments, &key, &rv(&patched)).await;

    // A patch carries only what the mutate function changed: a field another writer set
    // meanwhile, which the cache may not have seen, survives.
    Api::<Deployment>::namespaced(kube.clone(), "default")
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"other": "writer"}}})),
        )
        .await
        .unwrap();
    let mut d = named();
    let result = create_or_patch(&deployments, &mut d, web(4, None))
        .await
        .unwrap();
    assert_eq!(result, OperationResult::Updated);
    let patched = server_side().await;
    assert_eq!(patched.spec.as_ref().unwrap().replicas, Some(4));
    assert_eq!(patched.metadata.annotations.unwrap()["other"], "writer");
    ctx.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_controller_per_object_and_garbage_collection_by_owners() {
    let (_server, kube, client, ctx) = setup().await;
    let cms = client.objects::<ConfigMap>();
    let owner_a = Api::<ConfigMap>::namespaced(kube.clone(), "default")
        .create(&PostParams::default(), &named_cm("owner-a"))
        .await
        .unwrap();
    let owner_b = Api::<Secret>::namespaced(kube.clone(), "default")
        .create(
            &PostParams::default(),
            &Secret {
                metadata: meta("default", "owner-b"),
                ..Default::default()
            },
        )
        .await
        .unwrap();

    let mut child = named_cm("child");
    let result = create_or_update(&cms, &mut child, |cm| {
        set_controller_reference(&owner_a, cm)?;
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(result, OperationResult::Created);
    let key = ObjectKey::new("default", "child");
    let on_server = cms.get_uncached(&key).await.unwrap();
    assert!(has_controller_reference(&on_server));
    let refs = on_server.metadata.owner_references.as_ref().unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(
        (
            refs[0].api_version.as_str(),
            refs[0].kind.as_str(),
            refs[0].name.as_str(),
            refs[0].uid.as_str(),
            refs[0].controller,
            refs[0].block_owner_deletion
        ),
        (
            "v1",
            "ConfigMap",
            "owner-a",
            owner_a.metadata.uid.as_deref().unwrap(),
            Some(true),
            Some(true)
        )
    );
    cached_at(&cms, &key, &rv(&on_server)).await;

    // The same controller again: no change.
    let mut child = named_cm("child");
    let result = create_or_update(&cms, &mut child, |cm| {
        set_controller_reference(&owner_a, cm)?;
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(result, OperationResult::Unchanged);

    // A second controller: refused as Go refuses it, nothing written.
    let mut child = named_cm("child");
    let err = create_or_update(&cms, &mut child, |cm| {
        set_controller_reference(&owner_b, cm)?;
        Ok(())
    })
    .await
    .unwrap_err();
    let cause = std::error::Error::source(&err)
        .and_then(|e| e.downcast_ref::<OwnerReferenceError>())
        .expect("the mutate function's error is the source");
    assert!(matches!(cause, OwnerReferenceError::AlreadyOwned { .. }));
    assert_eq!(
        cause.to_string(),
        "Object default/child is already owned by another ConfigMap controller owner-a"
    );
    assert_eq!(rv(&cms.get_uncached(&key).await.unwrap()), rv(&on_server));

    // A plain owner beside the controller is fine, and setting it twice adds it once.
    let mut child = named_cm("child");
    let result = create_or_update(&cms, &mut child, |cm| {
        set_owner_reference(&owner_b, cm)?;
        set_owner_reference(&owner_b, cm)?;
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(result, OperationResult::Updated);
    let refs = child.metadata.owner_references.clone().unwrap();
    assert_eq!(refs.len(), 2);
    assert_eq!(
        (refs[1].kind.as_str(), refs[1].controller),
        ("Secret", None)
    );
    cached_at(&cms, &key, &rv(&child)).await;
    let mut child = named_cm("child");
    let result = create_or_update(&cms, &mut child, |cm| {
        set_owner_reference(&owner_b, cm)?;
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(result, OperationResult::Unchanged);

    // Garbage collection: the child goes with its last owner, not before.
    Api::<ConfigMap>::namespaced(kube.clone(), "default")
        .delete("owner-a", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        cms.get_uncached(&key).await.is_ok(),
        "owner-b still owns it"
    );
    Api::<Secret>::namespaced(kube.clone(), "default")
        .delete("owner-b", &DeleteParams::default())
        .await
        .unwrap();
    let gone = cms.get_uncached(&key).await.unwrap_err();
    assert!(gone.is_not_found(), "{gone:?}");
    ctx.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_must_share_the_namespace_or_be_cluster_scoped() {
    let (_server, kube, client, ctx) = setup().await;
    let owner = Api::<ConfigMap>::namespaced(kube.clone(), "default")
        .create(&PostParams::default(), &named_cm("owner"))
        .await
        .unwrap();
    let team = Api::<Namespace>::all(kube.clone())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some("team-a".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();

    let mut elsewhere = ConfigMap {
        metadata: meta("kube-system", "child"),
        ..Default::default()
    };
    assert_eq!(
        set_controller_reference(&owner, &mut elsewhere)
            .unwrap_err()
            .to_string(),
        "cross-namespace owner references are disallowed, owner's namespace default, \
         obj's namespace kube-system"
    );
    let mut cluster_scoped = team.clone();
    assert_eq!(
        set_owner_reference(&owner, &mut cluster_scoped)
            .unwrap_err()
            .to_string(),
        "cluster-scoped resource must not have a namespace-scoped owner, owner's namespace default"
    );
    assert_eq!(
        elsewhere.metadata.owner_references, None,
        "refused: unchanged"
    );
    let never_created = named_cm("never-created");
    assert!(matches!(
        set_controller_reference(&never_created, &mut named_cm("child")),
        Err(OwnerReferenceError::OwnerNotPersisted { .. })
    ));

    // A cluster-scoped owner of a namespaced object: accepted, here and by the server, whose
    // garbage collector then deletes the object with its namespace's owner.
    let cms = client.objects::<ConfigMap>();
    let mut child = ConfigMap {
        metadata: meta("team-a", "child"),
        ..Default::default()
    };
    let result = create_or_update(&cms, &mut child, |cm| {
        set_controller_reference(&team, cm)?;
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(result, OperationResult::Created);
    assert_eq!(
        controllerutil::controller_of(&child).map(|r| r.kind.as_str()),
        Some("Namespace")
    );
    ctx.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizers_hold_a_deletion_until_removed() {
    let (_server, kube, client, ctx) = setup().await;
    let cms = client.objects::<ConfigMap>();
    let key = ObjectKey::new("default", "guarded");
    const FINALIZER: &str = "example.com/cleanup";

    let mut cm = named_cm("guarded");
    let result = create_or_update(&cms, &mut cm, |cm| {
        assert!(add_finalizer(cm, FINALIZER));
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(result, OperationResult::Created);
    cached_at(&cms, &key, &rv(&cm)).await;
    // Adding it again changes nothing: no write.
    let mut cm = named_cm("guarded");
    let result = create_or_update(&cms, &mut cm, |cm| {
        assert!(!add_finalizer(cm, FINALIZER), "already there");
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(result, OperationResult::Unchanged);

    // Deleted: only marked, while the finalizer is there.
    Api::<ConfigMap>::namespaced(kube.clone(), "default")
        .delete("guarded", &DeleteParams::default())
        .await
        .unwrap();
    let marked = cms.get_uncached(&key).await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert!(contains_finalizer(&marked, FINALIZER));
    cached_at(&cms, &key, &rv(&marked)).await;

    // Removing it lets the deletion finish.
    let mut cm = named_cm("guarded");
    let result = create_or_update(&cms, &mut cm, |cm| {
        assert!(remove_finalizer(cm, FINALIZER));
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(result, OperationResult::Updated);
    let gone = cms.get_uncached(&key).await.unwrap_err();
    assert!(gone.is_not_found(), "{gone:?}");
    ctx.cancel();
}
