//! The core group (`/api/v1`).

use super::{CAT_ALL, CREATE, GENERATION, GET_PATCH_UPDATE, Row, SCALE, STATUS, Sub, row, sub};

const PROXY: &[&str] = &["create", "delete", "get", "patch", "update"];
const CREATE_GET: &[&str] = &["create", "get"];

const POD_SUBRESOURCES: &[Sub] = &[
    sub("attach", "PodAttachOptions", CREATE_GET),
    sub("binding", "Binding", CREATE),
    sub("ephemeralcontainers", "Pod", GET_PATCH_UPDATE),
    Sub {
        name: "eviction",
        group: "policy",
        version: "v1",
        kind: "Eviction",
        verbs: CREATE,
    },
    sub("exec", "PodExecOptions", CREATE_GET),
    sub("log", "Pod", &["get"]),
    sub("portforward", "PodPortForwardOptions", CREATE_GET),
    sub("proxy", "PodProxyOptions", PROXY),
    sub("resize", "Pod", GET_PATCH_UPDATE),
];

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("", "v1", "bindings", "Binding", true).verbs(CREATE),
    row("", "v1", "componentstatuses", "ComponentStatus", false).short(&["cs"]).verbs(&["get", "list"])
        .deprecated("v1 ComponentStatus is deprecated in v1.19+"),
    row("", "v1", "configmaps", "ConfigMap", true).short(&["cm"]),
    row("", "v1", "endpoints", "Endpoints", true).short(&["ep"])
        .deprecated("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"),
    row("", "v1", "events", "Event", true).short(&["ev"]),
    row("", "v1", "limitranges", "LimitRange", true).short(&["limits"]),
    row("", "v1", "namespaces", "Namespace", false).short(&["ns"]).flags(STATUS)
        .verbs(&["create", "delete", "get", "list", "patch", "update", "watch"])
        .extra(&[sub("finalize", "Namespace", &["update"])]),
    row("", "v1", "nodes", "Node", false).short(&["no"]).flags(STATUS)
        .extra(&[sub("proxy", "NodeProxyOptions", PROXY)]),
    row("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true).short(&["pvc"]).flags(STATUS),
    row("", "v1", "persistentvolumes", "PersistentVolume", false).short(&["pv"]).flags(STATUS),
    row("", "v1", "pods", "Pod", true).short(&["po"]).categories(CAT_ALL).flags(STATUS).extra(POD_SUBRESOURCES),
    row("", "v1", "podtemplates", "PodTemplate", true),
    row("", "v1", "replicationcontrollers", "ReplicationController", true).short(&["rc"]).categories(CAT_ALL)
        .flags(STATUS | SCALE | GENERATION),
    row("", "v1", "resourcequotas", "ResourceQuota", true).short(&["quota"]).flags(STATUS),
    row("", "v1", "secrets", "Secret", true),
    row("", "v1", "serviceaccounts", "ServiceAccount", true).short(&["sa"])
        .extra(&[Sub { name: "token", group: "authentication.k8s.io", version: "v1", kind: "TokenRequest", verbs: CREATE }]),
    row("", "v1", "services", "Service", true).short(&["svc"]).categories(CAT_ALL).flags(STATUS)
        .extra(&[sub("proxy", "ServiceProxyOptions", PROXY)]),
];
