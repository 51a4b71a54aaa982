//! What Kubernetes' `[sig-api-machinery]` conformance specs check of an API server, over HTTP:
//! the health endpoints' named checks.

use http_body_util::BodyExt;
use serde_json::Value;

use crate::common::{client, server};

/// A raw request answering the status code, the `Warning` texts and the body (JSON when it
/// parses, else a JSON string).
async fn send(
    client: &kube_client::Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: &str,
) -> (u16, Vec<String>, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(kube_client::client::Body::from(body.as_bytes().to_vec()))
        .unwrap();
    let resp = client.send(req).await.expect("request sent");
    let status = resp.status().as_u16();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|w| {
            // `299 - "text"`, the text an HTTP quoted-string.
            let v = w.to_str().unwrap();
            let quoted = v.strip_prefix("299 - ").unwrap_or(v);
            serde_json::from_str::<String>(quoted).unwrap_or_else(|_| quoted.to_string())
        })
        .collect();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, warnings, body)
}

#[tokio::test]
async fn health_endpoints_name_their_checks() {
    let server = server().await;
    let client = client(&server).await;
    let (status, _, body) = send(&client, "GET", "/readyz?verbose", "", "").await;
    let text = body.as_str().unwrap().to_string();
    assert_eq!(status, 200);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..5],
        [
            "[+]ping ok",
            "[+]log ok",
            "[+]etcd ok",
            "[+]etcd-readiness ok",
            "[+]informer-sync ok"
        ]
    );
    assert!(lines.contains(&"[+]poststarthook/generic-apiserver-start-informers ok"));
    assert!(lines.contains(&"[+]poststarthook/rbac/bootstrap-roles ok"));
    assert_eq!(
        lines[lines.len() - 2..],
        ["[+]shutdown ok", "readyz check passed"]
    );
    for (path, last) in [
        ("/livez?verbose", "livez check passed"),
        ("/healthz?verbose=true", "healthz check passed"),
    ] {
        let (status, _, body) = send(&client, "GET", path, "", "").await;
        assert_eq!(status, 200);
        let text = body.as_str().unwrap();
        assert_eq!(text.lines().last(), Some(last), "{path}");
        assert!(!text.contains("[+]shutdown ok"), "{path}");
    }
    let (_, _, body) = send(
        &client,
        "GET",
        "/livez?verbose&exclude=etcd&exclude=nope",
        "",
        "",
    )
    .await;
    let text = body.as_str().unwrap();
    assert!(text.contains("[+]etcd excluded: ok\n"), "{text}");
    assert!(
        text.contains("warn: some health checks cannot be excluded: no matches for \"nope\"\n")
    );
    for path in [
        "/healthz/ping",
        "/livez/etcd",
        "/readyz/informer-sync",
        "/readyz/poststarthook/generic-apiserver-start-informers",
        "/healthz/poststarthook/rbac/bootstrap-roles",
    ] {
        let (status, _, body) = send(&client, "GET", path, "", "").await;
        assert_eq!((status, body.as_str()), (200, Some("ok")), "{path}");
    }
    let (status, _, body) = send(&client, "GET", "/readyz/nope", "", "").await;
    assert_eq!((status, body["reason"].as_str()), (404, Some("NotFound")));
}
