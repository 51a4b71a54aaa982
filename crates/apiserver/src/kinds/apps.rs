//! `apps/v1`: the workloads.

use super::{CAT_ALL, GENERATION, Row, SCALE, STATUS, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("apps", "v1", "controllerrevisions", "ControllerRevision", true),
    row("apps", "v1", "daemonsets", "DaemonSet", true).short(&["ds"]).categories(CAT_ALL).flags(STATUS | GENERATION),
    row("apps", "v1", "deployments", "Deployment", true).short(&["deploy"]).categories(CAT_ALL).flags(STATUS | SCALE | GENERATION),
    row("apps", "v1", "replicasets", "ReplicaSet", true).short(&["rs"]).categories(CAT_ALL).flags(STATUS | SCALE | GENERATION),
    row("apps", "v1", "statefulsets", "StatefulSet", true).short(&["sts"]).categories(CAT_ALL).flags(STATUS | SCALE | GENERATION),
];
