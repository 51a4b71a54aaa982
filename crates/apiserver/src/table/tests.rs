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
        deprecation_warning: None,
        selectable_fields: Vec::new(),
        storage_version_hash: None,
    }
}

/// The columns of `res` with its kind's printer, as the HTTP handlers ask for them.
fn columns_for(res: &ResourceInfo, printer_columns: Option<&Value>) -> Vec<Column> {
    super::columns_for(res, printer_columns, &crate::kinds::printer(res))
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
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
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
        "status": {"phase": "Running", "containerStatuses": [{"ready": true, "restartCount": 2, "state": {"running": {}}}, {"ready": false, "restartCount": 1}]},
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
    assert_eq!(cells[3], "3");
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
        [
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name"
        ]
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
        [&cells[1], &cells[2], &cells[3], &cells[6], &cells[9]],
        [
            &json!("Normal"),
            &json!("Started"),
            &json!("pod/p"),
            &json!("started it"),
            &json!("p.123")
        ]
    );
    let new_style = json!({"metadata": {"name": "e"}, "regarding": {"kind": "Deployment", "name": "d"}, "note": "n"});
    let t = to_table(
        &columns_for(&info("events.k8s.io", "events", false), None),
        &new_style,
        IncludeObject::None,
    );
    assert_eq!(t["rows"][0]["cells"][3], "deployment/d");
    assert_eq!(t["rows"][0]["cells"][6], "n");
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

fn cells(group: &str, plural: &str, obj: &Value) -> (Vec<String>, Vec<Value>) {
    let cols = columns_for(&info(group, plural, false), None);
    let t = to_table(&cols, obj, IncludeObject::None);
    (
        names(&cols),
        t["rows"][0]["cells"].as_array().unwrap().clone(),
    )
}

