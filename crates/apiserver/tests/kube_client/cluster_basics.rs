//! What clients expect of any cluster, as kube-rs's own cluster tests read it: the
//! `default/kubernetes` Service, its endpoints and ServiceCIDR, `componentstatuses`, metadata-only answers to
//! writes, bodies in upstream's field order, and the pod and CSR subresources that write one
//! part of their object (`ephemeralcontainers`, `resize`, `approval`, a namespace's `finalize`).

use http_body_util::BodyExt;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ComponentStatus, ConfigMap, Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::ServiceCIDR;
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
        (
            ports[0].name.as_deref(),
            ports[0].port,
            ports[0].protocol.as_deref()
        ),
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
    assert_eq!(
        slice.endpoints[0].conditions.as_ref().unwrap().ready,
        Some(true)
    );
    let slice_ports = slice.ports.unwrap();
    assert_eq!(
        (slice_ports[0].name.as_deref(), slice_ports[0].port),
        (Some("https"), Some(port))
    );

    let endpoints = Api::<Endpoints>::namespaced(client.clone(), "default")
        .get("kubernetes")
        .await
        .unwrap();
    let subset = &endpoints.subsets.unwrap()[0];
    assert_eq!(subset.addresses.as_ref().unwrap()[0].ip, "127.0.0.1");
    assert_eq!(subset.ports.as_ref().unwrap()[0].port, port);

    // The default ServiceCIDR the Service's address comes from, Ready.
    let cidr = Api::<ServiceCIDR>::all(client)
        .get("kubernetes")
        .await
        .unwrap();
    assert_eq!(cidr.spec.unwrap().cidrs.unwrap(), ["10.96.0.0/12"]);
    let ready = &cidr.status.unwrap().conditions.unwrap()[0];
    assert_eq!(
        (
            ready.type_.as_str(),
            ready.status.as_str(),
            ready.message.as_str()
        ),
        ("Ready", "True", "Kubernetes default Service CIDR is ready")
    );
}

