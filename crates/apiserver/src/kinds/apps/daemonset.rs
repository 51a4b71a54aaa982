//! DaemonSets.

use super::workload_wide;
use crate::kinds::{Strategy, defaults::*, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The DaemonSet strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    defaults: Some(daemon_set_defaults),
    validate: Some(validation::apps::daemon_set),
    merge_root: MergeRoot::Workload,
    columns: daemon_set_columns,
    columns_wide: workload_wide,
    ..DEFAULT
};

fn daemon_set_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    default_at(obj, ".spec.revisionHistoryLimit", json!(10));
    default_at(
        obj,
        ".spec.updateStrategy",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
    );
    default_template(obj);
}

fn daemon_set_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Desired", |o| {
            json!(int(o, "/status/desiredNumberScheduled"))
        }),
        ("Current", |o| {
            json!(int(o, "/status/currentNumberScheduled"))
        }),
        ("Ready", |o| json!(int(o, "/status/numberReady"))),
        ("Up-to-date", |o| {
            json!(int(o, "/status/updatedNumberScheduled"))
        }),
        ("Available", |o| json!(int(o, "/status/numberAvailable"))),
    ]
}
