//! ClusterRoleBindings.

use super::binding_columns;
use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::validation;
use crate::validation::NameFormat;

/// The ClusterRoleBinding strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    name_format: NameFormat::PathSegment,
    validate: Some(validation::rbac::cluster_role_binding),
    columns: binding_columns,
    ..DEFAULT
};
