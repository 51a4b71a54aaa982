//! `rbac.authorization.k8s.io/v1`: roles and their bindings (no `spec`, no generation).

use super::{Row, row};

const G: &str = "rbac.authorization.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "clusterrolebindings", "ClusterRoleBinding", false),
    row(G, "v1", "clusterroles", "ClusterRole", false),
    row(G, "v1", "rolebindings", "RoleBinding", true),
    row(G, "v1", "roles", "Role", true),
];
