//! `rbac.authorization.k8s.io/v1`: roles and their bindings (no `spec`, no generation).

mod clusterrole;
mod clusterrolebinding;
mod role;
mod rolebinding;

use super::{Row, row};
use crate::json;
use crate::table::columns::*;
use serde_json::json;

const G: &str = "rbac.authorization.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "clusterrolebindings", "ClusterRoleBinding", false).strategy(&clusterrolebinding::STRATEGY),
    row(G, "v1", "clusterroles", "ClusterRole", false).strategy(&clusterrole::STRATEGY),
    row(G, "v1", "rolebindings", "RoleBinding", true).strategy(&rolebinding::STRATEGY),
    row(G, "v1", "roles", "Role", true).strategy(&role::STRATEGY),
];

/// The columns of role bindings and cluster role bindings.
pub(super) fn binding_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Role", |o| {
        json!(format!(
            "{}/{}",
            json::str_at(o, &["roleRef", "kind"]),
            json::str_at(o, &["roleRef", "name"])
        ))
    })]
}
