//! What Kubernetes' `[sig-api-machinery]` conformance specs check of an API server, over HTTP:
//! the health endpoints' named checks, `storageVersionHash` in discovery, strict field
//! validation of custom objects with repeated fields (upstream's field-validation integration
//! and e2e tables), status writes that also change metadata, and continue tokens of compacted
//! lists.

use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::common::{client, raw, server};

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

/// A continue token as a query value.
fn escape(token: &str) -> String {
    token
        .replace('+', "%2B")
        .replace('/', "%2F")
        .replace('=', "%3D")
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

/// A `timeout` that is not a Go duration is a 400 (upstream's e2e "Server request timeout
/// should return HTTP status code 400 if the user specifies an invalid timeout"); `0s` and a
/// timeout over the maximum are served with the default one.
#[tokio::test]
async fn an_invalid_request_timeout_is_a_bad_request() {
    let server = server().await;
    let client = client(&server).await;
    let (status, _, body) =
        send(&client, "GET", "/api/v1/namespaces?timeout=invalid", "", "").await;
    assert_eq!(status, 400);
    assert_eq!(body["reason"], "BadRequest");
    assert_eq!(
        body["message"],
        "invalid timeout specified in the request URL - time: invalid duration \"invalid\""
    );
    let (status, _, body) = send(&client, "GET", "/api/v1/namespaces?timeout=10", "", "").await;
    assert_eq!(status, 400);
    assert_eq!(
        body["message"],
        "invalid timeout specified in the request URL - time: missing unit in duration \"10\""
    );
    for ok in ["0s", "1h30m", "300s"] {
        let (status, _, _) = send(
            &client,
            "GET",
            &format!("/api/v1/namespaces?timeout={ok}"),
            "",
            "",
        )
        .await;
        assert_eq!(status, 200, "{ok}");
    }
    // A watch is long-running: no request deadline applies to it.
    let (status, _, _) = send(
        &client,
        "GET",
        "/api/v1/namespaces?watch=true&timeoutSeconds=1&timeout=invalid",
        "",
        "",
    )
    .await;
    assert_eq!(status, 200);
}

/// A review converts to no Table: asking only for one is a 406 (upstream's e2e "should return
/// a 406 for a backend which does not implement metadata"); a JSON fallback is answered.
#[tokio::test]
async fn a_review_asked_only_as_a_table_is_not_acceptable() {
    let server = server().await;
    let client = client(&server).await;
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}});
    let post = |accept: &str| {
        http::Request::post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
            .header("content-type", "application/json")
            .header("accept", accept)
            .body(kube_client::client::Body::from(
                sar.to_string().into_bytes(),
            ))
            .unwrap()
    };
    let resp = client
        .send(post("application/json;as=Table;v=v1;g=meta.k8s.io"))
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 406);
    let body: Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["reason"], "NotAcceptable");
    assert_eq!(body["code"], 406);
    let resp = client
        .send(post(
            "application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
        ))
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
}

