//! ReplicationControllers.

use crate::kinds::{Strategy, defaults::*, label, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The ReplicationController strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    defaults: Some(replication_controller_defaults),
    orphan_by_default: true,
    validate: Some(validation::pod::replication_controller),
    field_labels: &[label("status.replicas")],
    merge_root: MergeRoot::Workload,
    columns: replication_controller_columns,
    ..DEFAULT
};

/// Upstream's defaults: a missing or empty selector, and missing or empty labels, are the
/// template's labels (when it has any); one replica; the template's pod defaults.
fn replication_controller_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    let template_labels = obj
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.is_object())
        .cloned();
    if let Some(labels) = template_labels {
        let empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(|m| m.is_empty());
        if empty(obj.pointer("/spec/selector")) {
            set_path(obj, ".spec.selector", labels.clone());
        }
        if empty(obj.pointer("/metadata/labels")) {
            set_path(obj, ".metadata.labels", labels);
        }
    }
    default_at(obj, ".spec.replicas", json!(1));
    default_template(obj);
}

fn replication_controller_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Desired", |o| json!(int(o, "/spec/replicas"))),
        ("Current", |o| json!(int(o, "/status/replicas"))),
        ("Ready", |o| json!(int(o, "/status/readyReplicas"))),
    ]
}
