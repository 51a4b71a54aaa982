//! `rbac.authorization.k8s.io/v1`: roles and their bindings (no `spec`, no generation).

use super::{Row, Strategy, row, strategy::DEFAULT};
use crate::table::columns::*;
use crate::validation;
use crate::validation::NameFormat;
use serde_json::json;

const G: &str = "rbac.authorization.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "clusterrolebindings", "ClusterRoleBinding", false).strategy(&CLUSTER_ROLE_BINDINGS),
    row(G, "v1", "clusterroles", "ClusterRole", false).strategy(&CLUSTER_ROLES),
    row(G, "v1", "rolebindings", "RoleBinding", true).strategy(&ROLE_BINDINGS),
    row(G, "v1", "roles", "Role", true).strategy(&ROLES),
];

// ---- clusterrolebindings

/// ClusterRoleBindings.
pub(super) const CLUSTER_ROLE_BINDINGS: Strategy = Strategy {
    name_format: NameFormat::PathSegment,
    validate: Some(validation::rbac::cluster_role_binding),
    columns: binding_columns,
    ..DEFAULT
};

/// The columns of role bindings and cluster role bindings.
fn binding_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Role", |o| {
        json!(format!(
            "{}/{}",
            str_at(o, "/roleRef/kind"),
            str_at(o, "/roleRef/name")
        ))
    })]
}

// ---- clusterroles

/// ClusterRoles.
pub(super) const CLUSTER_ROLES: Strategy = Strategy {
    name_format: NameFormat::PathSegment,
    validate: Some(validation::rbac::cluster_role),
    ..DEFAULT
};

// ---- rolebindings

/// RoleBindings.
pub(super) const ROLE_BINDINGS: Strategy = Strategy {
    name_format: NameFormat::PathSegment,
    validate: Some(validation::rbac::role_binding),
    columns: binding_columns,
    ..DEFAULT
};

// ---- roles

/// Roles.
pub(super) const ROLES: Strategy = Strategy {
    name_format: NameFormat::PathSegment,
    validate: Some(validation::rbac::role),
    ..DEFAULT
};