#[test]
fn ingress_and_ingressclass_columns() {
    let ing = json!({"metadata": {"name": "web"},
        "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["a.io"]}],
                 "rules": [{"host": "a.io"}, {}, {"host": "b.io"}, {"host": "c.io"}, {"host": "d.io"}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.2"}, {"hostname": "lb.example"}, {"ip": "10.0.0.1"}]}}});
    let (names, cells) = self::cells("networking.k8s.io", "ingresses", &ing);
    assert_eq!(names, ["Name", "Class", "Hosts", "Address", "Ports", "Age"]);
    assert_eq!(
        cells[..5],
        [
            json!("web"),
            json!("nginx"),
            json!("a.io,b.io,c.io + 2 more..."),
            json!("10.0.0.1,10.0.0.2,lb.example"),
            json!("80, 443")
        ]
    );
    let bare = json!({"metadata": {"name": "b"}, "spec": {"rules": [{}]}});
    let (_, cells) = self::cells("networking.k8s.io", "ingresses", &bare);
    assert_eq!(
        cells[1..5],
        [json!("<none>"), json!("*"), json!(""), json!("80")]
    );
    let class = json!({"metadata": {"name": "c"}, "spec": {"controller": "k8s.io/ingress-nginx",
        "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}});
    let (names, cells) = self::cells("networking.k8s.io", "ingressclasses", &class);
    assert_eq!(names, ["Name", "Controller", "Parameters", "Age"]);
    assert_eq!(
        cells[1..3],
        [
            json!("k8s.io/ingress-nginx"),
            json!("IngressParameters.k8s.example.com/p")
        ]
    );
}

#[test]
fn endpointslice_columns() {
    let es = json!({"metadata": {"name": "web-abc"}, "addressType": "IPv4",
        "ports": [{"name": "http", "port": 80}, {"name": "metrics"}, {}],
        "endpoints": [{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3"]}, {"addresses": ["10.0.0.4"]}]});
    let (names, cells) = self::cells("discovery.k8s.io", "endpointslices", &es);
    assert_eq!(names, ["Name", "AddressType", "Ports", "Endpoints", "Age"]);
    assert_eq!(
        cells[1..4],
        [
            json!("IPv4"),
            json!("80,metrics,*"),
            json!("10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...")
        ]
    );
    let empty = json!({"metadata": {"name": "e"}, "addressType": "IPv6"});
    let (_, cells) = self::cells("discovery.k8s.io", "endpointslices", &empty);
    assert_eq!(cells[2..4], [json!("<unset>"), json!("<unset>")]);
}

#[test]
fn persistent_volume_and_claim_columns() {
    let pv = json!({"metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "fast",
                 "claimRef": {"namespace": "ns", "name": "data"}, "volumeMode": "Filesystem"},
        "status": {"phase": "Bound"}});
    let (names, cells) = self::cells("", "persistentvolumes", &pv);
    assert_eq!(
        names,
        [
            "Name",
            "Capacity",
            "Access Modes",
            "Reclaim Policy",
            "Status",
            "Claim",
            "StorageClass",
            "VolumeAttributesClass",
            "Reason",
            "Age",
            "VolumeMode"
        ]
    );
    assert_eq!(
        cells[1..9],
        [
            json!("10Gi"),
            json!("RWO,RWX"),
            json!("Retain"),
            json!("Bound"),
            json!("ns/data"),
            json!("fast"),
            json!("<unset>"),
            json!("")
        ]
    );
    assert_eq!(cells[10], "Filesystem");

    let pending = json!({"metadata": {"name": "data", "deletionTimestamp": "2020-01-01T00:00:00Z",
        "annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
        "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Pending"}});
    let (names, cells) = self::cells("", "persistentvolumeclaims", &pending);
    assert_eq!(
        names,
        [
            "Name",
            "Status",
            "Volume",
            "Capacity",
            "Access Modes",
            "StorageClass",
            "VolumeAttributesClass",
            "Age",
            "VolumeMode"
        ]
    );
    assert_eq!(
        cells[1..7],
        [
            json!("Terminating"),
            json!(""),
            json!(""),
            json!(""),
            json!("old"),
            json!("<unset>")
        ]
    );
    let bound = json!({"metadata": {"name": "data"},
        "spec": {"volumeName": "pv1", "volumeAttributesClassName": "gold", "volumeMode": "Block"},
        "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOncePod"]}});
    let (_, cells) = self::cells("", "persistentvolumeclaims", &bound);
    assert_eq!(
        cells[1..7],
        [
            json!("Bound"),
            json!("pv1"),
            json!("10Gi"),
            json!("RWOP"),
            json!(""),
            json!("gold")
        ]
    );
    assert_eq!(cells[8], "Block");
}

#[test]
fn resource_quota_and_csr_columns_follow_age() {
    let quota = json!({"metadata": {"name": "q"},
        "spec": {"hard": {"pods": "4", "limits.cpu": "2", "requests.memory": "1Gi", "cpu": "1"}},
        "status": {"hard": {"pods": "4", "limits.cpu": "2", "cpu": "1"}, "used": {"pods": "1", "cpu": "500m"}}});
    let (names, cells) = self::cells("", "resourcequotas", &quota);
    assert_eq!(names, ["Name", "Age", "Request", "Limit"]);
    assert_eq!(
        cells[2..],
        [
            json!("cpu: 500m/1, pods: 1/4, requests.memory: 0/0"),
            json!("limits.cpu: 0/2")
        ]
    );

    let csr = json!({"metadata": {"name": "c"},
        "spec": {"signerName": "kubernetes.io/kube-apiserver-client", "username": "alice", "expirationSeconds": 86400},
        "status": {"conditions": [{"type": "Approved"}, {"type": "Failed"}], "certificate": "Q0VSVA=="}});
    let (names, cells) = self::cells("certificates.k8s.io", "certificatesigningrequests", &csr);
    assert_eq!(
        names,
        [
            "Name",
            "Age",
            "SignerName",
            "Requestor",
            "RequestedDuration",
            "Condition"
        ]
    );
    assert_eq!(
        cells[2..],
        [
            json!("kubernetes.io/kube-apiserver-client"),
            json!("alice"),
            json!("24h"),
            json!("Approved,Failed,Issued")
        ]
    );
    let pending = json!({"metadata": {"name": "p"}, "spec": {"username": "bob"}});
    let (_, cells) = self::cells(
        "certificates.k8s.io",
        "certificatesigningrequests",
        &pending,
    );
    assert_eq!(
        cells[2..],
        [
            json!("<none>"),
            json!("bob"),
            json!("<none>"),
            json!("Pending")
        ]
    );
}

#[test]
fn event_wide_columns() {
    let cols = columns_for(&info("", "events", false), None);
    assert_eq!(
        names(&cols),
        [
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name"
        ]
    );
    let priorities: Vec<Value> = column_definitions(&cols)
        .iter()
        .map(|c| c["priority"].clone())
        .collect();
    assert_eq!(priorities, [0, 0, 0, 0, 1, 1, 0, 1, 1, 1].map(|p| json!(p)));
    let ev = json!({"metadata": {"name": "p.1"}, "type": "Warning", "reason": "BackOff",
        "message": " restarting \n", "count": 5,
        "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{app}"},
        "source": {"component": "kubelet", "host": "node-1"}});
    let t = to_table(&cols, &ev, IncludeObject::None);
    let c = t["rows"][0]["cells"].as_array().unwrap();
    assert_eq!(
        [&c[3], &c[4], &c[5], &c[6], &c[8], &c[9]],
        [
            &json!("pod/p"),
            &json!("spec.containers{app}"),
            &json!("kubelet, node-1"),
            &json!("restarting"),
            &json!(5),
            &json!("p.1")
        ]
    );
    let new_style = json!({"metadata": {"name": "e"}, "regarding": {"kind": "Node"},
        "reportingController": "ctrl", "series": {"count": 7, "lastObservedTime": "2020-01-01T00:00:00.000000Z"}});
    let t = to_table(
        &columns_for(&info("events.k8s.io", "events", false), None),
        &new_style,
        IncludeObject::None,
    );
    let c = t["rows"][0]["cells"].as_array().unwrap();
    assert_eq!(
        [&c[3], &c[5], &c[8]],
        [&json!("node"), &json!("ctrl"), &json!(7)]
    );
    let single = json!({"metadata": {"name": "s"}, "involvedObject": {"kind": "Pod", "name": "p"}});
    let t = to_table(&cols, &single, IncludeObject::None);
    assert_eq!(t["rows"][0]["cells"][8], 1);
}

#[test]
fn more_builtin_columns() {
    let rc = json!({"metadata": {"name": "rc"}, "spec": {"replicas": 3}, "status": {"replicas": 2, "readyReplicas": 1}});
    let (names, cells) = self::cells("", "replicationcontrollers", &rc);
    assert_eq!(names, ["Name", "Desired", "Current", "Ready", "Age"]);
    assert_eq!(cells[1..4], [json!(3), json!(2), json!(1)]);

    let rev = json!({"metadata": {"name": "web-1", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true}]}, "revision": 2});
    let (names, cells) = self::cells("apps", "controllerrevisions", &rev);
    assert_eq!(names, ["Name", "Controller", "Revision", "Age"]);
    assert_eq!(cells[1..3], [json!("statefulset.apps/web"), json!(2)]);

    let hooks = json!({"metadata": {"name": "h"}, "webhooks": [{}, {}]});
    let (names, cells) = self::cells(
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        &hooks,
    );
    assert_eq!(names, ["Name", "Webhooks", "Age"]);
    assert_eq!(cells[1], 2);

    let vap = json!({"metadata": {"name": "p"}, "spec": {"validations": [{}],
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
    let (names, cells) = self::cells(
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        &vap,
    );
    assert_eq!(names, ["Name", "Validations", "ParamKind", "Age"]);
    assert_eq!(cells[1..3], [json!(1), json!("v1/ConfigMap")]);

    let svc = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
        "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
    let (names, cells) = self::cells("apiregistration.k8s.io", "apiservices", &svc);
    assert_eq!(names, ["Name", "Service", "Available", "Age"]);
    assert_eq!(
        cells[1..3],
        [
            json!("kube-system/metrics-server"),
            json!("False (MissingEndpoints)")
        ]
    );
    let local = json!({"metadata": {"name": "v1."}, "spec": {}});
    let (_, cells) = self::cells("apiregistration.k8s.io", "apiservices", &local);
    assert_eq!(cells[1..3], [json!("Local"), json!("Unknown")]);

    let va = json!({"metadata": {"name": "va"}, "spec": {"attacher": "csi.example.com",
        "source": {"persistentVolumeName": "pv1"}, "nodeName": "n1"}, "status": {"attached": true}});
    let (names, cells) = self::cells("storage.k8s.io", "volumeattachments", &va);
    assert_eq!(names, ["Name", "Attacher", "PV", "Node", "Attached", "Age"]);
    assert_eq!(
        cells[1..5],
        [
            json!("csi.example.com"),
            json!("pv1"),
            json!("n1"),
            json!(true)
        ]
    );
    let node = json!({"metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "d"}]}});
    let (names, cells) = self::cells("storage.k8s.io", "csinodes", &node);
    assert_eq!(names, ["Name", "Drivers", "Age"]);
    assert_eq!(cells[1], 1);
}

#[test]
fn json_paths_reach_keys_with_dots() {
    let obj = json!({
        "metadata": {"labels": {"cluster.x-k8s.io/name": "east", "plain": "p"}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    });
    for path in [
        r".metadata.labels['cluster\.x-k8s\.io/name']",
        ".metadata.labels['cluster.x-k8s.io/name']",
        r#".metadata.labels["cluster.x-k8s.io/name"]"#,
        r".metadata.labels.cluster\.x-k8s\.io/name",
    ] {
        assert_eq!(eval_json_path(&obj, path), Some(json!("east")), "{path}");
    }
    assert_eq!(
        eval_json_path(&obj, ".metadata.labels['plain']"),
        Some(json!("p"))
    );
    assert_eq!(
        eval_json_path(&obj, r#".status.conditions[?(@.type=="Ready")].status"#),
        Some(json!("True"))
    );
    assert_eq!(eval_json_path(&obj, ".metadata.labels['missing']"), None);
}
