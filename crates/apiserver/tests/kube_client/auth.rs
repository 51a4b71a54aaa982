//! Authentication over HTTPS: a request with no `Authorization` header at all is 401
//! Unauthorized, while the health endpoints and `/version` stay open, as the real server's
//! `system:public-info-viewer` role leaves them.

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, ListParams};

use crate::common::{client_from_kubeconfig, raw, server};

#[tokio::test]
async fn no_authorization_header_gets_401_but_health_and_version_are_open() {
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
            assert_eq!(status.code, 401);
            assert_eq!(status.reason, "Unauthorized");
            assert_eq!(status.message, "Unauthorized");
        }
        other => panic!("expected a 401 Status, got {other:?}"),
    }
    // The body is a full metav1.Status, as the real server writes it.
    let (status, ct, body) = raw(&anonymous, "GET", "/api/v1/namespaces", "", "").await;
    assert_eq!((status, ct.as_str()), (401, "application/json"));
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
            Some("Unauthorized"),
            Some(401)
        ),
        "{body}"
    );
    // Discovery and writes need the token too.
    for (method, uri) in [
        ("GET", "/api"),
        ("GET", "/apis"),
        ("POST", "/api/v1/namespaces/default/configmaps"),
    ] {
        let (status, _, _) = raw(&anonymous, method, uri, "application/json", "{}").await;
        assert_eq!(status, 401, "{method} {uri}");
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
