//! StatefulSets.

use super::workload_wide;
use crate::kinds::{Strategy, defaults::*, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The StatefulSet strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    defaults: Some(stateful_set_defaults),
    validate: Some(validation::apps::stateful_set),
    merge_root: MergeRoot::Workload,
    columns: stateful_set_columns,
    columns_wide: workload_wide,
    ..DEFAULT
};

fn stateful_set_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    default_at(obj, ".spec.replicas", json!(1));
    default_at(obj, ".spec.podManagementPolicy", json!("OrderedReady"));
    default_at(obj, ".spec.revisionHistoryLimit", json!(10));
    default_at(
        obj,
        ".spec.updateStrategy",
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
    );
    default_template(obj);
}

fn stateful_set_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Ready", |o| {
        ratio(int(o, "/status/readyReplicas"), int(o, "/spec/replicas"))
    })]
}
