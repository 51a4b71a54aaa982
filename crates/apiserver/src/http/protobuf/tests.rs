use serde_json::json;

use super::*;

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn field(num: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(u64::from(num) << 3 | 2, &mut out);
    varint(bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

fn int(num: u32, v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(u64::from(num) << 3, &mut out);
    varint(v, &mut out);
    out
}

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
    let unknown = [
        field(1, &type_meta),
        field(2, raw),
        field(3, b""),
        field(4, b""),
    ]
    .concat();
    [b"k8s\0".to_vec(), unknown].concat()
}

/// Every object of the test manifests (one or more of each built-in kind the server serves).
fn manifest_objects() -> Vec<Value> {
    let mut out = Vec::new();
    for text in [
        include_str!("../../../tests/manifests/core.yaml"),
        include_str!("../../../tests/manifests/workloads.yaml"),
        include_str!("../../../tests/manifests/cluster.yaml"),
        include_str!("../../../tests/manifests/beyond-workloads.yaml"),
    ] {
        for doc in serde_yaml_ng::Deserializer::from_str(text) {
            let v: Value = serde::Deserialize::deserialize(doc).expect("manifest YAML");
            if v.is_object() {
                out.push(v);
            }
        }
    }
    out
}

/// Whether `got` is `want` as the protobuf form carries it: numbers where the message has a
/// string (a quantity written as a number) come back as their text.
fn same(want: &Value, got: &Value, at: &str, diffs: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                match g.get(k) {
                    Some(gv) => same(wv, gv, &format!("{at}.{k}"), diffs),
                    None if wv.is_null() || wv == "" => {}
                    None => diffs.push(format!("{at}.{k}: missing")),
                }
            }
            for k in g.keys() {
                if !w.contains_key(k) {
                    diffs.push(format!("{at}.{k}: extra {}", g[k]));
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                same(wv, gv, &format!("{at}[{i}]"), diffs);
            }
        }
        (Value::Number(n), Value::String(s)) if n.to_string() == *s => {}
        (w, g) if w == g => {}
        (w, g) => diffs.push(format!("{at}: want {w}, got {g}")),
    }
}

#[test]
fn every_manifest_kind_round_trips_json_protobuf_json() {
    let objects = manifest_objects();
    assert!(objects.len() >= 40, "{} objects", objects.len());
    let mut kinds = std::collections::BTreeSet::new();
    for obj in &objects {
        let api_version = obj["apiVersion"].as_str().unwrap();
        let kind = obj["kind"].as_str().unwrap();
        let desc = message_for(api_version, kind)
            .unwrap_or_else(|| panic!("no message for {api_version} {kind}"));
        let mut unmapped = Vec::new();
        from_json(obj, &desc, Some(&mut unmapped));
        assert!(
            unmapped.is_empty(),
            "{kind}: fields with no protobuf form: {unmapped:?}"
        );
        let bytes = encode(obj).expect("a built-in kind");
        let back = decode(&bytes).unwrap_or_else(|e| panic!("{kind}: {}", e.message));
        let mut diffs = Vec::new();
        same(obj, &back, "", &mut diffs);
        assert!(diffs.is_empty(), "{kind}: {diffs:#?}");
        kinds.insert(kind.to_string());
    }
    for kind in [
        "PodTemplate",
        "Namespace",
        "Pod",
        "Deployment",
        "Job",
        "CronJob",
        "Service",
        "ConfigMap",
        "Secret",
        "Role",
        "Lease",
        "Event",
        "CertificateSigningRequest",
        "NetworkPolicy",
        "CustomResourceDefinition",
    ] {
        assert!(kinds.contains(kind), "the manifests have no {kind}");
    }
}

