//! Impersonation over HTTPS, as upstream's `WithImpersonation` filter answers it: the admin may
//! act as anyone (user, groups, uid, extras, as `whoami` then shows), the anonymous user may
//! not (upstream's 403 naming what it asked), and groups without a user are a plain-text 500.

use bytes::Bytes;
use http_body_util::BodyExt;
use kube_client::Client;
use serde_json::{Value, json};

use crate::common::{client, client_from_kubeconfig, server};

async fn send(
    client: &Client,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, Bytes) {
    let mut req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(kube_client::client::Body::from(Bytes::from(
            body.to_string(),
        )))
        .unwrap();
    let resp = client.send(req).await.expect("request sent");
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, ct, bytes)
}

fn json_of(bytes: &Bytes) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

#[tokio::test]
async fn the_admin_acts_as_anyone_and_whoami_shows_who() {
    let server = server().await;
    let admin = client(&server).await;
    let whoami = r#"{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}"#;
    let uri = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let (status, _, body) = send(
        &admin,
        "POST",
        uri,
        &[
            ("Impersonate-User", "alice"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Uid", "u-1"),
            ("Impersonate-Extra-Scopes", "view"),
            ("Impersonate-Extra-Scopes", "edit"),
            ("Impersonate-Extra-Example.com%2fteam", "a"),
        ],
        whoami,
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        json_of(&body)["status"]["userInfo"],
        json!({"username": "alice", "uid": "u-1", "groups": ["devs", "ops", "system:authenticated"],
               "extra": {"scopes": ["view", "edit"], "example.com/team": ["a"]}})
    );
    // As alice, with no binding: upstream's 403 for alice.
    let (status, _, body) = send(
        &admin,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[("Impersonate-User", "alice")],
        "",
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(
        json_of(&body)["message"],
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    // As a member of system:masters: everything.
    let (status, _, _) = send(
        &admin,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[
            ("Impersonate-User", "alice"),
            ("Impersonate-Group", "system:masters"),
        ],
        "",
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb_and_a_user() {
    let server = server().await;
    let kubeconfig = server.kubeconfig();
    let user = format!("user:\n    token: {}\n", server.token());
    let anonymous = client_from_kubeconfig(&kubeconfig.replace(&user, "user: {}\n")).await;
    let (status, _, body) = send(
        &anonymous,
        "GET",
        "/api/v1/namespaces",
        &[("Impersonate-User", "root")],
        "",
    )
    .await;
    assert_eq!(status, 403);
    let status_obj = json_of(&body);
    assert_eq!(
        status_obj["message"],
        r#"users "root" is forbidden: User "system:anonymous" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    assert_eq!(
        status_obj["details"],
        json!({"name": "root", "kind": "users"})
    );
    let (status, _, body) = send(
        &anonymous,
        "GET",
        "/api/v1/namespaces",
        &[(
            "Impersonate-User",
            "system:serviceaccount:kube-system:default",
        )],
        "",
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(
        json_of(&body)["message"],
        r#"serviceaccounts "default" is forbidden: User "system:anonymous" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system""#
    );
    // Groups without a user: upstream's plain-text 500, even for the admin.
    let admin = client(&server).await;
    let (status, ct, body) = send(
        &admin,
        "GET",
        "/api/v1/namespaces?limit=1",
        &[("Impersonate-Group", "devs")],
        "",
    )
    .await;
    assert_eq!((status, ct.as_str()), (500, "text/plain; charset=utf-8"));
    assert_eq!(
        String::from_utf8_lossy(&body),
        "Internal Server Error: \"/api/v1/namespaces?limit=1\": requested [{Group  devs    }] without impersonating a user\n"
    );
}
