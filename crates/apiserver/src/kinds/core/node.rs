//! Nodes.

use crate::kinds::{Strategy, label, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use serde_json::{Value, json};

/// The Node strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
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