#[test]
fn special_types_round_trip() {
    let obj = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "p", "creationTimestamp": "2024-05-06T07:08:09Z",
            "managedFields": [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:containers": {}}}, "time": "2024-05-06T07:08:09Z"}],
        },
        "spec": {
            "containers": [{"name": "c", "image": "i",
                "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                "livenessProbe": {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 5},
                "readinessProbe": {"tcpSocket": {"port": 8080}}}],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Gi"}}],
            "terminationGracePeriodSeconds": 0,
            "enableServiceLinks": false,
        },
    });
    let back = decode(&encode(&obj).unwrap()).unwrap();
    assert_eq!(back, obj);

    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l"},
        "spec": {"holderIdentity": "a", "renewTime": "2024-05-06T07:08:09.123456Z"}});
    assert_eq!(decode(&encode(&lease).unwrap()).unwrap(), lease);

    let crd_schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"spec": {"type": "object", "additionalProperties": {"type": "string"},
            "properties": {"n": {"type": "integer", "default": 3, "maximum": 10.5},
                "any": {"x-kubernetes-int-or-string": true},
                "list": {"type": "array", "items": {"type": "string"}}}},
            "open": {"type": "object", "additionalProperties": false}}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "ws.x.io"},
        "spec": {"group": "x.io", "scope": "Namespaced",
            "names": {"plural": "ws", "kind": "W"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": crd_schema}}]}});
    assert_eq!(decode(&encode(&crd).unwrap()).unwrap(), crd);
}

#[test]
fn decodes_a_go_encoded_service_with_int_and_named_target_ports() {
    // As Go encodes them: every non-pointer field present, zero or not.
    let numbered = [
        field(1, b"80-8080"),
        field(2, b"TCP"),
        int(3, 80),
        field(4, &[int(1, 0), int(2, 8080), field(3, b"")].concat()),
        int(5, 0),
    ]
    .concat();
    let named = [
        field(1, b"web"),
        int(3, 443),
        field(4, &[int(1, 1), int(2, 0), field(3, b"https")].concat()),
    ]
    .concat();
    let unset = [int(3, 9000), field(4, &[int(1, 0), int(2, 0)].concat())].concat();
    let selector = [field(1, b"app"), field(2, b"web")].concat();
    let spec = [
        field(1, &numbered),
        field(1, &named),
        field(1, &unset),
        field(2, &selector),
        field(3, b""),
        field(4, b"NodePort"),
        int(12, 0),
    ]
    .concat();
    let raw = [field(1, &field(1, b"web")), field(2, &spec), field(3, b"")].concat();
    let obj = decode(&envelope("v1", "Service", &raw)).unwrap();
    assert_eq!(
        obj,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {
            "ports": [
                {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
                {"name": "web", "port": 443, "targetPort": "https"},
                {"port": 9000},
            ],
            "selector": {"app": "web"},
            "type": "NodePort",
        }, "status": {}})
    );
}

#[test]
fn decodes_quantity_maps_and_inlined_structs() {
    let entry = |k: &str, v: &str| {
        field(
            1,
            &[field(1, k.as_bytes()), field(2, &field(1, v.as_bytes()))].concat(),
        )
    };
    let spec = [
        entry("cpu", "1"),
        entry("memory", "1Gi"),
        field(2, b"BestEffort"),
    ]
    .concat();
    let quota = [field(1, &field(1, b"q")), field(2, &spec)].concat();
    let obj = decode(&envelope("v1", "ResourceQuota", &quota)).unwrap();
    assert_eq!(
        obj,
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
               "spec": {"hard": {"cpu": "1", "memory": "1Gi"}, "scopes": ["BestEffort"]}})
    );
    // Ingress: a rule's IngressRuleValue (field 2) is inlined, its `http` the rule's.
    let port = field(2, &int(2, 80));
    let backend = field(4, &[field(1, b"svc"), port].concat());
    let path = [field(1, b"/"), field(2, &backend), field(3, b"Prefix")].concat();
    let http = field(1, &field(1, &path));
    let rule = [field(1, b"a.io"), field(2, &http)].concat();
    let spec = [field(3, &rule), field(4, b"nginx")].concat();
    let ingress = [field(1, &field(1, b"web")), field(2, &spec)].concat();
    let obj = decode(&envelope("networking.k8s.io/v1", "Ingress", &ingress)).unwrap();
    assert_eq!(
        obj["spec"],
        json!({"ingressClassName": "nginx", "rules": [{"host": "a.io", "http": {"paths": [
            {"path": "/", "pathType": "Prefix",
             "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]})
    );
}

#[test]
fn decodes_option_bodies_of_any_group_version() {
    // DeleteOptions as client-go sends it on DELETE: typed with the client's group version.
    let raw = [
        int(1, 0),
        field(2, &field(1, b"uid-1")),
        int(3, 0),
        field(4, b"Foreground"),
    ]
    .concat();
    for api_version in ["v1", "apps/v1", "meta.k8s.io/v1"] {
        let obj = decode(&envelope(api_version, "DeleteOptions", &raw)).unwrap();
        assert_eq!(
            obj,
            json!({"apiVersion": api_version, "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                "preconditions": {"uid": "uid-1"}, "orphanDependents": false,
                "propagationPolicy": "Foreground"})
        );
    }
    let raw = [field(1, b"All"), field(3, b"kubectl")].concat();
    let obj = decode(&envelope("v1", "CreateOptions", &raw)).unwrap();
    assert_eq!(obj["dryRun"], json!(["All"]));
    assert_eq!(obj["fieldManager"], "kubectl");
}

#[test]
fn refuses_what_is_not_a_built_in_kind_or_not_protobuf() {
    let err = decode(&envelope("x.io/v1", "Widget", b"")).unwrap_err();
    assert_eq!(err.code, 415);
    assert!(
        err.message.contains("kind x.io/v1/Widget"),
        "{}",
        err.message
    );
    assert_eq!(decode(b"not protobuf").unwrap_err().code, 400);
    assert_eq!(decode(b"k8s\0\x0a\xff").unwrap_err().code, 400);
    // A field of the wrong wire type.
    let raw = field(1, &int(1, 5));
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", &raw)).unwrap_err().code,
        400
    );
    // Unknown fields are skipped, as Go's decoder skips them.
    let raw = [field(1, &field(1, b"c")), field(99, b"x")].concat();
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", &raw)).unwrap()["metadata"],
        json!({"name": "c"})
    );
    assert!(encode(&json!({"apiVersion": "x.io/v1", "kind": "Widget"})).is_none());
    // A custom resource named as a built-in kind, or as a meta message, has no protobuf form.
    assert!(encode(&json!({"apiVersion": "apps.example.com/v1", "kind": "Deployment"})).is_none());
    assert!(encode(&json!({"apiVersion": "x.io/v1", "kind": "Condition"})).is_none());
    assert!(encode(&json!({"apiVersion": "x.io/v1", "kind": "Status"})).is_some());
}

#[test]
fn watch_frames_carry_length_prefixed_watch_events() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "resourceVersion": "5"}, "data": {"k": "v"}});
    let status = json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
        "code": 410, "reason": "Expired", "message": "too old", "metadata": {}});
    let stream = [watch_frame("ADDED", &cm), watch_frame("ERROR", &status)].concat();
    let len = u32::from_be_bytes(stream[..4].try_into().unwrap()) as usize;
    assert_eq!(&stream[4..4 + 2], &[0x0a, 5], "type ADDED first");
    assert!(stream[4..4 + len].windows(4).any(|w| w == b"k8s\0"));
    let events = read_watch_frames(&stream).unwrap();
    assert_eq!(events, vec![("ADDED".into(), cm), ("ERROR".into(), status)]);
}

