//! Pods.

use crate::kinds::{StatusStrategy, Strategy, defaults::*, label, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The Pod strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
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
    delete_returns_object: true,
    action_subresources: &["binding", "eviction"],
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
