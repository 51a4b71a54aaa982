//! The core group (`/api/v1`).

use super::{
    CAT_ALL, CREATE, FieldLabel, GENERATION, GET_PATCH_UPDATE, Row, SCALE, STATUS, StatusStrategy,
    Strategy, Sub, defaults::*, label, row, strategy::DEFAULT, sub,
};
use crate::error::ApiError;
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use crate::validation::NameFormat;
use serde_json::{Value, json};

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
    row("", "v1", "configmaps", "ConfigMap", true).short(&["cm"]).strategy(&CONFIG_MAPS),
    row("", "v1", "endpoints", "Endpoints", true).short(&["ep"])
        .deprecated("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice").strategy(&ENDPOINTS),
    row("", "v1", "events", "Event", true).short(&["ev"]).strategy(&EVENTS),
    row("", "v1", "limitranges", "LimitRange", true).short(&["limits"]),
    row("", "v1", "namespaces", "Namespace", false).short(&["ns"]).flags(STATUS)
        .verbs(&["create", "delete", "get", "list", "patch", "update", "watch"])
        .extra(&[sub("finalize", "Namespace", &["update"])]).strategy(&NAMESPACES),
    row("", "v1", "nodes", "Node", false).short(&["no"]).flags(STATUS)
        .extra(&[sub("proxy", "NodeProxyOptions", PROXY)]).strategy(&NODES),
    row("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true).short(&["pvc"]).flags(STATUS).strategy(&PERSISTENT_VOLUME_CLAIMS),
    row("", "v1", "persistentvolumes", "PersistentVolume", false).short(&["pv"]).flags(STATUS).strategy(&PERSISTENT_VOLUMES),
    row("", "v1", "pods", "Pod", true).short(&["po"]).categories(CAT_ALL).flags(STATUS).extra(POD_SUBRESOURCES).strategy(&PODS),
    row("", "v1", "podtemplates", "PodTemplate", true).strategy(&POD_TEMPLATES),
    row("", "v1", "replicationcontrollers", "ReplicationController", true).short(&["rc"]).categories(CAT_ALL)
        .flags(STATUS | SCALE | GENERATION).strategy(&REPLICATION_CONTROLLERS),
    row("", "v1", "resourcequotas", "ResourceQuota", true).short(&["quota"]).flags(STATUS).strategy(&RESOURCE_QUOTAS),
    row("", "v1", "secrets", "Secret", true).strategy(&SECRETS),
    row("", "v1", "serviceaccounts", "ServiceAccount", true).short(&["sa"])
        .extra(&[Sub { name: "token", group: "authentication.k8s.io", version: "v1", kind: "TokenRequest", verbs: CREATE }]).strategy(&SERVICE_ACCOUNTS),
    row("", "v1", "services", "Service", true).short(&["svc"]).categories(CAT_ALL).flags(STATUS)
        .extra(&[sub("proxy", "ServiceProxyOptions", PROXY)]).strategy(&SERVICES),
];

// ---- namespaces

/// Namespaces: DNS-label names, the `finalize` subresource, phase Active.
pub(super) const NAMESPACES: Strategy = Strategy {
    name_format: NameFormat::Label,
    validate: Some(validation::core::namespace),
    own_subresources: &["finalize"],
    initial_status: Some(|| json!({"phase": "Active"})),
    field_labels: &[label("status.phase")],
    columns: namespace_columns,
    ..DEFAULT
};

fn namespace_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Status", |o| string(o, "/status/phase"))]
}

// ---- pods