/// YAML is a wire format as JSON and protobuf are: a YAML body creates, `Accept:
/// application/yaml` answers objects, lists and errors in YAML; the 415 for an unknown body
/// format lists it.
#[tokio::test]
async fn yaml_bodies_and_answers() {
    let server = server().await;
    let client = client(&server).await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let send_yaml = |method: &str, uri: &str, content_type: &str, body: &str| {
        http::Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", content_type)
            .header("accept", "application/yaml")
            .body(kube_client::client::Body::from(body.as_bytes().to_vec()))
            .unwrap()
    };
    let read = |resp: http::Response<kube_client::client::Body>| async move {
        let status = resp.status().as_u16();
        let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (status, ct, String::from_utf8(bytes.to_vec()).unwrap())
    };
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  n: '1'\n";
    let resp = client
        .send(send_yaml("POST", cms, "application/yaml", body))
        .await
        .unwrap();
    let (status, ct, text) = read(resp).await;
    assert_eq!((status, ct.as_str()), (201, "application/yaml"), "{text}");
    assert!(text.starts_with("apiVersion: v1\n") || text.starts_with("kind: ConfigMap\n"));
    let created: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(created["data"]["n"], "1");
    assert_eq!(created["metadata"]["name"], "from-yaml");

    let resp = client
        .send(send_yaml("GET", &format!("{cms}/from-yaml"), "", ""))
        .await
        .unwrap();
    let (status, ct, text) = read(resp).await;
    assert_eq!((status, ct.as_str()), (200, "application/yaml"));
    let got: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(got["metadata"]["uid"], created["metadata"]["uid"]);

    let resp = client.send(send_yaml("GET", cms, "", "")).await.unwrap();
    let (_, ct, text) = read(resp).await;
    assert_eq!(ct, "application/yaml");
    let list: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(list["kind"], "ConfigMapList");

    let resp = client
        .send(send_yaml("GET", &format!("{cms}/absent"), "", ""))
        .await
        .unwrap();
    let (status, ct, text) = read(resp).await;
    assert_eq!((status, ct.as_str()), (404, "application/yaml"));
    let status_obj: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(status_obj["reason"], "NotFound");

    let (status, _, body) = send(&client, "POST", cms, "text/plain", "x").await;
    assert_eq!(status, 415);
    assert_eq!(
        body["message"],
        "the body of the request was in an unknown format - accepted media types include: \
         application/json, application/yaml, application/vnd.kubernetes.protobuf; got text/plain"
    );
}

/// Metadata conversions fit the answer's shape: `PartialObjectMetadataList` for a single
/// object, or `PartialObjectMetadata` for a list, is a 406 naming the stored Go type; the right
/// one (and a watch with either) is answered.
#[tokio::test]
async fn a_metadata_conversion_of_the_wrong_shape_is_not_acceptable() {
    let server = server().await;
    let client = client(&server).await;
    let get = |uri: &str, accept: &str| {
        http::Request::get(uri)
            .header("accept", accept)
            .body(kube_client::client::Body::empty())
            .unwrap()
    };
    let meta = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let meta_list = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    let answer = |resp: http::Response<kube_client::client::Body>| async move {
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null),
        )
    };
    let ns = "/api/v1/namespaces/default";
    let (status, body) = answer(client.send(get(ns, meta_list)).await.unwrap()).await;
    assert_eq!(status, 406);
    assert_eq!(body["reason"], "NotAcceptable");
    assert_eq!(
        body["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.Namespace)"
    );
    let (status, body) = answer(
        client
            .send(get("/apis/apps/v1/deployments", meta))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 406);
    assert_eq!(
        body["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*apps.DeploymentList)"
    );
    let (status, body) = answer(client.send(get(ns, meta)).await.unwrap()).await;
    assert_eq!(
        (status, body["kind"].as_str()),
        (200, Some("PartialObjectMetadata"))
    );
    let (status, body) = answer(
        client
            .send(get("/api/v1/namespaces", meta_list))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["kind"].as_str()),
        (200, Some("PartialObjectMetadataList"))
    );
    let watch = "/api/v1/namespaces?watch=true&timeoutSeconds=1";
    let resp = client.send(get(watch, meta)).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
}

/// Answers are indented for `curl` (and browsers, `Wget`) and for `?pretty=true`, compact
/// otherwise; `/version` is always indented, in `version.Info`'s field order.
#[tokio::test]
async fn pretty_answers_for_command_line_tools() {
    let server = server().await;
    let client = client(&server).await;
    let get = |uri: &str, agent: &str| {
        let req = http::Request::get(uri)
            .header("user-agent", agent)
            .body(kube_client::client::Body::empty())
            .unwrap();
        let client = client.clone();
        async move {
            let resp = client.send(req).await.unwrap();
            let bytes = resp.into_body().collect().await.unwrap().to_bytes();
            String::from_utf8(bytes.to_vec()).unwrap()
        }
    };
    let ns = "/api/v1/namespaces/default";
    let text = get(ns, "curl/8.5.0").await;
    assert!(
        text.starts_with("{\n  \"kind\": \"Namespace\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {\n    \"name\": \"default\","),
        "{text}"
    );
    assert!(!get(ns, "kube-rs").await.contains('\n'));
    assert!(
        !get(&format!("{ns}?pretty=false"), "curl/8.5.0")
            .await
            .contains('\n')
    );
    assert!(
        get(&format!("{ns}?pretty=true"), "kube-rs")
            .await
            .contains("\n  \"kind\": ")
    );
    let missing = get("/api/v1/namespaces/absent", "Wget/1.21").await;
    assert!(
        missing.contains("\n  \"reason\": \"NotFound\""),
        "{missing}"
    );
    let version = get("/version", "kube-rs").await;
    assert!(
        version.starts_with("{\n  \"major\": \"1\",\n  \"minor\": \"33\",\n  \"emulationMajor\""),
        "{version}"
    );
}

