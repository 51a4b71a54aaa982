//! What clients expect of any cluster, as kube-rs's own cluster tests read it: the
//! `default/kubernetes` Service and its endpoints, `componentstatuses`, metadata-only answers to
//! writes, bodies in upstream's field order, and the pod and CSR subresources that write one
//! part of their object (`ephemeralcontainers`, `resize`, `approval`).

use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube_client::api::Api;

use crate::common::{client, server};

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
