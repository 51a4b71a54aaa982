//! Authentication over HTTPS: a request with no `Authorization` header at all is the anonymous
//! user, refused with upstream's 403 everywhere but the health endpoints and `/version`, which
//! the real server's `system:public-info-viewer` role leaves open; bad credentials are 401
//! Unauthorized everywhere.

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, ListParams};

use crate::common::{client_from_kubeconfig, raw, server};

#[tokio::test]
async fn anonymous_requests_get_403_but_health_and_version_are_open() {
    let server = server().await;
    let with_token = server.kubeconfig();
    let user = format!("user:\n    token: {}\n", server.token());
    assert!(
        with_token.contains(&user),
        "the kubeconfig's user has changed shape"
    );
    // The same cluster and CA, a user without credentials: kube-client sends no Authorization.
    let anonymous = client_from_kubeconfig(&with_token.replace(&user, "user: {}\n")).await;

    let api: Api<ConfigMap> = Api::namespaced(anonymous.clone(), "default");
    match api.list(&ListParams::default()).await.unwrap_err() {
        kube_client::Error::Api(status) => {
            assert_eq!(status.code, 403);
            assert_eq!(status.reason, "Forbidden");
            assert_eq!(
                status.message,
                r#"configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default""#
            );
        }
        other => panic!("expected a 403 Status, got {other:?}"),
    }
    // The body is a full metav1.Status, as the real server writes it.
    let (status, ct, body) = raw(&anonymous, "GET", "/api/v1/namespaces", "", "").await;
    assert_eq!((status, ct.as_str()), (403, "application/json"));
    assert_eq!(
        (
            body["kind"].as_str(),
            body["apiVersion"].as_str(),
            body["status"].as_str(),
            body["reason"].as_str(),
            body["code"].as_u64()
        ),
        (
            Some("Status"),
            Some("v1"),
            Some("Failure"),
            Some("Forbidden"),
            Some(403)
        ),
        "{body}"
    );
    // Discovery and writes are refused too.
    for (method, uri, message) in [
        (
            "GET",
            "/api",
            r#"forbidden: User "system:anonymous" cannot get path "/api""#,
        ),
        (
            "GET",
            "/apis",
            r#"forbidden: User "system:anonymous" cannot get path "/apis""#,
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            r#"configmaps is forbidden: User "system:anonymous" cannot create resource "configmaps" in API group "" in the namespace "default""#,
        ),
    ] {
        let (status, _, body) = raw(&anonymous, method, uri, "application/json", "{}").await;
        assert_eq!(
            (status, body["message"].as_str()),
            (403, Some(message)),
            "{method} {uri}"
        );
    }
    assert_eq!(server.storage().watch_count(), 0);

    for path in ["/healthz", "/readyz", "/livez"] {
        let (status, _, body) = raw(&anonymous, "GET", path, "", "").await;
        assert_eq!((status, body.as_str()), (200, Some("ok")), "{path}");
    }
    let (status, _, body) = raw(&anonymous, "GET", "/version", "", "").await;
    assert_eq!((status, body["major"].as_str()), (200, Some("1")));
    assert!(
        body["gitVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with('v'))
    );
}
