//! The operator run as it runs in a cluster: as its ServiceAccount, allowed exactly what its
//! RBAC manifests (those `memo-operator manifests` ships, the ClusterRole of
//! `config/rbac/role.yaml`) grant. A permission missing from them fails these tests naming the
//! refused verb and resource, instead of surfacing in production as a controller stuck on 403s.

use controller_runtime::cache::{Cache, CacheOptions};
use controller_runtime::envtest::{Environment, Running, eventually};
use controller_runtime::k8s_openapi::api::core::v1::ConfigMap;
use controller_runtime::prelude::*;
use memo_operator::manifests::{self, Manifests, NAMESPACE};
use memo_operator::{Memo, MemoSpec};

/// The shipped RBAC manifests (the operator's namespace, its ServiceAccount, the binding) with
/// `role` as the ClusterRole.
fn rbac_objects(role: &str) -> Vec<serde_json::Value> {
    let files = Manifests::default().kustomize();
    let file = |path: &str| {
        files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, text)| text.as_str())
            .unwrap_or_else(|| panic!("the manifests have no {path}"))
    };
    [
        file("manager/namespace.yaml"),
        file("rbac/service_account.yaml"),
        file("rbac/role_binding.yaml"),
        role,
    ]
    .into_iter()
    .map(|text| serde_yaml_ng::from_str(text).unwrap())
    .collect()
}

/// Starts the environment with the Memo CRD and the RBAC manifests with `role`, and the
/// operator's manager acting as its ServiceAccount.
async fn start_as_operator(role: &str) -> (Running, CancellationToken, Manager) {
    let mut env = Environment::new().crd::<Memo>();
    for object in rbac_objects(role) {
        env = env.manifest_object(object);
    }
    let env = env.start().await.expect("test environment");
    let operator = env
        .service_account_client(NAMESPACE, manifests::NAME)
        .await
        .expect("a client acting as the operator's ServiceAccount");
    let options = ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled);
    let mgr = Manager::new(operator, options).unwrap();
    memo_operator::add_controller(&mgr).await.unwrap();
    (env, CancellationToken::new(), mgr)
}

#[tokio::test]
async fn the_operator_works_with_exactly_its_rbac() {
    let (env, stop, mgr) = start_as_operator(manifests::ROLE).await;
    let cache = mgr.cache().clone();
    let token = stop.clone();
    let running = tokio::spawn(async move { mgr.start(token).await });
    // The test writes as the environment's admin, not as the operator.
    let admin = Client::new(Cache::new(env.client(), CacheOptions::default()));
    let mut memo = Memo::new("hello", MemoSpec { text: "hi".into() });
    memo.metadata.namespace = Some("default".into());
    admin.objects::<Memo>().create(&memo).await.unwrap();
    let key = ObjectKey::new("default", "hello");
    let wait = eventually(env.client());
    wait.until_object(&key, |memo: &Memo| {
        memo.status.as_ref().is_some_and(|s| s.ready)
    })
    .await
    .unwrap();
    wait.until_object(&key, |cm: &ConfigMap| {
        cm.data
            .as_ref()
            .and_then(|d| d.get("text"))
            .map(String::as_str)
            == Some("hi")
    })
    .await
    .unwrap();
    assert!(cache.sync_errors().is_empty(), "{:?}", cache.sync_errors());
    stop.cancel();
    running.await.unwrap().unwrap();
    env.stop().await.unwrap();
}

#[tokio::test]
async fn a_missing_permission_names_itself() {
    // The same manifests, but the role lacks `list` and `watch` on ConfigMaps (a forgotten
    // `list;watch`: what the cache needs, not what the reconciler writes).
    let granted = "verbs: [get, list, watch, create, update, patch, delete]";
    assert!(
        manifests::ROLE.contains(granted),
        "config/rbac/role.yaml changed shape"
    );
    let role = manifests::ROLE.replace(granted, "verbs: [get, create, update, patch, delete]");
    let (env, stop, mgr) = start_as_operator(&role).await;
    let cache = mgr.cache().clone();
    let token = stop.clone();
    let running = tokio::spawn(async move { mgr.start(token).await });
    // The ConfigMaps cache cannot list: it never syncs, and says why.
    let refused = eventually(env.client())
        .until("the cache reports the refused list", || async {
            cache
                .sync_errors()
                .into_iter()
                .find(|(_, e)| e.is_forbidden())
                .map(|(_, e)| e.to_string())
        })
        .await
        .unwrap();
    assert!(
        refused.contains(
            "configmaps is forbidden: User \"system:serviceaccount:memo-operator-system:memo-operator\" \
             cannot list resource \"configmaps\" in API group \"\" at the cluster scope"
        ),
        "{refused}"
    );
    stop.cancel();
    let _ = running.await;
    env.stop().await.unwrap();
}
