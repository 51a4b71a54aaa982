//! The operator's integration tests, on the test environment: an embedded API server with the
//! Memo CRD installed (or, with `USE_EXISTING_CLUSTER=true`, the cluster `$KUBECONFIG` names).

use std::sync::Arc;

use controller_runtime::envtest::{ClusterConfig, Environment, Running, eventually};
use controller_runtime::k8s_openapi::api::apps::v1::Deployment;
use controller_runtime::k8s_openapi::api::core::v1::{ConfigMap, Pod};
use controller_runtime::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use controller_runtime::kube_client::api::{DeleteParams, Patch, PatchParams};
use controller_runtime::prelude::*;
use memo_operator::{Context, INDEX, Memo, MemoSpec};

/// Starts the environment and the operator's manager (stopped by cancelling the token), and
/// returns the manager's client too.
async fn start() -> (Running, CancellationToken, Client) {
    // The simulated cluster runs the Memos' server Deployments: nodes, a scheduler, kubelets
    // and the Deployment controller (a real cluster runs its own).
    let env = Environment::new()
        .crd::<Memo>()
        .simulate_cluster(ClusterConfig::default())
        .start()
        .await
        .expect("test environment");
    let mgr = Manager::new(
        env.client(),
        ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled),
    )
    .unwrap();
    memo_operator::add_controller(&mgr).await.unwrap();
    let (stop, client) = (CancellationToken::new(), mgr.client().clone());
    let token = stop.clone();
    tokio::spawn(async move { mgr.start(token).await });
    (env, stop, client)
}

fn text_of<'a>(cm: &'a ConfigMap, key: &str) -> Option<&'a str> {
    cm.data.as_ref()?.get(key).map(String::as_str)
}

#[tokio::test]
async fn a_memo_is_published_updated_and_cleaned_up() {
    let (env, stop, client) = start().await;
    let _stop_manager = stop.drop_guard();
    let memos = client.objects::<Memo>();
    let (key, index) = (
        ObjectKey::new("default", "hello"),
        ObjectKey::new("default", INDEX),
    );
    // The waits read from the API server.
    let wait = eventually(env.client());

    let mut memo = Memo::new(
        "hello",
        MemoSpec {
            text: "hi".into(),
            ..Default::default()
        },
    );
    memo.metadata.namespace = Some("default".into());
    memos.create(&memo).await.unwrap();
    wait.until_object(&key, |memo: &Memo| {
        memo.status.as_ref().is_some_and(|s| s.ready)
    })
    .await
    .unwrap();
    let own: ConfigMap = wait
        .until_object(&key, |cm: &ConfigMap| text_of(cm, "text") == Some("hi"))
        .await
        .unwrap();
    wait.until_object(&index, |cm: &ConfigMap| text_of(cm, "hello") == Some("hi"))
        .await
        .unwrap();
    let owner = &own.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Memo", Some(true))
    );

    let patch = Patch::Merge(serde_json::json!({ "spec": { "text": "bye" } }));
    memos
        .patch(&key, &patch, &PatchParams::default())
        .await
        .unwrap();
    wait.until_object(&key, |cm: &ConfigMap| text_of(cm, "text") == Some("bye"))
        .await
        .unwrap();
    wait.until_object(&index, |cm: &ConfigMap| text_of(cm, "hello") == Some("bye"))
        .await
        .unwrap();

    memos.delete(&key, &DeleteParams::default()).await.unwrap();
    // The memo is gone with its index entry and ConfigMap.
    wait.until_gone::<Memo>(&key).await.unwrap();
    wait.until_gone::<ConfigMap>(&key).await.unwrap();
    wait.until_object(&index, |cm: &ConfigMap| text_of(cm, "hello").is_none())
        .await
        .unwrap();
    env.stop().await.unwrap();
}

