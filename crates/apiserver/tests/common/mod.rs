//! Shared helpers of the integration tests: a server, a kube-client for it, raw requests.
#![allow(dead_code)]

pub mod conversion;

use bytes::Bytes;
use crt_apiserver::{Config, Server};
use http_body_util::BodyExt;
use kube_client::Client;
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

pub mod webhook;

/// Starts a server with the default configuration.
pub async fn server() -> Server {
    Server::start(Config::default())
        .await
        .expect("server starts")
}

/// A kube-client configured from the server's kubeconfig, as a user would.
pub async fn client(server: &Server) -> Client {
    client_from_kubeconfig(&server.kubeconfig()).await
}

/// A kube-client from kubeconfig YAML.
pub async fn client_from_kubeconfig(yaml: &str) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(yaml).expect("kubeconfig parses");
    let config =
        kube_client::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("kubeconfig accepted");
    Client::try_from(config).expect("client builds")
}

/// The status code of an API error.
pub fn code(err: &kube_client::Error) -> u16 {
    match err {
        kube_client::Error::Api(status) => status.code,
        other => panic!("not an API error: {other:?}"),
    }
}

/// A raw request: the status code, the Content-Type and the body as JSON.
pub async fn raw(
    client: &Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: impl Into<Bytes>,
) -> (u16, String, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(kube_client::client::Body::from(body.into()))
        .unwrap();
    let resp = client.send(req).await.expect("request sent");
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .expect("body read")
        .to_bytes();
    let json = serde_json::from_slice(&bytes)
        .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, ct, json)
}

/// A raw GET with an `Accept` header: the status code, the Content-Type and the body as JSON.
pub async fn get_accept(client: &Client, uri: &str, accept: &str) -> (u16, String, Value) {
    let req = http::Request::builder()
        .uri(uri)
        .header("accept", accept)
        .body(kube_client::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.expect("request sent");
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .expect("body read")
        .to_bytes();
    (
        status,
        ct,
        serde_json::from_slice(&bytes).expect("JSON body"),
    )
}

/// Polls `check` every 20 ms for up to 5 s.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..250 {
        if check().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for: {what}");
}
