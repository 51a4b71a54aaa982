//! `apps/v1`: the workloads.

use super::{
    CAT_ALL, GENERATION, Row, SCALE, STATUS, StatusStrategy, Strategy, defaults::*, label, row,
    strategy::DEFAULT,
};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("apps", "v1", "controllerrevisions", "ControllerRevision", true).strategy(&CONTROLLER_REVISIONS),
    row("apps", "v1", "daemonsets", "DaemonSet", true).short(&["ds"]).categories(CAT_ALL).flags(STATUS | GENERATION).strategy(&DAEMON_SETS),
    row("apps", "v1", "deployments", "Deployment", true).short(&["deploy"]).categories(CAT_ALL).flags(STATUS | SCALE | GENERATION).strategy(&DEPLOYMENTS),
    row("apps", "v1", "replicasets", "ReplicaSet", true).short(&["rs"]).categories(CAT_ALL).flags(STATUS | SCALE | GENERATION).strategy(&REPLICA_SETS),
    row("apps", "v1", "statefulsets", "StatefulSet", true).short(&["sts"]).categories(CAT_ALL).flags(STATUS | SCALE | GENERATION).strategy(&STATEFUL_SETS),
];

// ---- controllerrevisions

/// ControllerRevisions.
pub(super) const CONTROLLER_REVISIONS: Strategy = Strategy {
    columns: controller_revision_columns,
    ..DEFAULT
};

fn controller_revision_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Controller", controller_of),
        ("Revision", |o| json!(int(o, "/revision"))),
    ]
}

// ---- daemonsets

/// DaemonSets.
pub(super) const DAEMON_SETS: Strategy = Strategy {
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

// ---- deployments

/// Deployments: a status write keeps the labels too.
pub(super) const DEPLOYMENTS: Strategy = Strategy {
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

/// The `-o wide` columns of the workloads (and Jobs): containers, images, selector.
pub(super) fn workload_wide() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Containers", |o| {
            containers(o, "/spec/template/spec/containers", "name")
        }),
        ("Images", |o| {
            containers(o, "/spec/template/spec/containers", "image")
        }),
        ("Selector", selector),
    ]
}

// ---- replicasets

/// ReplicaSets.
pub(super) const REPLICA_SETS: Strategy = Strategy {
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

// ---- statefulsets

/// StatefulSets.
pub(super) const STATEFUL_SETS: Strategy = Strategy {
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