#[tokio::test]
async fn component_statuses_are_healthy_and_read_only() {
    let server = server().await;
    let client = client(&server).await;
    let api: Api<ComponentStatus> = Api::all(client.clone());
    let list = api.list(&Default::default()).await.unwrap();
    let names: Vec<_> = list
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
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
        serde_json::to_vec(
            &json!({"apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": "x"}}),
        )
        .unwrap(),
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
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "m"}, "data": {"k": "v"}})).unwrap();
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
        .header(
            "accept",
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        )
        .body(kube_client::client::Body::from(
            serde_json::to_vec(&current).unwrap(),
        ))
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
    let get = |uri: &str| {
        http::Request::get(uri)
            .body(kube_client::client::Body::empty())
            .unwrap()
    };
    let (_, body) = send(
        &client,
        get("/api/v1/namespaces/default/services/kubernetes"),
    )
    .await;
    let body = String::from_utf8(body).unwrap();
    assert!(
        body.starts_with(r#"{"kind":"Service","apiVersion":"v1","metadata":{"#),
        "{body}"
    );
    let (spec, status) = (
        body.find(r#""spec":"#).unwrap(),
        body.find(r#""status":"#).unwrap(),
    );
    assert!(spec < status, "{body}");
    let (_, body) = send(&client, get("/api/v1/namespaces/default/services")).await;
    let body = String::from_utf8(body).unwrap();
    assert!(
        body.starts_with(r#"{"kind":"ServiceList","apiVersion":"v1","metadata":{"#),
        "{body}"
    );

    // A client that expects another kind fails at the kind, the body's first value, as
    // kube-rs's own test reads the error's column.
    let req = http::Request::get("/api/v1/namespaces/default/services/kubernetes")
        .body(Vec::new())
        .unwrap();
    let err = client.request::<Pod>(req).await.unwrap_err();
    assert!(matches!(err, Error::SerdeError(_)));
    assert_eq!(
        err.to_string(),
        "Error deserializing response: invalid value: string \"Service\", expected Pod at line 1 column 17"
    );
}

fn csr() -> CertificateSigningRequest {
    // A request for CN=angela (kube-rs's own test request).
    serde_json::from_value(json!({
        "metadata": {"name": "fake"},
        "spec": {
            "request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQ1ZqQ0NBVDRDQVFBd0VURVBNQTBHQTFVRUF3d0dZVzVuWld4aE1JSUJJakFOQmdrcWhraUc5dzBCQVFFRgpBQU9DQVE4QU1JSUJDZ0tDQVFFQTByczhJTHRHdTYxakx2dHhWTTJSVlRWMDNHWlJTWWw0dWluVWo4RElaWjBOCnR2MUZtRVFSd3VoaUZsOFEzcWl0Qm0wMUFSMkNJVXBGd2ZzSjZ4MXF3ckJzVkhZbGlBNVhwRVpZM3ExcGswSDQKM3Z3aGJlK1o2MVNrVHF5SVBYUUwrTWM5T1Nsbm0xb0R2N0NtSkZNMUlMRVI3QTVGZnZKOEdFRjJ6dHBoaUlFMwpub1dtdHNZb3JuT2wzc2lHQ2ZGZzR4Zmd4eW8ybmlneFNVekl1bXNnVm9PM2ttT0x1RVF6cXpkakJ3TFJXbWlECklmMXBMWnoyalVnald4UkhCM1gyWnVVV1d1T09PZnpXM01LaE8ybHEvZi9DdS8wYk83c0x0MCt3U2ZMSU91TFcKcW90blZtRmxMMytqTy82WDNDKzBERHk5aUtwbXJjVDBnWGZLemE1dHJRSURBUUFCb0FBd0RRWUpLb1pJaHZjTgpBUUVMQlFBRGdnRUJBR05WdmVIOGR4ZzNvK21VeVRkbmFjVmQ1N24zSkExdnZEU1JWREkyQTZ1eXN3ZFp1L1BVCkkwZXpZWFV0RVNnSk1IRmQycVVNMjNuNVJsSXJ3R0xuUXFISUh5VStWWHhsdnZsRnpNOVpEWllSTmU3QlJvYXgKQVlEdUI5STZXT3FYbkFvczFqRmxNUG5NbFpqdU5kSGxpT1BjTU1oNndLaTZzZFhpVStHYTJ2RUVLY01jSVUyRgpvU2djUWdMYTk0aEpacGk3ZnNMdm1OQUxoT045UHdNMGM1dVJVejV4T0dGMUtCbWRSeEgvbUNOS2JKYjFRQm1HCkkwYitEUEdaTktXTU0xMzhIQXdoV0tkNjVoVHdYOWl4V3ZHMkh4TG1WQzg0L1BHT0tWQW9FNkpsYWFHdTlQVmkKdjlOSjVaZlZrcXdCd0hKbzZXdk9xVlA3SVFjZmg3d0drWm89Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=",
            "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["client auth"],
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn the_approval_subresource_writes_only_conditions() {
    let server = server().await;
    let client = client(&server).await;
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    csrs.create(&PostParams::default(), &csr()).await.unwrap();
    let approve = |kind: &str, status: &str| {
        Patch::Merge(json!({
            "spec": {"usages": ["digital signature"]},
            "status": {"conditions": [{"type": kind, "status": status, "reason": "Test"}]},
        }))
    };
    let pp = PatchParams::default();
    let approved = csrs
        .patch_approval("fake", &pp, &approve("Approved", "True"))
        .await
        .unwrap();
    let conditions = approved.status.unwrap().conditions.unwrap();
    assert_eq!(conditions[0].type_, "Approved");
    // The spec is the approval's to keep, not to write.
    assert_eq!(approved.spec.usages.unwrap(), ["client auth"]);
    assert_eq!(
        csrs.get_approval("fake")
            .await
            .unwrap()
            .status
            .unwrap()
            .conditions
            .unwrap()[0]
            .type_,
        "Approved"
    );

    let invalid = |err: Error| match err {
        Error::Api(s) => (s.code, s.message),
        other => panic!("{other:?}"),
    };
    let err = csrs
        .patch_approval("fake", &pp, &approve("Denied", "True"))
        .await
        .unwrap_err();
    assert_eq!(
        invalid(err),
        (
            422,
            "CertificateSigningRequest.certificates.k8s.io \"fake\" is invalid: status.conditions: Forbidden: updates may not remove a condition of type \"Approved\"".to_string()
        )
    );
    let both = Patch::Merge(json!({"status": {"conditions": [
        {"type": "Approved", "status": "True"},
        {"type": "Denied", "status": "True"},
    ]}}));
    let err = csrs.patch_approval("fake", &pp, &both).await.unwrap_err();
    let (status, message) = invalid(err);
    assert_eq!(status, 422);
    assert!(
        message.contains("status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"),
        "{message}"
    );
    let other = Api::<CertificateSigningRequest>::all(client);
    let false_approval = Patch::Merge(json!({"status": {"conditions": [
        {"type": "Approved", "status": "False"},
    ]}}));
    let (status, message) = invalid(
        other
            .patch_approval("fake", &pp, &false_approval)
            .await
            .unwrap_err(),
    );
    assert_eq!(status, 422);
    assert!(
        message.contains(
            "status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\""
        ),
        "{message}"
    );
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{
            "name": "c", "image": "busybox:stable",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}},
        }]},
    }))
    .unwrap()
}

#[tokio::test]
async fn ephemeral_containers_are_added_but_never_changed_or_removed() {
    let server = server().await;
    let client = client(&server).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    pods.create(&PostParams::default(), &pod("e"))
        .await
        .unwrap();
    assert_eq!(
        pods.get_ephemeral_containers("e")
            .await
            .unwrap()
            .spec
            .unwrap()
            .ephemeral_containers,
        None
    );
    let with = |containers: Value| -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": "e"}, "spec": {"ephemeralContainers": containers}}),
        )
        .unwrap()
    };
    let debugger = json!({"name": "debugger", "image": "busybox:stable", "command": ["sh"]});
    let replaced = pods
        .replace_ephemeral_containers("e", &PostParams::default(), &with(json!([debugger])))
        .await
        .unwrap();
    let spec = replaced.spec.unwrap();
    let added = &spec.ephemeral_containers.as_ref().unwrap()[0];
    assert_eq!(added.name, "debugger");
    // Defaulted as any container, and the rest of the pod untouched.
    assert_eq!(
        added.termination_message_path.as_deref(),
        Some("/dev/termination-log")
    );
    assert_eq!(spec.containers[0].name, "c");

    let second = json!({"name": "second", "image": "busybox:stable"});
    let patched = pods
        .patch_ephemeral_containers(
            "e",
            &PatchParams::default(),
            &Patch::Strategic(with(json!([second]))),
        )
        .await
        .unwrap();
    let mut names: Vec<_> = patched
        .spec
        .unwrap()
        .ephemeral_containers
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    names.sort();
    assert_eq!(names, ["debugger", "second"]);

    let err = pods
        .replace_ephemeral_containers("e", &PostParams::default(), &with(json!([second])))
        .await
        .unwrap_err();
    let Error::Api(status) = err else { panic!() };
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains("spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debugger\" may not be removed"),
        "{}",
        status.message
    );
    let changed = json!([{"name": "debugger", "image": "busybox:1.36"}, second]);
    let err = pods
        .patch_ephemeral_containers(
            "e",
            &PatchParams::default(),
            &Patch::Strategic(with(changed)),
        )
        .await
        .unwrap_err();
    let Error::Api(status) = err else { panic!() };
    assert!(
        status.message.contains("spec.ephemeralContainers[debugger]: Forbidden: existing ephemeral containers \"debugger\" may not be changed"),
        "{}",
        status.message
    );
    // The main resource still refuses them.
    let err = pods
        .patch(
            "e",
            &PatchParams::default(),
            &Patch::Strategic(with(json!([{"name": "third", "image": "busybox"}]))),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&err), 422);
}