/// Pods.
pub(super) const PODS: Strategy = Strategy {
    defaults: Some(pod_defaults),
    validate: Some(validation::pod::pod),
    subresource_validators: &[
        (
            "ephemeralcontainers",
            validation::pod::ephemeral_containers_update,
        ),
        ("resize", validation::pod::resize),
    ],
    own_subresources: &["ephemeralcontainers", "resize"],
    status: StatusStrategy::SpecAnd(&["deletionTimestamp", "ownerReferences"]),
    initial_status: Some(|| json!({"phase": "Pending", "qosClass": "BestEffort"})),
    field_labels: &[
        label("spec.nodeName"),
        label("spec.restartPolicy"),
        label("spec.schedulerName"),
        label("spec.serviceAccountName"),
        label("spec.hostNetwork").absent("false"),
        label("status.phase"),
        label("status.podIP"),
        label("status.nominatedNodeName"),
    ],
    merge_root: MergeRoot::Pod,
    columns: pod_columns,
    columns_wide: pod_wide,
    ..DEFAULT
};

fn pod_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    if let Some(spec) = obj.get_mut("spec") {
        default_pod_spec(spec);
    }
    default_at(obj, ".spec.enableServiceLinks", json!(true));
}

fn pod_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Ready", |o| {
            let total = count(o, "/spec/containers") as i64;
            let ready = get(o, "/status/containerStatuses")
                .and_then(Value::as_array)
                .map(|s| s.iter().filter(|c| c["ready"] == json!(true)).count() as i64)
                .unwrap_or(0);
            ratio(ready, total)
        }),
        ("Status", |o| {
            match get(o, "/status/reason").and_then(Value::as_str) {
                Some(reason) => json!(reason),
                None if o.pointer("/metadata/deletionTimestamp").is_some() => {
                    json!("Terminating")
                }
                None => json!(
                    get(o, "/status/phase")
                        .and_then(Value::as_str)
                        .unwrap_or("Pending")
                ),
            }
        }),
        ("Restarts", |o| {
            let restarts: i64 = get(o, "/status/containerStatuses")
                .and_then(Value::as_array)
                .map(|s| {
                    s.iter()
                        .map(|c| c["restartCount"].as_i64().unwrap_or(0))
                        .sum()
                })
                .unwrap_or(0);
            json!(restarts)
        }),
    ]
}

fn pod_wide() -> Vec<(&'static str, CellFn)> {
    vec![
        ("IP", |o| or_none(string(o, "/status/podIP"))),
        ("Node", |o| or_none(string(o, "/spec/nodeName"))),
    ]
}

// ---- configmaps

/// ConfigMaps.
pub(super) const CONFIG_MAPS: Strategy = Strategy {
    validate: Some(validation::core::config_map),
    columns: config_map_columns,
    ..DEFAULT
};

fn config_map_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Data", |o| {
        json!(count(o, "/data") + count(o, "/binaryData"))
    })]
}

// ---- secrets

/// Secrets: `stringData` is merged into `data` on write.
pub(super) const SECRETS: Strategy = Strategy {
    normalize: Some(normalize_secret),
    defaults: Some(secret_defaults),
    validate: Some(validation::core::secret),
    field_labels: &[label("type")],
    columns: secret_columns,
    ..DEFAULT
};

/// Normalizes a Secret as the real server stores it: `stringData` (write-only) is merged into
/// `data`, base64-encoded; `data` values must be base64 (400 otherwise, as the decoder answers).
fn normalize_secret(obj: &mut Value) -> Result<(), ApiError> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    if let Some(data) = obj.get("data").and_then(Value::as_object) {
        for v in data.values() {
            let ok = v.as_str().is_some_and(|s| b64.decode(s).is_ok()) || v.is_null();
            if !ok {
                return Err(ApiError::bad_request(
                    "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data in field data",
                ));
            }
        }
    }
    let Some(map) = obj.as_object_mut() else {
        return Ok(());
    };
    if let Some(string_data) = map.remove("stringData") {
        let Value::Object(entries) = string_data else {
            return Err(ApiError::bad_request(
                "Secret in version \"v1\" cannot be handled as a Secret: stringData must be a map of strings",
            ));
        };
        let data = map.entry("data").or_insert_with(|| json!({}));
        if !data.is_object() {
            *data = json!({});
        }
        let data = data.as_object_mut().expect("made an object above");
        for (k, v) in entries {
            let text = v.as_str().unwrap_or_default().to_string();
            data.insert(k, Value::from(b64.encode(text)));
        }
    }
    Ok(())
}

