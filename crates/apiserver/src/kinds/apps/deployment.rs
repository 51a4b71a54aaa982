//! Deployments: a status write keeps the labels too.

use super::workload_wide;
use crate::kinds::{StatusStrategy, Strategy, defaults::*, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The Deployment strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    defaults: Some(deployment_defaults),
    validate: Some(validation::apps::deployment),
    status: StatusStrategy::SpecAnd(&["labels"]),
    merge_root: MergeRoot::Workload,
    columns: deployment_columns,
    columns_wide: workload_wide,
    ..DEFAULT
};

fn deployment_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    default_at(obj, ".spec.replicas", json!(1));
    default_at(obj, ".spec.revisionHistoryLimit", json!(10));
    default_at(obj, ".spec.progressDeadlineSeconds", json!(600));
    default_at(
        obj,
        ".spec.strategy",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
    );
    default_template(obj);
}

fn deployment_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Ready", |o| {
            ratio(int(o, "/status/readyReplicas"), int(o, "/spec/replicas"))
        }),
        ("Up-to-date", |o| json!(int(o, "/status/updatedReplicas"))),
        ("Available", |o| json!(int(o, "/status/availableReplicas"))),
    ]
}