/// Every answer carries an `Audit-Id` (the client's own when it sends one) and
/// `Cache-Control: no-cache, private`, errors included.
#[tokio::test]
async fn answers_carry_audit_id_and_cache_control() {
    let server = server().await;
    let client = client(&server).await;
    let get = |uri: &str, audit: Option<&str>| {
        let mut req = http::Request::get(uri);
        if let Some(id) = audit {
            req = req.header("audit-id", id);
        }
        client.send(req.body(kube_client::client::Body::empty()).unwrap())
    };
    for uri in [
        "/api/v1/namespaces/default",
        "/api/v1/namespaces/absent",
        "/version",
    ] {
        let resp = get(uri, None).await.unwrap();
        let id = resp.headers()["audit-id"].to_str().unwrap().to_string();
        assert_eq!((id.len(), &id[14..15]), (36, "4"), "{uri}: {id}");
        assert_eq!(
            resp.headers()["cache-control"],
            "no-cache, private",
            "{uri}"
        );
    }
    let resp = get("/api/v1/namespaces", Some("my-audit-id"))
        .await
        .unwrap();
    assert_eq!(resp.headers()["audit-id"], "my-audit-id");
}

/// The CRD schema of upstream's field-validation integration test, with
/// `x-kubernetes-preserve-unknown-fields` on `spec` when `schemaless`.
fn crd(group: &str, schemaless: bool) -> String {
    let mut spec = json!({"type": "object", "properties": {
        "cronSpec": {"type": "string"},
        "knownField1": {"type": "string"},
        "ports": {"type": "array", "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
            "x-kubernetes-list-type": "map", "items": {"type": "object",
            "required": ["containerPort", "protocol"], "properties": {
                "containerPort": {"type": "integer", "format": "int32"}, "hostIP": {"type": "string"},
                "hostPort": {"type": "integer", "format": "int32"}, "name": {"type": "string"},
                "protocol": {"type": "string"}}}},
    }});
    if schemaless {
        spec["x-kubernetes-preserve-unknown-fields"] = json!(true);
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("noxus.{group}")},
        "spec": {"group": group, "scope": "Cluster",
            "names": {"plural": "noxus", "singular": "noxu", "kind": "WishIHadChosenNoxu", "listKind": "NoxuItemList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]},
    })
    .to_string()
}

/// Upstream's `crdInvalidBody`.
fn invalid_body(group: &str, name: &str) -> String {
    format!(
        r#"{{"apiVersion": "{group}/v1", "kind": "WishIHadChosenNoxu", "metadata": {{"name": "{name}"}},
    "spec": {{"unknown1": "val1", "unknownDupe": "valDupe", "unknownDupe": "valDupe2",
        "knownField1": "val1", "knownField1": "val2",
        "ports": [{{"name": "portName", "containerPort": 8080, "protocol": "TCP",
            "hostPort": 8081, "hostPort": 8082, "unknownNested": "val"}}]}}}}"#
    )
}

