//! The operator's integration tests, on the test environment: an embedded API server with the
//! Memo CRD installed (or, with `USE_EXISTING_CLUSTER=true`, the cluster `$KUBECONFIG` names).

use std::sync::Arc;

use controller_runtime::envtest::{Environment, Running};
use controller_runtime::k8s_openapi::api::core::v1::ConfigMap;
use controller_runtime::kube_client::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use controller_runtime::prelude::*;
use memo_operator::{Context, INDEX, Memo, MemoSpec};

mod common;
use common::eventually;

/// Starts the environment and the operator's manager (stopped by cancelling the token), and
/// returns the manager's client too.
async fn start() -> (Running, CancellationToken, Client) {
    let env = Environment::new()
        .crd::<Memo>()
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

fn text_of(cm: &ConfigMap, key: &str) -> Option<String> {
    cm.data.as_ref()?.get(key).cloned()
}

#[tokio::test]
async fn a_memo_is_published_updated_and_cleaned_up() {
    let (env, stop, _) = start().await;
    let _stop_manager = stop.drop_guard();
    let memos: Api<Memo> = Api::namespaced(env.client(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");

    memos
        .create(
            &PostParams::default(),
            &Memo::new("hello", MemoSpec { text: "hi".into() }),
        )
        .await
        .unwrap();
    eventually("the memo is published and ready", || async {
        let own = cms.get_opt("hello").await.unwrap()?;
        let index = cms.get_opt(INDEX).await.unwrap()?;
        let memo = memos.get("hello").await.unwrap();
        (text_of(&own, "text")? == "hi"
            && text_of(&index, "hello")? == "hi"
            && memo.status.is_some_and(|s| s.ready))
        .then_some(())
    })
    .await;
    let own = cms.get("hello").await.unwrap();
    let owner = &own.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Memo", Some(true))
    );

    let patch = Patch::Merge(serde_json::json!({ "spec": { "text": "bye" } }));
    memos
        .patch("hello", &PatchParams::default(), &patch)
        .await
        .unwrap();
    eventually("the new text is published", || async {
        let own = cms.get("hello").await.unwrap();
        let index = cms.get(INDEX).await.unwrap();
        (text_of(&own, "text")? == "bye" && text_of(&index, "hello")? == "bye").then_some(())
    })
    .await;

    memos
        .delete("hello", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "the memo is gone with its index entry and ConfigMap",
        || async {
            let gone = memos.get_opt("hello").await.unwrap().is_none();
            let index = cms.get(INDEX).await.unwrap();
            let own_gone = cms.get_opt("hello").await.unwrap().is_none();
            (gone && own_gone && text_of(&index, "hello").is_none()).then_some(())
        },
    )
    .await;
    env.stop().await.unwrap();
}

#[tokio::test]
async fn a_reconcile_of_a_published_memo_writes_nothing() {
    let (env, stop, client) = start().await;
    let _stop_manager = stop.drop_guard();
    let memos: Api<Memo> = Api::namespaced(env.client(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    memos
        .create(
            &PostParams::default(),
            &Memo::new("quiet", MemoSpec { text: "x".into() }),
        )
        .await
        .unwrap();
    // Once the memo is ready and the manager's cache has caught up with all three objects...
    let memo = eventually("the memo is ready and cached", || async {
        let memo = memos.get("quiet").await.unwrap();
        let ready = memo.status.as_ref().is_some_and(|s| s.ready);
        let cached = |rv: Option<String>, cached: Option<String>| rv.is_some() && rv == cached;
        let key = ObjectKey::new("default", "quiet");
        let (own, index) = (cms.get("quiet").await.ok()?, cms.get(INDEX).await.ok()?);
        let cached_memo = client.objects::<Memo>().get(&key).await.ok()?;
        let cached_own = client.objects::<ConfigMap>().get(&key).await.ok()?;
        let cached_index = client
            .objects::<ConfigMap>()
            .get(&ObjectKey::new("default", INDEX))
            .await
            .ok()?;
        (ready
            && cached(
                memo.metadata.resource_version.clone(),
                cached_memo.metadata.resource_version.clone(),
            )
            && cached(
                own.metadata.resource_version,
                cached_own.metadata.resource_version.clone(),
            )
            && cached(
                index.metadata.resource_version,
                cached_index.metadata.resource_version.clone(),
            ))
        .then_some(cached_memo)
    })
    .await;
    let versions = || async {
        let own = cms.get("quiet").await.unwrap().metadata.resource_version;
        let index = cms.get(INDEX).await.unwrap().metadata.resource_version;
        let memo = memos.get("quiet").await.unwrap().metadata.resource_version;
        (own, index, memo)
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
    let result = memo_operator::reconcile(memo, ReconcileContext::new("memo").with_data(ctx)).await;
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