fn secret_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    default_at(obj, ".type", json!("Opaque"))
}

fn secret_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Type", |o| string(o, "/type")),
        ("Data", |o| json!(count(o, "/data"))),
    ]
}

// ---- services

/// Services: DNS-1035 names, a cluster IP allocated on create.
pub(super) const SERVICES: Strategy = Strategy {
    name_format: NameFormat::Dns1035,
    defaults: Some(service_defaults),
    validate: Some(validation::core::service),
    initial_status: Some(|| json!({"loadBalancer": {}})),
    merge_root: MergeRoot::Service,
    columns: service_columns,
    ..DEFAULT
};

fn service_defaults(obj: &mut Value, next_cluster_ip: &mut u32) {
    default_at(obj, ".spec.type", json!("ClusterIP"));
    default_at(obj, ".spec.sessionAffinity", json!("None"));
    let kind = get_path(obj, ".spec.type")
        .and_then(Value::as_str)
        .unwrap_or("");
    if kind != "ExternalName"
        && get_path(obj, ".spec.clusterIP")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        let n = *next_cluster_ip;
        *next_cluster_ip += 1;
        let ip = format!("10.96.{}.{}", (n >> 8) & 0xff, n & 0xff);
        set_path(obj, ".spec.clusterIP", json!(ip));
    }
    if let Some(ip) = get_path(obj, ".spec.clusterIP").cloned() {
        default_at(obj, ".spec.clusterIPs", json!([ip]));
    }
    if let Some(ports) = obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter(|p| p.is_object()) {
            default_at(p, "protocol", json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                default_at(p, "targetPort", port);
            }
        }
    }
}

fn service_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Type", |o| {
            json!(
                get(o, "/spec/type")
                    .and_then(Value::as_str)
                    .unwrap_or("ClusterIP")
            )
        }),
        ("Cluster-IP", |o| or_none(string(o, "/spec/clusterIP"))),
        ("External-IP", |_| json!("<none>")),
        ("Port(s)", |o| {
            let ports: Vec<String> = get(o, "/spec/ports")
                .and_then(Value::as_array)
                .map(|ps| {
                    ps.iter()
                        .map(|p| {
                            format!("{}/{}", p["port"], p["protocol"].as_str().unwrap_or("TCP"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            or_none(json!(ports.join(",")))
        }),
    ]
}

// ---- events

/// Events of the core group.
pub(super) const EVENTS: Strategy = Strategy {
    validate: Some(validation::core::event),
    field_labels: EVENT_LABELS,
    ..DEFAULT
};

/// The field labels of Events (of both APIs: `events.k8s.io` events are stored in the core
/// form).
pub(super) const EVENT_LABELS: &[FieldLabel] = &[
    label("involvedObject.kind"),
    label("involvedObject.namespace"),
    label("involvedObject.name"),
    label("involvedObject.uid"),
    label("involvedObject.apiVersion"),
    label("involvedObject.resourceVersion"),
    label("involvedObject.fieldPath"),
    label("reason"),
    label("reportingComponent"),
    label("source").at("source.component"),
    label("type"),
];

// ---- serviceaccounts

/// ServiceAccounts.
pub(super) const SERVICE_ACCOUNTS: Strategy = Strategy {
    merge_root: MergeRoot::ServiceAccount,
    columns: service_account_columns,
    ..DEFAULT
};

fn service_account_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Secrets", |o| json!(count(o, "/secrets")))]
}

// ---- nodes

/// Nodes.
pub(super) const NODES: Strategy = Strategy {
    field_labels: &[label("spec.unschedulable").absent("false")],
    merge_root: MergeRoot::Node,
    columns: node_columns,
    ..DEFAULT
};

fn node_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Status", |o| {
        let ready = get(o, "/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
            .map(|c| c["status"] == "True");
        json!(if ready == Some(true) {
            "Ready"
        } else {
            "NotReady"
        })
    })]
}

// ---- persistentvolumeclaims