/// Upstream's `crdApplyInvalidBody`, line for line (the repetitions on lines 10 and 16).
fn apply_invalid_body(group: &str, name: &str) -> String {
    format!(
        "\n{{\n\t\"apiVersion\": \"{group}/v1\",\n\t\"kind\": \"WishIHadChosenNoxu\",\n\t\"metadata\": {{\n\t\t\"name\": \"{name}\"\n\t}},\n\t\"spec\": {{\n\t\t\"knownField1\": \"val1\",\n\t\t\"knownField1\": \"val2\",\n\t\t\"ports\": [{{\n\t\t\t\"name\": \"portName\",\n\t\t\t\"containerPort\": 8080,\n\t\t\t\"protocol\": \"TCP\",\n\t\t\t\"hostPort\": 8081,\n\t\t\t\"hostPort\": 8082\n\t\t}}]\n\t}}\n}}"
    )
}

const DUPLICATES: [&str; 3] = [
    r#"duplicate field "spec.unknownDupe""#,
    r#"duplicate field "spec.knownField1""#,
    r#"duplicate field "spec.ports[0].hostPort""#,
];

#[tokio::test]
async fn strict_validation_reports_repeated_fields_of_custom_objects() {
    let server = server().await;
    let client = client(&server).await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    for (group, schemaless) in [
        ("schema.example.com", false),
        ("schemaless.example.com", true),
    ] {
        let (status, _, answer) = send(
            &client,
            "POST",
            crds,
            "application/json",
            &crd(group, schemaless),
        )
        .await;
        assert_eq!(status, 201, "{answer}");
        let unknown: Vec<&str> = if schemaless {
            vec![r#"unknown field "spec.ports[0].unknownNested""#]
        } else {
            vec![
                r#"unknown field "spec.ports[0].unknownNested""#,
                r#"unknown field "spec.unknown1""#,
                r#"unknown field "spec.unknownDupe""#,
            ]
        };
        let expected: Vec<String> = DUPLICATES
            .iter()
            .chain(&unknown)
            .map(|s| s.to_string())
            .collect();
        let strict = format!("strict decoding error: {}", expected.join(", "));
        let noxus = format!("/apis/{group}/v1/noxus");

        // Create.
        let uri = format!("{noxus}?fieldValidation=Strict");
        let (status, _, answer) = send(
            &client,
            "POST",
            &uri,
            "application/json",
            &invalid_body(group, "post"),
        )
        .await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(
            answer["message"].as_str().unwrap(),
            format!(
                "WishIHadChosenNoxu in version \"v1\" cannot be handled as a WishIHadChosenNoxu: {strict}"
            )
        );
        let (status, warnings, _) = send(
            &client,
            "POST",
            &noxus,
            "application/json",
            &invalid_body(group, "post"),
        )
        .await;
        assert_eq!(
            (status, &warnings),
            (201, &expected),
            "{group}: Warn by default"
        );
        let uri = format!("{noxus}?fieldValidation=Ignore");
        let (status, warnings, _) = send(
            &client,
            "POST",
            &uri,
            "application/json",
            &invalid_body(group, "ignored"),
        )
        .await;
        assert_eq!((status, warnings.len()), (201, 0));

        // Update.
        let uri = format!("{noxus}/post?fieldValidation=Strict");
        let (status, _, answer) = send(
            &client,
            "PUT",
            &uri,
            "application/json",
            &invalid_body(group, "post"),
        )
        .await;
        assert_eq!(status, 400, "{answer}");
        assert!(
            answer["message"].as_str().unwrap().ends_with(&strict),
            "{answer}"
        );
        let (status, warnings, _) = send(
            &client,
            "PUT",
            &format!("{noxus}/post"),
            "application/json",
            &invalid_body(group, "post"),
        )
        .await;
        assert_eq!((status, &warnings), (200, &expected));

        // Merge patch: the patch's repetitions, then the patched object's unknown fields.
        let merge = r#"{"spec": {"unknown1": "val1", "unknownDupe": "valDupe", "unknownDupe": "valDupe2",
            "knownField1": "val1", "knownField1": "val2", "ports": [{"name": "portName", "containerPort": 8080,
            "protocol": "TCP", "hostPort": 8081, "hostPort": 8082, "unknownNested": "val"}]}}"#;
        let uri = format!("{noxus}/post?fieldValidation=Strict");
        let (status, _, answer) = send(
            &client,
            "PATCH",
            &uri,
            "application/merge-patch+json",
            merge,
        )
        .await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["message"].as_str().unwrap(), strict);
        let (status, warnings, _) = send(
            &client,
            "PATCH",
            &format!("{noxus}/post"),
            "application/merge-patch+json",
            merge,
        )
        .await;
        assert_eq!((status, &warnings), (200, &expected));

        // JSON patch: the operations' own unknown and repeated fields, then the object's.
        let json_patch = r#"[
            {"op": "add", "path": "/spec/unknown1", "value": "val1", "foo": "bar"},
            {"op": "add", "path": "/spec/unknown2", "path": "/spec/unknown3", "value": "val2"},
            {"op": "add", "path": "/spec/knownField1", "value": "val2"},
            {"op": "add", "path": "/spec/ports/0/unknownNested", "value": "val"}
        ]"#;
        let mut want = vec![
            r#"json patch unknown field "[0].foo""#.to_string(),
            r#"json patch duplicate field "[1].path""#.to_string(),
            r#"unknown field "spec.ports[0].unknownNested""#.to_string(),
        ];
        if !schemaless {
            want.extend([
                r#"unknown field "spec.unknown1""#.into(),
                r#"unknown field "spec.unknown3""#.into(),
            ]);
        }
        let (status, _, answer) = send(
            &client,
            "PATCH",
            &uri,
            "application/json-patch+json",
            json_patch,
        )
        .await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(
            answer["message"].as_str().unwrap(),
            format!("strict decoding error: {}", want.join(", "))
        );

        // Apply (create and update): the YAML decoder's words, a line each.
        // Twice: the first apply creates the object, the second updates it.
        for name in ["apply", "apply"] {
            let uri = format!("{noxus}/{name}?fieldManager=mgr&fieldValidation=Strict");
            let (status, _, answer) = send(
                &client,
                "PATCH",
                &uri,
                "application/apply-patch+yaml",
                &apply_invalid_body(group, name),
            )
            .await;
            assert_eq!(status, 400, "{answer}");
            assert_eq!(
                answer["message"].as_str().unwrap(),
                "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 10: key \"knownField1\" already set in map\n  line 16: key \"hostPort\" already set in map"
            );
            let uri = format!("{noxus}/{name}?fieldManager=mgr");
            let (status, warnings, answer) = send(
                &client,
                "PATCH",
                &uri,
                "application/apply-patch+yaml",
                &apply_invalid_body(group, name),
            )
            .await;
            assert!(status == 201 || status == 200, "{answer}");
            assert_eq!(
                warnings,
                [
                    r#"line 10: key "knownField1" already set in map"#,
                    r#"line 16: key "hostPort" already set in map"#
                ]
            );
        }
    }

    // The e2e spec "should detect duplicates in a CR when preserving unknown fields": YAML.
    let yaml = "\napiVersion: schemaless.example.com/v1\nkind: WishIHadChosenNoxu\nmetadata:\n  name: mytest\n  finalizers:\n  - test-finalizer\nspec:\n  unknown: uk1\n  knownField1: foo1\n  knownField1: foo2\n  cronSpec: \"* * * * */5\"\n  ports:\n  - name: x\n    containerPort: 80\n    protocol: TCP";
    let uri = "/apis/schemaless.example.com/v1/noxus/mytest?fieldManager=field_validation_mgr&fieldValidation=Strict";
    let (status, _, answer) =
        send(&client, "PATCH", uri, "application/apply-patch+yaml", yaml).await;
    assert_eq!(status, 400);
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains(r#"line 11: key "knownField1" already set in map"#),
        "{answer}"
    );

    // The typed e2e spec: unknown and repeated fields of a Deployment in document order.
    let deployment = r#"{"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "my-dep", "labels": {"app": "nginx"}},
        "spec": {"unknownField": "foo", "replicas": 2, "replicas": 3,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {"metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}}}}"#;
    let uri = "/apis/apps/v1/namespaces/default/deployments?fieldManager=field_validation_mgr&fieldValidation=Strict";
    let (status, _, answer) = raw(&client, "POST", uri, "application/json", deployment).await;
    assert_eq!(status, 400);
    assert!(
        answer["message"].as_str().unwrap().contains(
            r#"strict decoding error: unknown field "spec.unknownField", duplicate field "spec.replicas""#
        ),
        "{answer}"
    );
}

#[tokio::test]
async fn discovery_and_status_and_compacted_continue_tokens() {
    let server = server().await;
    let client = client(&server).await;
    // A CRD's resource carries the hash of its storage version, a subresource none.
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (status, _, _) = send(
        &client,
        "POST",
        crds,
        "application/json",
        &crd("hash.example.com", false),
    )
    .await;
    assert_eq!(status, 201);
    let (_, _, list) = send(&client, "GET", "/apis/hash.example.com/v1", "", "").await;
    let noxus = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "noxus")
        .unwrap();
    // base64 of sha256("hash.example.com/v1/WishIHadChosenNoxu")[..8].
    assert_eq!(
        noxus["storageVersionHash"],
        crt_apiserver::resource::storage_version_hash(
            "hash.example.com",
            "v1",
            "WishIHadChosenNoxu"
        )
    );
    let (_, _, core) = send(&client, "GET", "/api/v1", "", "").await;
    let pods = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods")
        .unwrap();
    assert_eq!(pods["storageVersionHash"], "xPOwRZ+Yhw8=");

    // A namespace status patch that also sets an annotation keeps it.
    let (status, _, _) = send(
        &client,
        "POST",
        "/api/v1/namespaces",
        "application/json",
        r#"{"metadata": {"name": "st"}}"#,
    )
    .await;
    assert_eq!(status, 201);
    let patch = r#"{"metadata":{"annotations":{"e2e-patched-ns-status":"st"}},"status":{"conditions":[{"type":"StatusPatch","status":"True","reason":"E2E","message":"Patched by an e2e test"}]}}"#;
    let (status, _, ns) = send(
        &client,
        "PATCH",
        "/api/v1/namespaces/st/status",
        "application/merge-patch+json",
        patch,
    )
    .await;
    assert_eq!(status, 200, "{ns}");
    assert_eq!(ns["metadata"]["annotations"]["e2e-patched-ns-status"], "st");
    assert_eq!(ns["status"]["conditions"][0]["type"], "StatusPatch");

    // A continue token of a compacted list: 410 with a token for the rest, at the latest
    // resourceVersion.
    for name in ["a", "b", "c"] {
        let body = format!(r#"{{"metadata": {{"name": "{name}"}}}}"#);
        let (status, _, _) = send(
            &client,
            "POST",
            "/api/v1/namespaces/st/configmaps",
            "application/json",
            &body,
        )
        .await;
        assert_eq!(status, 201);
    }
    let (_, _, first) = send(
        &client,
        "GET",
        "/api/v1/namespaces/st/configmaps?limit=1",
        "",
        "",
    )
    .await;
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    let (status, _, _) = send(
        &client,
        "POST",
        "/api/v1/namespaces/st/configmaps",
        "application/json",
        r#"{"metadata": {"name": "d"}}"#,
    )
    .await;
    assert_eq!(status, 201);
    let storage = server.storage();
    storage.compact_to(storage.resource_version());
    let uri = format!(
        "/api/v1/namespaces/st/configmaps?limit=1&continue={}",
        escape(&token)
    );
    let (status, _, gone) = send(&client, "GET", &uri, "", "").await;
    assert_eq!(
        (status, gone["reason"].as_str()),
        (410, Some("Expired")),
        "{gone}"
    );
    assert!(gone["message"].as_str().unwrap().starts_with("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response"));
    let offered = gone["metadata"]["continue"].as_str().unwrap();
    let uri = format!(
        "/api/v1/namespaces/st/configmaps?continue={}",
        escape(offered)
    );
    let (status, _, rest) = send(&client, "GET", &uri, "", "").await;
    assert_eq!(status, 200, "{rest}");
    let names: Vec<&str> = rest["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b", "c", "d"]);
}
