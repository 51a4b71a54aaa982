use super::*;

fn info(group: &str, plural: &str, custom: bool) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: "v1".into(),
        plural: plural.into(),
        singular: String::new(),
        kind: "K".into(),
        list_kind: "KList".into(),
        namespaced: true,
        short_names: vec![],
        categories: vec![],
        status_subresource: false,
        scale: None,
        generation: true,
        custom,
    }
}

fn names(cols: &[Column]) -> Vec<String> {
    column_definitions(cols)
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn builtin_columns() {
    assert_eq!(
        names(&columns_for(&info("", "pods", false), None)),
        ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node"]
    );
    assert_eq!(
        names(&columns_for(&info("apps", "deployments", false), None)),
        [
            "Name",
            "Ready",
            "Up-to-date",
            "Available",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    assert_eq!(
        names(&columns_for(&info("", "leases", false), None)),
        ["Name", "Age"]
    );
    let wide = columns_for(&info("apps", "deployments", false), None);
    assert_eq!(column_definitions(&wide)[4]["priority"], 0);
    assert_eq!(column_definitions(&wide)[5]["priority"], 1);
    let d = json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let t = to_table(&wide, &d, IncludeObject::None);
    assert_eq!(
        t["rows"][0]["cells"].as_array().unwrap()[5..],
        [json!("c"), json!("nginx"), json!("app=web")]
    );
}

#[test]
fn pod_rows() {
    let cols = columns_for(&info("", "pods", false), None);
    let pod = json!({
        "metadata": {"name": "p", "creationTimestamp": "2020-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running", "containerStatuses": [{"ready": true, "restartCount": 2}, {"ready": false, "restartCount": 1}]},
    });
    let t = to_table(
        &cols,
        &json!({"metadata": {"resourceVersion": "5"}, "items": [pod]}),
        IncludeObject::Metadata,
    );
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["metadata"]["resourceVersion"], "5");
    let cells = &t["rows"][0]["cells"];
    assert_eq!(cells[0], "p");
    assert_eq!(cells[1], "1/2");
    assert_eq!(cells[2], "Running");
    assert_eq!(cells[3], 3);
    assert!(cells[4].as_str().unwrap().ends_with('y'));
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(t["rows"][0]["object"]["metadata"]["name"], "p");
}

#[test]
fn crd_printer_columns() {
    let pc = json!([
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
        {"name": "Size", "type": "integer", "jsonPath": ".spec.sizes[1]", "priority": 1},
    ]);
    let cols = columns_for(&info("example.com", "widgets", true), Some(&pc));
    assert_eq!(names(&cols), ["Name", "Phase", "Ready", "Size"]);
    let obj = json!({
        "metadata": {"name": "w"},
        "spec": {"sizes": [1, 7]},
        "status": {"phase": "Up", "conditions": [{"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]},
    });
    let t = to_table(&cols, &obj, IncludeObject::Object);
    assert_eq!(t["rows"][0]["cells"], json!(["w", "Up", "True", 7]));
    assert_eq!(t["rows"][0]["object"], obj);
    assert_eq!(
        names(&columns_for(&info("example.com", "widgets", true), None)),
        ["Name", "Age"]
    );
}

#[test]
fn ages_render_like_kubectl() {
    let now = DateTime::parse_from_rfc3339("2024-01-10T00:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    let at = |s: &str| age(Some(&json!(s)), now);
    assert_eq!(at("2024-01-09T23:59:18Z"), "42s");
    assert_eq!(at("2024-01-09T23:55:00Z"), "5m");
    assert_eq!(at("2024-01-09T23:54:57Z"), "5m3s");
    assert_eq!(at("2024-01-09T20:00:00Z"), "4h");
    assert_eq!(at("2024-01-07T00:00:00Z"), "3d");
    assert_eq!(age(None, now), "<unknown>");
}

#[test]
fn metadata_form() {
    let list = json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "9"}, "items": [{"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}]});
    let m = to_metadata(&list);
    assert_eq!(m["kind"], "PartialObjectMetadataList");
    assert_eq!(
        m["items"][0],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a"}})
    );
}

#[test]
fn event_columns() {
    let cols = columns_for(&info("", "events", false), None);
    assert_eq!(
        names(&cols),
        ["Last Seen", "Type", "Reason", "Object", "Message", "Name"]
    );
    let ev = json!({
        "metadata": {"name": "p.123"},
        "type": "Normal", "reason": "Started", "message": "started it",
        "involvedObject": {"kind": "Pod", "name": "p"},
        "lastTimestamp": "2020-01-01T00:00:00Z",
    });
    let t = to_table(&cols, &ev, IncludeObject::None);
    let cells = t["rows"][0]["cells"].as_array().unwrap();
    assert_eq!(
        cells[1..],
        [
            json!("Normal"),
            json!("Started"),
            json!("pod/p"),
            json!("started it"),
            json!("p.123")
        ]
    );
    let new_style = json!({"metadata": {"name": "e"}, "regarding": {"kind": "Deployment", "name": "d"}, "note": "n"});
    let t = to_table(
        &columns_for(&info("events.k8s.io", "events", false), None),
        &new_style,
        IncludeObject::None,
    );
    assert_eq!(t["rows"][0]["cells"][3], "deployment/d");
    assert_eq!(t["rows"][0]["cells"][4], "n");
}

#[test]
fn hpa_and_rbac_columns_as_kubectl_get_shows_them() {
    let hpa = info("autoscaling", "horizontalpodautoscalers", false);
    let cols = columns_for(&hpa, None);
    assert_eq!(
        names(&cols),
        [
            "Name",
            "Reference",
            "Targets",
            "MinPods",
            "MaxPods",
            "Replicas",
            "Age"
        ]
    );
    let obj = serde_json::json!({"metadata": {"name": "web", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}}]},
        "status": {"currentReplicas": 2, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45}}}]}});
    let table = to_table(&cols, &obj, IncludeObject::None);
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[1], "Deployment/web");
    assert_eq!(
        cells[2],
        "cpu: 45%/80%, memory: <unknown>/500Mi + 1 more..."
    );
    assert_eq!(
        (cells[3].clone(), cells[4].clone(), cells[5].clone()),
        (
            serde_json::json!("<unset>"),
            serde_json::json!(5),
            serde_json::json!(2)
        )
    );

    let rb = info("rbac.authorization.k8s.io", "rolebindings", false);
    let cols = columns_for(&rb, None);
    assert_eq!(names(&cols), ["Name", "Role", "Age"]);
    let obj = serde_json::json!({"metadata": {"name": "rb"}, "roleRef": {"kind": "ClusterRole", "name": "view"}});
    assert_eq!(
        to_table(&cols, &obj, IncludeObject::None)["rows"][0]["cells"][1],
        "ClusterRole/view"
    );
}