#[test]
fn accept_and_content_type() {
    assert!(wants(Some(
        "application/vnd.kubernetes.protobuf, application/json"
    )));
    assert!(wants(Some(
        "application/vnd.kubernetes.protobuf;stream=watch"
    )));
    assert!(!wants(Some(
        "application/json, application/vnd.kubernetes.protobuf"
    )));
    assert!(!wants(Some(
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"
    )));
    assert!(!wants(None));
    assert!(is_protobuf(Some("application/vnd.kubernetes.protobuf")));
    assert!(!is_protobuf(Some("application/json")));
}

#[test]
fn deeply_nested_bodies_are_400_not_a_stack_overflow() {
    // JSONSchemaProps nest through `not` (field 28) without end.
    let mut schema = Vec::new();
    for _ in 0..10_000 {
        schema = field(28, &schema);
    }
    let validation = field(1, &schema);
    let version = [field(1, b"v1"), field(4, &validation)].concat();
    let raw = field(2, &field(7, &version));
    let err = decode(&envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &raw,
    ))
    .unwrap_err();
    assert_eq!(err.code, 400);
    assert!(err.message.contains("nested too deeply"), "{}", err.message);
    // An object embedded in an object (a RawExtension of protobuf) counts as nesting too.
    let mut obj = envelope("v1", "ConfigMap", b"");
    for _ in 0..200 {
        let ext = field(1, &obj);
        obj = envelope(
            "v1",
            "WatchEvent",
            &[field(1, b"ADDED"), field(2, &ext)].concat(),
        );
    }
    assert_eq!(decode(&obj).unwrap_err().code, 400);
}

#[test]
fn go_zeros_of_unset_non_pointer_fields_are_left_out_and_pointer_zeros_kept() {
    // A probe as Go writes it when only its handler is set: timeouts and thresholds 0.
    let http_get = field(
        2,
        &[
            field(1, b"/"),
            field(2, &[int(1, 1), field(3, b"http")].concat()),
        ]
        .concat(),
    );
    let probe = [
        field(1, &http_get),
        int(2, 0),
        int(3, 0),
        int(4, 0),
        int(5, 0),
        int(6, 0),
    ]
    .concat();
    let container = [
        field(1, b"c"),
        field(2, b"img"),
        field(11, &probe),
        int(16, 0),
    ]
    .concat();
    let pod_spec = [field(2, &container), field(3, b"Always"), int(11, 0)].concat();
    let template = [field(1, &field(1, b"")), field(2, &pod_spec)].concat();
    // replicas (a pointer) 0; minReadySeconds (not one) 0; paused false.
    let spec = [int(1, 0), field(3, &template), int(5, 0), int(7, 0)].concat();
    let raw = [field(1, &field(1, b"d")), field(2, &spec)].concat();
    let obj = decode(&envelope("apps/v1", "Deployment", &raw)).unwrap();
    assert_eq!(
        obj["spec"],
        json!({"replicas": 0, "template": {"metadata": {}, "spec": {
            "containers": [{"name": "c", "image": "img",
                "readinessProbe": {"httpGet": {"path": "/", "port": "http"},
                    "initialDelaySeconds": 0}}],
            "restartPolicy": "Always"}}})
    );
    // An ingress backend's named port: its number 0 is unset.
    let port = field(2, &[field(1, b"http"), int(2, 0)].concat());
    let backend = field(4, &[field(1, b"svc"), port].concat());
    let raw = field(2, &field(1, &backend));
    let obj = decode(&envelope("networking.k8s.io/v1", "Ingress", &raw)).unwrap();
    assert_eq!(
        obj["spec"]["defaultBackend"],
        json!({"service": {"name": "svc", "port": {"name": "http"}}})
    );
}
