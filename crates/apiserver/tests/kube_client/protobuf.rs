//! Built-in kinds in protobuf (`application/vnd.kubernetes.protobuf`), as client-go's typed
//! clients speak it: create with a protobuf body, read back in protobuf and in JSON, list,
//! watch (length-prefixed `WatchEvent` frames) and delete with a protobuf `DeleteOptions`.
//! The envelope of one answer is also read with message definitions written here from
//! upstream's `runtime.Unknown` and `core.v1.ConfigMap`, independently of the server's.

use std::collections::HashMap;

use crt_apiserver::http::protobuf;
use http_body_util::BodyExt;
use prost::Message;
use serde_json::{Value, json};

use crate::common::{client, server};

const PB: &str = "application/vnd.kubernetes.protobuf";

async fn send(
    client: &kube_client::Client,
    method: &str,
    uri: &str,
    content_type: Option<&str>,
    accept: &str,
    body: Vec<u8>,
) -> (u16, String, bytes::Bytes) {
    let mut req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("accept", accept);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    let req = req.body(kube_client::client::Body::from(body)).unwrap();
    let resp = client.send(req).await.expect("request sent");
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, ct, body)
}

/// `(collection path, object)` for a representative kind of each group.
fn objects() -> Vec<(&'static str, Value)> {
    let pod_spec = json!({"containers": [{"name": "c", "image": "busybox",
        "ports": [{"containerPort": 80, "name": "http"}],
        "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}},
        "readinessProbe": {"httpGet": {"port": "http", "path": "/"}}}],
        "restartPolicy": "OnFailure", "terminationGracePeriodSeconds": 0});
    let template = json!({"metadata": {"labels": {"app": "a"}}, "spec": pod_spec});
    vec![
        (
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "pb-doomed", "labels": {"x": "y"}}}),
        ),
        (
            "/api/v1/namespaces/pb/podtemplates",
            json!({"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": "pt"}, "template": template}),
        ),
        (
            "/api/v1/namespaces/pb/pods",
            json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"a": "b"}}, "spec": pod_spec}),
        ),
        (
            "/apis/apps/v1/namespaces/pb/deployments",
            json!({"apiVersion": "apps/v1",
            "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "a"}},
                "strategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "50%"}},
                "template": {"metadata": {"labels": {"app": "a"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
        ),
        (
            "/apis/batch/v1/namespaces/pb/jobs",
            json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j"}, "spec": {"backoffLimit": 0, "template": template}}),
        ),
        (
            "/apis/batch/v1/namespaces/pb/cronjobs",
            json!({"apiVersion": "batch/v1",
            "kind": "CronJob", "metadata": {"name": "cj"},
            "spec": {"schedule": "*/5 * * * *", "successfulJobsHistoryLimit": 0,
                "jobTemplate": {"spec": {"template": template}}}}),
        ),
        (
            "/api/v1/namespaces/pb/services",
            json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s"}, "spec": {"selector": {"app": "a"},
                "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}}),
        ),
        (
            "/api/v1/namespaces/pb/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm"}, "data": {"k": "v", "empty": ""},
            "binaryData": {"b": "AAEC"}}),
        ),
        (
            "/api/v1/namespaces/pb/secrets",
            json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "sec"}, "type": "Opaque", "data": {"p": "c2VjcmV0"}}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/pb/roles",
            json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "r"}, "rules": [{"apiGroups": [""],
                "resources": ["pods"], "verbs": ["get", "list"]}]}),
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/pb/leases",
            json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
            "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                "renewTime": "2024-05-06T07:08:09.123456Z"}}),
        ),
        (
            "/api/v1/namespaces/pb/events",
            json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p",
                "namespace": "pb"}, "reason": "Test", "message": "m", "type": "Normal",
            "count": 2, "firstTimestamp": "2024-05-06T07:08:09Z",
            "lastTimestamp": "2024-05-06T07:08:10Z"}),
        ),
        (
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            json!({
            "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": "csr"}, "spec": {"request": "LS0tLS1CRUdJTg==",
                "signerName": "example.com/signer", "usages": ["digital signature"]}}),
        ),
        (
            "/apis/networking.k8s.io/v1/namespaces/pb/networkpolicies",
            json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "np"}, "spec": {"podSelector": {},
                "policyTypes": ["Ingress"], "ingress": [{"ports": [{"port": 80}]}]}}),
        ),
    ]
}

