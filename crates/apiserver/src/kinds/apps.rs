//! `apps/v1`: the workloads.

mod controllerrevision;
mod daemonset;
mod deployment;
mod replicaset;
mod statefulset;

use super::{CAT_ALL, GENERATION, Row, SCALE, STATUS, row};
use crate::table::columns::*;

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("apps", "v1", "controllerrevisions", "ControllerRevision", true).strategy(&controllerrevision::STRATEGY),
    row("apps", "v1", "daemonsets", "DaemonSet", true).short(&["ds"]).categories(CAT_ALL).flags(STATUS | GENERATION).strategy(&daemonset::STRATEGY),
    row("apps", "v1", "deployments", "Deployment", true).short(&["deploy"]).categories(CAT_ALL).flags(STATUS | SCALE | GENERATION).strategy(&deployment::STRATEGY),
    row("apps", "v1", "replicasets", "ReplicaSet", true).short(&["rs"]).categories(CAT_ALL).flags(STATUS | SCALE | GENERATION).strategy(&replicaset::STRATEGY),
    row("apps", "v1", "statefulsets", "StatefulSet", true).short(&["sts"]).categories(CAT_ALL).flags(STATUS | SCALE | GENERATION).strategy(&statefulset::STRATEGY),
];

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
