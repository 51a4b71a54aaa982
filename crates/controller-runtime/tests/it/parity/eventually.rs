//! `envtest::eventually` against the embedded API server: waits on the API and on a cache for
//! an object to pass a check, to be gone, and for a list's length; a timeout says what was
//! last seen.

use std::time::Duration;

use controller_runtime::ObjectKey;
use controller_runtime::cache::{Cache, CacheOptions};
use controller_runtime::envtest::eventually::Error;
use controller_runtime::envtest::{Environment, eventually};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn configmap(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "data": {"value": value},
    }))
    .unwrap()
}

/// Writes `a` and `b` after a moment, then changes `a`, then deletes `b`, while the test waits.
async fn writer(api: Api<ConfigMap>) {
    tokio::time::sleep(Duration::from_millis(50)).await;
    for name in ["a", "b"] {
        api.create(&PostParams::default(), &configmap(name, "1"))
            .await
            .unwrap();
    }
    let patch = Patch::Merge(json!({"data": {"value": "2"}}));
    api.patch("a", &PatchParams::default(), &patch)
        .await
        .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
}

fn value(cm: &ConfigMap) -> Option<&str> {
    cm.data.as_ref()?.get("value").map(String::as_str)
}

#[tokio::test]
async fn waits_on_the_api() {
    let env = Environment::new().start().await.unwrap();
    let kube = env.client();
    let api: Api<ConfigMap> = Api::namespaced(kube.clone(), "default");
    let wait = eventually(&kube).with_timeout(Duration::from_secs(30));
    let a = ObjectKey::new("default", "a");
    let b = ObjectKey::new("default", "b");

    let (_, seen) = tokio::join!(writer(api), async {
        let seen = wait
            .until_object(&a, |cm: &ConfigMap| value(cm) == Some("2"))
            .await
            .unwrap();
        wait.until_gone::<ConfigMap>(&b).await.unwrap();
        seen
    });
    assert_eq!(value(&seen), Some("2"));
    let list = wait
        .until_list_len::<ConfigMap>(Some("default"), 1)
        .await
        .unwrap();
    assert_eq!(list[0].metadata.name.as_deref(), Some("a"));
    let list = wait
        .until_list::<ConfigMap>(None, |items| items.iter().any(|cm| value(cm) == Some("2")))
        .await
        .unwrap();
    assert!(!list.is_empty());
}

#[tokio::test]
async fn waits_on_a_cache() {
    let env = Environment::new().start().await.unwrap();
    let kube = env.client();
    let cache = Cache::new(kube.clone(), CacheOptions::default());
    let stop = CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    cache.start(stop);
    let api: Api<ConfigMap> = Api::namespaced(kube.clone(), "default");
    let wait = eventually(&cache).with_timeout(Duration::from_secs(30));
    let a = ObjectKey::new("default", "a");
    let b = ObjectKey::new("default", "b");

    let (_, seen) = tokio::join!(writer(api), async {
        let seen = wait
            .until_object(&a, |cm: &ConfigMap| value(cm) == Some("2"))
            .await
            .unwrap();
        wait.until_gone::<ConfigMap>(&b).await.unwrap();
        seen
    });
    assert_eq!(value(&seen), Some("2"));
    let list = wait
        .until_list_len::<ConfigMap>(Some("default"), 1)
        .await
        .unwrap();
    assert_eq!(list[0].metadata.name.as_deref(), Some("a"));
}

#[tokio::test]
async fn a_timeout_says_what_was_last_seen() {
    let env = Environment::new().start().await.unwrap();
    let kube = env.client();
    let api: Api<ConfigMap> = Api::namespaced(kube.clone(), "default");
    api.create(&PostParams::default(), &configmap("stuck", "1"))
        .await
        .unwrap();
    let wait = eventually(&kube)
        .with_timeout(Duration::from_millis(300))
        .with_poll_interval(Duration::from_millis(20));

    let key = ObjectKey::new("default", "stuck");
    let err = wait
        .until_object(&key, |cm: &ConfigMap| value(cm) == Some("2"))
        .await
        .unwrap_err();
    let Error::Timeout {
        what, last_seen, ..
    } = &err;
    assert!(what.contains("ConfigMap default/stuck"), "{err}");
    assert!(last_seen.contains(r#""value":"1""#), "{err}");
    assert!(!last_seen.contains("managedFields"), "{err}");

    let err = wait.until_gone::<ConfigMap>(&key).await.unwrap_err();
    assert!(err.to_string().contains(r#""name":"stuck""#), "{err}");

    let missing = ObjectKey::new("default", "missing");
    let err = wait.until_exists::<ConfigMap>(&missing).await.unwrap_err();
    assert!(err.to_string().ends_with("last seen: not found"), "{err}");

    let err = wait
        .until_list_len::<ConfigMap>(Some("default"), 3)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("default/stuck"), "{err}");
}