#[tokio::test]
async fn a_reconcile_of_a_published_memo_writes_nothing() {
    let (env, stop, client) = start().await;
    let _stop_manager = stop.drop_guard();
    let (key, index) = (
        ObjectKey::new("default", "quiet"),
        ObjectKey::new("default", INDEX),
    );
    let mut memo = Memo::new(
        "quiet",
        MemoSpec {
            text: "x".into(),
            ..Default::default()
        },
    );
    memo.metadata.namespace = Some("default".into());
    client.objects::<Memo>().create(&memo).await.unwrap();
    // Once the memo is ready (its status is written last, so the ConfigMaps are final too)...
    let api = eventually(env.client());
    let memo: Memo = api
        .until_object(&key, |memo: &Memo| {
            memo.status.as_ref().is_some_and(|s| s.ready)
        })
        .await
        .unwrap();
    let own: ConfigMap = api.until_exists(&key).await.unwrap();
    let index_cm: ConfigMap = api.until_exists(&index).await.unwrap();
    // ...and the manager's cache has caught up with all three objects...
    let cache = eventually(&client);
    let rv = |meta: &ObjectMeta| meta.resource_version.clone();
    let memo: Memo = cache
        .until_object(&key, |m: &Memo| rv(&m.metadata) == rv(&memo.metadata))
        .await
        .unwrap();
    cache
        .until_object(&key, |cm: &ConfigMap| rv(&cm.metadata) == rv(&own.metadata))
        .await
        .unwrap();
    cache
        .until_object(&index, |cm: &ConfigMap| {
            rv(&cm.metadata) == rv(&index_cm.metadata)
        })
        .await
        .unwrap();
    let server: Deployment = api.until_exists(&key).await.unwrap();
    cache
        .until_object(&key, |d: &Deployment| {
            rv(&d.metadata) == rv(&server.metadata)
        })
        .await
        .unwrap();
    let memos = client.objects::<Memo>();
    let cms = client.objects::<ConfigMap>();
    let deployments = client.objects::<Deployment>();
    let versions = || async {
        let server = deployments
            .get_uncached(&key)
            .await
            .unwrap()
            .metadata
            .resource_version;
        let own = cms
            .get_uncached(&key)
            .await
            .unwrap()
            .metadata
            .resource_version;
        let index = cms
            .get_uncached(&index)
            .await
            .unwrap()
            .metadata
            .resource_version;
        let memo = memos
            .get_uncached(&key)
            .await
            .unwrap()
            .metadata
            .resource_version;
        (own, index, memo, server)
    };
    let before = versions().await;

    // ...reconciling it again finds everything as it wants it: create-or-update,
    // create-or-patch and the status check send nothing. A write that changes nothing would
    // leave every resourceVersion as it is too (the API server skips no-op writes), so on the
    // embedded server every request fails meanwhile: the reconcile reads only the cache.
    if let Some(server) = env.server() {
        server.faults().fail_next(u32::MAX, 500);
    }
    let ctx = Arc::new(Context {
        client: client.clone(),
    });
    let result =
        memo_operator::reconcile(Arc::new(memo), ReconcileContext::new("memo").with_data(ctx))
            .await;
    if let Some(server) = env.server() {
        server.faults().fail_next(0, 500);
    }
    assert_eq!(
        result.unwrap(),
        Action::done(),
        "a reconcile with nothing to do wrote something"
    );
    assert_eq!(
        versions().await,
        before,
        "a reconcile with nothing to do changed something"
    );
    env.stop().await.unwrap();
}

/// The Memo is ready only while its server is available: with its pods scripted to crash
/// (the simulated kubelet reads `sim.crt.dev/*` annotations: exit after a second with code 1,
/// restarted with back-off) the Deployment never becomes available and the Memo stays not
/// ready; once the annotations are gone a new rollout succeeds and the Memo turns ready.
#[tokio::test]
async fn a_memo_is_ready_only_while_its_server_is_available() {
    let (env, stop, client) = start().await;
    let _stop_manager = stop.drop_guard();
    let key = ObjectKey::new("default", "flaky");
    // Generous: pods start, crash and roll out on real time, on a machine that may be busy.
    let wait = eventually(env.client()).with_timeout(std::time::Duration::from_secs(60));
    let crashing = [
        ("sim.crt.dev/run-for".to_string(), "1s".to_string()),
        ("sim.crt.dev/exit-code".to_string(), "1".to_string()),
    ];
    let mut memo = Memo::new(
        "flaky",
        MemoSpec {
            text: "hi".into(),
            pod_annotations: crashing.into(),
        },
    );
    memo.metadata.namespace = Some("default".into());
    let memos = client.objects::<Memo>();
    memos.create(&memo).await.unwrap();

    // The server's pod crash-loops: restarted, then backing off.
    wait.until_list(Some("default"), |pods: &[Pod]| {
        pods.iter().any(|p| {
            let statuses = p
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref());
            statuses.into_iter().flatten().any(|c| {
                let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref());
                waiting.is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"))
            })
        })
    })
    .await
    .unwrap();
    let server: Deployment = wait.until_exists(&key).await.unwrap();
    let available = (server.status.iter())
        .flat_map(|s| s.conditions.iter().flatten())
        .find(|c| c.type_.as_deref() == Some("Available"));
    assert_eq!(
        available.and_then(|c| c.status.as_deref()),
        Some("False"),
        "{server:?}"
    );
    let memo: Memo = wait
        .until_object(&key, |m: &Memo| m.status.is_some())
        .await
        .unwrap();
    assert!(
        !memo.status.unwrap().ready,
        "ready while its server crash-loops"
    );

    // Healthy pods: the Deployment rolls out and the Memo turns ready.
    let patch = Patch::Merge(serde_json::json!({ "spec": { "podAnnotations": null } }));
    memos
        .patch(&key, &patch, &PatchParams::default())
        .await
        .unwrap();
    wait.until_object(&key, |memo: &Memo| {
        memo.status.as_ref().is_some_and(|s| s.ready)
    })
    .await
    .unwrap();
    env.stop().await.unwrap();
}
