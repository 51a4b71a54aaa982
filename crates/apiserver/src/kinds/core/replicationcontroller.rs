//! ReplicationControllers.

use crate::kinds::{Strategy, label, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::json;

/// The ReplicationController strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
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