#[tokio::test]
async fn resize_changes_only_cpu_and_memory_within_the_qos_class() {
    let server = server().await;
    let client = client(&server).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(&PostParams::default(), &pod("r"))
        .await
        .unwrap();
    let resize = |resources: Value| {
        Patch::Strategic(
            json!({"spec": {"containers": [{"name": "c", "image": "other", "resources": resources}]}}),
        )
    };
    let pp = PatchParams::default();
    let uri = "/api/v1/namespaces/default/pods/r/resize";
    let resized = pods
        .patch_subresource(
            "resize",
            "r",
            &pp,
            &resize(json!({"requests": {"cpu": "150m"}, "limits": {"cpu": "300m"}})),
        )
        .await
        .unwrap();
    let c = &resized.spec.unwrap().containers[0];
    let resources = c.resources.as_ref().unwrap();
    assert_eq!(resources.limits.as_ref().unwrap()["cpu"].0, "300m");
    assert_eq!(resources.requests.as_ref().unwrap()["cpu"].0, "150m");
    // Only resources are the resize's to write.
    assert_eq!(c.image.as_deref(), Some("busybox:stable"));

    let guaranteed = json!({"requests": {"cpu": "300m"}, "limits": {"cpu": "300m"}});
    let err = pods
        .patch_subresource("resize", "r", &pp, &resize(guaranteed))
        .await
        .unwrap_err();
    let Error::Api(status) = err else { panic!() };
    assert_eq!(status.code, 422);
    assert!(
        status
            .message
            .contains("Pod QOS Class may not change as a result of resizing"),
        "{}",
        status.message
    );
    let storage = json!({"requests": {"ephemeral-storage": "1Gi"}});
    let err = pods
        .patch_subresource("resize", "r", &pp, &resize(storage))
        .await
        .unwrap_err();
    let Error::Api(status) = err else { panic!() };
    assert!(
        status
            .message
            .contains("spec: Forbidden: only cpu and memory resources are mutable"),
        "{}",
        status.message
    );
    let (status, _, body) = raw(&client, "GET", uri, "application/json", Vec::new()).await;
    assert_eq!(
        (status, body["kind"].as_str()),
        (200, Some("Pod")),
        "{body}"
    );
}