#[tokio::test]
async fn built_in_kinds_are_created_read_listed_and_watched_in_protobuf() {
    let server = server().await;
    let client = client(&server).await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pb"}});
    let (status, _, _) = send(
        &client,
        "POST",
        "/api/v1/namespaces",
        Some(PB),
        PB,
        protobuf::encode(&ns).unwrap(),
    )
    .await;
    assert_eq!(status, 201);

    for (collection, obj) in objects() {
        let kind = obj["kind"].as_str().unwrap();
        let name = obj["metadata"]["name"].as_str().unwrap();
        let (status, ct, body) = send(
            &client,
            "POST",
            collection,
            Some(PB),
            &format!("{PB}, application/json"),
            protobuf::encode(&obj).unwrap(),
        )
        .await;
        assert_eq!(status, 201, "{kind}: {}", String::from_utf8_lossy(&body));
        assert_eq!(ct, PB, "{kind}");
        let created = protobuf::decode(&body).unwrap();
        assert_eq!(created["metadata"]["name"], name, "{kind}");
        assert!(created["metadata"]["uid"].is_string(), "{kind}");

        let item = format!("{collection}/{name}");
        let (status, ct, body) = send(&client, "GET", &item, None, PB, vec![]).await;
        assert_eq!((status, ct.as_str()), (200, PB), "{kind}");
        let from_pb = protobuf::decode(&body).unwrap();
        let (status, ct, body) =
            send(&client, "GET", &item, None, "application/json", vec![]).await;
        assert_eq!((status, ct.as_str()), (200, "application/json"), "{kind}");
        let from_json: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            from_pb, from_json,
            "{kind}: the protobuf and JSON answers differ"
        );
        // What was sent is what is stored (the server's defaults aside).
        for (key, sent) in obj.as_object().unwrap() {
            if key != "metadata" && key != "spec" && key != "template" {
                assert_eq!(&from_json[key], sent, "{kind}.{key}");
            }
        }
    }
    let (_, _, body) = send(
        &client,
        "GET",
        "/apis/apps/v1/namespaces/pb/deployments/d",
        None,
        "application/json",
        vec![],
    )
    .await;
    let deployment: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        deployment["spec"]["replicas"], 0,
        "a pointer's zero is a value"
    );
    assert_eq!(
        deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"],
        0
    );
    let (_, _, body) = send(
        &client,
        "GET",
        "/api/v1/namespaces/pb/configmaps/cm",
        None,
        "application/json",
        vec![],
    )
    .await;
    let cm: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        cm["data"],
        json!({"k": "v", "empty": ""}),
        "map values keep empty strings"
    );

    // A list.
    let (status, ct, body) = send(
        &client,
        "GET",
        "/api/v1/namespaces/pb/configmaps",
        None,
        PB,
        vec![],
    )
    .await;
    assert_eq!((status, ct.as_str()), (200, PB));
    let list = protobuf::decode(&body).unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    assert!(list["metadata"]["resourceVersion"].is_string());
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"cm"), "{names:?}");

    // A watch: the objects already there, as ADDED frames, until the timeout ends it.
    let (status, ct, body) = send(
        &client,
        "GET",
        "/api/v1/namespaces/pb/configmaps?watch=true&resourceVersion=0&timeoutSeconds=1",
        None,
        &format!("{PB};stream=watch, application/json"),
        vec![],
    )
    .await;
    assert_eq!(
        (status, ct.as_str()),
        (200, "application/vnd.kubernetes.protobuf;stream=watch")
    );
    let events = protobuf::read_watch_frames(&body).unwrap();
    let cm_event = events
        .iter()
        .find(|(_, o)| o["metadata"]["name"] == "cm")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(cm_event.0, "ADDED");
    assert_eq!(cm_event.1["kind"], "ConfigMap");
    assert_eq!(cm_event.1["data"]["k"], "v");

    // Errors are protobuf `Status`es.
    let (status, ct, body) = send(
        &client,
        "GET",
        "/api/v1/namespaces/pb/configmaps/nope",
        None,
        PB,
        vec![],
    )
    .await;
    assert_eq!((status, ct.as_str()), (404, PB));
    let err = protobuf::decode(&body).unwrap();
    assert_eq!(
        (err["kind"].as_str(), err["reason"].as_str()),
        (Some("Status"), Some("NotFound"))
    );
    assert_eq!(err["code"], 404);

    // A protobuf body of a kind with no protobuf form is refused.
    let widget = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some("x.io/v1".into()),
            kind: Some("Thing".into()),
        }),
        raw: Some(Vec::new()),
        ..Default::default()
    };
    let widget = [b"k8s\0".to_vec(), widget.encode_to_vec()].concat();
    let (status, _, body) = send(
        &client,
        "POST",
        "/api/v1/namespaces/pb/configmaps",
        Some(PB),
        "application/json",
        widget,
    )
    .await;
    assert_eq!(status, 415, "{}", String::from_utf8_lossy(&body));
}

