//! The core group (`/api/v1`).

mod configmap;
mod endpoints;
mod event;
mod namespace;
mod node;
mod persistentvolume;
mod persistentvolumeclaim;
mod pod;
mod podtemplate;
mod replicationcontroller;
mod resourcequota;
mod secret;
mod service;
mod serviceaccount;

use super::{
    CAT_ALL, CREATE, FieldLabel, GENERATION, GET_PATCH_UPDATE, Row, SCALE, STATUS, Sub, label, row,
    sub,
};
use crate::table::columns::*;
use chrono::Utc;
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
    row("", "v1", "configmaps", "ConfigMap", true).short(&["cm"]).strategy(&configmap::STRATEGY),
    row("", "v1", "endpoints", "Endpoints", true).short(&["ep"])
        .deprecated("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice").strategy(&endpoints::STRATEGY),
    row("", "v1", "events", "Event", true).short(&["ev"]).strategy(&event::STRATEGY),
    row("", "v1", "limitranges", "LimitRange", true).short(&["limits"]),
    row("", "v1", "namespaces", "Namespace", false).short(&["ns"]).flags(STATUS)
        .verbs(&["create", "delete", "get", "list", "patch", "update", "watch"])
        .extra(&[sub("finalize", "Namespace", &["update"])]).strategy(&namespace::STRATEGY),
    row("", "v1", "nodes", "Node", false).short(&["no"]).flags(STATUS)
        .extra(&[sub("proxy", "NodeProxyOptions", PROXY)]).strategy(&node::STRATEGY),
    row("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true).short(&["pvc"]).flags(STATUS).strategy(&persistentvolumeclaim::STRATEGY),
    row("", "v1", "persistentvolumes", "PersistentVolume", false).short(&["pv"]).flags(STATUS).strategy(&persistentvolume::STRATEGY),
    row("", "v1", "pods", "Pod", true).short(&["po"]).categories(CAT_ALL).flags(STATUS).extra(POD_SUBRESOURCES).strategy(&pod::STRATEGY),
    row("", "v1", "podtemplates", "PodTemplate", true).strategy(&podtemplate::STRATEGY),
    row("", "v1", "replicationcontrollers", "ReplicationController", true).short(&["rc"]).categories(CAT_ALL)
        .flags(STATUS | SCALE | GENERATION).strategy(&replicationcontroller::STRATEGY),
    row("", "v1", "resourcequotas", "ResourceQuota", true).short(&["quota"]).flags(STATUS).strategy(&resourcequota::STRATEGY),
    row("", "v1", "secrets", "Secret", true).strategy(&secret::STRATEGY),
    row("", "v1", "serviceaccounts", "ServiceAccount", true).short(&["sa"])
        .extra(&[Sub { name: "token", group: "authentication.k8s.io", version: "v1", kind: "TokenRequest", verbs: CREATE }]).strategy(&serviceaccount::STRATEGY),
    row("", "v1", "services", "Service", true).short(&["svc"]).categories(CAT_ALL).flags(STATUS)
        .extra(&[sub("proxy", "ServiceProxyOptions", PROXY)]).strategy(&service::STRATEGY),
];

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

/// The `-o wide` columns of volumes and claims.
pub(super) fn volume_wide() -> Vec<(&'static str, CellFn)> {
    vec![("VolumeMode", |o| or_unset(o, "/spec/volumeMode"))]
}

/// The columns of core/v1 and events.k8s.io/v1 Events with their priorities: LAST SEEN,
/// TYPE, REASON, OBJECT, MESSAGE, and for `-o wide` SUBOBJECT, SOURCE, FIRST SEEN and COUNT
/// (upstream's `printEvent`; the NAME column is added by the caller). An events.k8s.io Event
/// is read through its core names' counterparts (`regarding`, `note`, `deprecated*`).
pub(super) fn event_table() -> Vec<(&'static str, CellFn, i64)> {
    vec![
        (
            "Last Seen",
            |o| {
                let seen = first_str(
                    o,
                    &[
                        "/series/lastObservedTime",
                        "/lastTimestamp",
                        "/deprecatedLastTimestamp",
                        "/firstTimestamp",
                        "/deprecatedFirstTimestamp",
                        "/eventTime",
                        "/metadata/creationTimestamp",
                    ],
                );
                json!(age(seen.map(|s| json!(s)).as_ref(), Utc::now()))
            },
            0,
        ),
        ("Type", |o| string(o, "/type"), 0),
        ("Reason", |o| string(o, "/reason"), 0),
        (
            "Object",
            |o| {
                let kind = first_str(o, &["/involvedObject/kind", "/regarding/kind"]).unwrap_or("");
                match first_str(o, &["/involvedObject/name", "/regarding/name"]) {
                    Some(name) => json!(format!("{}/{name}", kind.to_lowercase())),
                    None => json!(kind.to_lowercase()),
                }
            },
            0,
        ),
        (
            "Subobject",
            |o| {
                json!(
                    first_str(o, &["/involvedObject/fieldPath", "/regarding/fieldPath"])
                        .unwrap_or("")
                )
            },
            1,
        ),
        (
            "Source",
            |o| {
                let component = first_str(
                    o,
                    &[
                        "/source/component",
                        "/deprecatedSource/component",
                        "/reportingController",
                    ],
                );
                let instance = first_str(
                    o,
                    &[
                        "/source/host",
                        "/deprecatedSource/host",
                        "/reportingInstance",
                    ],
                );
                json!(match (component, instance) {
                    (None, None) => String::new(),
                    (c, None) => c.unwrap_or("").to_string(),
                    (c, Some(i)) => format!("{}, {i}", c.unwrap_or("")),
                })
            },
            1,
        ),
        (
            "Message",
            |o| json!(first_str(o, &["/message", "/note"]).unwrap_or("").trim()),
            0,
        ),
        (
            "First Seen",
            |o| {
                let first = first_str(
                    o,
                    &["/firstTimestamp", "/deprecatedFirstTimestamp", "/eventTime"],
                );
                json!(age(first.map(|s| json!(s)).as_ref(), Utc::now()))
            },
            1,
        ),
        (
            "Count",
            |o| {
                let count = if o.pointer("/series").is_some_and(Value::is_object) {
                    int(o, "/series/count")
                } else {
                    match int(o, "/count").max(int(o, "/deprecatedCount")) {
                        // Singleton events of the new API have no count.
                        0 => 1,
                        n => n,
                    }
                };
                json!(count)
            },
            1,
        ),
    ]
}
