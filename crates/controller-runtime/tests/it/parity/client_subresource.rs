//! Subresources through the client (`Objects::subresource`, and the typed `get_scale`,
//! `update_scale`, `patch_scale`, `evict`, `create_token`) against the embedded API server:
//! a Deployment's and a custom resource's scale, a pod's eviction, a ServiceAccount's token, a
//! custom resource's status; the client's write defaults apply to them.

use controller_runtime::ObjectKey;
use controller_runtime::cache::{Cache, CacheOptions};
use controller_runtime::client::{Client, WriteDefaults};
use controller_runtime::envtest::Environment;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube_client::api::{DeleteParams, Patch, PatchParams};
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A custom resource with the status and scale subresources.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "subresource.crt.dev",
    version = "v1",
    kind = "Pool",
    namespaced,
    status = "PoolStatus",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas"
    ),
    crates(kube_core = "::kube_core")
)]
pub struct PoolSpec {
    replicas: i32,
}

/// The Pool's status.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct PoolStatus {
    replicas: i32,
    ready: bool,
}

fn client(kube: kube_client::Client, owner: &str) -> Client {
    Client::new(Cache::new(kube, CacheOptions::default()))
        .with_defaults(WriteDefaults::default().with_field_owner(owner))
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }))
    .unwrap()
}

/// The subresource and manager of each managedFields entry.
fn managed(meta: &kube_core::ObjectMeta) -> Vec<(String, String)> {
    meta.managed_fields
        .iter()
        .flatten()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.subresource.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test]
async fn deployment_scale_get_update_patch() {
    let env = Environment::new().start().await.unwrap();
    let client = client(env.client(), "scaler");
    let deployments = client.objects::<Deployment>();
    deployments.create(&deployment("web")).await.unwrap();
    let key = ObjectKey::new("default", "web");

    let scale = deployments.get_scale(&key).await.unwrap();
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(1));
    assert_eq!(scale.metadata.name.as_deref(), Some("web"));

    let mut bigger = scale.clone();
    bigger.spec.as_mut().unwrap().replicas = Some(3);
    let updated = deployments.update_scale(&key, &bigger).await.unwrap();
    assert_eq!(updated.spec.unwrap().replicas, Some(3));
    let stored = deployments.get_uncached(&key).await.unwrap();
    assert_eq!(stored.spec.as_ref().unwrap().replicas, Some(3));
    assert!(
        managed(&stored.metadata).contains(&("scaler".into(), "scale".into())),
        "{:?}",
        managed(&stored.metadata)
    );

    // A stale resourceVersion is a conflict.
    let err = deployments.update_scale(&key, &scale).await.unwrap_err();
    assert!(err.is_conflict(), "{err:?}");

    let patch = Patch::Merge(json!({"spec": {"replicas": 5}}));
    let patched = deployments
        .patch_scale(&key, &patch, &PatchParams::default())
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().replicas, Some(5));
    let stored = deployments.get_uncached(&key).await.unwrap();
    assert_eq!(stored.spec.unwrap().replicas, Some(5));

    // The generic client reads the same subresource as any type.
    let raw: serde_json::Value = deployments.subresource("scale").get(&key).await.unwrap();
    assert_eq!(raw["kind"], "Scale");
    assert_eq!(raw["spec"]["replicas"], 5);
}

#[tokio::test]
async fn custom_resource_status_and_scale() {
    let env = Environment::new().crd::<Pool>().start().await.unwrap();
    let client = client(env.client(), "pool-controller");
    let pools = client.objects::<Pool>();
    let mut pool = Pool::new("p", PoolSpec { replicas: 2 });
    pool.metadata.namespace = Some("default".into());
    pools.create(&pool).await.unwrap();
    let key = ObjectKey::new("default", "p");

    // The status subresource, by name: the answer is the object.
    let status = pools.subresource("status");
    let patch = Patch::Merge(json!({"status": {"replicas": 2, "ready": true}}));
    let written: Pool = status
        .patch(&key, &patch, &PatchParams::default())
        .await
        .unwrap();
    assert!(written.status.as_ref().unwrap().ready);
    assert!(
        managed(&written.metadata).contains(&("pool-controller".into(), "status".into())),
        "{:?}",
        managed(&written.metadata)
    );
    let read: Pool = status.get(&key).await.unwrap();
    assert_eq!(read.status.unwrap().replicas, 2);

    // The CRD's scale subresource.
    let scale = pools.get_scale(&key).await.unwrap();
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(2));
    assert_eq!(scale.status.as_ref().unwrap().replicas, 2);
    let patch = Patch::Merge(json!({"spec": {"replicas": 4}}));
    let scaled: Scale = pools
        .subresource("scale")
        .patch(&key, &patch, &PatchParams::default())
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(4));
    assert_eq!(pools.get_uncached(&key).await.unwrap().spec.replicas, 4);

    // A subresource the kind does not serve is a 404.
    let err = pools
        .subresource("log")
        .get::<serde_json::Value>(&key)
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
}

#[tokio::test]
async fn eviction_deletes_the_pod() {
    let env = Environment::new().start().await.unwrap();
    let client = client(env.client(), "evictor");
    let pods = client.objects::<Pod>();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "victim", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }))
    .unwrap();
    pods.create(&pod).await.unwrap();
    let key = ObjectKey::new("default", "victim");

    // A dry run (sent as the query and in `deleteOptions`) leaves the pod.
    let dry_run = DeleteParams {
        grace_period_seconds: Some(0),
        dry_run: true,
        ..Default::default()
    };
    pods.evict(&key, &dry_run).await.unwrap();
    pods.get_uncached(&key)
        .await
        .expect("a dry-run eviction keeps the pod");

    let params = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    pods.evict(&key, &params).await.unwrap();
    let err = pods.get_uncached(&key).await.unwrap_err();
    assert!(err.is_not_found(), "{err:?}");

    let err = pods.evict(&key, &params).await.unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
}

#[tokio::test]
async fn token_request_returns_a_token() {
    let env = Environment::new().start().await.unwrap();
    let client = client(env.client(), "tokens");
    let accounts = client.objects::<ServiceAccount>();
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "robot", "namespace": "default"}}))
            .unwrap();
    accounts.create(&sa).await.unwrap();

    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        },
        ..Default::default()
    };
    let key = ObjectKey::new("default", "robot");
    let answer = accounts.create_token(&key, &request).await.unwrap();
    let status = answer.status.expect("a status");
    assert!(!status.token.is_empty());

    // The token authenticates as the ServiceAccount.
    let mut config = env.config().clone();
    config.auth_info = kube_client::config::AuthInfo {
        token: Some(status.token.clone().into()),
        ..Default::default()
    };
    let robot = kube_client::Client::try_from(config).unwrap();
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let who = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&review).unwrap())
        .unwrap();
    let answer: serde_json::Value = robot.request(who).await.unwrap();
    assert_eq!(
        answer["status"]["userInfo"]["username"],
        "system:serviceaccount:default:robot"
    );

    let err = accounts
        .create_token(&ObjectKey::new("default", "nobody"), &request)
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
}