#[tokio::test]
async fn deletes_take_protobuf_delete_options() {
    let server = server().await;
    let client = client(&server).await;
    for name in ["pb-gone", "pb-cms"] {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        let (status, _, _) = send(
            &client,
            "POST",
            "/api/v1/namespaces",
            Some(PB),
            PB,
            protobuf::encode(&ns).unwrap(),
        )
        .await;
        assert_eq!(status, 201);
    }
    // As client-go sends it: typed with the client's group version.
    let opts = json!({"apiVersion": "v1", "kind": "DeleteOptions",
        "propagationPolicy": "Background", "gracePeriodSeconds": 0});
    let (status, ct, body) = send(
        &client,
        "DELETE",
        "/api/v1/namespaces/pb-gone",
        Some(PB),
        PB,
        protobuf::encode(&opts).unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(ct, PB);
    let ns = protobuf::decode(&body).unwrap();
    assert_eq!(ns["kind"], "Namespace");
    assert_eq!(ns["status"]["phase"], "Terminating");

    // A delete collection with a body, and DeleteOptions whose precondition fails.
    for i in 0..2 {
        let cm =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}});
        let (status, _, _) = send(
            &client,
            "POST",
            "/api/v1/namespaces/pb-cms/configmaps",
            Some(PB),
            PB,
            protobuf::encode(&cm).unwrap(),
        )
        .await;
        assert_eq!(status, 201);
    }
    let stale = json!({"apiVersion": "v1", "kind": "DeleteOptions",
        "preconditions": {"uid": "not-the-uid"}});
    let (status, _, body) = send(
        &client,
        "DELETE",
        "/api/v1/namespaces/pb-cms/configmaps/c0",
        Some(PB),
        PB,
        protobuf::encode(&stale).unwrap(),
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(protobuf::decode(&body).unwrap()["reason"], "Conflict");
    let (status, _, body) = send(
        &client,
        "DELETE",
        "/api/v1/namespaces/pb-cms/configmaps",
        Some(PB),
        PB,
        protobuf::encode(&opts).unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let deleted = protobuf::decode(&body).unwrap();
    assert_eq!(deleted["kind"], "ConfigMapList");
    assert_eq!(deleted["items"].as_array().unwrap().len(), 2);
}

/// `runtime.Unknown` (k8s.io/apimachinery/pkg/runtime/generated.proto).
#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    raw: Option<Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    content_encoding: Option<String>,
    #[prost(string, optional, tag = "4")]
    content_type: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
}

/// `core.v1.ConfigMap`, with the `ObjectMeta` fields read here.
#[derive(Clone, PartialEq, Message)]
struct ConfigMap {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(map = "string, string", tag = "2")]
    data: HashMap<String, String>,
}

#[derive(Clone, PartialEq, Message)]
struct ObjectMeta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "6")]
    resource_version: Option<String>,
}

#[tokio::test]
async fn the_envelope_is_upstreams_runtime_unknown() {
    let server = server().await;
    let client = client(&server).await;
    let cm = ConfigMap {
        metadata: Some(ObjectMeta {
            name: Some("env".into()),
            ..Default::default()
        }),
        data: HashMap::from([("k".to_string(), "v".to_string())]),
    };
    let body = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
        }),
        raw: Some(cm.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let body = [b"k8s\0".to_vec(), body.encode_to_vec()].concat();
    let (status, ct, answer) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(PB),
        &format!("{PB}, application/json"),
        body,
    )
    .await;
    assert_eq!(
        (status, ct.as_str()),
        (201, PB),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    let answer = answer.strip_prefix(b"k8s\0").expect("the magic prefix");
    let unknown = Unknown::decode(answer).unwrap();
    let tm = unknown.type_meta.unwrap();
    assert_eq!(
        (tm.api_version.as_deref(), tm.kind.as_deref()),
        (Some("v1"), Some("ConfigMap"))
    );
    let created = ConfigMap::decode(unknown.raw.unwrap().as_slice()).unwrap();
    let meta = created.metadata.unwrap();
    assert_eq!(meta.name.as_deref(), Some("env"));
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert!(meta.resource_version.is_some());
    assert_eq!(created.data["k"], "v");
}
