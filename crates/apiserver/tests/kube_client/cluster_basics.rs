//! What clients expect of any cluster, as kube-rs's own cluster tests read it: the
//! `default/kubernetes` Service and its endpoints, `componentstatuses`, metadata-only answers to
//! writes, bodies in upstream's field order, and the pod and CSR subresources that write one
//! part of their object (`ephemeralcontainers`, `resize`, `approval`).

use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{ComponentStatus, ConfigMap, Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::api::{Api, Patch, PatchParams, PostParams};
use kube_client::core::PartialObjectMetaExt;
use kube_client::{Client, Error};
use serde_json::{Value, json};

use crate::common::{client, code, raw, server};

#[tokio::test]
async fn the_kubernetes_service_and_its_endpoints_exist_from_the_start() {
    let server = server().await;
    let client = client(&server).await;
    let port = i32::from(
        server
            .url()
            .rsplit(':')
            .next()
            .unwrap()
            .parse::<u16>()
            .unwrap(),
    );
    let svc = Api::<Service>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .unwrap();
    let labels = svc.metadata.labels.unwrap();
    assert_eq!(labels["component"], "apiserver");
    assert_eq!(labels["provider"], "kubernetes");
    let spec = svc.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.1"));
    assert_eq!(spec.selector, None);
    let ports = spec.ports.unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(
        (ports[0].name.as_deref(), ports[0].port, ports[0].protocol.as_deref()),
        (Some("https"), 443, Some("TCP"))
    );
    assert_eq!(
        ports[0].target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(port))
    );

    let slice = Api::<EndpointSlice>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .unwrap();
    assert_eq!(
        slice.metadata.labels.unwrap()["kubernetes.io/service-name"],
        "kubernetes"
    );
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(slice.endpoints[0].addresses, ["127.0.0.1"]);
    assert_eq!(slice.endpoints[0].conditions.as_ref().unwrap().ready, Some(true));
    let slice_ports = slice.ports.unwrap();
    assert_eq!(
        (slice_ports[0].name.as_deref(), slice_ports[0].port),
        (Some("https"), Some(port))
    );

    let endpoints = Api::<Endpoints>::namespaced(client, "default")
        .get("kubernetes")
        .await
        .unwrap();
    let subset = &endpoints.subsets.unwrap()[0];
    assert_eq!(subset.addresses.as_ref().unwrap()[0].ip, "127.0.0.1");
    assert_eq!(subset.ports.as_ref().unwrap()[0].port, port);
}

#[tokio::test]
async fn component_statuses_are_healthy_and_read_only() {
    let server = server().await;
    let client = client(&server).await;
    let api: Api<ComponentStatus> = Api::all(client.clone());
    let list = api.list(&Default::default()).await.unwrap();
    let names: Vec<_> = list.items.iter().map(|c| c.metadata.name.clone().unwrap()).collect();
    assert_eq!(names, ["scheduler", "controller-manager", "etcd-0"]);
    let scheduler = api.get("scheduler").await.unwrap();
    let condition = &scheduler.conditions.unwrap()[0];
    assert_eq!(
        (condition.type_.as_str(), condition.status.as_str()),
        ("Healthy", "True")
    );
    let (status, _, body) = raw(
        &client,
        "POST",
        "/api/v1/componentstatuses",
        "application/json",
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": "x"}})).unwrap(),
    )
    .await;
    assert_eq!(status, 405, "{body}");
    let err = api.get("kubelet").await.unwrap_err();
    assert_eq!(code(&err), 500);
}

#[tokio::test]
async fn writes_answer_metadata_alone_when_asked() {
    let server = server().await;
    let client = client(&server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "m"}, "data": {"k": "v"}}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let patch = ObjectMeta {
        annotations: Some([("test".to_string(), "123".to_string())].into()),
        ..Default::default()
    }
    .into_request_partial::<ConfigMap>();
    let patched = cms
        .patch_metadata("m", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let types = patched.types.unwrap();
    assert_eq!(
        (types.kind.as_str(), types.api_version.as_str()),
        ("PartialObjectMetadata", "meta.k8s.io/v1")
    );
    assert_eq!(patched.metadata.annotations.unwrap()["test"], "123");

    // PUT with the same Accept answers the metadata too; the object itself was written.
    let mut current = cms.get("m").await.unwrap();
    current.data = Some([("k".to_string(), "w".to_string())].into());
    let req = http::Request::put("/api/v1/namespaces/default/configmaps/m")
        .header("content-type", "application/json")
        .header("accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
        .body(kube_client::client::Body::from(serde_json::to_vec(&current).unwrap()))
        .unwrap();
    let (status, body) = send(&client, req).await;
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["kind"], "PartialObjectMetadata");
    assert!(body.get("data").is_none(), "{body}");
    assert_eq!(cms.get("m").await.unwrap().data.unwrap()["k"], "w");
}

/// Sends `req`: the status code and the body's bytes.
async fn send(client: &Client, req: http::Request<kube_client::client::Body>) -> (u16, Vec<u8>) {
    let resp = client.send(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, bytes.to_vec())
}

#[tokio::test]
async fn built_in_objects_are_encoded_in_go_field_order() {
    let server = server().await;
    let client = client(&server).await;
    let get = |uri: &str| http::Request::get(uri).body(kube_client::client::Body::empty()).unwrap();
    let (_, body) = send(&client, get("/api/v1/namespaces/default/services/kubernetes")).await;
    let body = String::from_utf8(body).unwrap();
    assert!(
        body.starts_with(r#"{"kind":"Service","apiVersion":"v1","metadata":{"#),
        "{body}"
    );
    let (spec, status) = (body.find(r#""spec":"#).unwrap(), body.find(r#""status":"#).unwrap());
    assert!(spec < status, "{body}");
    let (_, body) = send(&client, get("/api/v1/namespaces/default/services")).await;
    let body = String::from_utf8(body).unwrap();
    assert!(body.starts_with(r#"{"kind":"ServiceList","apiVersion":"v1","metadata":{"#), "{body}");

    // A client that expects another kind fails at the kind, the body's first value, as
    // kube-rs's own test reads the error's column.
    let req = http::Request::get("/api/v1/namespaces/default/services/kubernetes")
        .body(Vec::new())
        .unwrap();
    let err = client
        .request::<Pod>(req)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::SerdeError(_)));
    assert_eq!(
        err.to_string(),
        "Error deserializing response: invalid value: string \"Service\", expected Pod at line 1 column 17"
    );
}