#[test]
fn pdb_and_endpoints_columns_as_kubectl_get_shows_them() {
    let pdb = info("policy", "poddisruptionbudgets", false);
    let cols = columns_for(&pdb, None);
    assert_eq!(
        names(&cols),
        [
            "Name",
            "Min Available",
            "Max Unavailable",
            "Allowed Disruptions",
            "Age"
        ]
    );
    let obj = json!({"metadata": {"name": "web"}, "spec": {"minAvailable": "50%"},
        "status": {"disruptionsAllowed": 1}});
    let t = to_table(&cols, &obj, IncludeObject::None);
    let cells = &t["rows"][0]["cells"];
    assert_eq!(
        (&cells[1], &cells[2], &cells[3]),
        (&json!("50%"), &json!("N/A"), &json!(1))
    );
    let obj = json!({"metadata": {"name": "db"}, "spec": {"maxUnavailable": 1}});
    let t = to_table(&cols, &obj, IncludeObject::None);
    let cells = &t["rows"][0]["cells"];
    assert_eq!(
        (&cells[1], &cells[2], &cells[3]),
        (&json!("N/A"), &json!("1"), &json!(0))
    );

    let ep = info("", "endpoints", false);
    let cols = columns_for(&ep, None);
    assert_eq!(names(&cols), ["Name", "Endpoints", "Age"]);
    let cell =
        |obj: Value| to_table(&cols, &obj, IncludeObject::None)["rows"][0]["cells"][1].clone();
    assert_eq!(cell(json!({"metadata": {"name": "e"}})), "<none>");
    assert_eq!(
        cell(json!({"metadata": {"name": "e"}, "subsets": [
            {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}]}]})),
        "10.0.0.1:80,10.0.0.2:80"
    );
    assert_eq!(
        cell(json!({"metadata": {"name": "e"}, "subsets": [
            {"addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::2"}], "ports": [{"port": 80}, {"port": 443}]}]})),
        "10.0.0.1:80,[fd00::2]:80,10.0.0.1:443 + 1 more..."
    );
    assert_eq!(
        cell(json!({"metadata": {"name": "e"}, "subsets": [{"addresses": [{"ip": "10.0.0.9"}]}]})),
        "10.0.0.9"
    );
}