/// PersistentVolumeClaims.
pub(super) const PERSISTENT_VOLUME_CLAIMS: Strategy = Strategy {
    defaults: Some(persistent_volume_claim_defaults),
    validate: Some(validation::core::persistent_volume_claim),
    initial_status: Some(|| json!({"phase": "Pending"})),
    columns: persistent_volume_claim_columns,
    columns_wide: volume_wide,
    ..DEFAULT
};

fn persistent_volume_claim_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    default_at(obj, ".spec.volumeMode", json!("Filesystem"))
}

fn persistent_volume_claim_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Status", phase_or_terminating),
        ("Volume", |o| string(o, "/spec/volumeName")),
        ("Capacity", |o| {
            // Only a bound claim shows what it got.
            if str_at(o, "/spec/volumeName").is_empty() {
                json!("")
            } else {
                string(o, "/status/capacity/storage")
            }
        }),
        ("Access Modes", |o| {
            if str_at(o, "/spec/volumeName").is_empty() {
                json!("")
            } else {
                access_modes(o, "/status/accessModes")
            }
        }),
        ("StorageClass", storage_class),
        ("VolumeAttributesClass", |o| {
            or_unset(o, "/spec/volumeAttributesClassName")
        }),
    ]
}

// ---- persistentvolumes

/// PersistentVolumes.
pub(super) const PERSISTENT_VOLUMES: Strategy = Strategy {
    columns: persistent_volume_columns,
    columns_wide: volume_wide,
    ..DEFAULT
};

fn persistent_volume_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Capacity", |o| string(o, "/spec/capacity/storage")),
        ("Access Modes", |o| access_modes(o, "/spec/accessModes")),
        ("Reclaim Policy", |o| {
            string(o, "/spec/persistentVolumeReclaimPolicy")
        }),
        ("Status", phase_or_terminating),
        ("Claim", |o| match get(o, "/spec/claimRef") {
            Some(r) if r.is_object() => json!(format!(
                "{}/{}",
                r["namespace"].as_str().unwrap_or(""),
                r["name"].as_str().unwrap_or("")
            )),
            _ => json!(""),
        }),
        ("StorageClass", storage_class),
        ("VolumeAttributesClass", |o| {
            or_unset(o, "/spec/volumeAttributesClassName")
        }),
        ("Reason", |o| string(o, "/status/reason")),
    ]
}

/// The `-o wide` columns of volumes and claims.
fn volume_wide() -> Vec<(&'static str, CellFn)> {
    vec![("VolumeMode", |o| or_unset(o, "/spec/volumeMode"))]
}

// ---- podtemplates

/// PodTemplates.
pub(super) const POD_TEMPLATES: Strategy = Strategy {
    validate: Some(validation::pod::pod_template),
    merge_root: MergeRoot::PodTemplateKind,
    ..DEFAULT
};

// ---- replicationcontrollers

/// ReplicationControllers.
pub(super) const REPLICATION_CONTROLLERS: Strategy = Strategy {
    validate: Some(validation::pod::replication_controller),
    field_labels: &[label("status.replicas")],
    merge_root: MergeRoot::Workload,
    columns: replication_controller_columns,
    ..DEFAULT
};

fn replication_controller_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Desired", |o| json!(int(o, "/spec/replicas"))),
        ("Current", |o| json!(int(o, "/status/replicas"))),
        ("Ready", |o| json!(int(o, "/status/readyReplicas"))),
    ]
}

// ---- resourcequotas

/// ResourceQuotas (their usage prints after AGE).
pub(super) const RESOURCE_QUOTAS: Strategy = Strategy {
    columns_after_age: resource_quota_after_age,
    ..DEFAULT
};

fn resource_quota_after_age() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Request", |o| quota_usage(o, false)),
        ("Limit", |o| quota_usage(o, true)),
    ]
}

// ---- endpoints

/// Endpoints.
pub(super) const ENDPOINTS: Strategy = Strategy {
    columns: endpoints_columns,
    ..DEFAULT
};

fn endpoints_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Endpoints", endpoints)]
}