/// A namespace's `finalize` subresource writes its `spec.finalizers` (upstream's e2e "should
/// apply a finalizer to a Namespace", through client-go's `Namespaces().Finalize`); the
/// status stays the stored one, and a finalizer that is not a qualified name is refused.
#[tokio::test]
async fn a_namespace_finalize_writes_its_finalizers() {
    use k8s_openapi::api::core::v1::Namespace;
    let server = server().await;
    let client = client(&server).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some("fin".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut ns = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let finalize = |ns: &Namespace| {
        http::Request::put("/api/v1/namespaces/fin/finalize")
            .header("content-type", "application/json")
            .body(kube_client::client::Body::from(
                serde_json::to_vec(ns).unwrap(),
            ))
            .unwrap()
    };
    let spec = ns.spec.get_or_insert_with(Default::default);
    spec.finalizers
        .get_or_insert_with(Vec::new)
        .push("e2e.example.com/fakeFinalizer".into());
    ns.status = Some(k8s_openapi::api::core::v1::NamespaceStatus {
        phase: Some("Terminating".into()),
        ..Default::default()
    });
    let (status, body) = send(&client, finalize(&ns)).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let got = namespaces.get("fin").await.unwrap();
    assert_eq!(
        got.spec.unwrap().finalizers.unwrap(),
        ["kubernetes", "e2e.example.com/fakeFinalizer"]
    );
    assert_eq!(got.status.unwrap().phase.as_deref(), Some("Active"));

    let mut bad = namespaces.get("fin").await.unwrap();
    bad.spec.as_mut().unwrap().finalizers = Some(vec!["not a name".into()]);
    let (status, body) = send(&client, finalize(&bad)).await;
    assert_eq!(status, 422, "{}", String::from_utf8_lossy(&body));
}
