//! ReplicaSets.

use super::workload_wide;
use crate::kinds::{Strategy, defaults::*, label, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The ReplicaSet strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    defaults: Some(replica_set_defaults),
    validate: Some(validation::apps::replica_set),
    field_labels: &[label("status.replicas").absent("0")],
    merge_root: MergeRoot::Workload,
    columns: replica_set_columns,
    columns_wide: workload_wide,
    ..DEFAULT
};

fn replica_set_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    default_at(obj, ".spec.replicas", json!(1));
    default_template(obj);
}

fn replica_set_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Desired", |o| json!(int(o, "/spec/replicas"))),
        ("Current", |o| json!(int(o, "/status/replicas"))),
        ("Ready", |o| json!(int(o, "/status/readyReplicas"))),
    ]
}
